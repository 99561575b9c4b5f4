/**
 * How a turn fails: the executor's own errors and {@link ExecutorError},
 * every way a step or a turn can fail besides the hooks' own errors.
 * Declared here so the turn's pieces (`executorStep.ts`, `executorTools.ts`,
 * `executorLoop.ts`, `executorResume.ts`) and the public `Executor` module
 * share them without importing each other; `Executor` re-exports every one
 * under the same name.
 */
import * as Ids from "@tessera/core/Ids"
import type { InvalidInput } from "@tessera/core/InvalidInput"
import * as Schema from "effect/Schema"
import type { JournalIoError, JournalSequenceError, NoOpenTurn, TurnAlreadyOpen, TurnUnfinished } from "../Journal.ts"
import type { ModelError } from "../Model.ts"

/**
 * The model still asked for tools after `maxSteps` model steps. The calls of
 * the last step were run and journaled, so the turn is consistent and stays
 * open: resume it (with a higher limit) or abandon it.
 *
 * @since 0.1.0
 * @category errors
 */
export class StepLimitExceeded extends Schema.TaggedError<StepLimitExceeded>()("StepLimitExceeded", {
  task: Ids.TaskId,
  turn: Schema.Int,
  maxSteps: Schema.Int
}) {
  override get message(): string {
    return `turn ${this.turn} of task ${this.task} reached its limit of ${this.maxSteps} model steps without a final answer`
  }
}

/**
 * A turn cannot be resumed from the given history: the calls the history
 * leaves unanswered are not the calls the journal still owes.
 *
 * @since 0.1.0
 * @category errors
 */
export class ResumeMismatch extends Schema.TaggedError<ResumeMismatch>()("ResumeMismatch", {
  task: Ids.TaskId,
  turn: Schema.Int,
  journalCalls: Schema.Array(Schema.String),
  historyCalls: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `cannot resume turn ${this.turn} of task ${this.task}: the journal owes results for [${this.journalCalls.join(", ")}] but the history leaves [${this.historyCalls.join(", ")}] unanswered`
  }
}

/**
 * An approved call was about to run with another input than the one the
 * host approved (the digest journaled with `ApprovalRequested`): the history
 * it came from was changed since. Nothing ran and nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalInputMismatch extends Schema.TaggedError<ApprovalInputMismatch>()("ApprovalInputMismatch", {
  task: Ids.TaskId,
  turn: Schema.Int,
  step: Schema.Int,
  callId: Schema.String,
  approvedSha256: Schema.String,
  foundSha256: Schema.String
}) {
  override get message(): string {
    return `call ${this.callId} (turn ${this.turn}, step ${this.step} of task ${this.task}) was approved with input sha256 ${this.approvedSha256}, but its input now has sha256 ${this.foundSha256}; it was not run`
  }
}

/**
 * Every way a step or a turn can fail besides the hooks' own errors.
 * `InvalidInput`: a turn entry (`runTurn`, `resumeTurn`, `resumeRebuilt`)
 * was handed a configuration or a history of the wrong shape (see
 * `TurnConfig`); nothing was journaled or sent.
 *
 * @since 0.1.0
 * @category errors
 */
export type ExecutorError =
  | InvalidInput
  | ModelError
  | JournalIoError
  | JournalSequenceError
  | TurnAlreadyOpen
  | NoOpenTurn
  | TurnUnfinished
  | StepLimitExceeded
  | ResumeMismatch
  | ApprovalInputMismatch
