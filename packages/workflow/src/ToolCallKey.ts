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
 * A call a child task makes inside a delegate call's activity (see
 * `TaskHosting`'s `children`) gets a key of its own: the delegate call's
 * key and the child call's place (`Tool.CurrentCall`: the child task,
 * turn, step and call id), the same on every attempt of the delegate call
 * (a child is named after the call that asked for it) and different for
 * every other call, so a child's tool deduplicates its effects as a
 * parent's does.
 *
 * Outside a workflow (the local executor) there is no key: `current` is
 * `None`.
 *
 * @since 0.1.0
 */
import type * as Ids from "@tessera/core/Ids"
import * as Tool from "@tessera/runtime/Tool"
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

/** The call the key in scope was made for (`provide`'s identity), if it was given. */
const KeyedCall = Context.Reference<Option.Option<CallIdentity>>("@tessera/workflow/ToolCallKey/KeyedCall", {
  defaultValue: () => Option.none()
})

const sameCall = (a: CallIdentity, b: CallIdentity) =>
  a.task === b.task && a.turn === b.turn && a.step === b.step && a.callId === b.callId

/**
 * The key of the call in progress (for a tool's handler): the key in scope,
 * or, for a call made inside the call that key was provided for (a child
 * task's call inside a delegate call), `<key>/<nameOf(the inner call)>`.
 *
 * @since 0.1.0
 * @category accessors
 */
export const current: Effect.Effect<Option.Option<string>> = Effect.gen(function* () {
  const key = yield* ToolCallKey
  if (Option.isNone(key)) return key
  const keyed = yield* KeyedCall
  const position = yield* Tool.CurrentCall
  if (Option.isNone(keyed) || Option.isNone(position) || sameCall(keyed.value, position.value)) return key
  return Option.some(`${key.value}/${nameOf(position.value)}`)
})

/**
 * Runs `effect` with `key` as the current call's key. Given the call the
 * key was made for (`call`), the calls made inside that call (a child
 * task's) get keys of their own (see {@link current}); without it they
 * share `key`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const provide =
  (key: string, call?: CallIdentity) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.provideService(
      Effect.provideService(effect, ToolCallKey, Option.some(key)),
      KeyedCall,
      Option.fromUndefinedOr(call)
    )
