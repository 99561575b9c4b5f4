import { assert, describe, it } from "@effect/vitest"
import * as Model from "@tessera/runtime/Model"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect } from "effect"

const request = (body: string): Model.ModelRequest => ({ parts: [Model.text("user", body)], tools: [] })

const generate = (body: string) =>
  Effect.gen(function* () {
    const model = yield* Model.Model
    return yield* model.generate(request(body))
  })

describe("ScriptedModel", () => {
  it.effect("a list script answers requests in order and records each request as given", () =>
    Effect.gen(function* () {
      const first = yield* generate("one")
      const second = yield* generate("two")
      assert.strictEqual(first.text, "first")
      assert.strictEqual(second.text, "second")
      const recorder = yield* ScriptedModel.ScriptedModelRecorder
      assert.strictEqual(yield* recorder.count, 2)
      assert.deepStrictEqual(yield* recorder.requests, [request("one"), request("two")])
    }).pipe(
      Effect.provide(ScriptedModel.layer([Model.response({ text: "first" }), Model.response({ text: "second" })]))
    )
  )

  it.effect("one request more than the list holds is a typed ScriptExhausted error, not a hang", () =>
    Effect.gen(function* () {
      yield* generate("one")
      const error = yield* Effect.flip(generate("two"))
      assert.strictEqual(error._tag, "ModelError")
      assert.strictEqual(error.reason, "ScriptExhausted")
      assert.include(error.message, "request 2")
      const recorder = yield* ScriptedModel.ScriptedModelRecorder
      assert.strictEqual(yield* recorder.count, 2, "the unanswerable request is still recorded")
    }).pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: "only" })])))
  )

  it.effect("a scripted ModelError fails that request with the same error", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(generate("one"))
      assert.strictEqual(error.reason, "ProviderFailure")
      assert.strictEqual((yield* generate("two")).text, "recovered")
    }).pipe(
      Effect.provide(
        ScriptedModel.layer([
          new Model.ModelError({ reason: "ProviderFailure", detail: "scripted outage" }),
          Model.response({ text: "recovered" })
        ])
      )
    )
  )

  it.effect("a function script sees each request and its zero-based index", () =>
    Effect.gen(function* () {
      const answers = [yield* generate("a"), yield* generate("b"), yield* generate("c")]
      assert.deepStrictEqual(
        answers.map((answer) => answer.text),
        ["0:a", "1:b", "2:c"]
      )
    }).pipe(
      Effect.provide(
        ScriptedModel.layer((received, index) => {
          const part = received.parts[0]
          return Model.response({ text: `${index}:${part?._tag === "Text" ? part.text : "?"}` })
        })
      )
    )
  )

  it.effect("a function script may answer with an Effect, including a failure", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(generate("x"))
      assert.strictEqual(error.reason, "InvalidResponse")
    }).pipe(
      Effect.provide(
        ScriptedModel.layer(() => Effect.fail(new Model.ModelError({ reason: "InvalidResponse", detail: "no" })))
      )
    )
  )

  it.effect("the same script gives the same answers on every build of the layer", () =>
    Effect.gen(function* () {
      const script: ScriptedModel.Script = (received, index) =>
        Model.response({ text: `${index}/${received.parts.length}` })
      const run = Effect.gen(function* () {
        const a = yield* generate("p")
        const b = yield* generate("q")
        const recorder = yield* ScriptedModel.ScriptedModelRecorder
        return [a, b, yield* recorder.count] as const
      })
      const first = yield* Effect.provide(run, ScriptedModel.layer(script))
      const second = yield* Effect.provide(run, ScriptedModel.layer(script))
      assert.deepStrictEqual(first, second)
      assert.strictEqual(first[2], 2, "each build starts with an empty record")
    })
  )
})
