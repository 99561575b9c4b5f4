/**
 * Hostile size: one turn whose first tool result is 100 MB (by default) and
 * is not offloaded, either because no offload is configured or because the
 * offload is refused (here by a host path policy that refuses every target,
 * standing in for a full disk). Compaction is on. Two small steps follow, so
 * the huge result's round is summarized before the answer.
 *
 * The result is cut to the inline limit (the policy's piece limit) before it
 * enters the history, so the summary requests it costs and the memory the
 * turn needs are bounded by the policy, not by the payload. The job reports
 * the peak resident memory above what the process held just before the tool
 * built its payload, the number of summary requests, the largest turn
 * request and the wall time of the turn.
 */

import * as fs from "node:fs"
import * as path from "node:path"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import { Compaction, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Layer, Schema } from "effect"
import { type Medium, makeTempDir, peakRss, removeDir } from "./Harness.ts"
import { logText } from "./LogText.ts"
import { isSummaryRequest, makeWorld, platformLayer, start, summaryText, task, turnLayer } from "./World.ts"

/**
 * Compact past 40,000 estimated tokens (160 KB), so the cut result (at the
 * default piece limit of 50,000 tokens, 200 KB) is summarized at the next
 * step; the other numbers are the defaults.
 */
export const hostilePolicy = Compaction.threshold({ limit: 40_000 })

export interface HostileSizeArgs {
  readonly payloadBytes: number
  /**
   * `inline`: no offload configured; `offload-refused`: offload configured, every target refused;
   * `unlimited`: no offload and the inline limit lifted (`inlineLimit: Number.MAX_SAFE_INTEGER`), the
   * behaviour before the limit existed, for comparison.
   */
  readonly mode: "inline" | "offload-refused" | "unlimited"
  readonly medium: Medium
}

export interface HostileSizeResult {
  readonly mode: HostileSizeArgs["mode"]
  readonly payloadBytes: number
  readonly wallMs: number
  /** Peak RSS of the process minus its RSS just before the payload was built. */
  readonly peakAboveStart: number
  readonly summaryRequests: number
  readonly turnRequests: number
  readonly largestTurnRequest: number
  /** The size the journal recorded for the huge call's result (after the cut). */
  readonly keptResultBytes: number
}

export const run = async (args: HostileSizeArgs): Promise<HostileSizeResult> => {
  const root = makeTempDir(args.medium)
  try {
    // Built from 1 MiB of log text repeated: 100 MB of distinct lines would only slow the setup down.
    const unit = logText(1 << 20)
    const huge = Tool.make({
      name: "dump",
      description: "Dumps a huge log",
      input: Schema.Struct({}),
      handler: () =>
        Effect.sync(() => unit.repeat(Math.ceil(args.payloadBytes / unit.length)).slice(0, args.payloadBytes))
    })
    const small = Tool.make({
      name: "note",
      description: "A small result",
      input: Schema.Struct({}),
      handler: () => Effect.succeed("noted")
    })
    const tools = Tool.registry(huge, small)
    let turnRequests = 0
    let summaries = 0
    const generate = (request: Model.ModelRequest) =>
      Effect.sync(() => {
        if (isSummaryRequest(request)) return Model.response({ text: summaryText(++summaries, 400) })
        turnRequests++
        return turnRequests === 1
          ? Model.response({ toolCalls: [Model.toolCall("dump-1", "dump", {})] })
          : turnRequests <= 3
            ? Model.response({ toolCalls: [Model.toolCall(`note-${turnRequests}`, "note", {})] })
            : Model.response({ text: "Done." })
      })
    const world = await Effect.runPromise(makeWorld(root, hostilePolicy).pipe(Effect.provide(platformLayer)))
    const refuseAll = ArtifactPathPolicy.layer({ isInternalState: () => true, isUnderInternalRoot: () => true })
    const layer =
      args.mode === "offload-refused"
        ? Layer.merge(turnLayer(world.journalFolder, generate), refuseAll)
        : turnLayer(world.journalFolder, generate)
    const offload = { threshold: 4_096, readTool: "read_artifact", destination: "Private" } as const
    const gc = (globalThis as { gc?: () => void }).gc
    gc?.()
    const startRss = process.memoryUsage().rss
    const started = performance.now()
    await Effect.runPromise(
      TaskExecution.runTurn(world.binding, start, {
        tools,
        maxSteps: 6,
        ...(args.mode === "offload-refused" ? { offload } : {}),
        ...(args.mode === "unlimited" ? { inlineLimit: Number.MAX_SAFE_INTEGER } : {})
      }).pipe(Effect.provide(layer))
    )
    const wallMs = performance.now() - started
    const peakAboveStart = peakRss() - startRss
    const entries = fs
      .readFileSync(path.join(world.journalFolder, Journal.fileName(task)), "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as { _tag: string; size?: number; callId?: string })
    return {
      mode: args.mode,
      payloadBytes: args.payloadBytes,
      wallMs,
      peakAboveStart,
      summaryRequests: summaries,
      turnRequests,
      largestTurnRequest: Math.max(
        ...entries.filter((entry) => entry._tag === "RequestDispatched").map((entry) => entry.size ?? 0)
      ),
      keptResultBytes:
        entries.find((entry) => entry._tag === "ToolResulted" && entry.callId === "dump-1")?.size ?? Number.NaN
    }
  } finally {
    removeDir(root)
  }
}
