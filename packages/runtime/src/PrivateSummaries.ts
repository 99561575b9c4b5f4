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

import * as PrivateWriter from "@tessera/core/PrivateWriter"
import * as Unauthorized from "@tessera/core/Unauthorized"
import * as Volume from "@tessera/core/Volume"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import type { TaskContext } from "./FilesystemTaskRuntime.ts"
import { isRecordOf } from "./internal/journalIdentity.ts"
import type { Capability, CapabilitySource } from "./internal/privateSummaries.ts"
import { isMinted, mint } from "./internal/privateSummaries.ts"
import { dataFolder } from "./internal/storeFolders.ts"
import { contexts } from "./internal/storeRuntime.ts"
import type { JournalService } from "./Journal.ts"
import * as Observability from "./Observability.ts"
import type { StoreIoError, VolumeMetadataInvalid } from "./VolumeStore.ts"

/**
 * A validated private writer. Its type carries a brand only the library can
 * produce; an object literal of this shape does not compile outside it.
 *
 * - `writer`: the verdict's facts (volume, descriptor, agent, task).
 * - `folder`: the volume's data folder, where private files are staged.
 * - `source`: which candidate resolved (`CreatedPrivate`, `RuntimePrivate`,
 *   `OutputBinding`).
 * - `runtime`, `task`, `agent`, `volume`: what it was minted for; every
 *   consumer checks them ({@link admit}).
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
  const verdictOn = (ref: Volume.VolumeRef) =>
    Effect.map(store.custody(ref), (custody) =>
      PrivateWriter.checkPrivateWriter({ ref, custody, scope: context.scope })
    )
  const found: Array<Candidate> = []
  for (const ref of context.createdPrivate) {
    found.push({ source: "CreatedPrivate", ref, verdict: yield* verdictOn(ref) })
  }
  if (Option.isSome(context.runtime.privateVolume)) {
    // The runtime's private volume was validated against the runtime's own
    // scope; a task uses it only under the same verdict as any other
    // candidate: its own agent owns it and its own scope grants the write.
    const ref = context.runtime.privateVolume.value.ref
    found.push({ source: "RuntimePrivate", ref, verdict: yield* verdictOn(ref) })
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
 * Checks that `context` is one a runtime minted; a copied or hand-built one
 * fails `Unauthorized` `NotMinted`. Identity is the whole check: only a
 * bound runtime's `bindTask` mints a context, after refusing a scope its
 * host did not issue (`ScopeNotIssued`), and the context is frozen, so a
 * minted context's runtime and scope are the ones that were checked.
 *
 * @since 0.1.0
 * @category resolution
 */
export const requireContext = (
  context: TaskContext,
  entry: string
): Effect.Effect<TaskContext, Unauthorized.Unauthorized> => contexts.require(context, { entry })

/**
 * Resolves the task's private writer, in this order: the task's created
 * private content, the runtime's private volume, the task's output binding.
 * The first candidate the private-writer verdict accepts wins; every
 * candidate is judged by that one verdict (custody, `AgentPrivate`, owned by
 * the task's agent, write-granted to the task). When none passes, fails
 * `Unauthorized` with reason `NoPrivateWriter`, listing every candidate and
 * why it was refused. A context the library did not mint fails first
 * (see {@link requireContext}). Resolving sends nothing to a model and
 * writes nothing.
 *
 * @since 0.1.0
 * @category resolution
 */
