/**
 * Side by side with LangChain on its own scenario: every step the model asks
 * for one tool call whose result is 51,200 characters; history is summarized
 * once it reaches 100,000 estimated tokens (characters / 4), keeping the
 * last 6 messages (here: the last 3 rounds of call + result).
 *
 * Both sides are driven by a scripted model that keeps nothing it receives.
 * Ours reports a finish reason with every response, as providers do, so a
 * streamed and a plain turn record the same responses.
 * A step is the time from one agent model call to the next; a
 * summarization step is a step during which a summary request was sent.
 */
import { fileURLToPath } from "node:url"
import { Compaction, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Stream } from "effect"
import { type Medium, makeTempDir, observeGc, peakRss, removeDir, retainedHeap, roundOrder, stats } from "./Harness.ts"
import { body, type SideResult, StepClock, toolResultChars } from "./Scenario.ts"
import { isSummaryRequest, makeWorld, platformLayer, produce, start, summaryText, turnLayer } from "./World.ts"

/** Our equivalent of LangChain's `trigger: { tokens: 100_000 }, keep: { messages: 6 }`. */
export const sidePolicy = Compaction.threshold({
  measure: "estimatedTokens",
  limit: 100_000,
  // One round (call + 51,200-character result) measures about 12,820 tokens: 40,000 keeps exactly 3.
  keepRecent: 40_000,
  // One summary request per compaction, like LangChain's single summarization call.
  pieceLimit: 100_000
})

export interface SideArgs {
  readonly warmupSteps: number
  readonly steps: number
  readonly medium: Medium
  /**
   * How the turn runs: `plain` (the default) is `runTurn` over `generate`;
   * `observed` is `runTurn` with an `onEvent` observer that does nothing,
   * over a model that streams its responses (the scripted model's events:
   * input deltas, the call, the finish); `streamed` is
   * `TaskExecution.streamTurn` over that streaming model, with a consumer
   * that looks at every event.
   */
  readonly mode?: "plain" | "observed" | "streamed"
}

/** What the streamed mode's consumer read so far (kept, so its work is not optimized away). */
let consumed = 0
export const consumedByStreamedRuns = (): number => consumed

export const run = async (args: SideArgs): Promise<SideResult> => {
  const root = makeTempDir(args.medium)
  try {
    let summaries = 0
    const runConversation = async (steps: number, clock: StepClock | undefined) => {
      const world = await Effect.runPromise(
        makeWorld(`${root}/${steps}-${Math.random()}`, sidePolicy).pipe(Effect.provide(platformLayer))
      )
      const tools = Tool.registry(produce((call) => body(call)))
      let calls = 0
      const generate = (request: Model.ModelRequest) =>
        Effect.sync(() => {
          if (isSummaryRequest(request)) {
            summaries++
            clock?.summary()
            return Model.response({ text: summaryText(summaries, 400), finishReason: "stop" })
          }
          clock?.agentCall()
          calls++
          return calls < steps
            ? Model.response({
                toolCalls: [Model.toolCall(`call_${calls}`, "produce", { size: toolResultChars })],
                finishReason: "tool-calls"
              })
            : Model.response({ text: "All batches processed.", finishReason: "stop" })
        })
      const layer = turnLayer(world.journalFolder, generate)
      const streaming = Layer.merge(
        layer,
        Model.layerFromStream((request) =>
          Stream.unwrap(
            Effect.map(generate(request), (response) => Stream.fromIterable(ScriptedModel.streamEvents(response)))
          )
        )
      )
      const mode = args.mode ?? "plain"
      await Effect.runPromise(
        mode === "streamed"
          ? Stream.runForEach(TaskExecution.streamTurn(world.binding, start, { tools, maxSteps: steps }), (event) =>
              Effect.sync(() => {
                consumed += event._tag.length
              })
            ).pipe(Effect.provide(streaming))
          : mode === "observed"
            ? Effect.asVoid(
                TaskExecution.runTurn(world.binding, start, { tools, maxSteps: steps, onEvent: () => Effect.void })
              ).pipe(Effect.provide(streaming))
            : Effect.asVoid(TaskExecution.runTurn(world.binding, start, { tools, maxSteps: steps })).pipe(
                Effect.provide(layer)
              )
      )
    }
    await runConversation(args.warmupSteps, undefined)
    summaries = 0
    const clock = new StepClock()
    const started = performance.now()
    const cpuBefore = process.cpuUsage()
    const collector = observeGc()
    await runConversation(args.steps, clock)
    const cpu = process.cpuUsage(cpuBefore)
    const wallMs = performance.now() - started
    const gc = await collector.stop()
    return {
      side: `tessera${args.mode === undefined || args.mode === "plain" ? "" : `, ${args.mode}`} (journal on ${args.medium === "disk" ? "disk, fsync per append" : "tmpfs"})`,
      steps: args.steps,
      step: stats(clock.plain),
      summarizationStep: stats(clock.summarizing),
      summaries,
      summaryRequests: summaries,
      peakRss: peakRss(),
      retainedHeap: retainedHeap(),
      wallMs,
      cpuMs: (cpu.user + cpu.system) / 1_000,
      gc
    }
  } finally {
    removeDir(root)
  }
}

