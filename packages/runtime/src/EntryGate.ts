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
import type * as InvalidInput from "@tessera/core/InvalidInput"
import * as Unauthorized from "@tessera/core/Unauthorized"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type { TaskContext } from "./FilesystemTaskRuntime.ts"
import * as Policies from "./internal/compactionPolicy.ts"
import { isRecordOf } from "./internal/journalIdentity.ts"
import { makeRegistry } from "./internal/trusted.ts"
import { Journal } from "./Journal.ts"
import * as Observability from "./Observability.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"

/**
 * The entries the gate guards: binding a task for execution, a turn (new,
 * resumed or abandoned), a single model step, a tool dispatch, and the two public summary
 * entries (a direct summary and a summary-file turn).
 *
 * @since 0.1.0
 * @category models
 */
export type EntryPoint =
  | "Bind"
  | "Turn"
  | "ResumeTurn"
  | "AbandonTurn"
  | "ModelStep"
  | "ToolDispatch"
  | "Summary"
  | "SummaryFileTurn"
  | "Approve"
  | "Delegate"

/**
 * A task context bound for execution under a compaction policy. Only
 * {@link bind} makes one, after the gate passed, and records it by
 * identity: every gated entry refuses a binding it did not record (a copy
 * with another policy, a hand-built one) with `Unauthorized` `NotMinted`.
 *
 * @example
 * ```ts
 * import { EntryGate, History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * const lookUp = Tool.make({
 *   name: "look_up",
 *   description: "Looks a ticket up",
 *   input: Schema.Struct({ ticket: Schema.String }),
 *   handler: ({ ticket }) => Effect.succeed(`${ticket}: open`)
 * })
 *
 * // A binding is what the gated entries take: only `EntryGate.bind` makes one (a hand-made object fails `NotMinted`).
 * export const answer = (binding: EntryGate.TaskBinding, question: string) =>
 *   TaskExecution.runTurn(binding, History.make([Model.text("user", question)]), {
 *     tools: Tool.registry(lookUp),
 *     maxSteps: 4
 *   }).pipe(Effect.map((outcome) => `${binding.context.task} (${binding.policy._tag}): ${outcome.text}`))
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskBinding {
  readonly context: TaskContext
  readonly policy: Policies.Policy
}

const bindings = makeRegistry<TaskBinding>("task binding")

/**
 * The first check of every gated entry, whatever the policy: the binding
 * was made by {@link bind} from a context the library minted, and the
 * journal in scope is the bound task's own record (same task, on the
 * runtime's store), so a turn has one task identity, and that the journal
 * runs for the binding's agent: the first turn opened records the agent
 * (`TurnOpened.agent`), and a binding of another agent (a scope with the
 * same task id issued to someone else) is refused. Fails `Unauthorized`
 * (`NotMinted`, `ScopeNotIssued`, `TaskMismatch` or `AgentMismatch`)
 * having sent and written nothing.
 *
 * @since 0.1.0
 * @category gate
 */
export const admitBinding = Effect.fnUntraced(function* (binding: TaskBinding, entry: EntryPoint) {
  yield* bindings.require(binding, { entry })
  const context = yield* PrivateSummaries.requireContext(binding.context, entry)
  const journal = yield* Journal
  const path = yield* Path.Path
  if (!isRecordOf(journal, context.task, context.runtime.host.store.root, path)) {
    return yield* new Unauthorized.Unauthorized({
      reason: "TaskMismatch",
      detail: `${entry}: the journal in scope (${journal.file}, task ${journal.task}) is not the record of the bound task ${context.task} on store ${context.runtime.host.store.id}`,
      task: context.task
    })
  }
  const owner = yield* journal.claimAgent(context.agent)
  if (Option.isSome(owner)) {
    return yield* new Unauthorized.Unauthorized({
      reason: "AgentMismatch",
      detail: `${entry}: task ${context.task} runs for agent ${owner.value} (its journal says so); a binding of agent ${context.agent} is not admitted to it`,
      task: context.task
    })
  }
  return binding
})

