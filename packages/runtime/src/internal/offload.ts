/**
 * Offloading large tool results from a turn: the body goes to disk under the
 * task's artifact root, and the model (and the journal) get a one-line
 * pointer instead, before the result enters the next request.
 *
 * Private tasks offload onto their agent-private volume, through the private
 * writer's own offload write (the {@link PrivateSummaries.PrivateSummaries}
 * capability in the type, provided as a service, exactly like summary
 * staging); public results go to the task's output volume and need only its
 * (already checked) output binding. A refused or failed offload keeps the
 * result inline: the content is never lost.
 *
 * @since 0.1.0
 */
import * as ArtifactOffload from "@tessera/artifacts/ArtifactOffload"
import * as Digest from "@tessera/core/Digest"
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import * as Unauthorized from "@tessera/core/Unauthorized"
import * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type * as Executor from "../Executor.ts"
import type { Journal, JournalIoError, JournalSequenceError } from "../Journal.ts"
import type { ToolResultPart } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import * as VolumeStore from "../VolumeStore.ts"
import { isRecordOf } from "./journalIdentity.ts"
import type { TaskContext } from "./storeRuntime.ts"
import { makeRegistry } from "./trusted.ts"

/**
 * How a turn offloads tool results.
 *
 * - `threshold`: results of more UTF-8 bytes than this are offloaded.
 * - `readTool`: the tool for reading an artifact back, named in the pointer.
 * - `destination`: `Private` (the agent-private volume; needs the
 *   capability) or `Output` (the task's output volume).
 * - `abstractBytes`: the pointer's abstract budget.
 * - `registerReadTool`: whether a gated turn (`TaskExecution`) offers the
 *   ready read tool (`ToolResults.readTool`) under the `readTool` name; defaults to `true`.
 *   A turn whose tools already hold a tool of that name keeps the host's
 *   own either way; `false` is for a host that offers reading elsewhere.
 *
 * @since 0.1.0
 * @category models
 */
export interface OffloadConfig {
  readonly threshold: number
  readonly readTool: string
  readonly destination: "Private" | "Output"
  readonly abstractBytes?: number
  readonly registerReadTool?: boolean
}

/**
 * Where offloaded results of a task go: its destination, a volume, the
 * artifact root folder inside it, and the task it was made for. Only
 * {@link privateTarget} and {@link outputTarget} make one, and the offload
 * hook accepts no other (a hand-built or copied target is refused
 * `Unauthorized` `NotMinted`). A `Private` target is written through the
 * `PrivateSummaries` capability in scope ({@link WriterOf}).
 *
 * @since 0.1.0
 * @category models
 */
export interface OffloadTarget<Destination extends OffloadConfig["destination"] = OffloadConfig["destination"]> {
  readonly destination: Destination
  readonly volume: Volume.VolumeRef
  readonly root: string
  readonly task: Ids.TaskId
  /** The store root the target lies in; a journal outside it is not the target task's. */
  readonly storeRoot: string
}

/**
 * What writing to a target needs besides {@link OffloadRequirements}: the
 * `PrivateSummaries` capability for a `Private` target, nothing more for an
 * `Output` one.
 *
 * @since 0.1.0
 * @category models
 */
export type WriterOf<Destination extends OffloadConfig["destination"]> = Destination extends "Private"
  ? PrivateSummaries.PrivateSummaries
  : never

const targets = makeRegistry<OffloadTarget>("offload target")

/**
 * The private target: the capability's volume, `artifacts/` inside it. The
 * capability is admitted first (`PrivateSummaries.admit`).
 *
 * @since 0.1.0
 * @category targets
 */
export const privateTarget: Effect.Effect<
  OffloadTarget<"Private">,
  PrivateSummaries.ResolveError,
  PrivateSummaries.PrivateSummaries | Path.Path
