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
import { body, type SideResult, StepClock, summaryText, toolResultChars } from "./Scenario.ts"

const summaryMarker = "Context Extraction Assistant"

const textOf = (message: BaseMessage): string => (typeof message.content === "string" ? message.content : "")

/** Whether a request is `summarizationMiddleware`'s summary prompt (one message carrying its instruction). */
export const isSummaryPrompt = (messages: ReadonlyArray<BaseMessage>): boolean => {
  const first = messages[0]
  return messages.length === 1 && first !== undefined && textOf(first).includes(summaryMarker)
}

/** An assistant message asking for `calls` of the `produce` tool. */
export const toolCallMessage = (calls: ReadonlyArray<{ readonly id: string; readonly size: number }>): AIMessage =>
  new AIMessage({
    content: "",
    tool_calls: calls.map((call) => ({ id: call.id, name: "produce", args: { size: call.size }, type: "tool_call" }))
  })

/** A chat model that binds tools, keeps nothing it receives, and answers every request through `script`. */
export class ScriptedChatModel extends BaseChatModel {
  private readonly script: (messages: ReadonlyArray<BaseMessage>) => AIMessage

  constructor(script: (messages: ReadonlyArray<BaseMessage>) => AIMessage) {
    super({})
    this.script = script
  }

  _llmType(): string {
    return "scripted"
  }

  override bindTools(): this {
    return this
  }

  async _generate(messages: Array<BaseMessage>): Promise<ChatResult> {
    const message = this.script(messages)
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
  let steps = 0
  let calls = 0
  let summaries = 0
  let replaced = 0
  let lastLength = 0
  let clock: StepClock | undefined
  // Answers with one tool call per step until `steps`, then a final answer; summary prompts get a short summary.
  const model = new ScriptedChatModel((messages) => {
    if (isSummaryPrompt(messages)) {
      summaries++
      clock?.summary()
      return new AIMessage(summaryText(summaries, 400))
    }
    // The middleware replaces the history (summary + kept messages) before the call: fewer messages than last time.
    if (messages.length < lastLength) {
      replaced++
      clock?.summary()
    }
    lastLength = messages.length
    clock?.agentCall()
    calls++
    return calls < steps
      ? toolCallMessage([{ id: `call_${calls}`, size: toolResultChars }])
      : new AIMessage("All batches processed.")
  })
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
  const conversation = async (count: number) => {
    steps = count
    calls = 0
    lastLength = 0
    await agent.invoke(
      {
        messages: [
          { role: "user", content: "Work through the batches one by one with the produce tool and report when done." }
        ]
      },
      { recursionLimit: 10 * count + 100 }
    )
  }
  await conversation(args.warmupSteps)
  summaries = 0
  replaced = 0
  clock = new StepClock()
  const started = performance.now()
  await conversation(args.steps)
  const wallMs = performance.now() - started
  return {
    side: `langchain createAgent + summarizationMiddleware, trimTokensToSummarize ${args.trimTokensToSummarize ?? "4000 (default)"}`,
    steps: args.steps,
    step: stats(clock.plain),
    summarizationStep: stats(clock.summarizing),
    summaries: replaced,
    summaryRequests: summaries,
    peakRss: peakRss(),
    retainedHeap: retainedHeap(),
    wallMs
  }
}
