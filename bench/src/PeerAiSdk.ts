/**
 * The AI SDK's side of the peer comparison: `generateText` with a `produce`
 * tool and `stopWhen: stepCountIs(steps)`, over the SDK's own
 * `MockLanguageModelV4` (from `ai/test`). The mock records every call it
 * receives; the script empties that record at every call, so the model
 * keeps nothing. Tool calls of a step run concurrently (the SDK's default).
 *
 * The AI SDK has no summarization. Its compaction here is the trim of
 * `PeerTrim` in `prepareStep`, whose `messages` override carries forward to
 * later steps: past the workload's trigger the history is cut to the task
 * and the newest rounds.
 */
import type { LanguageModelV4Content, LanguageModelV4GenerateResult } from "@ai-sdk/provider"
import { generateText, type ModelMessage, stepCountIs, tool } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { z } from "zod"
import { trimFrom } from "./PeerTrim.ts"
import { finalAnswer, measure, type PeerResult, taskText, type Workload } from "./PeerWorkload.ts"

export interface AiSdkPeerArgs {
  readonly workload: Workload
}

export const label = "ai sdk generateText, trim in prepareStep"

const usage: LanguageModelV4GenerateResult["usage"] = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 }
}

/** Characters of a message's text and tool results (the trim's measure). */
const sizeOf = (message: ModelMessage): number => {
  if (typeof message.content === "string") return message.content.length
  let size = 0
  for (const part of message.content) {
    if (part.type === "text") size += part.text.length
    else if (part.type === "tool-result" && part.output.type === "text") size += part.output.value.length
  }
  return size
}

const rounds = { sizeOf, startsRound: (message: ModelMessage) => message.role === "assistant" }

export const run = (args: AiSdkPeerArgs): Promise<PeerResult> =>
  measure(label, args.workload, async (conversation) => {
    const model: MockLanguageModelV4 = new MockLanguageModelV4({
      doGenerate: async (options) => {
        model.doGenerateCalls.length = 0
        const calls = conversation.agentCall(options.prompt.length)
        const content: Array<LanguageModelV4Content> =
          calls === undefined
            ? [{ type: "text", text: finalAnswer }]
            : calls.map((call) => ({
                type: "tool-call",
                toolCallId: call.id,
                toolName: "produce",
                input: JSON.stringify({ size: call.size })
              }))
        return {
          content,
          finishReason:
            calls === undefined ? { unified: "stop", raw: "stop" } : { unified: "tool-calls", raw: "tool_calls" },
          usage,
          warnings: []
        }
      }
    })
    await generateText({
      model,
      tools: {
        produce: tool({
          description: "Produces a result of the given size",
          inputSchema: z.object({ size: z.number() }),
          execute: async ({ size }) => conversation.toolRan(size)
        })
      },
      messages: [{ role: "user", content: taskText }],
      stopWhen: stepCountIs(conversation.steps),
      prepareStep: ({ messages }) => {
        const cut = trimFrom(messages, 1, args.workload, rounds)
        return cut === undefined ? undefined : { messages: [messages[0] as ModelMessage, ...messages.slice(cut)] }
      }
    })
  })
