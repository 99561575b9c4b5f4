/**
 * A `JournalFile` that writes and syncs on the calling thread.
 *
 * An append is one `write` (repeated until every byte is out) and one
 * `fsync`, made with Node's synchronous calls: no worker-thread round trip,
 * which on a local disk roughly halves the cost of a journal line (the
 * runtime-overhead benchmark in `docs/performance.md` has the numbers). The
 * price is that the whole process waits for the device during the sync, so
 * nothing else runs meanwhile: right for a process that drives one task at a
 * time (the local hosts provide it), wrong for a server that must keep
 * answering while tasks journal; such a host leaves the runtime's default
 * (`JournalFile.fileSystem`, worker threads) in place.
 *
 * The durability contract is the default's: an append succeeds only after
 * the bytes were written and the file synced.
 *
 * @since 0.1.0
 */
import * as fs from "node:fs"
import { JournalFile } from "@tessera/runtime"
import { Effect, Layer } from "effect"

const attempt = <A>(operation: JournalFile.JournalFileError["operation"], body: () => A) =>
  Effect.try({
    try: body,
    catch: (error) =>
      new JournalFile.JournalFileError({
        operation,
        detail: error instanceof Error ? error.message : String(error)
      })
  })

/**
 * The blocking implementation.
 *
 * @since 0.1.0
 * @category implementations
 */
export const blocking: JournalFile.JournalFileShape = {
  openAppend: (file) =>
    Effect.acquireRelease(
      attempt("open", () => fs.openSync(file, "a")),
      (fd) => Effect.sync(() => fs.closeSync(fd))
    ).pipe(
      Effect.map((fd) => ({
        append: (line) =>
          attempt("append", () => {
            // Node encodes a short text on the stack; only a partial write needs the bytes here.
            const written = fs.writeSync(fd, line)
            const length = Buffer.byteLength(line)
            if (written < length) {
              const bytes = Buffer.from(line)
              let offset = written
              while (offset < length) offset += fs.writeSync(fd, bytes, offset)
            }
            fs.fsyncSync(fd)
          }),
        truncate: (size) =>
          attempt("truncate", () => {
            fs.ftruncateSync(fd, size)
            fs.fsyncSync(fd)
          })
      }))
    )
}

/**
 * Provides {@link blocking} as the runtime's `JournalFile`. Adds no
 * requirement and satisfies none.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.succeed(JournalFile.JournalFile)(blocking)
