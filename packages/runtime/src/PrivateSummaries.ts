/**
 * The private writer: one capability, proof that a task has a validated,
 * owner-bound writer for its private content, and the one write-once
 * operation that puts private content on that writer's volume.
 *
 * A capability is minted only by {@link resolve}, and only after the
 * private-writer verdict accepted a volume. Everything that writes private
 * content requires the {@link PrivateSummaries} service in its requirements
 * type, so code that has not resolved a writer does not compile, and a
 * writer is always resolved before the work that needs it starts.
 *
 * A write ({@link stageOnce}) admits the capability once (minted, bound to
 * the journal's task, its volume registered as it was), scrubs the text with
 * the host's redactor, publishes it under `summaries/<operation>/<step>.txt`
 * all at once or not at all, and hashes what it stored. Its bytes go to a
 * temporary name first, are flushed, and are then published by hard link,
 * which never replaces an existing file: a reader never sees a torn file
 * (not even after the process is killed mid-write), and of several
 * concurrent writers of one key exactly one publishes; the others find its
 * file. An offloaded tool result of a private task takes the same road
 * ({@link offloadOnce}): the capability admitted once, the body scrubbed by
 * the same redactor, published under the volume's artifact folder and
 * hashed; transcripts publish their records through the same write-once
 * publish.
 *
 * @since 0.1.0
 */

import type * as ArtifactOffload from "@tessera/artifacts/ArtifactOffload"
import * as PrivateWriter from "@tessera/core/PrivateWriter"
import * as Unauthorized from "@tessera/core/Unauthorized"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Result from "effect/Result"
import type { TaskContext } from "./FilesystemTaskRuntime.ts"
import {
  stagedPath as internalStagedPath,
  offloadOnce as offloadPrivately,
  type PrivateOffloadRequest,
  readStaged as readStagedFile,
  type StagedFile,
  type StageOptions,
  type StagingError,
  type StagingKey,
  type StagingServices,
  withdraw as withdrawStaged,
  writeOnce
} from "./internal/privateFiles.ts"
import {
  admit as admitCapability,
  type Capability,
  type CapabilitySource,
  type JournalRecord,
  mint,
  PrivateSummaries,
  type ResolveError
} from "./internal/privateSummaries.ts"
import { dataFolder } from "./internal/storeFolders.ts"
import { contexts } from "./internal/storeRuntime.ts"
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
 * The capability as an Effect service ({@link PrivateSummaries}): operations
 * that write private content list it in their requirements; only
 * {@link resolve} (then {@link provide}) can satisfy them. And what
 * resolution and admission fail with ({@link ResolveError}): `Unauthorized`
 * (resolution: reason `NoPrivateWriter`, its detail naming why each
 * candidate was refused), or a store failure while reading a volume's
 * facts. Declared with the admission, in the package's internals.
 *
 * @since 0.1.0
 * @category services
 */
export { PrivateSummaries, type ResolveError }

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

/**
 * The capability in scope, admitted for a write by `entry`. Every write of
 * private content admits it once, at the moment it is about to write, and
 * fails `Unauthorized` (never a defect) when:
 *
 * - the value was not minted by {@link resolve} (`NotMinted`): a cast or a
 *   copy can fake the type, not the registry;
 * - `journal` is given and is not the record of the capability's task on the
 *   capability's store (`CapabilityMismatch`): a capability is bound to the
 *   task, agent and runtime it was minted for;
 * - the volume is no longer registered with the kind and owner it had when
 *   the capability was minted (`VolumeChanged`): the one read of the
 *   volume's registration an admission makes.
 *
 * Forgery is a typed refusal rather than a defect so a host can log and
 * count it; it happens before a byte is written or a request is sent.
 *
 * @since 0.1.0
 * @category resolution
 */
export const admit = (
  entry: string,
  journal: Option.Option<JournalRecord> = Option.none()
): Effect.Effect<PrivateWriterCapability, ResolveError, PrivateSummaries | Path.Path> => admitCapability(entry, journal)

/**
 * Which private file to stage (`operation`, `step`), the shape of a staged
 * file ({@link StagedFile}), what a write is checked against and bounded by
 * ({@link StageOptions}: `journal`, the task's journal the capability must
 * be bound to; `maxBytes`, the longest text stored in UTF-8 bytes, applied
 * after the scrub, which may lengthen it), the services a write needs
 * ({@link StagingServices}), and every way staging fails
 * ({@link StagingError}: {@link StagingConflict} when the key holds other
 * bytes, {@link StagingReadFailed} when a staged file cannot be read back).
 * Declared with the write, in the package's internals.
 *
 * @since 0.1.0
 * @category staging
 */
