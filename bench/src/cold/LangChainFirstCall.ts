/**
 * LangChain's cold-start program: `createAgent` with one tool over a small
 * scripted chat model (as the side-by-side's `LangChainSide.ts`, without
 * middleware), which answers at once.
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage } from "@langchain/core/messages"
import type { ChatResult } from "@langchain/core/outputs"
import { createAgent, tool } from "langchain"
import { z } from "zod"
import type { Answer, Probe } from "./Runner.ts"

const answer = "The north report shows every measurement within tolerance."

/** Answers every call with the final answer, calling the probe first. */
class AnsweringModel extends BaseChatModel {
  probe: Probe = () => {}

  _llmType(): string {
    return "scripted"
  }

  override bindTools(): this {
    return this
  }

  async _generate(): Promise<ChatResult> {
    this.probe()
    return { generations: [{ text: answer, message: new AIMessage(answer) }] }
  }
}

const fetchReport = tool(async ({ name }) => `Report ${name}: every measurement within tolerance.`, {
  name: "fetch_report",
  description: "Fetches a report by name",
  schema: z.object({ name: z.string() })
})

export const firstCall = async (probe: Probe): Promise<Answer> => {
  const model = new AnsweringModel({})
  model.probe = probe
  const agent = createAgent({ model, tools: [fetchReport] })
  const state = await agent.invoke({ messages: [{ role: "user", content: "Summarize the north report." }] })
  const last = state.messages.at(-1)
  return { text: typeof last?.content === "string" ? last.content : "", library: import.meta.resolve("langchain") }
}
