/**
 * The durable journal: the host's append-only record of one task.
 *
 * One JSON Lines file per task (`<folder>/<task>.jsonl`), one Schema-encoded
 * entry per line. The journal records *that* something happened and how big
 * it was (sizes and SHA-256 digests), never the bodies: requests, responses
 * and tool results stay out of it, and so do summaries and artifacts, which
 * are private content recorded here only by path, size and digest.
 *
 * Guarantees:
 *
 * - **Durable appends.** An append returns only after its line and newline
 *   were written and the file was synced. An append that cannot follow the
 *   journal's state (a result for a call nobody made, a second open turn) is
 *   refused before anything is written. How the file is written and synced
 *   (on worker threads by default, blocking in the Node host) is the
 *   `JournalFile` reference's; every implementation keeps this contract.
 * - **Reopen rebuilds state.** Opening an existing journal replays every
 *   entry through the same transition function that guards appends, so the
 *   state of a reopened journal equals the state the writer had.
 * - **A cut tail is recovered, never hidden.** A last line without its
 *   newline is what a crash mid-append leaves. On reopen the file is
 *   truncated back to its last complete line and a `TruncationRecovered`
 *   entry records where the cut was and what was dropped.
 * - **Corruption is loud.** A complete line that does not decode, or does
 *   not follow from the lines before it, fails the open with
 *   {@link JournalCorrupt}, naming the file and the 1-based line.
 *
 * - **Not a journal is refused, untouched.** Bytes after the last newline
 *   that are neither a complete entry nor the start of a line this journal
 *   writes (garbage, another format, a file with no newline at all that is
 *   not one entry) fail the open with {@link JournalNotRecognized} and the
 *   file is left as it is. A complete entry that only lacks its newline is
 *   kept and its line finished; blank lines ending the file are cut and the
 *   cut recorded like a cut line.
 * - **One writer per journal.** {@link open} claims the file for its scope:
 *   a second open in the same process fails {@link TaskInUse} until the
 *   first scope closes. Across processes the host takes a lock per task
 *   journal (the local hosts do; see `@tessera/node`).
 * - **Repair is explicit.** A journal another writer interleaved lines into
 *   stays {@link JournalCorrupt} until {@link repair} is called, which
 *   replaces it atomically by its longest valid prefix followed by a
 *   {@link JournalRepaired} entry describing what was dropped.
 *
 * @since 0.1.0
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { sha256Bytes } from "./internal/digest.ts"
import { eachLine } from "./internal/journalLines.ts"
import { absentHere, heldMedium, holdMedium, journalMedium, type MediumFailure } from "./internal/journalMedium.ts"
import {
  advance,
  type CallApproval,
  emptyState,
  summaryKey as internalSummaryKey,
  type JournalState,
  makeReplay,
  type OwedCall,
  type SummaryRecord,
  type TurnState
} from "./internal/journalState.ts"
import { JournalTap, tapped } from "./internal/journalTap.ts"
import * as JournalDurability from "./JournalDurability.ts"
import * as JournalFile from "./JournalFile.ts"
import * as StoreLayout from "./StoreLayout.ts"

/**
 * The entry vocabulary, stated in `JournalEntry` and re-exported here so
 * `Journal.Entry` and the rest stay where writers look for them.
 *
 * @since 0.1.0
 */
export * from "./JournalEntry.ts"

import { Entry, type EntryInput } from "./JournalEntry.ts"

/**
 * The state a journal rebuilds: {@link JournalState}, its turns ({@link TurnState}), the calls
 * they owe ({@link OwedCall}) with their approvals ({@link CallApproval}), and its summary
 * records ({@link SummaryRecord}). Declared with the journal's transition function, in the
 * package's internals.
 *
 * @since 0.1.0
 * @category state
 */
export type { CallApproval, JournalState, OwedCall, SummaryRecord, TurnState }

/**
 * The calls of a turn that wait for the host's decision.
 *
 * @since 0.1.0
 * @category state
 */
export const awaitingApproval = (turn: TurnState): ReadonlyArray<OwedCall> =>
  turn.owedCalls.filter((call) => call.approval?.status === "Requested")

/**
 * The key of {@link JournalState.summaries} for an operation and step.
 *
 * @since 0.1.0
 * @category state
 */
export const summaryKey: (operation: string, step: number) => string = internalSummaryKey

/**
 * The open turn, if there is one.
 *
 * @since 0.1.0
 * @category state
 */
export const openTurn = (state: JournalState): Option.Option<TurnState> => {
  const last = state.turns.at(-1)
  return last !== undefined && last.status === "Open" ? Option.some(last) : Option.none()
}

/**
 * A complete line of the journal does not decode or does not follow from the
 * lines before it. The file is left as it is.
 *
 * @since 0.1.0
 * @category errors
 */
export class JournalCorrupt extends Schema.TaggedError<JournalCorrupt>()("JournalCorrupt", {
  file: Schema.String,
  line: Schema.Int,
  detail: Schema.String
}) {
  override get message(): string {
    return `journal ${this.file} is corrupt at line ${this.line}: ${this.detail}`
  }
}

