/**
 * How a journal writes its file: the one open, append-only descriptor behind
 * `Journal.open`, whose appends are durable when they return.
 *
 * {@link JournalFile} is a `Context.Reference`: it needs no layer and adds no
 * requirement of its own. The default goes through Effect's `FileSystem`,
 * which runs every write and every sync on the platform's worker threads, so
 * the process keeps serving other fibers while the device works, at the cost
 * of two thread round trips per append. A host may provide another
 * implementation; `@tessera/node` has a blocking one (`NodeJournalFile`) that
 * writes and syncs on the calling thread, which is faster whenever nothing
 * else in the process needs to run during an append.
 *
 * Every implementation keeps the same contract, so the journal's guarantees
 * (durable appends, a failed append rolled back to the last complete line)
 * do not depend on the choice.
 *
 * @since 0.1.0
 */

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/**
 * A journal file operation failed. `operation` says which (`open`, `read`,
 * `append`, `sync`, `truncate`) and `detail` carries the platform's message.
 *
 * @since 0.1.0
 * @category errors
 */
export class JournalFileError extends Schema.TaggedError<JournalFileError>()("JournalFileError", {
  operation: Schema.Literals(["open", "read", "append", "sync", "truncate"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.operation} failed: ${this.detail}`
  }
}

/**
 * An open journal file.
 *
 * @since 0.1.0
 * @category models
 */
export interface AppendHandle {
  /**
   * Writes the UTF-8 encoding of `line` at the end of the file and syncs the
   * file before succeeding. On failure some of its bytes may have been
   * written; the journal truncates them away. A line, not bytes: a platform
   * can write a short text without first copying it into a buffer of its own
   * (in Node, `TextEncoder.encode` of a 250-character line costs more than
   * everything else the journal does for it).
   */
  readonly append: (line: string) => Effect.Effect<void, JournalFileError>
  /**
   * Writes `line` as {@link append} does, without syncing: the bytes are the
   * platform's until the next {@link sync}. Group commit
   * (`JournalDurability.groupCommit`) writes with it.
   */
  readonly write: (line: string) => Effect.Effect<void, JournalFileError>
  /** Makes every byte written so far durable. */
  readonly sync: Effect.Effect<void, JournalFileError>
  /** Cuts the file to `size` bytes and syncs it. */
  readonly truncate: (size: number) => Effect.Effect<void, JournalFileError>
  /**
   * The same operations as blocking calls that throw the
   * {@link JournalFileError}, for a platform whose appends block anyway.
   * With them the journal makes each append, and the cut-back after a failed
   * one, in a single synchronous step: no other fiber can run in between, so
   * appends need no lock and cost a few effects less.
   */
  readonly blocking?: {
    readonly append: (line: string) => void
    readonly write: (line: string) => void
    readonly sync: () => void
    readonly truncate: (size: number) => void
  }
}

/**
 * What an implementation provides: opening a file for appending (creating
 * it if missing) for the lifetime of a scope. The file is closed when the
 * scope closes.
 *
 * @since 0.1.0
 * @category models
 */
export interface JournalFileShape {
  readonly openAppend: (
    file: string
  ) => Effect.Effect<AppendHandle, JournalFileError, FileSystem.FileSystem | Scope.Scope>
  /**
   * Reads the whole file, `None` when it does not exist. Optional: without
   * it the journal reads through `FileSystem`. A platform provides it when
   * it reads a large file faster (reopening a journal reads all of it).
   */
  readonly readAll?: (file: string) => Effect.Effect<Option.Option<Uint8Array>, JournalFileError>
}

const encoder = new TextEncoder()

const fail = (operation: JournalFileError["operation"]) => (error: { readonly message: string }) =>
  new JournalFileError({ operation, detail: error.message })

/**
 * The portable implementation on Effect's `FileSystem`: the write and the
 * sync of an append each run on a worker thread.
 *
 * @since 0.1.0
 * @category implementations
 */
export const fileSystem: JournalFileShape = {
  openAppend: (file) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const handle = yield* fs.open(file, { flag: "a" }).pipe(Effect.mapError(fail("open")))
      const write = (line: string) => handle.writeAll(encoder.encode(line))
      return {
        append: (line) => write(line).pipe(Effect.andThen(handle.sync), Effect.mapError(fail("append"))),
        write: (line) => write(line).pipe(Effect.mapError(fail("append"))),
        sync: handle.sync.pipe(Effect.mapError(fail("sync"))),
        truncate: (size) => handle.truncate(size).pipe(Effect.andThen(handle.sync), Effect.mapError(fail("truncate")))
      }
    })
}

/**
 * The journal file implementation in use; {@link fileSystem} unless a host
 * provides another (`Layer.succeed(JournalFile)(implementation)`).
 *
 * @since 0.1.0
 * @category services
 */
export const JournalFile: Context.Reference<JournalFileShape> = Context.Reference<JournalFileShape>(
  "@tessera/runtime/JournalFile",
  { defaultValue: () => fileSystem }
)
