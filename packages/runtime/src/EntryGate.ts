/**
 * The entry gate: the single run-time choke point every entry runs first.
 *
 * A task is bound for execution with a compaction policy. Whenever that
 * policy is `Threshold`, the gate requires the task's private-summaries
 * capability to resolve, and fails `Unauthorized` otherwise, before any
 * model request is sent and before anything is journaled. The default
 * policy is `Threshold` exactly where the capability resolves, so a task
 * without a private writer runs without compaction unless a caller arms it
 * explicitly, and arming it there is refused at the first entry (binding).
 *
 * @since 0.1.0
 */
import { Unauthorized } from "@tessera/core"
import { Effect, Option } from "effect"
import * as CompactionPolicy from "./CompactionPolicy.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"
import type { TaskContext } from "./TaskContext.ts"

/**
 * The entries the gate guards: binding a task for execution, a turn (new or
 * resumed), a single model step, a tool dispatch, and the two public summary
 * entries (a direct summary and a summary-file turn).
 *
 * @since 0.1.0
 * @category models
 */
export type EntryPoint = "Bind" | "Turn" | "ResumeTurn" | "ModelStep" | "ToolDispatch" | "Summary" | "SummaryFileTurn"

/**
 * A task context bound for execution under a compaction policy. Only
 * {@link bind} makes one, after the gate passed.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskBinding {
  readonly context: TaskContext
  readonly policy: CompactionPolicy.CompactionPolicy
}

/**
 * How to bind: an explicit policy, or (omitted) the default, which is
 * `threshold` (default: {@link CompactionPolicy.defaultThreshold}) where the
 * capability resolves and `Disabled` elsewhere.
 *
 * @since 0.1.0
 * @category models
 */
export interface BindOptions {
  readonly policy?: CompactionPolicy.CompactionPolicy
  readonly threshold?: CompactionPolicy.Threshold
}

const armedWithoutWriter = (binding: TaskBinding, entry: EntryPoint, cause: Unauthorized.Unauthorized) =>
  new Unauthorized.Unauthorized({
    reason: cause.reason,
    detail: `${entry}: compaction is armed (Threshold) but ${cause.detail}`,
    task: binding.context.task
  })

/**
 * Runs the gate for `entry`: with a `Threshold` policy the capability must
 * resolve (and is returned); with `Disabled` nothing is required. Sends no
 * model request and writes nothing.
 *
 * @since 0.1.0
 * @category gate
 */
export const verify = Effect.fn("EntryGate.verify")(function* (binding: TaskBinding, entry: EntryPoint) {
  if (binding.policy._tag === "Disabled") return Option.none<PrivateSummaries.PrivateWriterCapability>()
  const capability = yield* PrivateSummaries.resolve(binding.context).pipe(
    Effect.mapError((error) => (error._tag === "Unauthorized" ? armedWithoutWriter(binding, entry, error) : error))
  )
  return Option.some(capability)
})

/**
 * Binds a task context for execution: picks the policy (see
 * {@link BindOptions}) and runs the gate for the `Bind` entry.
 *
 * @since 0.1.0
 * @category gate
 */
export const bind = Effect.fn("EntryGate.bind")(function* (context: TaskContext, options: BindOptions = {}) {
  if (options.policy !== undefined) {
    const binding: TaskBinding = { context, policy: options.policy }
    yield* verify(binding, "Bind")
    return binding
  }
  // The default is decided by whether the capability resolves, which is the
  // gate's own question: answered once, it needs no second resolution.
  const resolved = yield* PrivateSummaries.resolveOption(context)
  const policy = Option.isSome(resolved)
    ? (options.threshold ?? CompactionPolicy.defaultThreshold)
    : CompactionPolicy.disabled
  const binding: TaskBinding = { context, policy }
  return binding
})
