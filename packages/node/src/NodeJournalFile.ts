/**
 * A `JournalStorage.JournalFile` that writes and syncs on the calling thread.
 *
 * An append is one `write` (repeated until every byte is out) and one
 * `fsync`, made with Node's synchronous calls: no worker-thread round trip,
 * which on a local disk is a large share of a journal line's cost
 * (bench/NOTES.md has the measurements). The
 * price is that the whole process waits for the device during the sync, so
 * nothing else runs meanwhile: right for a process that drives one task at a
 * time (the local hosts provide it), wrong for a server that must keep
 * answering while tasks journal; such a host leaves the runtime's default
 * (`JournalStorage.fileSystem`, worker threads) in place.
 *
 * The durability contract is the default's: an append succeeds only after
 * the bytes were written and the file synced.
 *
 * @since 0.1.0
 */
import * as fs from "node:fs"
import * as JournalStorage from "@tessera/runtime/JournalStorage"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { writeAllBlocking } from "./internal/writeAllBlocking.ts"

const journalFileError = (operation: JournalStorage.JournalFileError["operation"], error: unknown) =>
  new JournalStorage.JournalFileError({ operation, detail: error instanceof Error ? error.message : String(error) })

/** A blocking file call in both forms a handle offers: throwing its `JournalFileError`, and as an effect. */
const fileCall = <Args extends ReadonlyArray<unknown>>(
  operation: JournalStorage.JournalFileError["operation"],
  body: (...args: Args) => void
) => ({
  blocking: (...args: Args): void => {
    try {
      body(...args)
    } catch (error) {
      throw journalFileError(operation, error)
    }
  },
  effect: (...args: Args): Effect.Effect<void, JournalStorage.JournalFileError> =>
    Effect.try({ try: () => body(...args), catch: (error) => journalFileError(operation, error) })
})

/**
 * The blocking implementation.
 *
 * @since 0.1.0
 * @category implementations
 */
export const blocking: JournalStorage.JournalFileShape = {
  // One `readFileSync`: Effect's `FileSystem.readFile` streams a file in small chunks, several times slower on a
  // journal of megabytes (docs/performance.md, journal reopen).
  readAll: (file) =>
    Effect.try({
      try: () => {
        try {
          const bytes = fs.readFileSync(file)
          // A plain view of the same bytes: a Buffer's `slice` shares memory where a Uint8Array's copies.
          return Option.some(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") return Option.none<Uint8Array>()
          throw error
        }
      },
      catch: (error) => journalFileError("read", error)
    }),
  openAppend: (file) =>
    Effect.acquireRelease(
      Effect.try({ try: () => fs.openSync(file, "a"), catch: (error) => journalFileError("open", error) }),
      (fd) => Effect.sync(() => fs.closeSync(fd))
    ).pipe(
      Effect.map((fd): JournalStorage.AppendHandle => {
        const write = fileCall("append", (line: string) => writeAllBlocking(fd, line))
        const sync = fileCall("sync", () => fs.fsyncSync(fd))
        const append = fileCall("append", (line: string) => {
          writeAllBlocking(fd, line)
          fs.fsyncSync(fd)
        })
        const truncate = fileCall("truncate", (size: number) => {
          fs.ftruncateSync(fd, size)
          fs.fsyncSync(fd)
        })
        return {
          append: append.effect,
          write: write.effect,
          sync: sync.effect(),
          truncate: truncate.effect,
          blocking: { append: append.blocking, write: write.blocking, sync: sync.blocking, truncate: truncate.blocking }
        }
      })
    )
}

/**
 * Provides {@link blocking} as the runtime's `JournalStorage.JournalFile`. Adds no
 * requirement and satisfies none.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.succeed(JournalStorage.JournalFile)(blocking)
