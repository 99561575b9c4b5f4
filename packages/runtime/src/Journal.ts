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
 *   `JournalStorage.JournalFile` reference's; every implementation keeps this contract.
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
 *   `JournalRepaired` entry (`JournalEntry`) describing what was dropped.
 *
 * @since 0.1.0
 */
import type * as Ids from "@tessera/core/Ids"
import type * as InvalidInput from "@tessera/core/InvalidInput"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { repairJournal } from "./internal/journalRepair.ts"
import { entryOfLine } from "./internal/journalReplay.ts"
import type {
  JournalCorrupt,
  JournalIoError,
  JournalLocation,
  JournalNotRecognized,
  JournalService,
  Repaired,
  TaskInUse
} from "./internal/journalService.ts"
import {
  type CallApproval,
  openTurn as internalOpenTurn,
  summaryKey as internalSummaryKey,
  type JournalState,
  makeReplay,
  type OwedCall,
  type SummaryRecord,
  type TurnState
} from "./internal/journalState.ts"
import { fileName as internalFileName, openJournal, readJournalEntries } from "./internal/journalWriter.ts"
import type { Entry } from "./JournalEntry.ts"

/**
 * The journal's errors ({@link JournalError} is every one), the shape of
 * its service ({@link JournalService}), where a journal lives
 * ({@link JournalLocation}) and what a repair did ({@link Repaired}).
 * Declared with the writer, in the package's internals.
 *
 * @since 0.1.0
 * @category errors
 */
export {
  JournalCorrupt,
  type JournalError,
  JournalIoError,
  type JournalLocation,
  JournalNotRecognized,
  JournalSequenceError,
  type JournalService,
  NoOpenTurn,
  type Repaired,
  TaskInUse,
  TurnAlreadyOpen,
  TurnUnfinished,
  UnfinishedReason
} from "./internal/journalService.ts"

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
export const openTurn: (state: JournalState) => Option.Option<TurnState> = internalOpenTurn

/**
 * The journal of the task being run, as a service for the executor.
 *
 * @since 0.1.0
 * @category services
 */
export class Journal extends Context.Service<Journal, JournalService>()("@tessera/runtime/Journal") {}

/**
 * The journal file of a task inside a folder.
 *
 * @since 0.1.0
 * @category models
 */
export const fileName: (task: Ids.TaskId) => string = internalFileName

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
 * store of this process still holds fails `JournalIoError` saying so,
 * never reads as empty.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Journal, JournalEntry } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * // Every entry of a task's journal, in order; a corrupt line fails `JournalCorrupt`, nothing is skipped.
 * const program = Effect.gen(function* () {
 *   const entries = yield* Journal.readEntries({
 *     folder: "/srv/tessera/journals",
 *     task: Schema.decodeUnknownSync(Ids.TaskId)("survey-1")
 *   })
 *   for (const entry of entries) console.log(entry.seq, entry._tag)
 *   const total = JournalEntry.totalUsage(entries)
 *   console.log(`${total.usage.inputTokens ?? 0} input tokens over ${total.responses} responses`)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category reading
 */
export const readEntries: (
  location: JournalLocation
) => Effect.Effect<
  ReadonlyArray<Entry>,
  JournalCorrupt | JournalNotRecognized | JournalIoError | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path
> = readJournalEntries

/**
 * One line of a journal file (its text, without the newline) as an entry,
 * or why it is not one, in the words {@link readEntries} reports: not
 * UTF-8 (`undefined` text), blank, not JSON, or not an entry (the Schema's
 * message). The line alone: whether the entry may follow the ones before it
 * is the journal's transition ({@link stateOf}), which a reader folds in.
 * For readers of their own (a tail, a shipper), as the inspector's follower.
 *
 * @since 0.1.0
 * @category reading
 */
export const decodeLine: (text: string | undefined) => Entry | string = entryOfLine

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
export const open: (
  location: JournalLocation
) => Effect.Effect<
  JournalService,
  JournalCorrupt | JournalNotRecognized | JournalIoError | TaskInUse | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path | Scope.Scope
> = openJournal

/**
 * Repairs a journal that {@link open} refuses as {@link JournalCorrupt} (for
 * example after two writers interleaved their lines): keeps its longest
 * valid prefix (every line up to the first one that does not decode or does
 * not follow) and appends a `JournalRepaired` entry saying what was
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
export const repair: (
  location: JournalLocation
) => Effect.Effect<Option.Option<Repaired>, JournalIoError | TaskInUse, FileSystem.FileSystem | Path.Path> =
  repairJournal

/**
 * The journal of one task as a layer. The file stays open for the layer's
 * lifetime.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Journal } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("survey-1")
 *
 * // The task's journal in a folder: one writer per journal (a second fails `TaskInUse`), the file checked on open.
 * const program = Effect.gen(function* () {
 *   const journal = yield* Journal.Journal
 *   const state = yield* journal.state
 *   console.log(`${journal.task}: ${state.turns.length} turn(s) so far`)
 * }).pipe(Effect.provide(Journal.layer({ folder: "/srv/tessera/journals", task })))
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  location: JournalLocation
): Layer.Layer<
  Journal,
  JournalCorrupt | JournalNotRecognized | JournalIoError | TaskInUse | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path
> => Layer.effect(Journal, open(location))
