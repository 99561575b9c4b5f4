/**
 * Following a journal file as it grows (`tessera-inspect --follow`): its
 * size polled, the bytes after the last complete line read, and each line
 * that ends with its newline decoded and emitted, in order.
 *
 * Why a newline decides: an entry's line is complete once its newline is
 * on disk, so bytes after the last newline are an append in progress (or a
 * crash's cut line), not an entry yet. They are read again on every poll from the end of
 * the last complete line, never kept, so a writer that reopens the journal,
 * cuts that tail and appends over it is read as it now is.
 *
 * @internal
 */
import type * as Ids from "@tessera/core/Ids"
import * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Stream from "effect/Stream"
import { type EntryFilter, matches } from "./inspectFilter.ts"
import { TaskNotFound } from "./inspectReport.ts"
import { checkStoreFolder, InspectIoError } from "./storeFolder.ts"

const newline = 0x0a

/** How a chunk of bytes is cut into the lines that are entries, and how many bytes those lines took. */
export type LineSplitter = (bytes: Uint8Array) => {
  readonly lines: ReadonlyArray<Uint8Array>
  readonly consumed: number
}

/** Every line that ends with its newline; the bytes after the last newline are left for a later poll. */
export const completeLines: LineSplitter = (bytes) => {
  const lines: Array<Uint8Array> = []
  let start = 0
  for (let index = bytes.indexOf(newline); index >= 0; index = bytes.indexOf(newline, start)) {
    lines.push(bytes.subarray(start, index))
    start = index + 1
  }
  return { lines, consumed: start }
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
/** One line's entry, or why it is not one (the reason `Journal.readEntries` would give). */
const decodeLine = (bytes: Uint8Array): JournalEntry.Entry | string => {
  let text: string | undefined
  try {
    text = utf8.decode(bytes)
  } catch {
    text = undefined
  }
  return Journal.decodeLine(text)
}

interface Position {
  /** Bytes of the file up to and including the newline of the last line emitted. */
  readonly offset: number
  /** Lines emitted (a blank line counts: it is a line of the file). */
  readonly lines: number
  readonly polls: number
}

/** Options of {@link followFile}. */
export interface FollowFileOptions {
  /** Time between two looks at the file's size. */
  readonly interval: Duration.Input
  /** How bytes are cut into entry lines; {@link completeLines} unless a test swaps it. */
  readonly split?: LineSplitter
}

/**
 * The entries of the journal at `file`, from its first line, then each one
 * as it is appended; never ends by itself. Fails `JournalCorrupt` (file and
 * 1-based line) on a complete line that is not an entry, and
 * `InspectIoError` when the file cannot be read or shrinks below what was
 * already read (repaired or replaced: follow it again).
 */
export const followFile = (
  file: string,
  options: FollowFileOptions
): Stream.Stream<JournalEntry.Entry, Journal.JournalCorrupt | InspectIoError, FileSystem.FileSystem> => {
  const split = options.split ?? completeLines
  const ioError = (operation: string) => (error: { readonly message: string }) =>
    new InspectIoError({ path: file, operation, detail: error.message })
  const poll = Effect.fnUntraced(function* (position: Position) {
    if (position.polls > 0) yield* Effect.sleep(options.interval)
    const next = { ...position, polls: position.polls + 1 }
    const fs = yield* FileSystem.FileSystem
    const size = Number((yield* fs.stat(file).pipe(Effect.mapError(ioError("stat the journal")))).size)
    if (size < position.offset) {
      return yield* new InspectIoError({
        path: file,
        operation: "follow the journal",
        detail: `it shrank to ${size} bytes below the ${position.offset} already read (repaired or replaced); follow it again`
      })
    }
    if (size === position.offset) return [[], Option.some(next)] as const
    const bytes = yield* Effect.scoped(
      Effect.flatMap(fs.open(file, { flag: "r" }), (handle) =>
        handle.readAlloc(size - position.offset, { position: BigInt(position.offset) })
      )
    ).pipe(Effect.mapError(ioError("read the journal")))
    if (Option.isNone(bytes)) return [[], Option.some(next)] as const
    const { consumed, lines } = split(bytes.value)
    const entries: Array<JournalEntry.Entry> = []
    let line = position.lines
    for (const text of lines) {
      line += 1
      // A blank line is what an editor may leave at the end of a file; the journal tolerates it there only.
      if (text.length === 0) continue
      const entry = decodeLine(text)
      if (typeof entry === "string") return yield* new Journal.JournalCorrupt({ file, line, detail: entry })
      entries.push(entry)
    }
    return [entries, Option.some({ offset: position.offset + consumed, lines: line, polls: next.polls })] as const
  })
  return Stream.paginate<Position, JournalEntry.Entry, Journal.JournalCorrupt | InspectIoError, FileSystem.FileSystem>(
    { offset: 0, lines: 0, polls: 0 },
    poll
  )
}

/** Options of {@link followTask}. */
export interface FollowTaskOptions {
  readonly filter: EntryFilter
  readonly interval: Duration.Input
}

/**
 * The entries of a task's journal in a namespace folder that match
 * `filter`, followed as {@link followFile} follows them. The folder is
 * checked to be a complete store first, as the inspector checks it (opening
 * a store on another folder would create one); {@link TaskNotFound} when no
 * journal volume holds the task's journal.
 */
export const followTask = (folder: string, task: Ids.TaskId, options: FollowTaskOptions) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const path = yield* Path.Path
      const fs = yield* FileSystem.FileSystem
      const root = path.resolve(folder)
      yield* checkStoreFolder(root)
      const store = yield* VolumeStore.open({ root })
      const journalFolders = (yield* store.list())
        .filter((descriptor) => descriptor.kind === "Journal")
        .map((descriptor) => VolumeStore.dataFolder(path, store.root, descriptor.id))
      for (const journalFolder of journalFolders) {
        const file = path.join(journalFolder, Journal.fileName(task))
        if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) continue
        return followFile(file, { interval: options.interval }).pipe(
          Stream.filter((entry) => matches(options.filter, entry))
        )
      }
      return yield* new TaskNotFound({ task, searched: journalFolders })
    })
  )
