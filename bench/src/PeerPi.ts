/**
 * Pi's side of the peer comparison: agent-core's `Agent` with a `produce`
 * tool (tool calls of a step run in parallel, Pi's default), over Pi's own
 * faux provider (`registerFauxProvider` from `@mariozechner/pi-ai`),
 * scripted with one response factory per call. No session id is set, so
 * the faux provider keeps no prompt cache: the model keeps nothing it
 * receives.
 *
 * The faux provider estimates usage for every response by serializing the
 * whole request into one string (`serializeContext`: every message's text
 * joined, then the tools as JSON), work that grows with the history and
 * that no other side's scripted model does. `request: "withheld"` (the
 * default) calls the faux provider through the agent's `streamFn` with the
 * request's messages left out, after counting them, so the model does no
 * work on what it receives; `request: "whole"` passes the request as the
 * agent built it, to show what that estimate costs.
 *
 * Compaction: Pi's agent has none of its own. `none` sends the whole
 * transcript every step; `trim` cuts what is sent in `transformContext`
 * with `PeerTrim` (the agent still keeps the whole transcript in its state;
 * the trim only decides what the model is sent, remembering its cut).
 */
import { Agent, type AgentMessage, type AgentTool } from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage,
  type Context,
  fauxAssistantMessage,
  fauxToolCall,
  registerFauxProvider,
  streamSimple,
  Type
} from "@mariozechner/pi-ai"
import { trimFrom } from "./PeerTrim.ts"
import { type Conversation, finalAnswer, measure, type PeerResult, taskText, type Workload } from "./PeerWorkload.ts"

export interface PiPeerArgs {
  readonly workload: Workload
  readonly compaction: "none" | "trim"
  readonly request?: "withheld" | "whole"
}

export const label = (args: Pick<PiPeerArgs, "compaction" | "request">): string =>
  `pi agent-core Agent, ${args.compaction === "trim" ? "trim in transformContext" : "no compaction"}${args.request === "whole" ? ", faux usage estimate over the whole request" : ""}`

/** Characters of a message's text and tool results (the trim's measure). */
const sizeOf = (message: AgentMessage): number => {
  if (message.role === "assistant") return 0
  if (typeof message.content === "string") return message.content.length
  let size = 0
  for (const part of message.content) if (part.type === "text") size += part.text.length
  return size
}

const rounds = { sizeOf, startsRound: (message: AgentMessage) => message.role === "assistant" }

const respond = (conversation: Conversation, messages: number): AssistantMessage => {
  const calls = conversation.agentCall(messages)
  return calls === undefined
    ? fauxAssistantMessage(finalAnswer)
    : fauxAssistantMessage(
        calls.map((call) => fauxToolCall("produce", { size: call.size }, { id: call.id })),
        { stopReason: "toolUse" }
      )
}

export const run = (args: PiPeerArgs): Promise<PeerResult> =>
  measure(label(args), args.workload, async (conversation) => {
    const faux = registerFauxProvider()
    try {
      const whole = args.request === "whole"
      // The request's message count, taken before the request reaches the faux provider.
      let counted = 0
      faux.setResponses(
        Array.from(
          { length: conversation.steps },
          () => (context: Context) => respond(conversation, whole ? context.messages.length : counted)
        )
      )
      const parameters = Type.Object({ size: Type.Number() })
      const produce: AgentTool<typeof parameters> = {
        name: "produce",
        label: "produce",
        description: "Produces a result of the given size",
        parameters,
        execute: async (_id, params) => ({
          content: [{ type: "text", text: conversation.toolRan(params.size) }],
          details: undefined
        })
      }
      let cut = 1
      const agent = new Agent({
        initialState: { systemPrompt: "", model: faux.getModel(), tools: [produce] },
        toolExecution: "parallel",
        ...(whole
          ? {}
          : {
              streamFn: (model, context, options) => {
                counted = context.messages.length
                return streamSimple(model, { ...context, messages: [] }, options)
              }
            }),
        ...(args.compaction === "trim"
          ? {
              transformContext: async (messages: Array<AgentMessage>) => {
                cut = trimFrom(messages, cut, args.workload, rounds) ?? cut
                return cut === 1 ? messages : [messages[0] as AgentMessage, ...messages.slice(cut)]
              }
            }
          : {})
      })
      await agent.prompt(taskText)
      if (agent.state.errorMessage !== undefined) throw new Error(`pi: ${agent.state.errorMessage}`)
    } finally {
      faux.unregister()
    }
  })
