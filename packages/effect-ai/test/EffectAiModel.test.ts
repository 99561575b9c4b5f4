import { assert, describe, it } from "@effect/vitest"
import { EffectAiModel } from "@tessera/effect-ai"
import { Compaction, History, Model, TaskExecution, Tool as TesseraTool } from "@tessera/runtime"
import { Effect, Layer, Schema, Stream } from "effect"
import { AiError, LanguageModel, Prompt, type Response } from "effect/ai"
import { bindTask, count, inWorld, journalText, promptText, streamed, taskText } from "./support/world.ts"

const report = "measurement 42.0 within tolerance\n"
const fetchReport = TesseraTool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) => Effect.succeed(`Report ${name}\n${report.repeat(20)}`)
})

const usage = { inputTokens: { total: 12, uncached: 9, cacheRead: 3 }, outputTokens: { total: 7, reasoning: 2 } }

/**
 * An Effect AI provider that reads what it is sent: first it asks for the
 * report; once a tool result with the report is in its prompt it answers
 * from it, else it says it has none.
 */
const reportReader = () => {
  const requests: Array<LanguageModel.ProviderOptions> = []
  const respond = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
    requests.push(options)
    const results = options.prompt.content.flatMap((message) =>
      message.role === "tool" ? message.content.filter((part) => part.type === "tool-result") : []
    )
    if (requests.length === 1) {
      return [
        { type: "reasoning", text: "I need the report." },
        { type: "tool-call", id: "call:1", name: "fetch_report", params: { name: "north" } },
        { type: "finish", reason: "tool-calls", usage }
      ]
    }
    const seen = results.some((part) => String(part.result).includes("within tolerance"))
    return [
      { type: "text", text: seen ? "The north report shows every measurement within tolerance." : "I have no report." },
      { type: "finish", reason: "stop", usage }
    ]
  }
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) => Effect.sync(() => respond(options)),
      streamText: (options) => Stream.suspend(() => Stream.fromIterable(streamed(respond(options))))
    })
  )
  return { layer, requests }
}

const served = Effect.gen(function* () {
  return yield* Model.Model
})

const turn = (model: Layer.Layer<Model.Model>) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, Compaction.threshold({ limit: 20_000 }))
      const outcome = yield* TaskExecution.runTurn(binding, History.make([Model.text("user", taskText)]), {
        tools: TesseraTool.registry(fetchReport),
        maxSteps: 4
      }).pipe(Effect.provide(model))
      return { outcome, journal: journalText(world) }
    })
  )