export interface StreamOverheadArgs {
  readonly warmupSteps: number
  readonly steps: number
  readonly rounds: number
  readonly medium: Medium
}

/** The arguments `npm run bench` runs the stream-overhead job with. */
export const streamOverheadArgs: StreamOverheadArgs = { warmupSteps: 60, steps: 300, rounds: 15, medium: "memory" }

/**
 * Node's flags for the stream-overhead job's informational second run: the
 * module hook that loads Effect's `Channel` with its closure allocated young
 * (`ChannelClosureFix.ts`; the change is in `ChannelClosure.ts`).
 */
export const channelClosureFixFlags: ReadonlyArray<string> = [
  "--import",
  fileURLToPath(new URL("./ChannelClosureFix.ts", import.meta.url))
]

/** The target: streaming adds at most 10% per step. */
export const streamOverheadTarget = 1.1

/** Per-step figures of one way of running the side-by-side scenario, over all rounds. */
export interface StreamOverheadSide {
  /** Median over rounds of the median plain step (ms). */
  readonly stepMedian: number
  /** Median over rounds of the CPU time per step, summarizing steps included (ms). */
  readonly cpuPerStep: number
  /** Median over rounds of the collector's pauses per step, young and full collections (ms). */
  readonly gcPerStep: number
  /** Median over rounds of the young collections' pauses per young collection (ms). */
  readonly minorPause: number
  /** Median over rounds of the number of young and of full collections in a measured run. */
  readonly minorCount: number
  readonly majorCount: number
}

export interface StreamOverheadResult {
  readonly args: StreamOverheadArgs
  readonly plain: StreamOverheadSide
  readonly observed: StreamOverheadSide
  readonly streamed: StreamOverheadSide
  /** Median over rounds of the round's streamed median step over its plain one. */
  readonly ratio: number
  /** The same for the observed turn (runTurn with a do-nothing observer over the streaming model). */
  readonly observedRatio: number
  /** Median over rounds of the round's streamed CPU time per step over its plain one. */
  readonly cpuRatio: number
  readonly roundRatios: ReadonlyArray<number>
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2
}

/**
 * What streaming adds per step: the side-by-side scenario run `rounds`
 * times each way (see {@link SideArgs.mode}), the ways alternating in one
 * process (in an order shuffled per round, see `roundOrder`) so a slow
 * spell of the machine falls on all of them. Ratios are medians of
 * per-round ratios: `ratio` is `streamTurn` with a consumer over `runTurn`.
 */
export const runStreamOverhead = async (args: StreamOverheadArgs): Promise<StreamOverheadResult> => {
  const modes = ["plain", "observed", "streamed"] as const
  const results: Record<(typeof modes)[number], Array<SideResult>> = { plain: [], observed: [], streamed: [] }
  const base = { warmupSteps: args.warmupSteps, steps: args.steps, medium: args.medium }
  for (let round = 0; round < args.rounds; round++) {
    for (const index of roundOrder(modes.length, round)) {
      const mode = modes[index] as (typeof modes)[number]
      results[mode].push(await run({ ...base, mode }))
    }
  }
  const cpuPerStep = (result: SideResult) => (result.cpuMs ?? 0) / result.steps
  const gcOf = (result: SideResult) => result.gc ?? { minor: 0, minorMs: 0, major: 0, majorMs: 0 }
  const side = (runs: ReadonlyArray<SideResult>): StreamOverheadSide => ({
    stepMedian: median(runs.map((result) => result.step.median)),
    cpuPerStep: median(runs.map(cpuPerStep)),
    gcPerStep: median(runs.map((result) => (gcOf(result).minorMs + gcOf(result).majorMs) / result.steps)),
    minorPause: median(runs.map((result) => gcOf(result).minorMs / Math.max(1, gcOf(result).minor))),
    minorCount: median(runs.map((result) => gcOf(result).minor)),
    majorCount: median(runs.map((result) => gcOf(result).major))
  })
  const perRound = (runs: ReadonlyArray<SideResult>, key: (result: SideResult) => number) =>
    runs.map((result, round) => key(result) / key(results.plain[round] as SideResult))
  const roundRatios = perRound(results.streamed, (result) => result.step.median)
  return {
    args,
    plain: side(results.plain),
    observed: side(results.observed),
    streamed: side(results.streamed),
    ratio: median(roundRatios),
    observedRatio: median(perRound(results.observed, (result) => result.step.median)),
    cpuRatio: median(perRound(results.streamed, cpuPerStep)),
    roundRatios
  }
}

