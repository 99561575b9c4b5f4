/**
 * The AI SDK's cold-start program: `generateText` with one tool over
 * `MockLanguageModelV4` (the SDK's own test model), which answers at once.
 */
import { generateText, jsonSchema, tool } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import type { Answer, Probe } from "./Runner.ts"

const fetchReport = tool({
  description: "Fetches a report by name",
  inputSchema: jsonSchema<{ name: string }>({
    type: "object",
    properties: { name: { type: "string" } },
    required: ["name"]
  }),
  execute: async ({ name }) => `Report ${name}: every measurement within tolerance.`
})

export const firstCall = async (probe: Probe): Promise<Answer> => {
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      probe()
      return {
        content: [{ type: "text", text: "The north report shows every measurement within tolerance." }],
        finishReason: { unified: "stop", raw: undefined },
        usage: {
          inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 5, text: 5, reasoning: undefined }
        },
        warnings: []
      }
    }
  })
  const result = await generateText({
    model,
    tools: { fetch_report: fetchReport },
    prompt: "Summarize the north report."
  })
  return { text: result.text, library: import.meta.resolve("ai") }
}
