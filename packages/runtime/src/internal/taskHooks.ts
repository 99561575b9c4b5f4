/**
 * The one assembly of a bound task's hooks. Every door that runs a turn of a
 * bound task gets its hooks here: the stock executor's gated entries
 * (`TaskExecution.runTurn` and the others) and every adapter's foreign loop
 * (`TaskExecution.foreignLoop`), so what holds for one holds for all.
 *
 * What the doors really differ in is a parameter, never a copy:
 *
 * - the gate's admission an entry made already (a summary-file turn, which
 *   needs the writer whatever the policy), so the gate runs once per entry;
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
import * as PrivateSummaries from "../PrivateSummaries.ts"
import type * as Tool from "../Tool.ts"
import * as ToolResults from "../ToolResults.ts"
import { type CompactionError, type CompactionRequirements, compactionHooks } from "./compactionHooks.ts"
import { offloadWriter } from "./offload.ts"

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
 * by the door beforehand; `admitted`, the gate's admission when the entry
 * ran the gate already.
 */
export interface TaskHooksOptions<E, R> {
  readonly name: string
  readonly tools: TaskTools<R>
  readonly offload?: ToolResults.OffloadConfig | undefined
  readonly inlineLimit?: number | undefined
  readonly hooks?: Executor.Hooks<E, R> | undefined
  readonly admitted?: EntryGate.Admission | undefined
}

/**
 * A turn's hooks, with the private writer they write through (none when
 * the turn needs none), the registry the turn runs with (the door's, with
 * the library's read tool when it joined) and that read tool, when made.
 */
export interface TaskHooks<E, R> {
  readonly hooks: Executor.Hooks<E | TaskHooksError, R | GatedRequirements>
  readonly capability: Option.Option<PrivateSummaries.PrivateWriterCapability>
  readonly tools: Option.Option<Tool.Registry<R | ToolResults.OffloadRequirements>>
  readonly readTool: Option.Option<Tool.Tool<ToolResults.OffloadRequirements>>
}

/**
 * The gate first (`EntryGate.verify` for `entry`, unless the entry hands in
 * its admission: a forged or unarmed binding is refused `Unauthorized`
 * having sent and written nothing); a private offload needs the writer
 * whatever the policy (resolved here when the gate did not). Then, in
 * order, compaction under a `Threshold` policy and offload when `offload`
 * is given (results the library's read tool answered are left alone), both
 * made under the writer as the `PrivateSummaries` service (each admits it
 * against the task's journal), the door's `hooks`, and last the inline
 * limit (`inlineLimit`, by default `ToolResults.defaultInlineBytes` of the
 * policy), so the limit holds for whatever offload and the door's hooks
 * leave inline.
 */
export const taskHooks = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  options: TaskHooksOptions<E, R>
) {
  const admission = options.admitted ?? (yield* EntryGate.verify(binding, entry))
  const offload = options.offload
  const capability =
    // Anything but `Output` is private, as the offload itself decides (a misspelt destination never writes publicly).
    offload !== undefined && offload.destination !== "Output"
      ? Option.some(yield* offloadWriter(admission.context, options.name, admission.writer))
      : admission.writer
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
  const hooks: Array<Executor.Hooks<E | TaskHooksError, R | GatedRequirements>> = []
  if (binding.policy._tag === "Threshold" && Option.isSome(capability)) {
    // The specs the turn's requests carry: the registry's, or what the foreign loop learns request by request.
    const specs = doorTools._tag === "Foreign" ? doorTools.specs : registry?.specs
    hooks.push(
      yield* compactionHooks(binding.policy, journal, { tools: specs }).pipe(PrivateSummaries.provide(capability.value))
    )
  }
  if (offload !== undefined) {
    const offloading =
      offload.destination === "Output" || Option.isNone(capability)
        ? yield* Effect.flatMap(ToolResults.outputTarget(admission.context, options.name), (target) =>
            ToolResults.offloadHooks(offload, target, journal)
          )
        : yield* Effect.flatMap(ToolResults.privateTarget, (target) =>
            ToolResults.offloadHooks(offload, target, journal)
          ).pipe(PrivateSummaries.provide(capability.value))
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