/** The table rows of one stream-overhead run's three ways. */
const streamOverheadRows = (result: StreamOverheadResult, suffix: string): ReadonlyArray<string> =>
  (
    [
      ["plain (runTurn)", result.plain],
      ["observed (runTurn + onEvent)", result.observed],
      ["streamed (streamTurn + consumer)", result.streamed]
    ] as const
  ).map(
    ([label, way]) =>
      `| ${label}${suffix} | ${way.stepMedian.toFixed(3)} ms | ${way.cpuPerStep.toFixed(3)} ms | ${way.gcPerStep.toFixed(3)} ms | ${way.minorCount} (${way.minorPause.toFixed(2)} ms) | ${way.majorCount} |`
  )

/** One run's ratios, as the report states them. */
const streamOverheadRatios = (result: StreamOverheadResult): string =>
  `streamed / plain per step ${result.ratio.toFixed(3)}x (rounds: ${result.roundRatios.map((value) => value.toFixed(3)).join(", ")}); CPU per step ${result.cpuRatio.toFixed(3)}x; observed / plain ${result.observedRatio.toFixed(3)}x`

/**
 * The report's section on the stream-overhead job: the run the target is
 * checked on, and the run with Effect's `Channel` closure allocated young.
 */
export const streamOverheadSection = (
  result: StreamOverheadResult,
  withChannelFix: StreamOverheadResult
): ReadonlyArray<string> => [
  "## Streaming overhead per step",
  "",
  `The side-by-side scenario (Tessera's side, journal and private volume on ${result.args.medium === "memory" ? "tmpfs" : "disk"}; ${result.args.warmupSteps} warm-up steps, then ${result.args.steps} measured steps) run three ways, ${result.args.rounds} rounds, the ways in an order shuffled per round, in one process: ` +
    "`runTurn` over a model's `generate` (plain); `runTurn` with a do-nothing `onEvent` observer over a model that streams its responses (observed); `TaskExecution.streamTurn` over that streaming model with a consumer that reads every event (streamed). " +
    "Ratios are medians of per-round ratios to the plain run of the same round. " +
    "The collector's columns are the pauses Node reports through `perf_hooks` `gc` entries during the measured steps (medians over rounds); they leave out the collector's work on other threads and what a growing old generation costs the steps themselves (incremental marking, write barriers). " +
    "The job runs twice, each in a process of its own: as installed (the target is checked on this run), and, for information, with Effect's `Channel.fromTransform` loaded with its closure bound to a variable before it is stored (`bench/src/ChannelClosure.ts`, applied in memory by the module hook `bench/src/ChannelClosureFix.ts` in that process only; no user gets this). " +
    "Effect 4.1 stores each channel's closure as a function literal assigned to a property, which V8 allocates in the old generation; per model call those closures reach the call's request and tool results and keep them alive through young collections until a full one (bench/NOTES.md, ninth round).",
  "",
  "| Way | Median step | CPU per step | Collector's pauses per step | Young collections (mean pause) | Full collections |",
  "| --- | ---: | ---: | ---: | ---: | ---: |",
  ...streamOverheadRows(result, ""),
  ...streamOverheadRows(withChannelFix, ", Channel closure young"),
  "",
  `As installed: ${streamOverheadRatios(result)}. Target: streaming adds <= ${Math.round((streamOverheadTarget - 1) * 100)}% per step: ${result.ratio <= streamOverheadTarget ? "met" : "missed"}.`,
  "",
  `With the Channel closure young (for information): ${streamOverheadRatios(withChannelFix)}.`,
  ""
]
