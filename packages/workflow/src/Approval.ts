/**
 * A tool call's approval as the task workflow waits for it.
 *
 * When a step's calls need the host's approval (`Tool.needsApproval`), the
 * workflow journals them `ApprovalRequested` (as the local executor does)
 * and then waits on one `DurableDeferred` per call, named from the task,
 * the turn, the step and the call id ({@link nameOf}). The wait is durable:
 * the engine stores the decision, so a runner that dies or restarts while
 * a task waits holds nothing, and whichever runner replays the task after
 * the decision continues it. `TaskWorkflow.decide` journals the host's
 * decision (`ApprovalDecided`, with who decided) and then completes the
 * call's deferred with it ({@link Decision}).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import * as ToolCallKey from "./ToolCallKey.ts"

/**
 * What a call's deferred is completed with: approved or not, who or what
 * decided (`by`), and the note that reaches the model with a rejection.
 * The same fields the journal's `ApprovalDecided` records.
 *
 * @since 0.1.0
 * @category models
 */
export const Decision = Schema.Struct({
  approved: Schema.Boolean,
  by: Schema.String,
  note: Schema.optionalKey(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export type Decision = typeof Decision.Type

/**
 * The name of a call's deferred: `approval/<task>/t<turn>/s<step>/<call id>`,
 * one-to-one over the call's identity (see `ToolCallKey.nameOf`), so two
 * calls never share a decision and a call's decision is found again on
 * every replay, on every runner.
 *
 * @since 0.1.0
 * @category naming
 */
export const nameOf = (identity: ToolCallKey.CallIdentity): string => `approval/${ToolCallKey.nameOf(identity)}`

/**
 * The durable deferred the workflow waits on for a call's decision.
 *
 * @since 0.1.0
 * @category constructors
 */
export const deferredOf = (identity: ToolCallKey.CallIdentity): DurableDeferred.DurableDeferred<typeof Decision> =>
  DurableDeferred.make(nameOf(identity), { success: Decision })