describe("EffectAiModel: a Tessera model served by an Effect AI LanguageModel", () => {
  it("effect_ai_model_turn: a turn through TaskExecution on a LanguageModel: tools offered as JSON Schema, the tool run by Tessera, its result read back, usage and finish kept", async () => {
    const provider = reportReader()
    const steps: Array<Model.ModelResponse> = []
    const observed = Layer.effect(
      Model.Model,
      Effect.gen(function* () {
        const model = yield* Model.Model
        return Model.fromGenerate((request) =>
          Effect.tap(model.generate(request), (response) => Effect.sync(() => steps.push(response)))
        )
      })
    ).pipe(Layer.provide(EffectAiModel.layer), Layer.provide(provider.layer))
    const { outcome, journal } = await turn(observed)
    assert.strictEqual(outcome.text, "The north report shows every measurement within tolerance.")
    assert.strictEqual(outcome.steps, 2)
    assert.strictEqual(provider.requests.length, 2)
    const first = provider.requests[0] as LanguageModel.ProviderOptions
    assert.deepStrictEqual(
      first.tools.map((tool) => tool.name),
      ["fetch_report"]
    )
    assert.include(promptText(first.prompt), taskText)
    // The call id with its ':' came back in the tool message, paired with the call.
    assert.include(promptText((provider.requests[1] as LanguageModel.ProviderOptions).prompt), '"id":"call:1"')
    assert.deepStrictEqual(steps[0]?.toolCalls, [Model.toolCall("call:1", "fetch_report", { name: "north" })])
    assert.strictEqual(steps[0]?.reasoning, "I need the report.")
    assert.deepStrictEqual(steps[1]?.usage, {
      inputTokens: 12,
      outputTokens: 7,
      cachedInputTokens: 3,
      reasoningTokens: 2
    })
    assert.strictEqual(steps[1]?.finishReason, "stop")
    assert.strictEqual(count(journal, "RequestDispatched"), 2)
    assert.strictEqual(count(journal, "ToolResulted"), 1)
    assert.include(journal, '"_tag":"TurnClosed"')
  })

  it("negative control: a converter that drops tool results leaves the model without the report", async () => {
    const provider = reportReader()
    // Deliberately broken wiring: only text parts reach the LanguageModel.
    const textOnly = Layer.effect(
      Model.Model,
      Effect.gen(function* () {
        const model = yield* Model.Model
        return Model.fromGenerate((request) =>
          model.generate({ ...request, parts: request.parts.filter((part) => part._tag !== "ToolResult") })
        )
      })
    ).pipe(Layer.provide(EffectAiModel.layer), Layer.provide(provider.layer))
    const { outcome } = await turn(textOnly)
    assert.strictEqual(outcome.text, "I have no report.")
  })

  it("effect_ai_model_stream: streamTurn forwards the LanguageModel's text deltas as they arrive", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const provider = reportReader()
        const binding = yield* bindTask(world, true)
        const events = yield* Stream.runCollect(
          TaskExecution.streamTurn(binding, History.make([Model.text("user", taskText)]), {
            tools: TesseraTool.registry(fetchReport),
            maxSteps: 4
          })
        ).pipe(Effect.provide(EffectAiModel.layer.pipe(Layer.provide(provider.layer))))
        const deltas = Array.from(events).flatMap((event) => (event._tag === "TextDelta" ? [event.delta] : []))
        assert.deepStrictEqual(deltas, [
          "The ",
          "north ",
          "report ",
          "shows ",
          "every ",
          "measurement ",
          "within ",
          "tolerance."
        ])
        const reasoning = Array.from(events).filter((event) => event._tag === "ReasoningDelta")
        assert.strictEqual(reasoning.length, 1)
        const finished = Array.from(events).filter((event) => event._tag === "StepFinished")
        assert.deepStrictEqual(
          finished.map((event) => event.finishReason),
          ["tool-calls", "stop"]
        )
      })
    ))

  it("effect_ai_model_errors: an AiError becomes a ModelError (ProviderFailure) that says whether it is retryable", () =>
    Effect.runPromise(
      Effect.gen(function* () {
        const failing = (reason: AiError.AiErrorReason) =>
          Layer.effect(
            LanguageModel.LanguageModel,
            LanguageModel.make({
              generateText: () => Effect.fail(AiError.make({ module: "Test", method: "generateText", reason })),
              streamText: () => Stream.fail(AiError.make({ module: "Test", method: "streamText", reason }))
            })
          )
        const request: Model.ModelRequest = { parts: [Model.text("user", taskText)], tools: [] }
        const limited = yield* Effect.flip(
          Effect.flatMap(served, (model) => model.generate(request)).pipe(
            Effect.provide(EffectAiModel.layer.pipe(Layer.provide(failing(new AiError.RateLimitError({})))))
          )
        )
        assert.strictEqual(limited.reason, "ProviderFailure")
        assert.isTrue(limited.retryable)
        const denied = yield* Effect.flip(
          Stream.runDrain(Stream.unwrap(Effect.map(served, (model) => model.stream(request)))).pipe(
            Effect.provide(
              EffectAiModel.layer.pipe(Layer.provide(failing(new AiError.AuthenticationError({ kind: "InvalidKey" }))))
            )
          )
        )
        assert.strictEqual(denied._tag, "ModelError")
        assert.isFalse((denied as Model.ModelError).retryable)
      })
    ))

  it("effect_ai_model_prompt: every Tessera part kind reaches the LanguageModel in the message of its role", () =>
    Effect.runPromise(
      Effect.gen(function* () {
        const provider = reportReader()
        const model = yield* Effect.provide(served, EffectAiModel.layer.pipe(Layer.provide(provider.layer)))
        yield* model.generate({
          parts: [
            Model.text("system", "You read reports."),
            Model.text("user", taskText),
            Model.toolCall("call:1", "fetch_report", { name: "north" }),
            Model.toolResult({ callId: "call:1", name: "fetch_report", content: "the report", isError: false }),
            {
              _tag: "Media",
              role: "user",
              mediaType: "image/png",
              data: { _tag: "Base64", base64: "iVBORw0KGgo=" },
              providerOptions: { openai: { detail: "low" } }
            }
          ],
          tools: [
            {
              name: "fetch_report",
              description: "Fetches a report by name",
              inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] }
            }
          ]
        })
        const prompt = (provider.requests[0] as LanguageModel.ProviderOptions).prompt
        assert.deepStrictEqual(
          prompt.content.map((message) => message.role),
          ["system", "user", "assistant", "tool", "user"]
        )
        const media = prompt.content[4]
        assert.isTrue(media?.role === "user" && media.content[0]?.type === "file")
        assert.deepStrictEqual(
          media?.role === "user" && media.content[0]?.type === "file" ? media.content[0].options : undefined,
          { openai: { detail: "low" } }
        )
        assert.isTrue(Prompt.isPrompt(prompt))
      })
    ))
})
