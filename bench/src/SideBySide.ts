/**
 * Side by side with LangChain on its own scenario: every step the model asks
 * for one tool call whose result is 51,200 characters; history is summarized
 * once it reaches 100,000 estimated tokens (characters / 4), keeping the
 * last 6 messages (here: the last 3 rounds of call + result).
 *
 * Both sides are driven by a scripted model that keeps nothing it receives.
 * A step is the time from one agent model call to the next; a
 * summarization step is a step during which a summary request was sent.
 */
import { CompactionPolicy, Model, ScriptedModel, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Layer, Stream } from "effect"
import { type Medium, makeTempDir, peakRss, removeDir, retainedHeap, stats } from "./Harness.ts"
import { body, type SideResult, StepClock, toolResultChars } from "./Scenario.ts"
import { isSummaryRequest, makeWorld, platformLayer, produce, start, summaryText, turnLayer } from "./World.ts"

/** Our equivalent of LangChain's `trigger: { tokens: 100_000 }, keep: { messages: 6 }`. */
export const sidePolicy = CompactionPolicy.threshold({
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
   * `TaskExecution.streamTurn`, drained, over that streaming model.
   */
  readonly mode?: "plain" | "observed" | "streamed"
}

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
            return Model.response({ text: summaryText(summaries, 400) })
          }
          clock?.agentCall()
          calls++
          return calls < steps
            ? Model.response({ toolCalls: [Model.toolCall(`call_${calls}`, "produce", { size: toolResultChars })] })
            : Model.response({ text: "All batches processed." })
        })
      const layer = turnLayer(world.journalFolder, generate)
      const streaming = Layer.merge(
        layer,
        Model.layerFromStream((request) =>
          Stream.flatMap(Stream.fromEffect(generate(request)), (response) =>
            Stream.fromIterable(ScriptedModel.streamEvents(response))
          )
        )
      )
      const mode = args.mode ?? "plain"
      await Effect.runPromise(
        mode === "streamed"
          ? Stream.runDrain(TaskExecution.streamTurn(world.binding, start, { tools, maxSteps: steps })).pipe(
              Effect.provide(streaming)
            )
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
    await runConversation(args.steps, clock)
    const cpu = process.cpuUsage(cpuBefore)
    const wallMs = performance.now() - started
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
      cpuMs: (cpu.user + cpu.system) / 1_000
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

/** Per-step figures of one way of running the side-by-side scenario, over all rounds. */
export interface StreamOverheadSide {
  /** Median over rounds of the median plain step (ms). */
  readonly stepMedian: number
  /** Median over rounds of the CPU time per step, summarizing steps included (ms). */
  readonly cpuPerStep: number
}

/**
 * What streaming adds per step: the side-by-side scenario run `rounds`
 * times each way (see {@link SideArgs.mode}), the ways alternating in one
 * process so a slow spell of the machine falls on all of them. `ratio` and
 * `observedRatio` are the streamed and observed median steps over the
 * plain one.
 */
export const runStreamOverhead = async (
  args: StreamOverheadArgs
): Promise<{
  readonly plain: StreamOverheadSide
  readonly observed: StreamOverheadSide
  readonly streamed: StreamOverheadSide
  readonly ratio: number
  readonly observedRatio: number
}> => {
  const plain: Array<SideResult> = []
  const observed: Array<SideResult> = []
  const streamed: Array<SideResult> = []
  const base = { warmupSteps: args.warmupSteps, steps: args.steps, medium: args.medium }
  for (let round = 0; round < args.rounds; round++) {
    plain.push(await run({ ...base, mode: "plain" }))
    observed.push(await run({ ...base, mode: "observed" }))
    streamed.push(await run({ ...base, mode: "streamed" }))
  }
  const median = (values: ReadonlyArray<number>): number => {
    const sorted = [...values].sort((a, b) => a - b)
    const middle = Math.floor(sorted.length / 2)
    return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2
  }
  const side = (results: ReadonlyArray<SideResult>): StreamOverheadSide => ({
    stepMedian: median(results.map((result) => result.step.median)),
    cpuPerStep: median(results.map((result) => (result.cpuMs ?? 0) / result.steps))
  })
  const plainSide = side(plain)
  const observedSide = side(observed)
  const streamedSide = side(streamed)
  return {
    plain: plainSide,
    observed: observedSide,
    streamed: streamedSide,
    ratio: streamedSide.stepMedian / plainSide.stepMedian,
    observedRatio: observedSide.stepMedian / plainSide.stepMedian
  }
}
