/**
 * Reading a small file the library itself publishes (a volume's registration,
 * a staged summary) through the platform's durable files: no worker round
 * trip on Node, no link followed on the way.
 *
 * A file is published by hard link from its temporary name, which is removed
 * right after; a reader that comes in between (another runner of a shared
 * store, or a process after a crash that came in between) finds it with two
 * names, which the durable read refuses. Such a file, and only such a file (a
 * folder or a FIFO planted there stays refused), is then read by its name.
 */
import type * as DurableFiles from "@tessera/core/DurableFiles"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"

/** The file's bytes, `None` when it does not exist, or why it could not be read. */
export const readPublished = (
  files: DurableFiles.DurableFilesShape,
  fs: FileSystem.FileSystem,
  file: string,
  within: string
): Effect.Effect<Option.Option<Uint8Array>, { readonly message: string }> =>
  files.readFile(file, { within }).pipe(
    Effect.map((read) => Option.some(read.bytes)),
    Effect.catch((error): Effect.Effect<Option.Option<Uint8Array>, { readonly message: string }> => {
      if (error._tag === "DurableFileFailure" && error.code === "ENOENT") return Effect.succeed(Option.none())
      if (error._tag !== "NotPlainFile" || error.hardLinks === undefined) return Effect.fail(error)
      return Effect.map(fs.readFile(file), Option.some)
    })
  )