/**
 * Reading, writing or syncing the journal file failed. An append that fails
 * this way was rolled back to the last complete line when possible.
 *
 * @since 0.1.0
 * @category errors
 */
export class JournalIOError extends Schema.TaggedError<JournalIOError>()("JournalIOError", {
  file: Schema.String,
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `journal ${this.file}: ${this.operation} failed: ${this.detail}`
  }
}

/**
 * An append was refused because the entry does not follow from the
 * journal's state (for example a result for a call nobody made) or does not
 * match its Schema (for example a malformed digest). Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class JournalSequenceError extends Schema.TaggedError<JournalSequenceError>()("JournalSequenceError", {
  file: Schema.String,
  entry: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `journal ${this.file} refused ${this.entry}: ${this.detail}`
  }
}

/**
 * A turn was opened while another one is still open. Close, resume or
 * abandon the open one first.
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnAlreadyOpen extends Schema.TaggedError<TurnAlreadyOpen>()("TurnAlreadyOpen", {
  task: Ids.TaskId,
  turn: Schema.Int
}) {
  override get message(): string {
    return `task ${this.task} already has turn ${this.turn} open; resume or abandon it first`
  }
}

/**
 * Closing, resuming or abandoning needs an open turn and there is none.
 *
 * @since 0.1.0
 * @category errors
 */
export class NoOpenTurn extends Schema.TaggedError<NoOpenTurn>()("NoOpenTurn", {
  task: Ids.TaskId,
  operation: Schema.String
}) {
  override get message(): string {
    return `task ${this.task} has no open turn to ${this.operation}`
  }
}

/**
 * Why a turn cannot be closed yet.
 *
 * - `AwaitingResponse`: a request was dispatched and is still unanswered.
 * - `ToolResultsMissing`: calls of the last response have no result (`pendingCalls` names them).
 * - `NoFinalAnswer`: the last response still asked for tool calls (or there was none).
 *
 * @since 0.1.0
 * @category errors
 */
export const UnfinishedReason = Schema.Literals(["AwaitingResponse", "ToolResultsMissing", "NoFinalAnswer"])

/**
 * Closing a turn that is not finished. Nothing was written; the turn stays
 * open and can be resumed (continued) or abandoned.
 *
 * @since 0.1.0
 * @category errors
 */
export class TurnUnfinished extends Schema.TaggedError<TurnUnfinished>()("TurnUnfinished", {
  task: Ids.TaskId,
  turn: Schema.Int,
  reason: UnfinishedReason,
  pendingCalls: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const detail =
      this.reason === "AwaitingResponse"
        ? "a model request is still unanswered"
        : this.reason === "ToolResultsMissing"
          ? `tool calls without results: ${this.pendingCalls.join(", ")}`
          : "the model has not given a final answer"
    return `cannot close unfinished turn ${this.turn} of task ${this.task}: ${detail}`
  }
}

/**
 * The task's journal already has a writer: another fiber of this process
 * (`holder` is `this process`) or another process (`holder` names its pid
 * and host). One writer per journal: nothing was opened or written.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskInUse extends Schema.TaggedError<TaskInUse>()("TaskInUse", {
  task: Ids.TaskId,
  file: Schema.String,
  holder: Schema.String
}) {
  override get message(): string {
    return `task ${this.task} is in use: its journal ${this.file} is already open for writing by ${this.holder}`
  }
}

/**
 * The file is not a journal this library wrote, and nothing was changed:
 * its bytes after the last newline (all of them, when it has none) are
 * neither complete entries nor the start of one cut by a crash (garbage, or
 * a file of another format). `reason` says what was found.
 *
 * @since 0.1.0
 * @category errors
 */
