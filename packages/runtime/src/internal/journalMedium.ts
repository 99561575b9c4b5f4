import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as DurableFiles from "@tessera/core/DurableFiles"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Scope from "effect/Scope"
import type * as JournalStorage from "../JournalStorage.ts"
import { heldInMemory, linesOf } from "./memoryJournals.ts"

/** Why a medium operation failed: the operation and the platform's message. */
export interface MediumFailure {
  readonly operation: string
  readonly detail: string
}

/**
 * Where one journal's bytes live: a file (written through a `JournalStorage.JournalFile`)
 * or the lines of a memory-only store. The journal reads, appends and
 * repairs through it and never asks which.
 */
export interface JournalMedium {
  /** The journal's bytes; `None` when there is no journal yet. */
  readonly read: Effect.Effect<Option.Option<Uint8Array>, MediumFailure>
  /** Opens the existing journal for appending, for the lifetime of `scope`. */
  readonly open: (scope: Scope.Scope) => Effect.Effect<JournalStorage.AppendHandle, MediumFailure>
  /** Creates the journal (and its folder) and opens it for appending, for the lifetime of `scope`. */
  readonly create: (scope: Scope.Scope) => Effect.Effect<JournalStorage.AppendHandle, MediumFailure>
  /** Replaces the whole journal by `bytes`, atomically: a crash leaves the old journal or the new one. */
  readonly replace: (bytes: Uint8Array) => Effect.Effect<void, MediumFailure>
}

const failure = (operation: string) => (error: { readonly message: string }) => ({
  operation,
  detail: error.message
})

