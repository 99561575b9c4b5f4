/**
 * The idempotency key of the tool call being run.
 *
 * A workflow activity runs at least once: a runner that dies after a tool
 * did its side effect, but before the engine stored the activity's result,
 * leaves the call to run again on another runner. Inside the task workflow
 * every tool call runs with a key made by `Activity.idempotencyKey` from
 * the workflow execution (one per task), the turn, the step whose response
 * asked for the call, and the call id: the same on every attempt of that
 * call, different for every other call. A tool whose effect must happen at
 * most once records the key with the effect (an exclusive create, a unique
 * row, a request header the remote service deduplicates on) and, when it
 * finds the key already there, returns what the first attempt produced
 * instead of acting again. It must return the same content: the workflow
 * fails a call whose re-run produced other bytes than the attempt already
 * recorded (see `TaskWorkflow`).
 *
 * Outside a workflow (the local executor) there is no key: `current` is
 * `None`.
 *
 * @since 0.1.0
 */
import type * as Ids from "@tessera/core/Ids"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/**
 * What a call's key is made from: the task, the turn, the step whose
 * response asked for the call (the journal's number for it), and the call id.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallIdentity {
  readonly task: Ids.TaskId
  readonly turn: number
  readonly step: number
  readonly callId: string
}

/**
 * The name the key is derived from (`Activity.idempotencyKey` hashes it with
 * the workflow execution): `<task>/t<turn>/s<step>/<call id>`. One-to-one
 * over the identity: a task id holds no `/`, turn and step are integers, and
 * the call id is the rest, whatever characters it holds.
 *
 * @since 0.1.0
 * @category naming
 */
export const nameOf = (identity: CallIdentity): string =>
  `${identity.task}/t${identity.turn}/s${identity.step}/${identity.callId}`

/**
 * The key of the call in progress, `None` outside the task workflow.
 *
 * @since 0.1.0
 * @category references
 */
export const ToolCallKey: Context.Reference<Option.Option<string>> = Context.Reference<Option.Option<string>>(
  "@tessera/workflow/ToolCallKey",
  { defaultValue: () => Option.none() }
)

/**
 * The key of the call in progress (for a tool's handler).
 *
 * @since 0.1.0
 * @category accessors
 */
export const current: Effect.Effect<Option.Option<string>> = ToolCallKey.useSync((key) => key)

/**
 * Runs `effect` with `key` as the current call's key.
 *
 * @since 0.1.0
 * @category combinators
 */
export const provide =
  (key: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.provideService(effect, ToolCallKey, Option.some(key))