export const resolve = Effect.fnUntraced(function* (
  context: TaskContext
): Effect.fn.Return<PrivateWriterCapability, ResolveError> {
  yield* requireContext(context, "PrivateSummaries.resolve")
  const found = yield* candidates(context)
  // The first accepted candidate wins; the refusals before it are reported only if none is accepted.
  const refusals: Array<string> = []
  for (const candidate of found) {
    if (Result.isSuccess(candidate.verdict)) {
      const folder = dataFolder(context.runtime.host.store, candidate.ref)
      return mint({ writer: candidate.verdict.success, folder, source: candidate.source, runtime: context.runtime })
    }
    refusals.push(
      `${candidate.source} ${candidate.ref.store}/${candidate.ref.volume}: ${candidate.verdict.failure.reason}`
    )
  }
  return yield* new Unauthorized.Unauthorized({
    reason: "NoPrivateWriter",
    detail: `task has no owner-bound private writer (${refusals.length === 0 ? "no candidate volume" : refusals.join("; ")})`,
    task: context.task
  })
}, Observability.withSpan("PrivateSummaries.resolve"))

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

const refuse = (reason: Unauthorized.UnauthorizedReason, detail: string, capability?: PrivateWriterCapability) =>
  new Unauthorized.Unauthorized({
    reason,
    detail,
    ...(capability === undefined ? {} : { task: capability.task, volume: capability.volume })
  })

/**
 * The capability in scope, admitted for a write by `entry`. Every consumer
 * that writes private content calls this, at the moment it is about to
 * write, and fails `Unauthorized` (never a defect) when:
 *
 * - the value was not minted by {@link resolve} (`NotMinted`): a cast or a
 *   copy can fake the type, not the registry;
 * - `journal` is given and is not the record of the capability's task on the
 *   capability's store (`CapabilityMismatch`): a capability is bound to the
 *   task, agent and runtime it was minted for;
 * - the volume is no longer registered with the kind and owner it had when
 *   the capability was minted (`VolumeChanged`).
 *
 * Forgery is a typed refusal rather than a defect so a host can log and
 * count it; it happens before a byte is written or a request is sent.
 *
 * @since 0.1.0
 * @category resolution
 */
export const admit = Effect.fnUntraced(function* (
  entry: string,
  journal: Option.Option<Pick<JournalService, "task" | "file">> = Option.none()
): Effect.fn.Return<PrivateWriterCapability, ResolveError, PrivateSummaries | Path.Path> {
  const capability = yield* admitBinding(entry, journal)
  const now = yield* capability.runtime.host.store.custody(capability.volume)
  const then = capability.writer.descriptor
  if (Option.isNone(now) || now.value.kind !== then.kind || !Volume.sameOwner(now.value.owner, then.owner)) {
    return yield* refuse(
      "VolumeChanged",
      `${entry}: volume ${capability.volume.store}/${capability.volume.volume} is no longer registered as it was when the capability was minted`,
      capability
    )
  }
  return capability
})

/**
 * The checks of {@link admit} that read nothing: the capability in scope was
 * minted, and `journal` (when given) is the record of its task on its
 * store. For a caller whose write goes through a consumer that admits the
 * capability itself right before writing (`Compaction.publish` staging
 * through `PrivateStaging.stageOnce`): the volume's registration is then
 * read once, at the write, rather than twice in a row.
 *
 * @internal
 */
export const admitBinding = Effect.fnUntraced(function* (
  entry: string,
  journal: Option.Option<Pick<JournalService, "task" | "file">> = Option.none()
): Effect.fn.Return<PrivateWriterCapability, Unauthorized.Unauthorized, PrivateSummaries | Path.Path> {
  const given = yield* PrivateSummaries
  if (!isMinted(given)) {
    return yield* refuse(
      "NotMinted",
      `${entry}: the private-summaries capability was not minted by PrivateSummaries.resolve (forged or copied)`
    )
  }
  const capability = given
  if (Option.isSome(journal)) {
    const record = journal.value
    const path = yield* Path.Path
    if (!isRecordOf(record, capability.task, capability.runtime.host.store.root, path)) {
      return yield* refuse(
        "CapabilityMismatch",
        `${entry}: the capability was minted for task ${capability.task} (agent ${capability.agent}) on store ${capability.volume.store}, but the journal ${record.file} is task ${record.task}'s, or not that store's`,
        capability
      )
    }
  }
  return capability
})
