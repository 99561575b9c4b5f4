/**
 * A summary request the middleware sends fails with the provider's error,
 * whose text echoes the history being summarized: what `generateText`
 * rejects with, and the journal, keep back every corpus secret the host's
 * redactor catches in that text.
 */
import { fileURLToPath } from "node:url"
import { APICallError, type LanguageModelV4Middleware } from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { DefaultRedactor } from "@tessera/artifacts"
import { Compaction, Model } from "@tessera/runtime"
import { generateText, type ModelMessage, stepCountIs, wrapLanguageModel } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { Effect } from "effect"
import {
  answer,
  bindTask,
  callTool,
  inWorld,
  isSummaryRequest,
  journalText,
  produce,
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

const tools = { produce }
const start: Array<ModelMessage> = [{ role: "user", content: taskText }]
const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })

/** The provider's error: its message, response body and echoed request all hold the provider's text. */
const providerError = () =>
  new APICallError({
    message: leaks.providerText,
    url: "https://provider.invalid/v1/chat",
    requestBodyValues: { messages: [{ role: "user", content: leaks.providerText }] },
    responseBody: JSON.stringify({ error: { message: leaks.providerText } }),
    statusCode: 400,
    isRetryable: false
  })

/** Two tool steps, then the third compacts: every summary request fails with the provider's error. */
const failingSummaries = () => {
  let steps = 0
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      if (isSummaryRequest(options)) throw providerError()
      steps++
      return steps <= 2 ? callTool(`call-${steps}`, 6_000, `r${steps}-`) : answer("done")
    }
  })
  const summaries = () => model.doGenerateCalls.filter(isSummaryRequest).length
  return { model, summaries }
}

const rejection = (model: Parameters<typeof wrapLanguageModel>[0]["model"], middleware: LanguageModelV4Middleware) =>
  generateText({
    model: wrapLanguageModel({ model, middleware }),
    tools,
    messages: start,
    stopWhen: stepCountIs(6),
    maxRetries: 0
  }).then(
    () => undefined,
    (error: unknown) => error
  )

describe("TesseraMiddleware summary requests' failures", () => {
  it("ai_sdk_summary_error_scrubbed: a summary request failing with the provider's text: what generateText rejects with, and the journal, keep back what the redactor catches", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true, policy)
        const tessera = yield* TesseraMiddleware.make(binding).pipe(Effect.provide(DefaultRedactor.layer()))
        const { model, summaries } = failingSummaries()
        const caught = yield* Effect.promise(() => rejection(model, tessera.middleware))
        assert.strictEqual(summaries(), 1, "the summary request was sent, and failed")
        assert.isDefined(caught, "generateText rejects")
        assert.instanceOf(caught, Model.ModelError, "the summary model's error, as the caller matches on it")
        assert.include((caught as Model.ModelError).detail, "[REDACTED:")
        const journal = journalText(world)
        assert.include(journal, '"_tag":"SummaryStarted"')
        const measure = leaks.measureDoor("AI SDK summary model", [...leaks.everyText(caught), journal], redactedByHost)
        assert.deepStrictEqual(measure.caughtButLeaked, [])
        assert.isAtLeast(measure.rate, measure.redactorRate)
      })
    ))

  it("negative control: a middleware that sends the summary request itself and lets its failure through hands the caller every secret", async () => {
    const { model } = failingSummaries()
    // Deliberately broken wiring: the summary request is sent straight to the provider, its error rethrown as it came.
    const bypassing: LanguageModelV4Middleware = {
      specificationVersion: "v4",
      transformParams: async ({ model: inner, params }) => {
        if (params.prompt.length > 3) {
          await inner.doGenerate({
            prompt: [
              { role: "system", content: Compaction.summaryInstruction },
              { role: "user", content: [{ type: "text", text: JSON.stringify(params.prompt) }] }
            ]
          })
        }
        return params
      }
    }
    const caught = await rejection(model, bypassing)
    assert.isTrue(APICallError.isInstance(caught))
    const measure = leaks.measureDoor("AI SDK summary, bypassing the scrub", leaks.everyText(caught), redactedByHost)
    assert.isBelow(measure.rate, 0.05)
    assert.isAbove(measure.caughtButLeaked.length, 0)
  })
})
