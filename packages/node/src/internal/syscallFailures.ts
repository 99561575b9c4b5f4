/**
 * How the synchronous `node:fs` calls of the durable files fail: the errno
 * code of what was thrown, the typed failure naming the operation and the
 * path, and closing a descriptor on the way out of a failure.
 *
 * @internal
 */
import * as fs from "node:fs"
import { AlreadyExists, DurableFileFailure, type DurableFileOperation, OutsideWithin } from "@tessera/core/DurableFiles"

/** The `code` of a Node.js system error; `UNKNOWN` for anything else. */
export const errnoCode = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code
  }
  return "UNKNOWN"
}

/** Whether `error` is a typed failure already, thrown by a check of the durable files themselves. */
export const isOurError = (error: unknown): error is AlreadyExists | OutsideWithin | DurableFileFailure =>
  error instanceof AlreadyExists || error instanceof OutsideWithin || error instanceof DurableFileFailure

/** A system error of `operation` on `path` as the typed failure. */
export const failure = (operation: DurableFileOperation, path: string, error: unknown): DurableFileFailure =>
  new DurableFileFailure({
    operation,
    path,
    code: errnoCode(error),
    detail: error instanceof Error ? error.message : String(error)
  })

/** Closes `fd`, ignoring a failure: closing can only fail for a descriptor that is already gone. */
export const closeQuietly = (fd: number): void => {
  try {
    fs.closeSync(fd)
  } catch {
    // Nothing is left to release.
  }
}

/** The real path of `within`, or the typed failure of `operation` when it cannot be resolved. */
export const realWithin = (operation: DurableFileOperation, within: string): string => {
  try {
    return fs.realpathSync.native(within)
  } catch (error) {
    throw failure(operation, within, error)
  }
}
