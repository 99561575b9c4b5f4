/**
 * The adapters' shared world (a real store in a fresh temporary folder, a
 * task bound on it: packages/node/test/support/adapterWorld.ts), and Pi's
 * own faux provider scripted for Tessera's scenarios.
 */
import type { AgentTool } from "@mariozechner/pi-agent-core"
import {
  type Context,
  type FauxProviderRegistration,
  fauxAssistantMessage,
  fauxToolCall,
  registerFauxProvider,
  type StreamOptions,
  Type
} from "@mariozechner/pi-ai"
import { Compaction } from "@tessera/runtime"

export * from "../../../node/test/support/adapterWorld.ts"

export const systemPrompt = "You are a careful research assistant."

/** A summary request opens with Tessera's summary instruction as its system prompt. */
export const isSummaryRequest = (context: Context): boolean =>
  context.systemPrompt?.startsWith(Compaction.summaryInstruction) === true

/** What a request carries to the model, as text: its system prompt and messages. */
export const contextText = (context: Context): string =>
  JSON.stringify({ systemPrompt: context.systemPrompt, messages: context.messages })

/**
 * Pi's faux provider, scripted: calls the `produce` tool `calls` times
 * (results of `size` characters, ids `tool:<n>:x` as Pi's own hold `:`),
 * then answers; a summary request gets a numbered summary. Every request's
 * context is kept, in order.
 */
export interface Scripted {
  readonly faux: FauxProviderRegistration
  readonly contexts: Array<Context>
  /** The API key each request was sent with, in order. */
  readonly apiKeys: Array<string | undefined>
  readonly turnRequests: () => ReadonlyArray<Context>
  readonly summaryRequests: () => ReadonlyArray<Context>
}

export const scripted = (calls: number, size: number, idOf: (n: number) => string = (n) => `tool:${n}:x`): Scripted => {
  const faux = registerFauxProvider({ tokenSize: { min: 64, max: 64 } })
  const contexts: Array<Context> = []
  const apiKeys: Array<string | undefined> = []
  let steps = 0
  let summaries = 0
  const respond = (context: Context, options: StreamOptions | undefined) => {
    apiKeys.push(options?.apiKey)
    // Tools hold functions, which do not clone: a request is kept as what it tells the model.
    contexts.push({
      ...(context.systemPrompt === undefined ? {} : { systemPrompt: context.systemPrompt }),
      messages: structuredClone(context.messages)
    })
    if (isSummaryRequest(context)) {
      summaries++
      return fauxAssistantMessage(`summary number ${summaries}: the reports so far are filler`)
    }
    steps++
    return steps <= calls
      ? fauxAssistantMessage(fauxToolCall("produce", { size, fill: `r${steps}-` }, { id: idOf(steps) }), {
          stopReason: "toolUse"
        })
      : fauxAssistantMessage("All reports are filler.")
  }
  faux.setResponses(Array.from({ length: 2 * calls + 20 }, () => respond))
  return {
    faux,
    contexts,
    apiKeys,
    turnRequests: () => contexts.filter((context) => !isSummaryRequest(context)),
    summaryRequests: () => contexts.filter(isSummaryRequest)
  }
}

const produceParameters = Type.Object({ size: Type.Integer(), fill: Type.String() })

/** The tool the scripted model calls: a body of `size` characters, `fill` repeated. */
export const produce: AgentTool<typeof produceParameters> = {
  name: "produce",
  label: "Produce",
  description: "Produces a result of the given size, made of one repeated piece of text",
  parameters: produceParameters,
  execute: async (_id, { fill, size }) => ({
    content: [{ type: "text", text: fill.repeat(Math.ceil(size / fill.length)).slice(0, size) }],
    details: {}
  })
}
