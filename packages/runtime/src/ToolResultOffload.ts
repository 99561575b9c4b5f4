/**
 * Offloading large tool results from a turn: the body goes to disk under the
 * task's artifact root, and the model (and the journal) get a one-line
 * pointer instead, before the result enters the next request.
 *
 * Private tasks offload onto their agent-private volume, which needs the
 * {@link PrivateSummaries.PrivateSummaries} capability in the type, exactly
 * like summary staging; public results go to the task's output volume and
 * need only its (already checked) output binding. A refused or failed
 * offload keeps the result inline: the content is never lost.
 *
 * @since 0.1.0
 */
import { ArtifactOffload } from "@tessera/artifacts"
import type { DurableFiles, Volume } from "@tessera/core"
import { Digest } from "@tessera/core"
import { Effect, type FileSystem, Option, Path } from "effect"
import type * as Executor from "./Executor.ts"
import type { Journal, JournalIOError, JournalSequenceError } from "./Journal.ts"
import type { ToolResultPart } from "./Model.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"

/**
 * How a turn offloads tool results.
 *
 * - `threshold`: results of more UTF-8 bytes than this are offloaded.
 * - `readTool`: the host's tool for reading a file back, named in the pointer.
 * - `destination`: `Private` (the agent-private volume; needs the
 *   capability) or `Output` (the task's output volume).
 * - `abstractBytes`: the pointer's abstract budget.
 *
 * @since 0.1.0
 * @category models
 */
export interface OffloadConfig {
  readonly threshold: number
  readonly readTool: string
  readonly destination: "Private" | "Output"
  readonly abstractBytes?: number
}

/**
 * Where offloaded results of a task go: a volume, and the artifact root
 * folder inside it.
 *
 * @since 0.1.0
 * @category models
 */
export interface OffloadTarget {
  readonly volume: Volume.VolumeRef
  readonly root: string
}

/**
 * The folder below a volume's data folder that holds artifacts.
 *
 * @since 0.1.0
 * @category paths
 */
export const artifactFolder = "artifacts"

/**
 * The private target: the capability's volume, `artifacts/` inside it.
 *
 * @since 0.1.0
 * @category targets
 */
export const privateTarget: Effect.Effect<OffloadTarget, never, PrivateSummaries.PrivateSummaries | Path.Path> =
  Effect.gen(function* () {
    const capability = yield* PrivateSummaries.current
    const path = yield* Path.Path
    return { volume: capability.volume, root: path.join(capability.folder, artifactFolder) }
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
    (segment) => `tool-results/${context.task}-t${context.turn}-s${context.step}-${segment}.txt`
  )

const stripDigestPrefix = (digest: string): string => digest.replace(/^sha256:/, "")

/**
 * Offloads one tool result to `target` when it is over the threshold, and
 * records the pointer (path, size, digest; never the body) in the journal.
 * Returns the result to use: the pointer when offloaded, the original
 * otherwise.
 *
 * @since 0.1.0
 * @category offload
 */
export const offloadResult = Effect.fn("ToolResultOffload.offloadResult")(function* (
  config: OffloadConfig,
  target: OffloadTarget,
  journal: Journal["Service"],
  context: Executor.ToolContext,
  result: ToolResultPart
) {
  const outcome = yield* ArtifactOffload.offload({
    content: result.content,
    threshold: config.threshold,
    root: target.root,
    target: yield* resultTarget(context),
    readTool: config.readTool,
    ...(config.abstractBytes === undefined ? {} : { abstractBytes: config.abstractBytes })
  })
  if (outcome._tag === "Inline") {
    if (Option.isSome(outcome.reason)) {
      yield* Effect.logWarning(`offload of ${context.call.id} refused; kept inline: ${outcome.reason.value.message}`)
    }
    return result
  }
  yield* journal.append({
    _tag: "ArtifactOffloaded",
    turn: context.turn,
    step: context.step,
    callId: context.call.id,
    volume: target.volume,
    path: `${artifactFolder}/${outcome.path}`,
    size: outcome.size,
    sha256: stripDigestPrefix(outcome.digest),
    ...(outcome.disposition === "Written" ? {} : { disposition: outcome.disposition })
  })
  return { ...result, content: outcome.pointer }
})

/**
 * Requirements of offloading besides a private capability.
 *
 * @since 0.1.0
 * @category models
 */
export type OffloadRequirements = FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles | Journal

/**
 * The `onToolResult` hook that offloads large results to `target`.
 *
 * @since 0.1.0
 * @category hooks
 */
export const offloadHooks = (
  config: OffloadConfig,
  target: OffloadTarget,
  journal: Journal["Service"]
): Executor.Hooks<JournalIOError | JournalSequenceError, OffloadRequirements> => ({
  onToolResult: (context, result) => offloadResult(config, target, journal, context, result)
})