export class JournalNotRecognized extends Schema.TaggedError<JournalNotRecognized>()("JournalNotRecognized", {
  file: Schema.String,
  line: Schema.Int,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.file} is not a journal (left untouched): line ${this.line} ${this.reason}`
  }
}

/**
 * Every way a journal operation can fail.
 *
 * @since 0.1.0
 * @category errors
 */
export type JournalError =
  | JournalCorrupt
  | JournalNotRecognized
  | TaskInUse
  | JournalIOError
  | JournalSequenceError
  | TurnAlreadyOpen
  | NoOpenTurn
  | TurnUnfinished

/**
 * The journal of one task.
 *
 * @since 0.1.0
 * @category models
 */
export interface JournalService {
  readonly task: Ids.TaskId
  /** Absolute path of the journal file. */
  readonly file: string
  readonly state: Effect.Effect<JournalState>
  /**
   * Appends one entry after checking it follows the state. Durable when it
   * returns under the default durability; under group commit durable at the
   * next commit point (see `JournalDurability`); in this process only under
   * memory-only.
   */
  readonly append: (entry: EntryInput) => Effect.Effect<Entry, JournalIOError | JournalSequenceError>
  /**
   * Makes every entry appended so far durable now. Nothing to do unless
   * group commit left entries unsynced. A failed sync breaks the journal:
   * later appends fail until it is reopened.
   */
  readonly sync: Effect.Effect<void, JournalIOError>
  /** Opens the next turn; fails with {@link TurnAlreadyOpen} when one is open. */
  readonly openTurn: Effect.Effect<TurnState, JournalIOError | JournalSequenceError | TurnAlreadyOpen>
  /** Records that the open turn continues; fails with {@link NoOpenTurn}. */
  readonly resumeTurn: Effect.Effect<TurnState, JournalIOError | JournalSequenceError | NoOpenTurn>
  /** Closes the open turn; fails with {@link TurnUnfinished} unless it is answered and complete. */
  readonly closeTurn: Effect.Effect<TurnState, JournalIOError | JournalSequenceError | NoOpenTurn | TurnUnfinished>
  /** Gives up on the open turn, finished or not. */
  readonly abandonTurn: (reason: string) => Effect.Effect<TurnState, JournalIOError | JournalSequenceError | NoOpenTurn>
  /**
   * Claims the journal for `agent` (the entry gate calls it for every
   * admitted binding): when the journal already belongs to another agent
   * (recorded by a `TurnOpened`, or claimed earlier in this process and not
   * yet recorded), answers that agent and claims nothing. Otherwise the
   * next `TurnOpened` written without an agent records this one.
   */
  readonly claimAgent: (agent: Ids.AgentId) => Effect.Effect<Option.Option<Ids.AgentId>>
}

/**
 * The journal of the task being run, as a service for the executor.
 *
 * @since 0.1.0
 * @category services
 */
export class Journal extends Context.Service<Journal, JournalService>()("@tessera/runtime/Journal") {}

/**
 * Where a journal lives: the journal volume's folder and the task.
 *
 * @since 0.1.0
 * @category models
 */
export interface JournalLocation {
  readonly folder: string
  readonly task: Ids.TaskId
}

/**
 * The journal file of a task inside a folder.
 *
 * @since 0.1.0
 * @category models
 */
export const fileName: (task: Ids.TaskId) => string = StoreLayout.journalFileName

const decodeTask = InvalidInput.decode(Ids.TaskId, "Journal", "task")

const newline = 0x0a
const decodeAnyEntry = Schema.decodeUnknownResult(Entry)
/** The entry a parsed line is, or why it is not one. */
const decodeEntry = (json: unknown): Entry | Schema.SchemaError => {
  const decoded = decodeAnyEntry(json)
  return Result.isSuccess(decoded) ? decoded.success : decoded.failure
}
// `EntryLine`'s encoding is the entry's, then `JSON.stringify`; done in two steps here because the
// string transformation runs as an effect, which a synchronous encode would run on a fiber of its own.
const encodeEntry = Schema.encodeResult(Entry)

interface Replayed {
  readonly state: JournalState
  /** Every complete entry, when asked for (reopening needs only the state). */
  readonly entries: ReadonlyArray<Entry>
  /** Length of the file up to and including the newline of its last entry. */
  readonly completeBytes: number
  /** Blank lines after the last entry (newlines only), tolerated at the end of a file and cut on reopen. */
  readonly blankBytes: number
  /** Bytes after the last newline: a line cut mid-append. */
  readonly tail: Uint8Array<ArrayBuffer>
  /** The bytes after the last newline are a complete entry that only lacks its newline (already in `state`). */
  readonly tailIsEntry: boolean
}

/** What every line this journal writes starts with: the encoded entry's tag comes first. */
const lineStart = new TextEncoder().encode('{"_tag":"')

/**
 * Whether the bytes after the last newline can be the start of a line this
 * journal wrote, cut by a crash mid-append: a prefix of the line opening
 * followed by no NUL and no control byte other than a tab. Garbage, or a
 * file of another format, is not.
 */
const isCutLine = (tail: Uint8Array): boolean => {
  const opening = Math.min(tail.length, lineStart.length)
  for (let index = 0; index < opening; index++) if (tail[index] !== lineStart[index]) return false
  for (let index = opening; index < tail.length; index++) {
    const byte = tail[index] as number
    if (byte < 0x20 && byte !== 0x09) return false
  }
  return true
}

/** One line's entry, or why it is not one; `JSON.parse`, the entry Schema, then the transition. */
const decodeLine = (text: string | undefined, fold: ReturnType<typeof makeReplay>): Entry | string => {
  if (text === undefined) return "the line is not valid UTF-8"
  if (text.length === 0) return "the line is blank (a blank line is tolerated only at the end of the file)"
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    return `the line is not JSON: ${error instanceof Error ? error.message : String(error)}`
  }
  const decoded = decodeEntry(json)
  if (Schema.isSchemaError(decoded)) return decoded.message
  const refused = fold.add(decoded)
  return refused ?? decoded
}

/**
 * Decodes and folds every complete line in one synchronous pass: each line
 * is decoded as UTF-8 (see `internal/journalLines.ts`), parsed with
 * `JSON.parse`, checked against the entry Schema, and applied by the same
 * transition function that guards appends. Then it tells what follows the
 * last entry: blank lines (tolerated), a cut line, a complete entry without
 * its newline, or bytes no journal writes ({@link JournalNotRecognized}).
 */
const replay = (
  file: string,
  task: Ids.TaskId,
  bytes: Uint8Array,
  keepEntries: boolean
): Result.Result<Replayed, JournalCorrupt | JournalNotRecognized> => {
  const afterLastNewline = bytes.lastIndexOf(newline) + 1
  const tail = bytes.slice(afterLastNewline)
  // Blank lines ending the file (nothing after them) are tolerated: an editor or a tool may add one.
  let completeBytes = afterLastNewline
  if (tail.length === 0) {
    while (
      completeBytes >= 1 &&
      bytes[completeBytes - 1] === newline &&
      (completeBytes === 1 || bytes[completeBytes - 2] === newline)
    ) {
      completeBytes -= 1
    }
  }
  const blankBytes = afterLastNewline - completeBytes
  const fold = makeReplay(task)
  const entries: Array<Entry> = []
  let line = 0
  const corruption = eachLine(bytes, completeBytes, (text): JournalCorrupt | undefined => {
    line += 1
    const decoded = decodeLine(text, fold)
    if (typeof decoded === "string") return new JournalCorrupt({ file, line, detail: decoded })
    if (keepEntries) entries.push(decoded)
    return undefined
  })
  if (corruption !== undefined) return Result.fail(corruption)
  let tailIsEntry = false
  if (tail.length > 0) {
    const text = utf8Text(tail)
    const asEntry = text === undefined || !text.startsWith('{"_tag":"') ? undefined : decodeLine(text, fold)
    if (asEntry !== undefined && typeof asEntry !== "string") {
      tailIsEntry = true
      if (keepEntries) entries.push(asEntry)
    } else if (!isCutLine(tail)) {
      return Result.fail(
        new JournalNotRecognized({
          file,
          line: line + 1,
          reason:
            afterLastNewline === 0
              ? `is ${tail.length} bytes without a newline that are neither an entry nor the start of one`
              : `ends the file with ${tail.length} bytes that are neither an entry nor the start of one`
        })
      )
    }
  }
  return Result.succeed({ state: fold.state(), entries, completeBytes, blankBytes, tail, tailIsEntry })
}

const tailDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const utf8Text = (bytes: Uint8Array): string | undefined => {
  try {
    return tailDecoder.decode(bytes)
  } catch {
    return undefined
  }
}

/**
 * Reads every complete entry of a journal without opening it for writing
 * (and without recovering a cut tail). For inspection and tests. A journal
 * that does not exist has no entries (journals are created by their first
 * entry), so a task that never journaled reads as empty.
 *
 * Reads where the journal lives: while a writer in this process has it
 * open, the medium that writer opened it on (a memory-only journal is read
 * from its store even by a reader given the default durability); otherwise
 * under the durability in use. A journal absent there that a memory-only
 * store of this process still holds fails `JournalIOError` saying so,
 * never reads as empty.
 *
 * @since 0.1.0
 * @category reading
 */
export const readEntries = Effect.fnUntraced(function* (
  location: JournalLocation
): Effect.fn.Return<
  ReadonlyArray<Entry>,
  JournalCorrupt | JournalNotRecognized | JournalIOError | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path
> {
  const path = yield* Path.Path
  const task = yield* decodeTask(location.task)
  const file = path.resolve(location.folder, fileName(task))
  const medium = yield* mediumAt(location.folder, file)
  const bytes = yield* medium.read.pipe(Effect.mapError(mediumError(file)))
  if (Option.isNone(bytes)) {
    const elsewhere = absentHere(yield* JournalDurability.JournalDurability, file)
    return elsewhere === undefined ? [] : yield* Effect.fail(mediumError(file)(elsewhere))
  }
  const replayed = replay(file, task, bytes.value, true)
  if (Result.isFailure(replayed)) return yield* replayed.failure
  return replayed.success.entries
})

/**
 * The state a journal's entries lead to, folded through the same
 * transition that guards appends and reopens: for readers holding entries
 * (from {@link readEntries}) that want the turns, owed calls and approvals
 * they describe. Fails with why the first entry that does not follow
 * cannot (the reason {@link JournalCorrupt} would give).
 *
 * @since 0.1.0
 * @category reading
 */
export const stateOf = (task: Ids.TaskId, entries: Iterable<Entry>): Result.Result<JournalState, string> => {
  const fold = makeReplay(task)
  for (const entry of entries) {
    const refused = fold.add(entry)
    if (refused !== undefined) return Result.fail(`entry ${entry.seq}: ${refused}`)
  }
  return Result.succeed(fold.state())
}

/** A medium failure as the journal reports it. */
const mediumError = (file: string) => (failure: MediumFailure) =>
  new JournalIOError({ file, operation: failure.operation, detail: failure.detail })

/**
 * Where the journal at `file` lives: the medium its writer in this process
 * opened it on, while one has it open (the writer's durability decided where
 * the lines are); otherwise the medium of the durability in use. Every
 * reader and writer of a journal resolves it here.
 */
const mediumAt = (folder: string, file: string) =>
  Effect.suspend(() => {
    const held = heldMedium(file)
    if (held !== undefined) return Effect.succeed(held)
    return Effect.flatMap(
      Effect.all([JournalDurability.JournalDurability, JournalFile.JournalFile]),
      ([durability, journalFile]) =>
        journalMedium(durability, journalFile, folder, file).pipe(Effect.mapError(mediumError(file)))
    )
  })

/** The medium the writer that claimed `file` opens it on; every reader of `file` reads it until the scope closes. */
const writerMediumAt = (folder: string, file: string) =>
  Effect.tap(mediumAt(folder, file), (medium) => holdMedium(file, medium))

// Under group commit these entries wait for the step's sync (or the next commit point); every other kind, a new
// one included, is synced as soon as it is written, because something outside the journal acts on it at once.
const groupedEntries: ReadonlySet<Entry["_tag"]> = new Set<Entry["_tag"]>([
  "TurnOpened",
  "TurnResumed",
  "RequestDispatched",
  "ResponseReceived",
  "SummaryRequestAnswered",
  "ToolCalled",
  "ToolResulted",
  "Admission",
  "SummaryStarted",
  "SummaryStaged",
  "SummarySuperseded",
  "ArtifactOffloaded",
  "CompactionWarning"
])

// The journals open for writing in this process, by absolute file: one writer per journal.
const writers = new Set<string>()

/** Registers this scope as the only writer of `file` in the process, until the scope closes. */
const claimWriter = (task: Ids.TaskId, file: string): Effect.Effect<void, TaskInUse, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      if (writers.has(file)) return Effect.fail(new TaskInUse({ task, file, holder: "this process" }))
      writers.add(file)
      return Effect.void
    }),
    () => Effect.sync(() => writers.delete(file))
  )

/**
 * Opens the journal of a task in a folder and rebuilds its state. A journal
 * that does not exist yet is created (folder and file) by its first entry,
 * never by opening it, so an entry refused before anything was journaled
 * leaves no file behind. The task id is decoded first (`InvalidInput`
 * naming `task`): it becomes a file name. The file handle lives as long as
 * the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function* (
  location: JournalLocation
): Effect.fn.Return<
  JournalService,
  JournalCorrupt | JournalNotRecognized | JournalIOError | TaskInUse | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path | Scope.Scope
> {
  const path = yield* Path.Path
  const task = yield* decodeTask(location.task)
  const file = path.resolve(location.folder, fileName(task))
  const ioError = (operation: string) => (error: { readonly message: string }) =>
    new JournalIOError({ file, operation, detail: error.message })
  yield* claimWriter(task, file)

  const durability = yield* JournalDurability.JournalDurability
  const grouped = durability._tag === "GroupCommit"
  const medium = yield* writerMediumAt(location.folder, file)
  const existing = yield* medium.read.pipe(Effect.mapError(mediumError(file)))
  const replayed = Option.isSome(existing)
    ? yield* Effect.fromResult(replay(file, task, existing.value, false))
    : {
        state: emptyState(task),
        entries: [],
        completeBytes: 0,
        blankBytes: 0,
        tail: new Uint8Array(0),
        tailIsEntry: false
      }

  const scope = yield* Scope.Scope
  // Appends run one at a time (under `lock`, or as one synchronous step with a
  // blocking handle), and only they replace these; a reader always sees a
  // complete value.
  let state = replayed.state
  let size = replayed.completeBytes
  let broken = false
  // Group commit: lines written since the last sync.
  let unsynced = false
  const lock = yield* Semaphore.make(1)

  const syncFailed = (error: { readonly message: string }) => {
    // After a failed sync nothing says which written bytes reached the device; only a reopen knows.
    broken = true
    return ioError("sync")(error)
  }
  /** Syncs what group commit left unsynced, if anything. */
  const syncWith = (opened: JournalFile.AppendHandle): Effect.Effect<void, JournalIOError> =>
    Effect.suspend(() => {
      if (!unsynced) return Effect.void
      if (opened.blocking !== undefined) {
        try {
          opened.blocking.sync()
        } catch (error) {
          return Effect.fail(syncFailed(error instanceof Error ? error : { message: String(error) }))
        }
        unsynced = false
        return Effect.void
      }
      return opened.sync.pipe(
        Effect.matchEffect({
          onSuccess: () =>
            Effect.sync(() => {
              unsynced = false
            }),
          onFailure: (error) => Effect.fail(syncFailed(error))
        }),
        Effect.uninterruptible,
        lock.withPermit
      )
    })

  // A journal that does not exist yet is created by its first entry, not by
  // opening it: an entry refused before anything was journaled leaves no file.
  // Whatever group commit left unsynced is synced before the handle closes.
  const opened = (handle: Effect.Effect<JournalFile.AppendHandle, MediumFailure>) =>
    handle.pipe(
      Effect.mapError(mediumError(file)),
      Effect.tap((handle) => (grouped ? Scope.addFinalizer(scope, Effect.ignore(syncWith(handle))) : Effect.void))
    )
  let handle: JournalFile.AppendHandle | undefined = Option.isSome(existing)
    ? yield* opened(medium.open(scope))
    : undefined

  /** The entry, the state after it and its line, or why it cannot be appended; no I/O. */
  const prepare = (
    input: EntryInput,
    at: number
  ): Result.Result<
    {
      readonly entry: Entry
      readonly next: JournalState
      readonly line: string
      readonly bytes: number
      /** Group commit: sync what is unsynced before writing the line, and whether to sync after it. */
      readonly syncBefore: boolean
      readonly syncAfter: boolean
    },
    JournalIOError | JournalSequenceError
  > => {
    if (broken) {
      return Result.fail(
        new JournalIOError({
          file,
          operation: "append",
          detail: "an earlier append or sync failed and could not be rolled back; reopen the journal"
        })
      )
    }
    const entry = { ...input, seq: state.entries, at } as Entry
    const next = advance(state, entry)
    if (Result.isFailure(next)) {
      return Result.fail(new JournalSequenceError({ file, entry: entry._tag, detail: next.failure }))
    }
    const encoded = encodeEntry(entry)
    if (Result.isFailure(encoded)) {
      return Result.fail(
        new JournalSequenceError({
          file,
          entry: entry._tag,
          detail: `the entry does not match its Schema: ${encoded.failure.message}`
        })
      )
    }
    const line = `${JSON.stringify(encoded.success)}\n`
    // A step's request starts the next group: the step before it is synced first.
    const syncBefore = grouped && unsynced && entry._tag === "RequestDispatched"
    const syncAfter = grouped && !groupedEntries.has(entry._tag)
    return Result.succeed({
      entry,
      next: next.success,
      line,
      bytes: ArtifactPointer.utf8Length(line),
      syncBefore,
      syncAfter
    })
  }

  /** Records a written entry: the file grew by its line, and the state is the one after it. */
  const commit = (written: { readonly bytes: number; readonly entry: Entry; readonly next: JournalState }): Entry => {
    size += written.bytes
    state = written.next
    return written.entry
  }

  const effectfulWrite =
    (handle: JournalFile.AppendHandle) =>
    (input: EntryInput): Effect.Effect<Entry, JournalIOError | JournalSequenceError> =>
      Clock.clockWith((clock) => {
        const prepared = prepare(input, clock.currentTimeMillisUnsafe())
        if (Result.isFailure(prepared)) return Effect.fail(prepared.failure)
        const { line, syncBefore, syncAfter } = prepared.success
        const syncFirst = syncBefore
          ? handle.sync.pipe(
              Effect.mapError(syncFailed),
              Effect.tap(() =>
                Effect.sync(() => {
                  unsynced = false
                })
              )
            )
          : Effect.void
        const written = grouped
          ? handle.write(line).pipe(Effect.tap(() => (syncAfter ? handle.sync : Effect.void)))
          : handle.append(line)
        return syncFirst.pipe(
          Effect.andThen(
            written.pipe(
              Effect.matchEffect({
                onSuccess: () =>
                  Effect.sync(() => {
                    unsynced = grouped && !syncAfter
                    return commit(prepared.success)
                  }),
                onFailure: (error) =>
                  // Leave no partial line behind a failed append: later appends would land after it. The cut syncs
                  // the file, and with it whatever group commit had not synced yet.
                  handle.truncate(size).pipe(
                    Effect.matchEffect({
                      onSuccess: () =>
                        Effect.sync(() => {
                          unsynced = false
                        }),
                      onFailure: () =>
                        Effect.sync(() => {
                          broken = true
                        })
                    }),
                    Effect.andThen(Effect.fail(ioError("append")(error)))
                  )
              })
            )
          )
        )
      }).pipe(Effect.uninterruptible, lock.withPermit)

  // A blocking handle makes the whole append one synchronous step: nothing else runs until it ends,
  // so it needs neither the lock nor the effects around the write.
  const blockingWrite =
    (file: NonNullable<JournalFile.AppendHandle["blocking"]>) =>
    (input: EntryInput): Effect.Effect<Entry, JournalIOError | JournalSequenceError> =>
      Clock.clockWith((clock) => {
        const prepared = prepare(input, clock.currentTimeMillisUnsafe())
        if (Result.isFailure(prepared)) return Effect.fail(prepared.failure)
        const { line, syncBefore, syncAfter } = prepared.success
        if (syncBefore) {
          try {
            file.sync()
          } catch (error) {
            return Effect.fail(syncFailed(error instanceof Error ? error : { message: String(error) }))
          }
          unsynced = false
        }
        try {
          if (grouped) {
            file.write(line)
            if (syncAfter) file.sync()
          } else file.append(line)
        } catch (error) {
          // Leave no partial line behind a failed append: later appends would land after it. The cut syncs the
          // file, and with it whatever group commit had not synced yet.
          try {
            file.truncate(size)
            unsynced = false
          } catch {
            broken = true
          }
          return Effect.fail(ioError("append")(error instanceof Error ? error : { message: String(error) }))
        }
        unsynced = grouped && !syncAfter
        return Effect.succeed(commit(prepared.success))
      })

  const writerOf = (opened: JournalFile.AppendHandle) =>
    opened.blocking === undefined ? effectfulWrite(opened) : blockingWrite(opened.blocking)
  let writeTo = handle === undefined ? undefined : writerOf(handle)
  const firstWrite = lock.withPermit(
    Effect.suspend(() =>
      handle === undefined
        ? Effect.map(opened(medium.create(scope)), (created) => {
            handle = created
            return created
          })
        : Effect.succeed(handle)
    )
  )
  // The agent a gate admitted before the journal recorded one; the next turn opened records it.
  let claimedAgent: Ids.AgentId | undefined
  const stamp = (input: EntryInput): EntryInput =>
    input._tag === "TurnOpened" && input.agent === undefined && claimedAgent !== undefined
      ? { ...input, agent: claimedAgent }
      : input
  const claimAgent = (agent: Ids.AgentId) =>
    Effect.sync(() => {
      const owner = state.agent ?? claimedAgent
      if (owner !== undefined && owner !== agent) return Option.some(owner)
      claimedAgent = agent
      return Option.none<Ids.AgentId>()
    })
  const write = (given: EntryInput): Effect.Effect<Entry, JournalIOError | JournalSequenceError> => {
    const input = stamp(given)
    return writeTo !== undefined
      ? writeTo(input)
      : Effect.flatMap(firstWrite, (opened) => {
          writeTo ??= writerOf(opened)
          return writeTo(input)
        })
  }

  // Only a file that existed can end in a cut or unterminated line.
  const reopened = handle
  if (reopened !== undefined && replayed.tailIsEntry) {
    // The last entry is whole and only lacks its newline: finish its line, losing nothing.
    yield* reopened.append("\n").pipe(Effect.mapError(ioError("finish the last line")))
    size = replayed.completeBytes + replayed.tail.length + 1
  } else if (reopened !== undefined && (replayed.tail.length > 0 || replayed.blankBytes > 0)) {
    // A cut line (or blank lines ending the file) is cut back, and the cut is recorded, never hidden.
    const dropped = replayed.tail.length > 0 ? replayed.tail : new Uint8Array(replayed.blankBytes).fill(newline)
    yield* reopened.truncate(replayed.completeBytes).pipe(Effect.mapError(ioError("truncate cut tail")))
    const droppedSha256 = yield* sha256Bytes(dropped)
    yield* write({
      _tag: "TruncationRecovered",
      line: replayed.state.entries + 1,
      keptBytes: replayed.completeBytes,
      droppedBytes: dropped.length,
      droppedSha256
    }).pipe(
      Effect.catchTag("JournalSequenceError", (error) =>
        Effect.fail(new JournalIOError({ file, operation: "record cut tail", detail: error.message }))
      )
    )
  }

  const currentState = Effect.sync(() => state)
  const current = (operation: string) =>
    Effect.suspend(() =>
      Option.match(openTurn(state), {
        onNone: () => Effect.fail(new NoOpenTurn({ task, operation })),
        onSome: Effect.succeed
      })
    )
  const turnAfter = (turn: number) =>
    Effect.sync(() => state.turns.find((candidate) => candidate.turn === turn) as TurnState)

  const openTurnEffect = Effect.gen(function* () {
    const open = openTurn(state)
    if (Option.isSome(open)) return yield* new TurnAlreadyOpen({ task, turn: open.value.turn })
    const turn = state.turns.length + 1
    yield* write({ _tag: "TurnOpened", turn, task })
    return yield* turnAfter(turn)
  })

  const resumeTurn = Effect.gen(function* () {
    const open = yield* current("resume")
    yield* write({ _tag: "TurnResumed", turn: open.turn })
    return yield* turnAfter(open.turn)
  })

  const closeTurn = Effect.gen(function* () {
    const open = yield* current("close")
    const unfinished = (reason: TurnUnfinished["reason"]) =>
      new TurnUnfinished({ task, turn: open.turn, reason, pendingCalls: open.owedCalls.map((call) => call.callId) })
    if (open.awaitingResponse) return yield* unfinished("AwaitingResponse")
    if (open.owedCalls.length > 0) return yield* unfinished("ToolResultsMissing")
    if (!open.answered) return yield* unfinished("NoFinalAnswer")
    yield* write({ _tag: "TurnClosed", turn: open.turn, steps: open.steps })
    return yield* turnAfter(open.turn)
  })

  const abandonTurn = (reason: string) =>
    Effect.gen(function* () {
      const open = yield* current("abandon")
      yield* write({ _tag: "TurnAbandoned", turn: open.turn, steps: open.steps, reason })
      return yield* turnAfter(open.turn)
    })

  return {
    task,
    file,
    state: currentState,
    append: (input: EntryInput) =>
      tapped(input._tag)
        ? Effect.tap(write(input), (entry) =>
            Effect.flatMap(Effect.service(JournalTap), (tap) => (tap === undefined ? Effect.void : tap(entry)))
          )
        : write(input),
    sync: Effect.suspend(() => (handle === undefined ? Effect.void : syncWith(handle))),
    openTurn: openTurnEffect,
    resumeTurn,
    closeTurn,
    abandonTurn,
    claimAgent
  }
})

/**
 * What {@link repair} did: the 1-based line of the first entry that did not
 * follow, how many entries and bytes were kept, how many bytes were dropped,
 * and why that line was refused.
 *
 * @since 0.1.0
 * @category repair
 */
export interface Repaired {
  readonly line: number
  readonly keptEntries: number
  readonly keptBytes: number
  readonly droppedBytes: number
  readonly detail: string
}

/**
 * Repairs a journal that {@link open} refuses as {@link JournalCorrupt} (for
 * example after two writers interleaved their lines): keeps its longest
 * valid prefix (every line up to the first one that does not decode or does
 * not follow) and appends a {@link JournalRepaired} entry saying what was
 * dropped (size and SHA-256, never the bytes' meaning). The repaired file is
 * written and synced under a temporary name and renamed over the journal, so
 * a crash leaves either the old file or the repaired one.
 *
 * Explicit only: nothing calls it on its own. `None` when the journal opens
 * as it is (a cut last line is not corruption: {@link open} recovers it).
 * Fails {@link TaskInUse} while this process has the journal open; across
 * processes the caller holds the host's task lock.
 *
 * @since 0.1.0
 * @category repair
 */
export const repair = Effect.fnUntraced(function* (
  location: JournalLocation
): Effect.fn.Return<Option.Option<Repaired>, JournalIOError | TaskInUse, FileSystem.FileSystem | Path.Path> {
  const path = yield* Path.Path
  const task = location.task
  const file = path.resolve(location.folder, fileName(task))
  const ioError = (operation: string) => (error: { readonly message: string }) =>
    new JournalIOError({ file, operation, detail: error.message })
  return yield* Effect.scoped(
    Effect.gen(function* () {
      yield* claimWriter(task, file)
      const medium = yield* writerMediumAt(location.folder, file)
      const read = yield* medium.read.pipe(Effect.mapError(mediumError(file)))
      if (Option.isNone(read)) return yield* ioError("read")({ message: "the journal does not exist" })
      const bytes = read.value
      if (Result.isSuccess(replay(file, task, bytes, false))) return Option.none<Repaired>()
      // The longest prefix of lines that decode and follow one another.
      const fold = makeReplay(task)
      let keptBytes = 0
      let line = 0
      const completeBytes = bytes.lastIndexOf(newline) + 1
      const refusal = eachLine(bytes, completeBytes, (text) => {
        line += 1
        const decoded = decodeLine(text, fold)
        if (typeof decoded === "string") return decoded
        keptBytes = bytes.indexOf(newline, keptBytes) + 1
        return undefined
      })
      const detail = refusal ?? "the bytes after the last line are not an entry"
      const firstDropped = refusal === undefined ? line + 1 : line
      const dropped = bytes.subarray(keptBytes)
      const kept = fold.state()
      const at = yield* Clock.currentTimeMillis
      const entry: Entry = {
        _tag: "JournalRepaired",
        seq: kept.entries,
        at,
        line: firstDropped,
        keptBytes,
        droppedBytes: Math.max(1, dropped.length),
        droppedSha256: yield* sha256Bytes(Uint8Array.from(dropped)),
        detail
      }
      const encoded = encodeEntry(entry)
      if (Result.isFailure(encoded)) {
        return yield* new JournalIOError({ file, operation: "repair", detail: encoded.failure.message })
      }
      const lineBytes = new TextEncoder().encode(`${JSON.stringify(encoded.success)}\n`)
      const repaired = new Uint8Array(keptBytes + lineBytes.length)
      repaired.set(bytes.subarray(0, keptBytes))
      repaired.set(lineBytes, keptBytes)
      yield* medium.replace(repaired).pipe(Effect.mapError(mediumError(file)))
      return Option.some<Repaired>({
        line: firstDropped,
        keptEntries: kept.entries,
        keptBytes,
        droppedBytes: dropped.length,
        detail
      })
    })
  )
})

/**
 * The journal of one task as a layer. The file stays open for the layer's
 * lifetime.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  location: JournalLocation
): Layer.Layer<
  Journal,
  JournalCorrupt | JournalNotRecognized | JournalIOError | TaskInUse | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path
> => Layer.effect(Journal, open(location))