export {
  type StagedFile,
  type StageOptions,
  StagingConflict,
  type StagingError,
  StagingKey,
  StagingReadFailed,
  type StagingServices
} from "./internal/privateFiles.ts"

/**
 * The path of a key relative to the private volume:
 * `summaries/<operation>/<step>.txt`.
 *
 * @since 0.1.0
 * @category staging
 */
export const stagedPath: (key: StagingKey) => string = internalStagedPath

/**
 * Writes `content` under `key` on the resolved private volume, once: the
 * one write of private content. In this order, and a refusal at any step
 * writes nothing:
 *
 * 1. the key is decoded (`InvalidInput` naming the key: a step must be a
 *    positive integer, an operation an identifier);
 * 2. the capability is admitted once ({@link admit}, bound to
 *    `options.journal` when given): one read of the volume's registration;
 * 3. a text is scrubbed by the host's `ArtifactRedactor` when one is
 *    provided (a failing redactor fails the write, `ArtifactRedactionFailed`)
 *    and cut to `options.maxBytes`; bytes are stored as given when no
 *    redactor is provided and refused (`InvalidInput`, field `content`)
 *    when one is, since bytes cannot be scrubbed as text;
 * 4. the final path is checked to lie in the volume's folder, and the bytes
 *    are published and hashed.
 *
 * Staging the same key again returns the existing file (`AlreadyStaged`)
 * when the bytes are identical and fails {@link StagingConflict} otherwise.
 * Concurrent writers of one key: exactly one publishes, the others return
 * `AlreadyStaged` or `StagingConflict`.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { PrivateSummaries } from "@tessera/runtime"
 * import { Effect } from "effect"
 *
 * declare const capability: PrivateSummaries.PrivateWriterCapability
 *
 * // Resolves to "summaries/notes/1.txt", on the task's private volume.
 * export const staged = PrivateSummaries.stageOnce(
 *   { operation: Ids.OperationId.make("notes"), step: 1 },
 *   "what the agent found so far"
 * ).pipe(
 *   PrivateSummaries.provide(capability),
 *   Effect.map((file) => file.path)
 * )
 * ```
 *
 * @since 0.1.0
 * @category staging
 */
export const stageOnce = (
  key: StagingKey,
  content: string | Uint8Array,
  options: StageOptions = {}
): Effect.Effect<StagedFile, StagingError, StagingServices> =>
  Effect.map(writeOnce("PrivateSummaries.stageOnce", key, content, options), (written) => written.file)

/**
 * The file staged under `key`, if there is one, with its text: what
 * compaction adopts when a crash interrupted it after staging. Reading
 * writes nothing, so it checks only that the capability was minted (and is
 * bound to `journal`'s task when one is given); it does not read the
 * volume's registration, which every write does.
 *
 * @since 0.1.0
 * @category staging
 */
export const readStaged = (
  key: StagingKey,
  journal: Option.Option<JournalRecord> = Option.none()
): Effect.Effect<Option.Option<{ readonly file: StagedFile; readonly text: string }>, StagingError, StagingServices> =>
  readStagedFile("PrivateSummaries.readStaged", key, journal)

/**
 * Removes the file staged under `key` and syncs its folder: the one way a
 * staged file goes, used only after the journal recorded why
 * (`SummarySuperseded`). Admitted like a write. Absent already is fine.
 *
 * @since 0.1.0
 * @category staging
 */
export const withdraw = (key: StagingKey): Effect.Effect<void, StagingError, StagingServices> =>
  withdrawStaged("PrivateSummaries.withdraw", key)

/**
 * What {@link offloadOnce} takes: an `ArtifactOffload.OffloadRequest`
 * without its root (the private writer's own artifact folder) and with its
 * body as one text.
 *
 * @since 0.1.0
 * @category offload
 */
export type { PrivateOffloadRequest }

/**
 * Offloads a tool result onto the resolved private volume: the private
 * writer's road for an offloaded body, which `ToolResults.offloadResult`
 * takes for a private task. The capability is checked to be minted for
 * `journal`'s task (`NotMinted`, `CapabilityMismatch`) and, when the body
 * may cross `request.threshold`, admitted (`VolumeChanged`: the one read of
 * the volume's registration) before anything is written; then
 * `ArtifactOffload.offload` runs with the volume's artifact folder as its
 * root: the target resolved inside it, the body scrubbed by the host's
 * redactor, written to a temporary name, published and hashed. A refused or
 * failed write is soft (`Inline`, with the caller's content and the
 * reason); only a refused capability fails.
 *
 * @since 0.1.0
 * @category offload
 */
export const offloadOnce = (
  entry: string,
  request: PrivateOffloadRequest,
  journal: JournalRecord
): Effect.Effect<ArtifactOffload.OffloadResult, ResolveError, StagingServices> =>
  offloadPrivately(entry, request, journal)
