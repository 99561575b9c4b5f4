/**
 * The private-summaries capability: proof that a task has a validated,
 * owner-bound writer for its private content.
 *
 * A capability is minted only by {@link resolve}, and only after the
 * private-writer verdict accepted a volume. Everything that writes private
 * content (summary staging, private artifact offload) requires the
 * {@link PrivateSummaries} service in its requirements type, so code that
 * has not resolved a writer does not compile, and a writer is always
 * resolved before the work that needs it starts.
 *
 * @since 0.1.0
 */
import type { Volume } from "@tessera/core"
import { PrivateWriter, Unauthorized } from "@tessera/core"
import { Context, Effect, Option, Result } from "effect"
import { dual } from "effect/Function"
import type { Capability, CapabilitySource } from "./internal/privateSummaries.ts"
import { isMinted, mint } from "./internal/privateSummaries.ts"
import type { TaskContext } from "./TaskContext.ts"
import type { StoreIoError, VolumeMetadataInvalid } from "./VolumeStore.ts"

/**
 * A validated private writer. Its type carries a brand only the library can
 * produce; an object literal of this shape does not compile outside it.
 *
 * - `writer`: the verdict's facts (volume, descriptor, agent, task).
 * - `folder`: the volume's data folder, where private files are staged.
 * - `source`: which candidate resolved (`CreatedPrivate`, `RuntimePrivate`,
 *   `OutputBinding`).
 *
 * @since 0.1.0
 * @category models
 */
export type PrivateWriterCapability = Capability

/**
 * @since 0.1.0
 * @category models
 */
export type { CapabilitySource }

/**
 * The capability as an Effect service. Operations that write private content
 * list it in their requirements; only {@link resolve} (then
 * {@link provide}) can satisfy them.
 *
 * @since 0.1.0
 * @category services
 */
export class PrivateSummaries extends Context.Service<PrivateSummaries, PrivateWriterCapability>()(
  "@tessera/runtime/PrivateSummaries"
) {}

/**
 * Errors resolution can fail with: `Unauthorized` (reason `NoPrivateWriter`,
 * its detail naming why each candidate was refused), or a store failure while
 * reading a candidate's facts.
 *
 * @since 0.1.0
 * @category models
 */
export type ResolveError = Unauthorized.Unauthorized | VolumeMetadataInvalid | StoreIoError

interface Candidate {
  readonly source: CapabilitySource
  readonly ref: Volume.VolumeRef
  readonly verdict: Result.Result<PrivateWriter.VerifiedPrivateWriter, Unauthorized.Unauthorized>
}

const candidates = Effect.fnUntraced(function* (context: TaskContext) {
  const store = context.runtime.host.store
  const found: Array<Candidate> = []
  for (const ref of context.createdPrivate) {
    const custody = yield* store.custody(ref)
    found.push({
      source: "CreatedPrivate",
      ref,
      verdict: PrivateWriter.checkPrivateWriter({ ref, custody, scope: context.scope })
    })
  }
  if (Option.isSome(context.runtime.privateVolume)) {
    // The runtime's private volume was validated against the runtime's own
    // scope when it opened; a task may use it only when it runs for the
    // agent that owns it.
    const writer = context.runtime.privateVolume.value
    found.push({
      source: "RuntimePrivate",
      ref: writer.ref,
      verdict:
        writer.agent === context.agent
          ? Result.succeed({ ...writer, task: context.task })
          : Result.fail(
              new Unauthorized.Unauthorized({
                reason: "NotOwnerBound",
                detail: `the runtime's private volume belongs to agent ${writer.agent}, not to the task's agent ${context.agent}`,
                task: context.task,
                volume: writer.ref
              })
            )
    })
  }
  if (Option.isSome(context.output)) {
    const binding = context.output.value
    found.push({
      source: "OutputBinding",
      ref: binding.ref,
      verdict: PrivateWriter.checkPrivateWriter({
        ref: binding.ref,
        custody: Option.some(binding.descriptor),
        scope: context.scope
      })
    })
  }
  return found
})

/**
 * Resolves the task's private writer, in this order: the task's created
 * private content, the runtime's private volume, the task's output binding.
 * The first candidate the private-writer verdict accepts wins. When none
 * does, fails `Unauthorized` with reason `NoPrivateWriter`, listing every
 * candidate and why it was refused. Resolving sends nothing to a model and
 * writes nothing.
 *
 * @since 0.1.0
 * @category resolution
 */
export const resolve = Effect.fn("PrivateSummaries.resolve")(function* (
  context: TaskContext
): Effect.fn.Return<PrivateWriterCapability, ResolveError> {
  const found = yield* candidates(context)
  for (const candidate of found) {
    if (Result.isSuccess(candidate.verdict)) {
      const folder = yield* context.runtime.host.store.folderOf(candidate.ref)
      return mint({ writer: candidate.verdict.success, folder, source: candidate.source })
    }
  }
  const refusals = found.map((candidate) =>
    Result.isFailure(candidate.verdict)
      ? `${candidate.source} ${candidate.ref.store}/${candidate.ref.volume}: ${candidate.verdict.failure.reason}`
      : `${candidate.source}: accepted`
  )
  return yield* new Unauthorized.Unauthorized({
    reason: "NoPrivateWriter",
    detail: `task has no owner-bound private writer (${refusals.length === 0 ? "no candidate volume" : refusals.join("; ")})`,
    task: context.task
  })
})

/**
 * Whether the task's private writer resolves, without failing.
 *
 * @since 0.1.0
 * @category resolution
 */
export const resolveOption = (
  context: TaskContext
): Effect.Effect<Option.Option<PrivateWriterCapability>, VolumeMetadataInvalid | StoreIoError> =>
  resolve(context).pipe(
    Effect.map(Option.some),
    Effect.catchTag("Unauthorized", () => Effect.succeed(Option.none()))
  )

/**
 * Provides a resolved capability to an effect that writes private content.
 *
 * @since 0.1.0
 * @category resolution
 */
export const provide: {
  (
    capability: PrivateWriterCapability
  ): <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, Exclude<R, PrivateSummaries>>
  <A, E, R>(
    effect: Effect.Effect<A, E, R>,
    capability: PrivateWriterCapability
  ): Effect.Effect<A, E, Exclude<R, PrivateSummaries>>
} = dual(2, <A, E, R>(effect: Effect.Effect<A, E, R>, capability: PrivateWriterCapability) =>
  Effect.provideService(effect, PrivateSummaries, capability)
)

/**
 * The capability in scope, checked to be one the library minted. A forged
 * value (a cast can fake the type) dies here instead of writing anything.
 *
 * @since 0.1.0
 * @category resolution
 */
export const current: Effect.Effect<PrivateWriterCapability, never, PrivateSummaries> = Effect.flatMap(
  Effect.service(PrivateSummaries),
  (capability) =>
    isMinted(capability)
      ? Effect.succeed(capability)
      : Effect.die(new Error("a PrivateSummaries capability was forged: it was not minted by resolve"))
)
