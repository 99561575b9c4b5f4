/**
 * Pi's cold-start program: an `Agent` of `@mariozechner/pi-agent-core` with
 * one tool, prompted once over the faux provider of `@mariozechner/pi-ai`,
 * which answers at once.
 */
import { Agent, type AgentTool } from "@mariozechner/pi-agent-core"
import { fauxAssistantMessage, registerFauxProvider, Type } from "@mariozechner/pi-ai"
import type { Answer, Probe } from "./Runner.ts"

const parameters = Type.Object({ name: Type.String() })

const fetchReport: AgentTool<typeof parameters> = {
  name: "fetch_report",
  label: "Fetch report",
  description: "Fetches a report by name",
  parameters,
  execute: async (_id, { name }) => ({
    content: [{ type: "text", text: `Report ${name}: every measurement within tolerance.` }],
    details: {}
  })
}

export const firstCall = async (probe: Probe): Promise<Answer> => {
  const faux = registerFauxProvider()
  faux.setResponses([
    () => {
      probe()
      return fauxAssistantMessage("The north report shows every measurement within tolerance.")
    }
  ])
  const agent = new Agent({
    initialState: {
      systemPrompt: "You are a careful research assistant.",
      model: faux.getModel(),
      tools: [fetchReport]
    }
  })
  await agent.prompt("Summarize the north report.")
  faux.unregister()
  const last = agent.state.messages.at(-1)
  const text =
    last !== undefined && last.role === "assistant"
      ? last.content.map((block) => (block.type === "text" ? block.text : "")).join("")
      : ""
  return { text, library: import.meta.resolve("@mariozechner/pi-agent-core") }
}