const fileMedium = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  journalFile: JournalStorage.JournalFileShape,
  folder: string,
  file: string
): JournalMedium => {
  const open = (scope: Scope.Scope) =>
    journalFile
      .openAppend(file)
      .pipe(
        Effect.mapError(failure("open")),
        Effect.provideService(Scope.Scope, scope),
        Effect.provideService(FileSystem.FileSystem, fs)
      )
  // A new file's directory entry is only durable once the folder is synced.
  // Not every platform can open a folder for syncing, so this is best effort.
  const syncFolder = Effect.scoped(fs.open(folder, { flag: "r" }).pipe(Effect.flatMap((opened) => opened.sync))).pipe(
    Effect.ignore
  )
  return {
    read:
      journalFile.readAll === undefined
        ? fs.readFile(file).pipe(
            Effect.map(Option.some),
            Effect.catchIf(
              (error) => error.reason._tag === "NotFound",
              () => Effect.succeed(Option.none<Uint8Array>())
            ),
            Effect.mapError(failure("read"))
          )
        : journalFile.readAll(file).pipe(Effect.mapError((error) => ({ operation: "read", detail: error.detail }))),
    open,
    create: (scope) =>
      fs.makeDirectory(folder, { recursive: true }).pipe(
        Effect.mapError(failure("create folder")),
        Effect.andThen(open(scope)),
        Effect.tap(() => syncFolder)
      ),
    replace: (bytes) => {
      const temp = path.join(folder, DurableFiles.temporaryName(path.basename(file)))
      return Effect.scoped(
        Effect.gen(function* () {
          const handle = yield* fs.open(temp, { flag: "wx" })
          yield* handle.writeAll(bytes)
          yield* handle.sync
        })
      ).pipe(
        Effect.andThen(fs.rename(temp, file)),
        Effect.mapError(failure("repair")),
        Effect.onError(() => fs.remove(temp).pipe(Effect.ignore)),
        Effect.andThen(syncFolder)
      )
    }
  }
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** An append handle over one journal's lines in memory: appends never fail, syncing has nothing to do. */
const memoryHandle = (lines: Array<string>): JournalStorage.AppendHandle => {
  const append = (line: string) => {
    lines.push(line)
  }
  const truncate = (size: number) => {
    let total = 0
    for (const line of lines) total += ArtifactPointer.utf8Length(line)
    while (lines.length > 0 && total - ArtifactPointer.utf8Length(lines[lines.length - 1] as string) >= size) {
      total -= ArtifactPointer.utf8Length(lines.pop() as string)
    }
    if (total > size && lines.length > 0) {
      const last = encoder.encode(lines.pop() as string)
      lines.push(decoder.decode(last.subarray(0, last.length - (total - size))))
    }
  }
  return {
    append: (line) => Effect.sync(() => append(line)),
    write: (line) => Effect.sync(() => append(line)),
    sync: Effect.void,
    truncate: (size) => Effect.sync(() => truncate(size)),
    blocking: { append, write: append, sync: () => {}, truncate }
  }
}

const memoryMedium = (texts: Map<string, Array<string>>, file: string): JournalMedium => ({
  read: Effect.sync(() => {
    const lines = texts.get(file)
    return lines === undefined ? Option.none() : Option.some(encoder.encode(lines.join("")))
  }),
  open: () =>
    Effect.suspend(() => {
      const lines = texts.get(file)
      return lines === undefined
        ? Effect.fail({ operation: "open", detail: "the memory-only journal does not exist" })
        : Effect.succeed(memoryHandle(lines))
    }),
  create: () =>
    Effect.sync(() => {
      const lines: Array<string> = []
      texts.set(file, lines)
      return memoryHandle(lines)
    }),
  replace: (bytes) =>
    Effect.sync(() => {
      texts.set(file, [decoder.decode(bytes)])
    })
})

/**
 * The medium of the journal at `file` (inside `folder`) under `durability`:
 * the memory-only store's lines, or the file through the host's
 * `JournalStorage.JournalFile`. A memory-only choice whose store this package did not make
 * is refused: it holds no lines to replay.
 */
export const journalMedium = Effect.fnUntraced(function* (
  durability: JournalStorage.Durability,
  journalFile: JournalStorage.JournalFileShape,
  folder: string,
  file: string
): Effect.fn.Return<JournalMedium, MediumFailure, FileSystem.FileSystem | Path.Path> {
  switch (durability._tag) {
    case "PerEntry":
    case "GroupCommit":
      return fileMedium(yield* FileSystem.FileSystem, yield* Path.Path, journalFile, folder, file)
    case "MemoryOnly": {
      const texts = linesOf(durability.journals)
      if (texts === undefined) {
        return yield* Effect.fail({
          operation: "open",
          detail: "the memory-only store was not made by JournalStorage.memoryOnly()"
        })
      }
      return memoryMedium(texts, file)
    }
    default:
      return yield* Effect.fail({
        operation: "open",
        detail: `unknown journal durability ${JSON.stringify((durability as { readonly _tag?: unknown })._tag)}`
      })
  }
})

// The medium each journal open for writing in this process was opened on, by absolute file. Where a journal
// lives is its writer's choice: while it is open, every reader of the file reads that medium, whatever
// durability the reader itself was given.
const writerMedia = new Map<string, JournalMedium>()

/**
 * Makes `medium` the medium of `file` for every reader in this process until
 * the scope closes. Only the journal's single writer (claimed beforehand)
 * holds a file's medium.
 */
export const holdMedium = (file: string, medium: JournalMedium): Effect.Effect<void, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      writerMedia.set(file, medium)
    }),
    () =>
      Effect.sync(() => {
        if (writerMedia.get(file) === medium) writerMedia.delete(file)
      })
  )

/** The medium the writer of `file` in this process opened it on; `undefined` while no writer has it open. */
export const heldMedium = (file: string): JournalMedium | undefined => writerMedia.get(file)

/**
 * Why a reader that found no journal at `file` under `durability` must not
 * answer "no journal": a memory-only store of this process still holds one
 * at that path, under another choice than the reader's. `undefined` when no
 * store does (then there is no journal anywhere this process could read).
 */
export const absentHere = (durability: JournalStorage.Durability, file: string): MediumFailure | undefined =>
  heldInMemory(file)
    ? {
        operation: "read",
        detail: `no journal under the durability this reader was given (${durability._tag === "MemoryOnly" ? "another memory-only store" : `${durability._tag}: the file`}), but a memory-only store of this process (JournalStorage.memoryOnly()) holds one at this path: read it under the durability its writer was given`
      }
    : undefined
