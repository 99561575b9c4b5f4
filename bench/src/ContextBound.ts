/**
 * Context bound: one long turn of `steps` model steps on the scripted model,
 * every step calling a tool whose result is 50 KiB of text. With offload and
 * compaction on, each result goes to the private volume and the model sees a
 * pointer, and old rounds are summarized; with both off, every result stays
 * in the history and every request carries all of them.
 *
 * Request sizes are the executor's own measure, read back from the journal's
 * `RequestDispatched` entries (UTF-8 bytes of the canonical JSON request).
 * Summary requests are measured by the scripted model the same way.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Compaction, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect } from "effect"
import {
  type HeapSizing,
  type Medium,
  makeTempDir,
  peakRss,
  removeDir,
  retainedHeap,
  sampleHeapSizing
} from "./Harness.ts"
import { logText, resultBody } from "./LogText.ts"
import { isSummaryRequest, makeWorld, platformLayer, produce, start, summaryText, task, turnLayer } from "./World.ts"

/** 50 KiB per tool result. */
export const resultSize = 51_200

/**
 * The policy of the "on" runs: compact past 8,000 estimated tokens (32 KB)
 * and keep up to 2,000 tokens of recent rounds verbatim. With results
 * offloaded a round is a few hundred bytes, so the first compaction comes
 * before step 100 and the bound holds from there on.
 */
export const onPolicy = Compaction.threshold({
  measure: "estimatedTokens",
  limit: 8_000,
  keepRecent: 2_000,
  pieceLimit: 50_000
})

/** Offload every result above 4 KiB to the private volume. */
export const onOffload = { threshold: 4_096, readTool: "read_artifact", destination: "Private" } as const

export interface ContextBoundArgs {
  readonly mode: "on" | "off" | "default-policy"
  readonly steps: number
  readonly medium: Medium
}

export interface ContextBoundResult {
  readonly mode: ContextBoundArgs["mode"]
  readonly steps: number
  readonly wallMs: number
  readonly peakRss: number
  readonly retainedHeap: number
  /** V8's own sizing of the heap during the run (sampled). */
  readonly heapSizing: HeapSizing
  /** `[step, bytes]` of every turn request. */
  readonly requestSizes: ReadonlyArray<readonly [number, number]>
  readonly summaryRequests: number
  readonly largestSummaryRequest: number
  readonly offloaded: number
  readonly journalEntries: number
  readonly offloadAvailable: boolean
}

const offloadAvailable = (): boolean => {
  // `offload` is a field of `TaskExecution.ExecutionConfig`; an older runtime ignores it silently.
  const source = fs.readFileSync(new URL(import.meta.resolve("@tessera/runtime/TaskExecution")), "utf8")
  return source.includes("readonly offload?")
}

export const run = async (args: ContextBoundArgs): Promise<ContextBoundResult> => {
  const root = makeTempDir(args.medium)
  try {
    const on = args.mode !== "off"
    const policy =
      args.mode === "on" ? onPolicy : args.mode === "default-policy" ? Compaction.defaultThreshold : Compaction.disabled
    const tools = Tool.registry(produce(resultBody(logText(resultSize))))
    let modelSteps = 0
    let summaries = 0
    let largestSummary = 0
    const generate = (request: Model.ModelRequest) =>
      Effect.sync(() => {
        if (isSummaryRequest(request)) {
          summaries++
          largestSummary = Math.max(largestSummary, Buffer.byteLength(JSON.stringify(request)))
          return Model.response({ text: summaryText(summaries, 400) })
        }
        modelSteps++
        return modelSteps < args.steps
          ? Model.response({ toolCalls: [Model.toolCall(`call-${modelSteps}`, "produce", { size: resultSize })] })
          : Model.response({ text: "All batches processed." })
      })
    const world = await Effect.runPromise(makeWorld(root, policy).pipe(Effect.provide(platformLayer)))
    const sizing = sampleHeapSizing(() => modelSteps)
    const started = performance.now()
    await Effect.runPromise(
      TaskExecution.runTurn(world.binding, start, {
        tools,
        maxSteps: args.steps,
        ...(on ? { offload: onOffload } : {})
      }).pipe(Effect.provide(turnLayer(world.journalFolder, generate)))
    )
    const wallMs = performance.now() - started
    const heapSizing = sizing.stop()
    const peak = peakRss()
    const heap = retainedHeap()
    // Read back after the memory figures, so reading does not count against them.
    const lines = fs
      .readFileSync(path.join(world.journalFolder, Journal.fileName(task)), "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
    const requestSizes: Array<readonly [number, number]> = []
    let offloaded = 0
    for (const line of lines) {
      const entry = JSON.parse(line) as { _tag: string; step?: number; size?: number }
      if (entry._tag === "RequestDispatched") requestSizes.push([entry.step ?? 0, entry.size ?? 0])
      if (entry._tag === "ArtifactOffloaded") offloaded++
    }
    return {
      mode: args.mode,
      steps: args.steps,
      wallMs,
      peakRss: peak,
      retainedHeap: heap,
      heapSizing,
      requestSizes,
      summaryRequests: summaries,
      largestSummaryRequest: largestSummary,
      offloaded,
      journalEntries: lines.length,
      offloadAvailable: offloadAvailable()
    }
  } finally {
    removeDir(root)
  }
}
