/**
 * The adapters' shared world (a real store in a fresh temporary folder, a
 * task bound on it: packages/node/test/support/adapterWorld.ts), and a
 * scripted Effect AI `LanguageModel` (made with `LanguageModel.make`, as a
 * provider is: no mock model ships with effect/ai) that counts its requests.
 */
import { Journal, type JournalEntry } from "@tessera/runtime"
import { Effect, Layer, Schema, Stream } from "effect"
import { LanguageModel, Prompt, type Response, Tool, Toolkit } from "effect/ai"
import { task, type World } from "../../../node/test/support/adapterWorld.ts"

export * from "../../../node/test/support/adapterWorld.ts"

export const count = (text: string, tag: string): number => text.split(`"_tag":"${tag}"`).length - 1

/** The task's `RequestDispatched` entries, in journal order. */
export const requestsDispatched = (world: World) =>
  Journal.readEntries({ folder: world.journalFolder, task }).pipe(
    Effect.map((entries) =>
      entries.filter((entry): entry is typeof JournalEntry.RequestDispatched.Type => entry._tag === "RequestDispatched")
    )
  )

const usage = { inputTokens: { total: 10, uncached: 10 }, outputTokens: { total: 5, text: 5 } }

/** A response that calls `produce` for a body of `size` characters of `fill`. */
export const callTool = (id: string, size: number, fill: string): Array<Response.PartEncoded> => [
  { type: "tool-call", id, name: "produce", params: { size, fill } },
  { type: "finish", reason: "tool-calls", usage }
]

/** A response that answers with `text`. */
export const answer = (text: string): Array<Response.PartEncoded> => [
  { type: "text", text },
  { type: "finish", reason: "stop", usage }
]

/** The same response as a provider streams it: reasoning in one delta, text in word-sized deltas, calls whole, then finish. */
export const streamed = (parts: ReadonlyArray<Response.PartEncoded>): Array<Response.StreamPartEncoded> =>
  parts.flatMap((part): Array<Response.StreamPartEncoded> => {
    if (part.type === "reasoning") {
      return [
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: part.text },
        { type: "reasoning-end", id: "r" }
      ]
    }
    if (part.type !== "text") return [part as Response.StreamPartEncoded]
    return [
      { type: "text-start", id: "t" },
      ...part.text.split(/(?<= )/).map((delta): Response.StreamPartEncoded => ({ type: "text-delta", id: "t", delta })),
      { type: "text-end", id: "t" }
    ]
  })

/** Tessera's summary requests open with its system prompt; the scenarios' prompts have none. */
export const isSummaryRequest = (options: LanguageModel.ProviderOptions): boolean =>
  options.prompt.content[0]?.role === "system"

export const promptText = (prompt: Prompt.Prompt): string => JSON.stringify(prompt.content)

/**
 * A scripted provider: `script(n)` answers the n-th step request (1-based),
 * summary requests get a summary. Every request is recorded.
 */
export const scripted = (script: (step: number) => Array<Response.PartEncoded>) => {
  const requests: Array<LanguageModel.ProviderOptions> = []
  let steps = 0
  let summaries = 0
  const respond = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
    requests.push(options)
    if (isSummaryRequest(options)) {
      summaries++
      return answer(`summary number ${summaries}: the reports so far are filler`)
    }
    steps++
    return script(steps)
  }
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) => Effect.sync(() => respond(options)),
      streamText: (options) => Stream.suspend(() => Stream.fromIterable(streamed(respond(options))))
    })
  )
  const stepRequests = () => requests.filter((options) => !isSummaryRequest(options))
  return { layer, requests, stepRequests }
}

/** The tool the scripted model calls: a body of `size` characters, `fill` repeated. */
export const Produce = Tool.make("produce", {
  description: "Produces a result of the given size, made of one repeated piece of text",
  parameters: Schema.Struct({ size: Schema.Number, fill: Schema.String }),
  success: Schema.String
})

export const Tools = Toolkit.make(Produce)

export const toolsLayer = Tools.toLayer({
  produce: ({ fill, size }) => Effect.succeed(fill.repeat(Math.ceil(size / fill.length)).slice(0, size))
})

/**
 * The caller's own loop, as an Effect AI harness writes it: generate with
 * the toolkit (Effect AI runs the tools), append the response to the
 * history, until the model answers or `limit` steps ran.
 */
export const converse = (start: Prompt.RawInput, limit: number) =>
  Effect.gen(function* () {
    let prompt = Prompt.make(start)
    let text = ""
    for (let step = 0; step < limit; step++) {
      const response = yield* LanguageModel.generateText({ prompt, toolkit: Tools })
      prompt = Prompt.concat(prompt, Prompt.fromResponseParts(response.content))
      text = response.text
      if (response.toolCalls.length === 0) break
    }
    return { prompt, text }
  })