/**
 * How to bind: an explicit policy, or (omitted) the default, which is
 * `threshold` (default: `Compaction.defaultThreshold`) where the
 * capability resolves and `Disabled` elsewhere.
 *
 * @since 0.1.0
 * @category models
 */
export interface BindOptions {
  readonly policy?: Policies.Policy
  readonly threshold?: Policies.Threshold
}

const armedWithoutWriter = (context: TaskContext, entry: EntryPoint, cause: Unauthorized.Unauthorized) =>
  new Unauthorized.Unauthorized({
    reason: cause.reason,
    detail: `${entry}: compaction is armed (Threshold) but ${cause.detail}`,
    task: context.task
  })

/**
 * What an entry may use once the gate passed: the task's minted `context`,
 * the binding's `policy`, and its private `writer` (a capability the gate
 * resolved: under a `Threshold` policy always, else when the entry asked
 * for one), to be provided as the `PrivateSummaries` service to whatever
 * writes private content. Only {@link verify} makes one.
 *
 * @since 0.1.0
 * @category models
 */
export interface Admission {
  readonly context: TaskContext
  readonly policy: Policies.Policy
  readonly writer: Option.Option<PrivateSummaries.PrivateWriterCapability>
}

/**
 * What an entry asks of the gate besides the binding: `writer`, whether it
 * needs the private writer whatever the policy (`"Required"`, a
 * summary-file turn, private offload) or only when the policy arms
 * compaction (`"ByPolicy"`, the default).
 *
 * @since 0.1.0
 * @category models
 */
export interface VerifyOptions {
  readonly writer?: "ByPolicy" | "Required"
}

/**
 * What {@link verify} needs: the journal in scope (a binding is admitted
 * only against its own task's journal) and paths to compare it by. It
 * fails only with `PrivateSummaries.ResolveError` (`Unauthorized` among
 * them).
 *
 * @since 0.1.0
 * @category gate
 */
export type VerifyRequirements = Journal | Path.Path

/**
 * Runs the gate for `entry`, once, and hands back what the entry may use
 * ({@link Admission}): {@link admitBinding} first; then the private writer
 * must resolve when the policy is `Threshold` (a refusal names the armed
 * policy) or when `options.writer` is `"Required"` (a refusal is the
 * resolution's own `NoPrivateWriter`); otherwise nothing more is required.
 * Sends no model request and writes nothing.
 *
 * @example
 * ```ts
 * import { EntryGate, PrivateSummaries } from "@tessera/runtime"
 * import { Effect, Option } from "effect"
 *
 * // The gate's answer: the writer (when there is one) reaches private writes as the `PrivateSummaries` service.
 * export const writerVolume = (binding: EntryGate.TaskBinding) =>
 *   Effect.gen(function* () {
 *     const admission = yield* EntryGate.verify(binding, "Turn", { writer: "Required" })
 *     const writer = Option.getOrThrow(admission.writer)
 *     return yield* PrivateSummaries.admit("my-entry").pipe(
 *       PrivateSummaries.provide(writer),
 *       Effect.map((admitted) => admitted.volume.volume)
 *     )
 *   })
 * ```
 *
 * @since 0.1.0
 * @category gate
 */
export const verify = (
  binding: TaskBinding,
  entry: EntryPoint,
  options: VerifyOptions = {}
): Effect.Effect<Admission, PrivateSummaries.ResolveError, VerifyRequirements> => runGate(binding, entry, options)

/** The body of {@link verify}, whose public signature names its requirements. */
const runGate = Effect.fnUntraced(function* (
  binding: TaskBinding,
  entry: EntryPoint,
  options: VerifyOptions
): Effect.fn.Return<Admission, PrivateSummaries.ResolveError, VerifyRequirements> {
  yield* Observability.annotate({
    "tessera.task": binding.context.task,
    "tessera.entry": entry,
    "tessera.policy": binding.policy._tag
  })
  yield* admitBinding(binding, entry)
  const admitted = (writer: Option.Option<PrivateSummaries.PrivateWriterCapability>): Admission => ({
    context: binding.context,
    policy: binding.policy,
    writer
  })
  if (binding.policy._tag === "Threshold") {
    const capability = yield* PrivateSummaries.resolve(binding.context).pipe(
      Effect.mapError((error) =>
        error._tag === "Unauthorized" ? armedWithoutWriter(binding.context, entry, error) : error
      )
    )
    return admitted(Option.some(capability))
  }
  if (options.writer === "Required") return admitted(Option.some(yield* PrivateSummaries.resolve(binding.context)))
  return admitted(Option.none())
}, Observability.withSpan("EntryGate.verify"))