> = Effect.gen(function* () {
  const capability = yield* PrivateSummaries.admit("ToolResults.privateTarget")
  const path = yield* Path.Path
  return targets.mint<OffloadTarget<"Private">>({
    destination: "Private",
    volume: capability.volume,
    root: path.join(capability.folder, VolumeStore.artifactFolder),
    task: capability.task,
    storeRoot: capability.runtime.host.store.root
  })
})

/**
 * The output target of a bound task: its checked output binding's volume,
 * `artifacts/` inside it. A task with no output binding fails `Unauthorized`
 * `MissingWriteGrant`; a context the library did not mint fails first.
 *
 * @since 0.1.0
 * @category targets
 */
export const outputTarget = Effect.fnUntraced(function* (
  context: TaskContext,
  entry = "ToolResults.outputTarget"
): Effect.fn.Return<
  OffloadTarget<"Output">,
  Unauthorized.Unauthorized | VolumeStore.StoreIoError | VolumeStore.VolumeMetadataInvalid,
  Path.Path
> {
  yield* PrivateSummaries.requireContext(context, entry)
  if (Option.isNone(context.output)) {
    return yield* new Unauthorized.Unauthorized({
      reason: "MissingWriteGrant",
      detail: `${entry}: offload to Output needs an output binding, and the task has none`,
      task: context.task
    })
  }
  const volume = context.output.value.ref
  const path = yield* Path.Path
  const folder = yield* context.runtime.host.store.folderOf(volume)
  return targets.mint<OffloadTarget<"Output">>({
    destination: "Output",
    volume,
    root: path.join(folder, VolumeStore.artifactFolder),
    task: context.task,
    storeRoot: context.runtime.host.store.root
  })
})

/**
 * The private writer an entry writes through: the one its gate resolved
 * (`admitted`), else one resolved from the context here. A task with no
 * private writer fails `Unauthorized`, its detail naming `entry` and what
 * needed the writer (`purpose`), before anything is written.
 */
export const writerFor = (
  context: TaskContext,
  entry: string,
  purpose: string,
  admitted: Option.Option<PrivateSummaries.PrivateWriterCapability>
): Effect.Effect<PrivateSummaries.PrivateWriterCapability, PrivateSummaries.ResolveError, Path.Path> =>
  Option.isSome(admitted)
    ? Effect.succeed(admitted.value)
    : PrivateSummaries.resolve(context).pipe(
        Effect.mapError((error) =>
          error._tag === "Unauthorized"
            ? new Unauthorized.Unauthorized({
                reason: error.reason,
                detail: `${entry}: ${purpose}, but ${error.detail}`,
                task: context.task
              })
            : error
        )
      )

/** The private writer of a private offload (see {@link writerFor}). */
export const offloadWriter = (
  context: TaskContext,
  entry: string,
  admitted: Option.Option<PrivateSummaries.PrivateWriterCapability>
) => writerFor(context, entry, "private offload needs a private writer", admitted)

const admitTarget = Effect.fnUntraced(function* <Destination extends OffloadConfig["destination"]>(
  target: OffloadTarget<Destination>,
  journal: Journal["Service"]
) {
  const entry = "ToolResults.offloadHooks"
  yield* targets.require(target, { entry })
  const path = yield* Path.Path
  if (!isRecordOf(journal, target.task, target.storeRoot, path)) {
    return yield* new Unauthorized.Unauthorized({
      reason: "CapabilityMismatch",
      detail: `${entry}: the offload target was made for task ${target.task}, but the journal ${journal.file} is task ${journal.task}'s`,
      task: journal.task,
      volume: target.volume
    })
  }
  return target
})

/**
 * A call id as a file-name segment, one-to-one: letters, digits and `_` stay
 * as they are, every other UTF-8 byte (`-` and `.` included) becomes `.` and
 * two lowercase hex digits, so two different ids never share a segment and
 * the segment holds no `-` (the separator of {@link resultTarget}). An
 * encoding longer than 96 characters keeps its first 63 and appends `~` and
 * the first 32 hex digits of the id's SHA-256, so a long id stays short and
 * distinct (up to a digest collision).
 *
 * @since 0.1.0
 * @category paths
 */
