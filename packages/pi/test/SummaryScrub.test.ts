/**
 * A summary request the hooks send fails with the provider's error message,
 * whose text echoes the history being summarized: what Pi's agent ends its
 * run with, and the journal, keep back every corpus secret the host's
 * redactor catches in that text.
 */
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Agent, type AgentOptions, type StreamFn } from "@mariozechner/pi-agent-core"
import {
  type Api,
  type AssistantMessage,
  createAssistantMessageEventStream,
  type Model as PiModel,
  streamSimple
} from "@mariozechner/pi-ai"
import { DefaultRedactor } from "@tessera/artifacts"
import { TesseraPi } from "@tessera/pi"
import { Compaction } from "@tessera/runtime"
import { Effect } from "effect"
import {
  bindTask,
  inWorld,
  isSummaryRequest,
  journalText,
  produce,
  type Scripted,
  scripted,
  systemPrompt,
  taskText
} from "./support/world.ts"

/** The corpus measure the runtime's own doors use (`packages/node/test/runtime/support/leaks.ts`). */
interface Leaks {
  readonly providerText: string
  readonly everyText: (value: unknown) => Array<string>
  readonly measureDoor: (
    place: string,
    outputs: ReadonlyArray<string>,
    redacted: string
  ) => { readonly rate: number; readonly redactorRate: number; readonly caughtButLeaked: ReadonlyArray<unknown> }
}
// Loaded by path at run time: this project's type-check covers only its own folder.
const leaks = (await import(
  /* @vite-ignore */ fileURLToPath(new URL("../../node/test/runtime/support/leaks.ts", import.meta.url))
)) as Leaks
const redactedByHost = DefaultRedactor.make().redactText(leaks.providerText)

const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })

/** The answer a provider gives a request it rejects: Pi's error message, holding the provider's text. */
const rejected = (model: PiModel<Api>): AssistantMessage => ({
  role: "assistant",
  content: [],
  api: model.api,
  provider: model.provider,
  model: model.id,
  usage: {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
  },
  stopReason: "error",
  errorMessage: leaks.providerText,
  timestamp: Date.now()
})

/** The host's stream function: Pi's own for the agent's requests, a rejection for every summary request. */
const failingSummaries = () => {
  let summaries = 0
  const streamFn: StreamFn = (model, context, options) => {
    if (!isSummaryRequest(context)) return streamSimple(model, context, options)
    summaries++
    const stream = createAssistantMessageEventStream()
    const message = rejected(model)
    stream.push({ type: "error", reason: "error", error: message })
    stream.end(message)
    return stream
  }
  return { streamFn, summaries: () => summaries }
}

const agentFor = (script: Scripted, options: AgentOptions) =>
  new Agent({ initialState: { systemPrompt, model: script.faux.getModel(), tools: [produce] }, ...options })

describe("TesseraPi summary requests' failures", () => {
  it("pi_summary_error_scrubbed: a summary request failing with the provider's text: the error Pi's agent ends with, its state and the journal keep back what the redactor catches", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true, policy)
        const host = failingSummaries()
        const tessera = yield* TesseraPi.make(binding, { streamFn: host.streamFn }).pipe(
          Effect.provide(DefaultRedactor.layer())
        )
        const script = scripted(2, 6_000)
        const agent = agentFor(script, tessera.agentOptions)
        yield* Effect.promise(() => agent.prompt(taskText))
        script.faux.unregister()
        assert.strictEqual(host.summaries(), 1, "the summary request was sent, and failed")
        assert.include(agent.state.errorMessage ?? "", "[REDACTED:", "the agent ended its run with the scrubbed error")
        const journal = journalText(world)
        assert.include(journal, '"_tag":"SummaryStarted"')
        const measure = leaks.measureDoor(
          "Pi summary model",
          [...leaks.everyText(agent.state), journal],
          redactedByHost
        )
        assert.deepStrictEqual(measure.caughtButLeaked, [])
        assert.isAtLeast(measure.rate, measure.redactorRate)
      })
    ))

  it("pi_summary_transform_context_rejects_scrubbed: transformContext itself rejects with the scrubbed error", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true, policy)
        const host = failingSummaries()
        const tessera = yield* TesseraPi.make(binding, { streamFn: host.streamFn }).pipe(
          Effect.provide(DefaultRedactor.layer())
        )
        const script = scripted(2, 6_000)
        let rejection: unknown
        const agent = agentFor(script, {
          ...tessera.agentOptions,
          transformContext: (messages, signal) =>
            tessera.transformContext(messages, signal).catch((error: unknown) => {
              rejection = error
              throw error
            })
        })
        yield* Effect.promise(() => agent.prompt(taskText))
        script.faux.unregister()
        assert.isDefined(rejection, "transformContext rejected")
        const measure = leaks.measureDoor("Pi transformContext", leaks.everyText(rejection), redactedByHost)
        assert.deepStrictEqual(measure.caughtButLeaked, [])
        assert.isAtLeast(measure.rate, measure.redactorRate)
      })
    ))

  it("negative control: a transformContext that sends the summary request itself and throws its error hands Pi every secret", () =>
    inWorld(() =>
      Effect.gen(function* () {
        const host = failingSummaries()
        const script = scripted(2, 6_000)
        // Deliberately broken wiring: the summary request goes straight to the host's stream function.
        const bypassing: AgentOptions["transformContext"] = async (messages) => {
          if (messages.length < 4) return messages
          const stream = await host.streamFn(script.faux.getModel(), {
            systemPrompt: Compaction.summaryInstruction,
            messages: [{ role: "user", content: JSON.stringify(messages), timestamp: Date.now() }]
          })
          const message = await stream.result()
          throw new Error(message.errorMessage)
        }
        const agent = agentFor(script, { transformContext: bypassing, streamFn: host.streamFn })
        yield* Effect.promise(() => agent.prompt(taskText))
        script.faux.unregister()
        assert.strictEqual(host.summaries(), 1)
        const measure = leaks.measureDoor(
          "Pi summary, bypassing the scrub",
          leaks.everyText(agent.state),
          redactedByHost
        )
        assert.isBelow(measure.rate, 0.05)
        assert.isAbove(measure.caughtButLeaked.length, 0)
      })
    ))
})
