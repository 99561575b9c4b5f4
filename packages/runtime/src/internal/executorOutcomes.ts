/**
 * How a turn ends, and what its resume and its approval-aware dispatch
 * report: declared here so the turn's pieces and the public `Executor`
 * module share them without importing each other; `Executor` re-exports
 * every one under the same name.
 */
import type * as History from "../History.ts"
import type * as JournalEntry from "../JournalEntry.ts"
import type { ToolCallPart, ToolResultPart } from "../Model.ts"

/**
 * How a turn ended: answered ({@link TurnAnswered}, the turn is closed), or
 * paused with calls awaiting the host's approval
 * ({@link TurnAwaitingApproval}, the turn stays open). Both carry the turn's
 * number, its steps so far, its history and the text of its last response.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnOutcome = TurnAnswered | TurnAwaitingApproval

/**
 * The model answered without tool calls and the turn was closed: `text`
 * is the answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnAnswered {
  readonly _tag: "Answered"
  readonly turn: number
  readonly steps: number
  readonly history: History.History
  readonly text: string
}

/**
 * The last step's calls include some that wait for the host's approval
 * (`awaiting`); nothing of that step ran. The turn stays open: decide each
 * call (`TaskExecution.decide`), then resume it. `text` is the text of the
 * response that asked for the calls.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnAwaitingApproval {
  readonly _tag: "AwaitingApproval"
  readonly turn: number
  readonly steps: number
  readonly history: History.History
  readonly text: string
  readonly awaiting: ReadonlyArray<PendingApproval>
}

/**
 * A call waiting for the host's approval: the call itself (its input
 * included) and why it waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  readonly call: ToolCallPart
  readonly reason: JournalEntry.ApprovalReason
}

/**
 * What dispatching a step's calls under approvals gave: their results, or
 * the calls that wait for the host's decision (nothing ran).
 *
 * @since 0.1.0
 * @category pieces
 */
export type StepDispatch =
  | { readonly _tag: "Results"; readonly results: ReadonlyArray<ToolResultPart> }
  | { readonly _tag: "Awaiting"; readonly awaiting: ReadonlyArray<PendingApproval> }

/**
 * A call that was running when the process died: its id and tool, and
 * whether the resume runs it again (its tool is declared idempotent) or
 * asks the host first (an `InFlight` approval).
 *
 * @since 0.1.0
 * @category turns
 */
export interface InFlightCall {
  readonly callId: string
  readonly name: string
  readonly rerun: boolean
}

/**
 * What `resumeRebuilt` did: how the turn went on, and the calls that
 * were in flight when the process died.
 *
 * @since 0.1.0
 * @category turns
 */
export interface Resumed {
  readonly outcome: TurnOutcome
  readonly inFlight: ReadonlyArray<InFlightCall>
}