export const callIdSegment = (callId: string): Effect.Effect<string> => {
  let encoded = ""
  for (const byte of encoder.encode(callId)) {
    const isKept =
      (byte >= 0x30 && byte <= 0x39) ||
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      byte === 0x5f
    encoded += isKept ? String.fromCharCode(byte) : `.${byte.toString(16).padStart(2, "0")}`
  }
  if (encoded.length === 0) return Effect.succeed("~empty")
  if (encoded.length <= maxSegment) return Effect.succeed(encoded)
  return Effect.map(
    Digest.sha256(encoder.encode(callId)),
    (digest) => `${encoded.slice(0, maxSegment - 33)}~${digest.slice(0, 32)}`
  )
}

const encoder = new TextEncoder()
const maxSegment = 96

/**
 * The relative target of one tool result: `tool-results/<task>-t<turn>-s<step>-<call>.txt`
 * with `<call>` from {@link callIdSegment}. One-to-one over task, turn, step
 * and call (the call segment holds no `-`, so the name splits back at its
 * last three separators), and always a plain path segment (call ids are
 * provider text, `call:1` and `call.1` included).
 *
 * @since 0.1.0
 * @category paths
 */
export const resultTarget = (context: Executor.ToolContext): Effect.Effect<string> =>
  Effect.map(
    callIdSegment(context.call.id),
    (segment) => `${VolumeStore.toolResultsFolder}/${context.task}-t${context.turn}-s${context.step}-${segment}.txt`
  )

export const stripDigestPrefix = (digest: string): string => digest.replace(/^sha256:/, "")

/**
 * What a call's journal records of a body it offloaded into `volume`: the file's place in the volume, its size
 * and digest, and how it got its name (absent when the name was free).
 */
export const offloadedEntry = (
  at: { readonly turn: number; readonly step: number; readonly callId: string },
  volume: Volume.VolumeRef,
  outcome: ArtifactOffload.OffloadResult & { readonly _tag: "Offloaded" }
) => ({
  _tag: "ArtifactOffloaded" as const,
  ...at,
  volume,
  path: `${VolumeStore.artifactFolder}/${outcome.path}`,
  size: outcome.size,
  sha256: stripDigestPrefix(outcome.digest),
  ...(outcome.disposition === "Written" ? {} : { disposition: outcome.disposition })
})

/**
 * Offloads one tool result to `target` when it is over the threshold, and
 * records the pointer (path, size, digest; never the body) in the journal.
 * Returns the result to use: the pointer when offloaded, the original
 * otherwise. The target is checked first (minted, for the journal's task).
 * A private target is written by the private writer's offload write
 * (`PrivateSummaries.offloadOnce`): the capability in scope is checked to be
 * minted for the journal's task, and a body that may cross the threshold
 * admits it (one read of the volume's registration) before it is written,
 * so a volume whose owner or kind changed mid-turn fails the call
 * `Unauthorized` (`VolumeChanged`), loudly, instead of receiving the body.
 *
 * @since 0.1.0
 * @category offload
 */
export const offloadResult: <Destination extends OffloadConfig["destination"]>(
  config: OffloadConfig,
  target: OffloadTarget<Destination>,
  journal: Journal["Service"],
  context: Executor.ToolContext,
  result: ToolResultPart
) => Effect.Effect<
  ToolResultPart,
  JournalIoError | JournalSequenceError | PrivateSummaries.ResolveError,
  Exclude<OffloadRequirements, Journal> | WriterOf<Destination>
