import { assert, describe, it } from "@effect/vitest"
import { Volume } from "@tessera/core"
import * as Model from "@tessera/runtime/Model"
import { Effect, Result, Schema } from "effect"
import * as fc from "fast-check"

const volume = Schema.decodeUnknownSync(Volume.VolumeRef)({ store: "local", volume: "agent-private" })

// Normalised through JSON text: a JSON value has no -0 (it reads back as 0).
const json: fc.Arbitrary<Schema.Json> = fc.jsonValue().map((value) => JSON.parse(JSON.stringify(value)) as Schema.Json)

const part: fc.Arbitrary<Model.Part> = fc.oneof(
  fc
    .record({ role: fc.constantFrom("system", "user", "assistant" as const), text: fc.string() })
    .map(({ role, text }) => Model.text(role, text)),
  fc
    .record({ id: fc.string({ minLength: 1 }), name: fc.constantFrom("read", "search"), input: json })
    .map(({ id, input, name }) => Model.toolCall(id, name, input)),
  fc
    .record({
      callId: fc.string({ minLength: 1 }),
      name: fc.constantFrom("read"),
      content: fc.string(),
      isError: fc.boolean()
    })
    .map(Model.toolResult),
  fc
    .record({
      path: fc.constantFrom("summaries/turn/1.txt", "artifacts/a.txt"),
      mediaType: fc.constantFrom("text/plain")
    })
    .map(({ mediaType, path }) => Model.fileReference({ role: "user", volume, path, mediaType }))
)

describe("Model", () => {
  it("every part built by the constructors is accepted by the request Schema and survives a JSON round trip", () => {
    const codec = Schema.fromJsonString(Model.ModelRequest)
    fc.assert(
      fc.property(fc.array(part, { maxLength: 6 }), (parts) => {
        const request: Model.ModelRequest = { parts, tools: [] }
        const decoded = Schema.decodeUnknownResult(codec)(Schema.encodeSync(codec)(request))
        assert.isTrue(Result.isSuccess(decoded))
        if (Result.isSuccess(decoded)) assert.deepStrictEqual(decoded.success, request)
      }),
      { numRuns: 200 }
    )
  })

  it("a part with an unknown tag or a missing field is rejected by the Schema", () => {
    const decode = Schema.decodeUnknownResult(Model.Part)
    assert.isTrue(Result.isFailure(decode({ _tag: "Hologram", role: "user" })))
    assert.isTrue(Result.isFailure(decode({ _tag: "ToolResult", callId: "c", name: "n", content: "x" })))
    assert.isTrue(Result.isFailure(decode({ _tag: "Text", role: "tool", text: "x" })))
  })

  it("response() defaults to no text and no tool calls, which answers a turn", () => {
    assert.deepStrictEqual(Model.response({}), { text: "", toolCalls: [] })
  })

  it("a ModelError's message names its reason and detail", () => {
    const error = new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
    assert.strictEqual(error.message, "model error (ProviderFailure): HTTP 503")
  })

  it.effect("a provider plugged in through layerFromGenerate is the Model the program calls", () =>
    Effect.gen(function* () {
      const model = yield* Model.Model
      const answer = yield* model.generate({ parts: [Model.text("user", "ping")], tools: [] })
      assert.strictEqual(answer.text, "pong after 1 part(s)")
    }).pipe(
      Effect.provide(
        Model.layerFromGenerate((request) =>
          Effect.succeed(Model.response({ text: `pong after ${request.parts.length} part(s)` }))
        )
      )
    )
  )
})
