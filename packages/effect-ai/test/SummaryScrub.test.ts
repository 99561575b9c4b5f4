/**
 * A summary request the wrapper sends fails with the provider's `AiError`,
 * whose text echoes the history being summarized: the `AiError` the caller
 * gets, and the journal, keep back every corpus secret the host's redactor
 * catches in that text.
 */
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { TesseraLanguageModel } from "@tessera/effect-ai"
import { Compaction } from "@tessera/runtime"
import { Effect, Layer, Stream } from "effect"
import { AiError, LanguageModel, Prompt } from "effect/ai"
import {
  answer,
  bindTask,
  callTool,
  converse,
  inWorld,
  isSummaryRequest,
  journalText,
  taskText,
  toolsLayer
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

const providerError = () =>
  AiError.make({
    module: "TestProvider",
    method: "generateText",
    reason: new AiError.InvalidRequestError({ description: leaks.providerText })
  })

/** A provider that calls the tool twice, then answers; every summary request fails with the provider's text. */
const failingSummaries = () => {
  let steps = 0
  let summaries = 0
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) =>
        Effect.suspend(() => {
          if (isSummaryRequest(options)) {
            summaries++
            return Effect.fail(providerError())
          }
          steps++
          return Effect.succeed(steps <= 2 ? callTool(`call-${steps}`, 6_000, `r${steps}-`) : answer("done"))
        }),
      streamText: () => Stream.empty
    })
  )
  return { layer, summaries: () => summaries }
}

describe("TesseraLanguageModel summary requests' failures", () => {
  it("effect_ai_summary_error_scrubbed: a summary request failing with the provider's text: the AiError the caller gets, and the journal, keep back what the redactor catches", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true, policy)
        const provider = failingSummaries()
        const error = yield* Effect.flip(
          converse(taskText, 6).pipe(
            Effect.provide(
              Layer.merge(
                TesseraLanguageModel.layer(binding).pipe(
                  Layer.provide(Layer.merge(provider.layer, DefaultRedactor.layer()))
                ),
                toolsLayer
              )
            )
          )
        )
        assert.strictEqual(provider.summaries(), 1, "the summary request was sent, and failed")
        assert.isTrue(AiError.isAiError(error), "an AiError, as the LanguageModel interface allows")
        assert.include((error as AiError.AiError).message, "[REDACTED:")
        const journal = journalText(world)
        assert.include(journal, '"_tag":"SummaryStarted"')
        const measure = leaks.measureDoor(
          "Effect AI summary model",
          [...leaks.everyText(error), journal],
          redactedByHost
        )
        assert.deepStrictEqual(measure.caughtButLeaked, [])
        assert.isAtLeast(measure.rate, measure.redactorRate)
      })
    ))

  it("negative control: a wrapper that sends the summary request to the provider itself hands the caller every secret", () =>
    Effect.gen(function* () {
      const provider = failingSummaries()
      // Deliberately broken wiring: the summary request goes straight to the provider, its error passed on.
      const bypassing = Layer.effect(
        LanguageModel.LanguageModel,
        Effect.map(LanguageModel.LanguageModel, (inner) => ({
          ...inner,
          generateText: ((options: { readonly prompt: Prompt.RawInput }) =>
            Effect.andThen(
              inner.generateText({
                prompt: Prompt.make([
                  { role: "system", content: Compaction.summaryInstruction },
                  { role: "user", content: JSON.stringify(Prompt.make(options.prompt).content) }
                ])
              }),
              inner.generateText(options)
            )) as unknown as LanguageModel.LanguageModel["generateText"]
        }))
      ).pipe(Layer.provide(provider.layer))
      const error = yield* Effect.flip(converse(taskText, 1).pipe(Effect.provide(Layer.merge(bypassing, toolsLayer))))
      assert.strictEqual(provider.summaries(), 1)
      const measure = leaks.measureDoor(
        "Effect AI summary, bypassing the scrub",
        leaks.everyText(error),
        redactedByHost
      )
      assert.isBelow(measure.rate, 0.05)
      assert.isAbove(measure.caughtButLeaked.length, 0)
    }).pipe(Effect.runPromise))
})
