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
import { Effect, type FileSystem, Option, Path } from "effect"
import type * as Executor from "./Executor.ts"
import type { Journal, JournalIOError, JournalSequenceError } from "./Journal.ts"
import type { ToolResultPart } from "./Model.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"

/**
 * How a turn offloads tool results.
 *
 * - `threshold`: results of more UTF-8 bytes than this are offloaded.
 * - `readTool`: the tool for reading an artifact back, named in the pointer.
 * - `destination`: `Private` (the agent-private volume; needs the
 *   capability) or `Output` (the task's output volume).
 * - `abstractBytes`: the pointer's abstract budget.
 * - `registerReadTool`: whether a gated turn (`TaskExecution`) offers the
 *   ready `ArtifactReadTool` under the `readTool` name; defaults to `true`.
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

const safeSegment = (text: string): string => text.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 96) || "call"

/**
 * The relative target of one tool result: unique per task, turn, step and
 * call, and always a plain path segment (call ids are provider text).
 *
 * @since 0.1.0
 * @category paths
 */
export const resultTarget = (context: Executor.ToolContext): string =>
  `tool-results/${context.task}-t${context.turn}-s${context.step}-${safeSegment(context.call.id)}.txt`

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
    target: resultTarget(context),
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
    sha256: stripDigestPrefix(outcome.digest)
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