/**
 * Every way {@link bind} can fail: a context or options it refuses
 * (`InvalidInput`), and the private writer's resolution
 * (`PrivateSummaries.ResolveError`: `Unauthorized` for a `Threshold` policy
 * armed where no private writer resolves or a context that is not the
 * runtime's, and the store's answer on the private volume).
 * Binding needs no service.
 *
 * @since 0.1.0
 * @category gate
 */
export type BindError = InvalidInput.InvalidInput | PrivateSummaries.ResolveError

/**
 * Binds a task context for execution: picks the policy (see
 * {@link BindOptions}) and runs the gate for the `Bind` entry.
 *
 * @example
 * ```ts
 * import { HostAuthority, Ids, Volume } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Compaction, EntryGate, FilesystemTaskRuntime, TaskHost } from "@tessera/runtime"
 * import { Effect, Layer, Option, Schema } from "effect"
 *
 * const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *
 * const program = Effect.gen(function* () {
 *   const host = yield* TaskHost.open({ root: "/srv/tessera/store" })
 *   const privateVolume = yield* host.store.create({
 *     id: Schema.decodeUnknownSync(Ids.VolumeId)("researcher-private"),
 *     kind: "AgentPrivate",
 *     owner: Volume.agentOwner(agent)
 *   })
 *   const scope = yield* host.issueScope(
 *     Schema.decodeUnknownSync(Ids.TaskId)("task-1"),
 *     [{ volume: privateVolume, access: ["read", "write"] }],
 *     agent
 *   )
 *   const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.none(), scope })
 *   const context = yield* runtime.bindTask({ scope, output: Option.none() })
 *   // Arming Threshold where no private writer resolves fails `Unauthorized` here, before any request or journal write.
 *   const refused = yield* Effect.flip(EntryGate.bind(context, { policy: Compaction.threshold({ limit: 20_000 }) }))
 *   console.log(refused._tag) // "Unauthorized"
 *   return yield* EntryGate.bind(context, { policy: Compaction.disabled })
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Layer.merge(NodeTessera.layer, HostAuthority.permissive))))
 * ```
 *
 * @since 0.1.0
 * @category gate
 */
export const bind = (context: TaskContext, options: BindOptions = {}): Effect.Effect<TaskBinding, BindError> =>
  bindTask(context, options)

/** The body of {@link bind}, whose public signature names its error union. */
const bindTask = Effect.fnUntraced(function* (
  context: TaskContext,
  options: BindOptions
): Effect.fn.Return<TaskBinding, BindError> {
  yield* PrivateSummaries.requireContext(context, "Bind")
  if (options.policy !== undefined) {
    const policy = yield* Policies.decodePolicy(options.policy, "EntryGate.bind")
    if (policy._tag === "Threshold") {
      yield* PrivateSummaries.resolve(context).pipe(
        Effect.mapError((error) => (error._tag === "Unauthorized" ? armedWithoutWriter(context, "Bind", error) : error))
      )
    }
    yield* Observability.annotate({ "tessera.task": context.task, "tessera.policy": policy._tag })
    return bindings.mint<TaskBinding>({ context, policy })
  }
  // The default is decided by whether the capability resolves, which is the
  // gate's own question: answered once, it needs no second resolution.
  const resolved = yield* PrivateSummaries.resolveOption(context)
  const policy = Option.isSome(resolved)
    ? yield* Policies.decodePolicy(options.threshold ?? Policies.defaultThreshold, "EntryGate.bind")
    : Policies.disabled
  yield* Observability.annotate({ "tessera.task": context.task, "tessera.policy": policy._tag })
  return bindings.mint<TaskBinding>({ context, policy })
}, Observability.withSpan("EntryGate.bind"))
