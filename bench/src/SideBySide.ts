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
import { CompactionPolicy, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect } from "effect"
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
      await Effect.runPromise(
        TaskExecution.runTurn(world.binding, start, { tools, maxSteps: steps }).pipe(
          Effect.provide(turnLayer(world.journalFolder, generate))
        )
      )
    }
    await runConversation(args.warmupSteps, undefined)
    summaries = 0
    const clock = new StepClock()
    const started = performance.now()
    await runConversation(args.steps, clock)
    const wallMs = performance.now() - started
    return {
      side: `tessera (journal on ${args.medium === "disk" ? "disk, fsync per append" : "tmpfs"})`,
      steps: args.steps,
      step: stats(clock.plain),
      summarizationStep: stats(clock.summarizing),
      summaries,
      summaryRequests: summaries,
      peakRss: peakRss(),
      retainedHeap: retainedHeap(),
      wallMs
    }
  } finally {
    removeDir(root)
  }
}
