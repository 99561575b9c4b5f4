/**
 * Reading a file within a folder through the durable files: no link is
 * followed at any step, every opened component must be where its name
 * says, and only a plain file with one link is read.
 *
 * @internal
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import {
  DurableFileFailure,
  type DurableFilesShape,
  NotPlainFile,
  OutsideWithin,
  type ReadFileOptions,
  relativeWithin,
  SymlinkRefused
} from "@tessera/core/DurableFiles"
import * as Effect from "effect/Effect"
import type { Locator } from "./fileLocations.ts"
import { closeQuietly, errnoCode, failure, realWithin } from "./syscallFailures.ts"

// Reading follows no link at any step, and a FIFO planted where a file was expected must not block the open.
const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0
const O_NONBLOCK = fs.constants.O_NONBLOCK ?? 0
const readFolderFlags = fs.constants.O_RDONLY | (fs.constants.O_DIRECTORY ?? 0) | O_NOFOLLOW
const readFileFlags = fs.constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK

/**
 * Reads of at most this many bytes run on the calling thread. What they read
 * is small and read often (a volume's registration at every admission of a
 * private writer, a staged summary), so it is in the kernel's page cache and
 * a read is a copy, cheaper than a worker round trip; larger reads (an
 * artifact read back) stay on a worker.
 */
const blockingReadUpTo = 64 * 1024

/**
 * Opens `name` inside an opened folder without following it. A component
 * that is a link fails the open (`ELOOP`; `ENOTDIR` for a link to a file
 * opened as a folder), so the failure is told apart from a plain one by
 * asking the name itself, after the fact: only the error's wording depends
 * on that question, never what is opened.
 */
const openNoFollow = (
  locator: Locator,
  folder: number,
  folderPath: string,
  name: string,
  flags: number,
  path: string
): number => {
  const child = locator.childOf(folder, folderPath, name)
  try {
    return fs.openSync(child, flags)
  } catch (error) {
    const code = errnoCode(error)
    if (
      (code === "ELOOP" || code === "ENOTDIR" || code === "EMLINK") &&
      fs.lstatSync(child, { throwIfNoEntry: false })?.isSymbolicLink()
    ) {
      throw new SymlinkRefused({ operation: "readFile", path, link: nodePath.join(folderPath, name) })
    }
    throw error
  }
}

const readFailure = (path: string, error: unknown) =>
  error instanceof OutsideWithin ||
  error instanceof SymlinkRefused ||
  error instanceof NotPlainFile ||
  error instanceof DurableFileFailure
    ? error
    : failure("readFile", path, error)

/** Reads `length` bytes of an opened file from `start`, stopping early if it shrank; the caller closes it. */
const readSpan = (file: number, start: number, length: number): Uint8Array => {
  const bytes = Buffer.alloc(length)
  let read = 0
  while (read < length) {
    const count = fs.readSync(file, bytes, read, length - read, start + read)
    // The file shrank since fstat: what is there is all there is.
    if (count === 0) break
    read += count
  }
  return new Uint8Array(bytes.buffer, bytes.byteOffset, read)
}

const readSpanOnWorker = async (file: number, start: number, length: number): Promise<Uint8Array> => {
  const bytes = Buffer.alloc(length)
  let read = 0
  while (read < length) {
    const count = await new Promise<number>((resolve, reject) =>
      fs.read(file, bytes, read, length - read, start + read, (error, n) =>
        error === null ? resolve(n) : reject(error)
      )
    )
    if (count === 0) break
    read += count
  }
  return new Uint8Array(bytes.buffer, bytes.byteOffset, read)
}

/** The durable files' `readFile`, locating what it opens with `locator`. */
export const makeReadFile =
  (locator: Locator): DurableFilesShape["readFile"] =>
  (path, { maxBytes, offset = 0, within }: ReadFileOptions) =>
    Effect.suspend(() => {
      let file: number | undefined
      try {
        const root = realWithin("readFile", within)
        const target = nodePath.resolve(path)
        const relative =
          relativeWithin(nodePath.resolve(within), target, nodePath) ?? relativeWithin(root, target, nodePath)
        if (relative === undefined || relative === "") {
          throw new OutsideWithin({ operation: "readFile", path, within: root, actual: target })
        }
        const names = relative.split(nodePath.sep).filter((part) => part !== "")
        const fileName = names.pop() ?? ""
        // Every opened component must really be where its name says: with no link followed, the real path of
        // each is the real root joined with the names so far. Anything else (a rename racing the walk) is refused.
        let folder = fs.openSync(root, readFolderFlags)
        let folderPath = root
        try {
          for (const name of names) {
            const next = openNoFollow(locator, folder, folderPath, name, readFolderFlags, path)
            const expected = nodePath.join(folderPath, name)
            let location: string
            try {
              location = locator.folderLocation(next, expected)
            } catch (error) {
              closeQuietly(next)
              throw error
            }
            closeQuietly(folder)
            folder = next
            if (location !== expected) {
              throw new OutsideWithin({ operation: "readFile", path, within: root, actual: location })
            }
            folderPath = location
          }
          file = openNoFollow(locator, folder, folderPath, fileName, readFileFlags, path)
        } finally {
          closeQuietly(folder)
        }
        try {
          const stat = fs.fstatSync(file)
          if (!stat.isFile()) {
            throw new NotPlainFile({
              operation: "readFile",
              path,
              found: stat.isDirectory() ? "a folder" : "a special file"
            })
          }
          if (stat.nlink !== 1) {
            throw new NotPlainFile({
              operation: "readFile",
              path,
              found: `a file with ${stat.nlink} hard links`,
              hardLinks: stat.nlink
            })
          }
          const expected = nodePath.join(folderPath, fileName)
          const location = locator.fileLocation(file, expected)
          if (location !== expected) {
            throw new OutsideWithin({ operation: "readFile", path, within: root, actual: location ?? "(moved)" })
          }
          const start = Math.min(Math.max(0, offset), stat.size)
          const length = Math.min(stat.size - start, maxBytes ?? stat.size)
          const size = stat.size
          if (length <= blockingReadUpTo) {
            return Effect.succeed({ bytes: readSpan(file, start, length), size, location })
          }
          // Handed over to the worker's read, which closes it.
          const held = file
          file = undefined
          return Effect.tryPromise({
            try: () => readSpanOnWorker(held, start, length).finally(() => closeQuietly(held)),
            catch: (error) => readFailure(path, error)
          }).pipe(Effect.map((bytes) => ({ bytes, size, location })))
        } finally {
          if (file !== undefined) closeQuietly(file)
        }
      } catch (error) {
        return Effect.fail(readFailure(path, error))
      }
    })
