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
 * A call is decided once, except a delegation (`Delegation.tool`): its
 * call waits (reason `Delegated`) each time its children wait for the
 * host, and each wait gets a deferred of its own, numbered by the decision
 * it waits for (the first keeps the plain name).
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
 * The name of the deferred of a call's `ordinal`-th decision (1 unless the
 * call is a delegation that waited again):
 * `approval/<task>/t<turn>/s<step>/<call id>`, past the first
 * `approval-d<ordinal>/<task>/...` (the first segment tells them apart
 * whatever the call id holds). One-to-one over the call's identity (see `ToolCallKey.nameOf`) and
 * the ordinal, so two calls, or two waits of one call, never share a
 * decision, and a call's decision is found again on every replay, on every
 * runner.
 *
 * @since 0.1.0
 * @category naming
 */
export const nameOf = (identity: ToolCallKey.CallIdentity, ordinal = 1): string =>
  ordinal === 1 ? `approval/${ToolCallKey.nameOf(identity)}` : `approval-d${ordinal}/${ToolCallKey.nameOf(identity)}`

/**
 * The durable deferred the workflow waits on for a call's `ordinal`-th
 * decision (see {@link nameOf}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const deferredOf = (
  identity: ToolCallKey.CallIdentity,
  ordinal = 1
): DurableDeferred.DurableDeferred<typeof Decision> =>
  DurableDeferred.make(nameOf(identity, ordinal), { success: Decision })
