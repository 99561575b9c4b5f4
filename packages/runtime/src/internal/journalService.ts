/**
 * The journal's errors, its service's shape and where a journal lives:
 * declared here so the writer (`journalWriter.ts`) and the public `Journal`
 * module share them without importing each other; `Journal` re-exports every
 * one under the same name.
 */
import * as Ids from "@tessera/core/Ids"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Entry, EntryInput } from "../JournalEntry.ts"
import type { JournalState, TurnState } from "./journalState.ts"

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
export class JournalIoError extends Schema.TaggedError<JournalIoError>()("JournalIoError", {
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
  | JournalIoError
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
   * next commit point (see `JournalStorage`); in this process only under
   * memory-only.
   */
  readonly append: (entry: EntryInput) => Effect.Effect<Entry, JournalIoError | JournalSequenceError>
  /**
   * Makes every entry appended so far durable now. Nothing to do unless
   * group commit left entries unsynced. A failed sync breaks the journal:
   * later appends fail until it is reopened.
   */
  readonly sync: Effect.Effect<void, JournalIoError>
  /** Opens the next turn; fails with {@link TurnAlreadyOpen} when one is open. */
  readonly openTurn: Effect.Effect<TurnState, JournalIoError | JournalSequenceError | TurnAlreadyOpen>
  /** Records that the open turn continues; fails with {@link NoOpenTurn}. */
  readonly resumeTurn: Effect.Effect<TurnState, JournalIoError | JournalSequenceError | NoOpenTurn>
  /** Closes the open turn; fails with {@link TurnUnfinished} unless it is answered and complete. */
  readonly closeTurn: Effect.Effect<TurnState, JournalIoError | JournalSequenceError | NoOpenTurn | TurnUnfinished>
  /** Gives up on the open turn, finished or not. */
  readonly abandonTurn: (reason: string) => Effect.Effect<TurnState, JournalIoError | JournalSequenceError | NoOpenTurn>
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
 * What `Journal.repair` did: the 1-based line of the first entry that did not
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
