/**
 * LangChain's side of the peer comparison: `createAgent` with a `produce`
 * tool and `summarizationMiddleware` (no checkpointer), over the scripted
 * chat model of the side-by-side (`LangChainSide`), which keeps nothing it
 * receives. The workload's budget becomes the middleware's token trigger
 * and kept tokens (LangChain counts tokens as characters / 4), and
 * `trimTokensToSummarize` is the whole trigger, so that every summary
 * request carries the history it summarizes (with LangChain's default of
 * 4,000 tokens a single large result does not fit and no summary is asked
 * for). The agent's tool node runs a step's tool calls concurrently.
 */
import { AIMessage } from "@langchain/core/messages"
import { type AgentMiddleware, createAgent, summarizationMiddleware, tool } from "langchain"
import { z } from "zod"
import { isSummaryPrompt, ScriptedChatModel, toolCallMessage } from "./LangChainSide.ts"
import { type Conversation, finalAnswer, measure, type PeerResult, taskText, type Workload } from "./PeerWorkload.ts"

export interface LangChainPeerArgs {
  readonly workload: Workload
}

export const label = "langchain createAgent + summarizationMiddleware"

export const run = (args: LangChainPeerArgs): Promise<PeerResult> => {
  let conversation: Conversation | undefined
  const current = (): Conversation => {
    if (conversation === undefined) throw new Error("no conversation in progress")
    return conversation
  }
  const model = new ScriptedChatModel((messages) => {
    if (isSummaryPrompt(messages)) return new AIMessage(current().summaryRequest())
    const calls = current().agentCall(messages.length)
    return calls === undefined ? new AIMessage(finalAnswer) : toolCallMessage(calls)
  })
  const produce = tool(async ({ size }) => current().toolRan(size), {
    name: "produce",
    description: "Produces a result of the given size",
    schema: z.object({ size: z.number() })
  })
  const tokens = (chars: number) => Math.ceil(chars / 4)
  // LangChain's middleware types do not compile under exactOptionalPropertyTypes; the value is used as documented.
  const summarization = summarizationMiddleware({
    model,
    trigger: { tokens: tokens(args.workload.triggerChars) },
    keep: { tokens: tokens(args.workload.keepChars) },
    trimTokensToSummarize: tokens(args.workload.triggerChars)
  } as never) as unknown as AgentMiddleware
  const agent = createAgent({ model, tools: [produce], middleware: [summarization] })
  return measure(label, args.workload, async (next) => {
    conversation = next
    await agent.invoke({ messages: [{ role: "user", content: taskText }] }, { recursionLimit: 10 * next.steps + 100 })
  })
}
