/**
 * The adapters' shared world (a real store in a fresh temporary folder, a
 * task bound on it: packages/node/test/support/adapterWorld.ts), and the
 * AI SDK's own mock model scripted for Tessera's scenarios.
 */
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult, LanguageModelV4Prompt } from "@ai-sdk/provider"
import { jsonSchema, type Tool, tool } from "ai"

export * from "../../../node/test/support/adapterWorld.ts"

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}

export const callTool = (id: string, size: number, fill: string): LanguageModelV4GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: id, toolName: "produce", input: JSON.stringify({ size, fill }) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: []
})

export const answer = (text: string): LanguageModelV4GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: undefined },
  usage,
  warnings: []
})

/** The scenarios' prompts have no system message: one that starts with it is a summary request. */
export const isSummaryRequest = (options: LanguageModelV4CallOptions): boolean => options.prompt[0]?.role === "system"

export const promptText = (prompt: LanguageModelV4Prompt): string => JSON.stringify(prompt)

/** The tool the scripted model calls: a body of `size` characters, `fill` repeated. */
export const produce: Tool<{ size: number; fill: string }, string> = tool({
  description: "Produces a result of the given size, made of one repeated piece of text",
  inputSchema: jsonSchema<{ size: number; fill: string }>({
    type: "object",
    properties: { size: { type: "integer" }, fill: { type: "string" } },
    required: ["size", "fill"]
  }),
  execute: async ({ fill, size }) => fill.repeat(Math.ceil(size / fill.length)).slice(0, size)
})
