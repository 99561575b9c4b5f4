/**
 * Approvals: the host's decision on a call awaiting it, journaled behind
 * the gate.
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as EntryGate from "../EntryGate.ts"
import { awaitingApproval, Journal, openTurn } from "../Journal.ts"
import * as Observability from "../Observability.ts"

/**
 * The host's decision on a call awaiting approval: who or what decided
 * (`by`, a non-empty text), approved or not, and an optional note (a
 * rejection's note reaches the model in the call's error result).
 *
 * @since 0.1.0
 * @category models
 */
export interface Decision {
  readonly callId: string
  readonly approved: boolean
  readonly by: string
  readonly note?: string
}

const decodeDecision = InvalidInput.decode(
  Schema.Struct({
    callId: Schema.String,
    approved: Schema.Boolean,
    by: Schema.String.check(Schema.makeFilter((text: string) => text.length > 0, { expected: "a non-empty string" })),
    note: Schema.optionalKey(Schema.String)
  }),
  "TaskExecution.decide",
  "decision"
)

/**
 * The call is not awaiting approval in the task's open turn (no turn is
 * open, the id is unknown, or it was decided already). Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotAwaitingApproval extends Schema.TaggedError<NotAwaitingApproval>()("NotAwaitingApproval", {
  task: Schema.String,
  callId: Schema.String,
  awaiting: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `call ${this.callId} of task ${this.task} is not awaiting approval (awaiting: [${this.awaiting.join(", ")}])`
  }
}

/**
 * Records the host's decision on a call awaiting approval
 * (`ApprovalDecided`, with `by` and `note`), behind the gate. It takes
 * effect when the turn continues (`TaskExecution.resume`, or `TaskExecution.resumeTurn`
 * with the caller's history): an approved call runs, a rejected one gives
 * the model an error result saying who rejected it and why. Works in the
 * same process or after a restart (the journal holds the pending calls).
 * Fails `InvalidInput` (field `decision`) for a malformed decision and
 * {@link NotAwaitingApproval} for a call that is not waiting, having
 * written nothing.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * const deploy = Tool.make({
 *   name: "deploy",
 *   description: "Deploys a release to an environment",
 *   input: Schema.Struct({ environment: Schema.String }),
 *   // Staging deploys run at once; anything else waits for a person.
 *   needsApproval: ({ environment }) => environment !== "staging",
 *   handler: ({ environment }) => Effect.succeed(`deployed to ${environment}`)
 * })
 * const config: TaskExecution.ExecutionConfig = { tools: Tool.registry(deploy), maxSteps: 4, durable: true }
 *
 * const program = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     namespace: "release",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("deployer")
 *   })
 *   yield* harness.withTask(Schema.decodeUnknownSync(Ids.TaskId)("release-7"), (binding) =>
 *     Effect.gen(function* () {
 *       const paused = yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "Ship it.")]), config)
 *       if (paused._tag !== "AwaitingApproval") return paused.text
 *       // The decision is journaled with who made it; the next resume runs (or rejects) the call.
 *       yield* TaskExecution.decide(binding, { callId: "d1", approved: false, by: "bob", note: "release freeze" })
 *       const done = yield* TaskExecution.resume(binding, config)
 *       return done.outcome.text
 *     }).pipe(
 *       Effect.provide(
 *         ScriptedModel.layer([
 *           Model.response({ toolCalls: [Model.toolCall("d1", "deploy", { environment: "production" })] }),
 *           Model.response({ text: "The production deploy was rejected (release freeze); nothing was deployed." })
 *         ])
 *       )
 *     )
 *   )
 * })
 *
 * Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category entries
 */
export const decide = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding, decision: Decision) {
  yield* EntryGate.admitBinding(binding, "Approve")
  const decoded = yield* decodeDecision(decision)
  const journal = yield* Journal
  const open = openTurn(yield* journal.state)
  const awaiting = Option.isSome(open) ? awaitingApproval(open.value) : []
  if (Option.isNone(open) || !awaiting.some((call) => call.callId === decoded.callId)) {
    return yield* new NotAwaitingApproval({
      task: journal.task,
      callId: decoded.callId,
      awaiting: awaiting.map((call) => call.callId)
    })
  }
  return yield* journal.append({
    _tag: "ApprovalDecided",
    turn: open.value.turn,
    step: open.value.steps,
    callId: decoded.callId,
    approved: decoded.approved,
    by: decoded.by,
    ...(decoded.note === undefined ? {} : { note: decoded.note })
  })
}, Observability.withSpan("TaskExecution.decide"))
