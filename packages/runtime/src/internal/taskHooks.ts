/**
 * The one assembly of a bound task's hooks. Every door that runs a turn of a
 * bound task gets its hooks here: the stock executor's gated entries
 * (`TaskExecution.runTurn` and the others) and every adapter's foreign loop
 * (`TaskExecution.foreignLoop`), so what holds for one holds for all.
 *
 * What the doors really differ in is a parameter, never a copy:
 *
 * - the writer an entry resolved already (a summary-file turn), which has
 *   passed the gate's question;
 * - the tools: the executor's doors hand in a registry, which the library's
 *   read tool joins unless the host has a tool of its name, and every call
 *   of that name is then the library's; a foreign loop cannot see its
 *   framework's tools, so it offers the read tool and says which calls the
 *   tool answered, and it learns the specs its requests carry request by
 *   request.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as EntryGate from "../EntryGate.ts"
import * as Executor from "../Executor.ts"
import { Journal, type JournalIoError, type JournalSequenceError } from "../Journal.ts"
import type { ToolSpec } from "../Model.ts"
import type * as PrivateSummaries from "../PrivateSummaries.ts"
import type * as Tool from "../Tool.ts"
import * as ToolResults from "../ToolResults.ts"
import { type CompactionError, type CompactionRequirements, compactionHooks } from "./compactionHooks.ts"
import { targetFor } from "./offload.ts"

/**
 * What the gate's own hooks add to a turn's requirements.
 *
 * @since 0.1.0
 * @category models
 */
export type GatedRequirements = CompactionRequirements | ToolResults.OffloadRequirements

/** What the assembled hooks can fail with, besides the door's own hooks' errors. */
export type TaskHooksError = CompactionError | JournalIoError | JournalSequenceError | PrivateSummaries.ResolveError

/**
 * The tools of the door's turn. `Registry`: the executor's, known before
 * the turn. `Foreign`: a foreign loop's, whose specs are known request by
 * request (`undefined` until the adapter says) and whose `readBy` says
 * which calls the library's read tool answered.
 */
export type TaskTools<R> =
  | { readonly _tag: "Registry"; readonly registry: Tool.Registry<R> }
  | {
      readonly _tag: "Foreign"
      readonly specs: () => ReadonlyArray<ToolSpec> | undefined
      readonly readBy: (context: Executor.ToolContext) => boolean
    }

/**
 * What {@link taskHooks} assembles a turn's hooks from, besides the
 * binding's policy: `name`, the door named in refusals; `offload`,
 * `inlineLimit` and `hooks` as in `TaskExecution.ExecutionConfig`, checked
 * by the door beforehand; `resolved`, a writer the entry resolved already.
 */
export interface TaskHooksOptions<E, R> {
  readonly name: string
  readonly tools: TaskTools<R>
  readonly offload?: ToolResults.OffloadConfig | undefined
  readonly inlineLimit?: number | undefined
  readonly hooks?: Executor.Hooks<E, R> | undefined
  readonly resolved?: Option.Option<PrivateSummaries.PrivateWriterCapability> | undefined
}

/**
 * A turn's hooks, with the private writer the gate resolved (none when the
 * binding needs none), the registry the turn runs with (the door's, with
 * the library's read tool when it joined) and that read tool, when made.
 */
export interface TaskHooks<E, R> {
  readonly hooks: Executor.Hooks<E | TaskHooksError, R | GatedRequirements>
  readonly capability: Option.Option<PrivateSummaries.PrivateWriterCapability>
  readonly tools: Option.Option<Tool.Registry<R | ToolResults.OffloadRequirements>>
  readonly readTool: Option.Option<Tool.Tool<ToolResults.OffloadRequirements>>
}

/**
 * The gate first (`EntryGate.verify` for `entry`: a forged or unarmed
 * binding is refused `Unauthorized` having sent and written nothing; an
 * entry that resolved the writer already is admitted with it); then, in
 * order, compaction under a `Threshold` policy (its capability admitted
 * against the task's journal), offload when `offload` is given (its target
 * resolved and admitted; results the library's read tool answered are left
 * alone), the door's `hooks`, and last the inline limit (`inlineLimit`, by
 * default `ToolResults.defaultInlineBytes` of the policy), so the limit
 * holds for whatever offload and the door's hooks leave inline.
 */
export const taskHooks = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  options: TaskHooksOptions<E, R>
) {
  const resolved = options.resolved ?? Option.none()
  // An entry that already resolved the writer has passed the gate's question.
  const capability =
    Option.isSome(resolved) && binding.policy._tag === "Threshold"
      ? yield* Effect.as(EntryGate.admitBinding(binding, entry), resolved)
      : yield* EntryGate.verify(binding, entry)
  const offload = options.offload
  const doorTools = options.tools
  // Pointers name `offload.readTool`; unless the host opts out, the turn offers a tool of that name (the host's own wins).
  const readTool =
    offload !== undefined &&
    offload.registerReadTool !== false &&
    (doorTools._tag === "Foreign" || !doorTools.registry.tools.has(offload.readTool))
      ? Option.some(ToolResults.readTool(binding.context, { name: offload.readTool }))
      : Option.none()
  const registry =
    doorTools._tag === "Foreign"
      ? undefined
      : Option.isSome(readTool)
        ? ToolResults.registerUnlessNamed(doorTools.registry, readTool.value)
        : doorTools.registry
  const journal = yield* Journal
  const target =
    offload === undefined
      ? Option.none()
      : Option.some(yield* targetFor(binding.context, options.name, offload, capability))
  const hooks: Array<Executor.Hooks<E | TaskHooksError, R | GatedRequirements>> = []
  if (binding.policy._tag === "Threshold" && Option.isSome(capability)) {
    // The specs the turn's requests carry: the registry's, or what the foreign loop learns request by request.
    const specs = doorTools._tag === "Foreign" ? doorTools.specs : registry?.specs
    hooks.push(yield* compactionHooks(binding.policy, capability.value, journal, { tools: specs }))
  }
  if (offload !== undefined && Option.isSome(target)) {
    const offloading = yield* ToolResults.offloadHooks(offload, target.value, journal)
    hooks.push(
      Option.isNone(readTool)
        ? offloading
        : // A registry holds no other tool under the read tool's name: every call of it is the library's.
          ToolResults.sparing(offloading, doorTools._tag === "Foreign" ? doorTools.readBy : readTool.value.name)
    )
  }
  if (options.hooks !== undefined) hooks.push(options.hooks)
  const inlineBytes = options.inlineLimit ?? ToolResults.defaultInlineBytes(binding.policy)
  if (inlineBytes !== undefined) hooks.push(ToolResults.inlineLimitHooks(inlineBytes))
  const assembled: TaskHooks<E, R> = {
    hooks: Executor.composeHooks(...hooks),
    capability,
    tools: Option.fromNullishOr(registry),
    readTool
  }
  return assembled
})