> = Effect.fnUntraced(function* (
  config: OffloadConfig,
  target: OffloadTarget,
  journal: Journal["Service"],
  context: Executor.ToolContext,
  result: ToolResultPart
) {
  yield* admitTarget(target, journal)
  yield* Observability.annotate({
    "tessera.task": context.task,
    "tessera.turn": context.turn,
    "tessera.step": context.step,
    "gen_ai.tool.name": context.call.name,
    "gen_ai.tool.call.id": context.call.id,
    "tessera.offload.volume": target.volume.volume,
    "tessera.offload.threshold": config.threshold
  })
  const where = yield* resultTarget(context)
  const outcome =
    target.destination === "Private"
      ? yield* PrivateSummaries.offloadOnce("ToolResults.offloadResult", offloadRequest(config, where, result), journal)
      : yield* ArtifactOffload.offload({ ...offloadRequest(config, where, result), root: target.root })
  yield* Observability.annotate(
    outcome._tag === "Inline"
      ? { "tessera.offload.outcome": Option.isSome(outcome.reason) ? "Refused" : "Inline" }
      : { "tessera.offload.outcome": outcome.disposition, "tessera.offload.size": outcome.size }
  )
  if (outcome._tag === "Inline") {
    if (Option.isSome(outcome.reason)) {
      yield* Effect.logWarning(`offload of ${context.call.id} refused; kept inline: ${outcome.reason.value.message}`)
    }
    return result
  }
  yield* journal.append(
    offloadedEntry({ turn: context.turn, step: context.step, callId: context.call.id }, target.volume, outcome)
  )
  return { ...result, content: outcome.pointer }
}, Observability.withSpan("ToolResults.offloadResult")) as never

// Made where it is passed, never kept: a request holds the whole body, which must not outlive the write.
const offloadRequest = (config: OffloadConfig, target: string, result: ToolResultPart) => ({
  content: result.content,
  threshold: config.threshold,
  target,
  readTool: config.readTool,
  ...(config.abstractBytes === undefined ? {} : { abstractBytes: config.abstractBytes })
})

/**
 * Requirements of offloading besides a private capability.
 *
 * @since 0.1.0
 * @category models
 */
export type OffloadRequirements = FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles | Journal

/**
 * The `onToolResult` hook that offloads large results to `target`, checked
 * first: the target must be one the library made ({@link privateTarget},
 * {@link outputTarget}) for the journal's task on the journal's store, else
 * `Unauthorized` before any file is written. For a `Private` target the
 * hooks are made under the `PrivateSummaries` capability in scope, which
 * must be the one of the target's volume and task (else `Unauthorized`
 * `CapabilityMismatch`); every write through them admits it again (see
 * {@link offloadResult}).
 *
 * @since 0.1.0
 * @category hooks
 */
export const offloadHooks = <Destination extends OffloadConfig["destination"]>(
  config: OffloadConfig,
  target: OffloadTarget<Destination>,
  journal: Journal["Service"]
): Effect.Effect<
  Executor.Hooks<JournalIoError | JournalSequenceError | PrivateSummaries.ResolveError, OffloadRequirements>,
  Unauthorized.Unauthorized,
  Path.Path | WriterOf<Destination>
> =>
  Effect.gen(function* () {
    const admitted = yield* admitTarget(target, journal)
    if (admitted.destination === "Output") {
      const output = admitted as OffloadTarget<"Output">
      return { onToolResult: (context, result) => offloadResult(config, output, journal, context, result) }
    }
    const writer = yield* PrivateSummaries.PrivateSummaries as unknown as Effect.Effect<
      PrivateSummaries.PrivateWriterCapability,
      never,
      WriterOf<Destination>
    >
    if (
      writer.task !== admitted.task ||
      Volume.formatVolumeRef(writer.volume) !== Volume.formatVolumeRef(admitted.volume)
    ) {
      return yield* new Unauthorized.Unauthorized({
        reason: "CapabilityMismatch",
        detail: `ToolResults.offloadHooks: the private target is volume ${Volume.formatVolumeRef(admitted.volume)} of task ${admitted.task}, but the capability in scope writes volume ${Volume.formatVolumeRef(writer.volume)} for task ${writer.task}`,
        task: admitted.task,
        volume: admitted.volume
      })
    }
    return {
      onToolResult: (context, result) =>
        offloadResult(config, admitted as OffloadTarget<"Private">, journal, context, result).pipe(
          PrivateSummaries.provide(writer)
        )
    }
  })
