/**
 * LangChain's side of the side-by-side: `createAgent` with
 * `summarizationMiddleware`, driven by a small scripted chat model that
 * binds tools and keeps nothing it receives (the shipped fake models copy
 * their input into replies or record every call). No checkpointer, as in
 * the scenario the issue measured.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, type BaseMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import { type AgentMiddleware, createAgent, summarizationMiddleware, tool } from "langchain"
import { z } from "zod"
import { peakRss, retainedHeap, stats } from "./Harness.ts"
import { body, type SideResult, StepClock, toolResultChars } from "./Scenario.ts"

const summaryMarker = "Context Extraction Assistant"

const textOf = (message: BaseMessage): string => (typeof message.content === "string" ? message.content : "")

/** Answers with one tool call per step until `steps`, then a final answer; summary prompts get a short summary. */
class ScriptedChatModel extends BaseChatModel {
  steps = 0
  calls = 0
  summaries = 0
  replaced = 0
  lastLength = 0
  clock: StepClock | undefined

  _llmType(): string {
    return "scripted"
  }

  override bindTools(): this {
    return this
  }

  async _generate(messages: Array<BaseMessage>): Promise<ChatResult> {
    const first = messages[0]
    if (messages.length === 1 && first !== undefined && textOf(first).includes(summaryMarker)) {
      this.summaries++
      this.clock?.summary()
      const text =
        `Summary ${this.summaries}: batches processed so far are all ok; continue with the next batch. `.padEnd(
          400,
          "."
        )
      return { generations: [{ text, message: new AIMessage(text) }] }
    }
    // The middleware replaces the history (summary + kept messages) before the call: fewer messages than last time.
    if (messages.length < this.lastLength) {
      this.replaced++
      this.clock?.summary()
    }
    this.lastLength = messages.length
    this.clock?.agentCall()
    this.calls++
    const message =
      this.calls < this.steps
        ? new AIMessage({
            content: "",
            tool_calls: [
              { id: `call_${this.calls}`, name: "produce", args: { size: toolResultChars }, type: "tool_call" }
            ]
          })
        : new AIMessage("All batches processed.")
    return { generations: [{ text: textOf(message), message }] }
  }
}

export interface LangChainArgs {
  readonly warmupSteps: number
  readonly steps: number
  /**
   * LangChain's own default is 4,000: it trims the history to that many
   * tokens before asking for a summary, and a single 12,800-token tool
   * result does not fit, so no summary request is sent at all (the history
   * is replaced by "Previous conversation was too long to summarize.").
   */
  readonly trimTokensToSummarize?: number
}

export const run = async (args: LangChainArgs): Promise<SideResult> => {
  const model = new ScriptedChatModel({})
  let produced = 0
  const produce = tool(async () => body(++produced), {
    name: "produce",
    description: "Produces a result of the given size",
    schema: z.object({ size: z.number() })
  })
  // LangChain's middleware types do not compile under exactOptionalPropertyTypes; the value is used as documented.
  const summarization = summarizationMiddleware({
    model,
    trigger: { tokens: 100_000 },
    keep: { messages: 6 },
    ...(args.trimTokensToSummarize === undefined ? {} : { trimTokensToSummarize: args.trimTokensToSummarize })
  } as never) as unknown as AgentMiddleware
  const agent = createAgent({ model, tools: [produce], middleware: [summarization] })
  const conversation = async (steps: number) => {
    model.steps = steps
    model.calls = 0
    model.lastLength = 0
    await agent.invoke(
      {
        messages: [
          { role: "user", content: "Work through the batches one by one with the produce tool and report when done." }
        ]
      },
      { recursionLimit: 10 * steps + 100 }
    )
  }
  await conversation(args.warmupSteps)
  model.summaries = 0
  model.replaced = 0
  const clock = new StepClock()
  model.clock = clock
  const started = performance.now()
  await conversation(args.steps)
  const wallMs = performance.now() - started
  return {
    side: `langchain createAgent + summarizationMiddleware, trimTokensToSummarize ${args.trimTokensToSummarize ?? "4000 (default)"}`,
    steps: args.steps,
    step: stats(clock.plain),
    summarizationStep: stats(clock.summarizing),
    summaries: model.replaced,
    summaryRequests: model.summaries,
    peakRss: peakRss(),
    retainedHeap: retainedHeap(),
    wallMs
  }
}
