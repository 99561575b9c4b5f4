/**
 * Model protocol v2 on its own: streams collect into the response they
 * carry, a generate-only model streams as one chunk, the scripted model
 * streams its text in several deltas, usage sums count by count, the
 * request measure uses a provider's count, and system messages open a
 * compacted request.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as Timeouts from "@tessera/runtime/Timeouts"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Exit, Stream } from "effect"
import * as fc from "fast-check"
import * as Planning from "../src/internal/compactionPlan.js"

const request: Model.ModelRequest = { parts: [Model.text("user", "go")], tools: [] }

const count = fc.integer({ min: 0, max: 1_000_000 })
const usage: fc.Arbitrary<Model.Usage> = fc.record(
  { inputTokens: count, outputTokens: count, cachedInputTokens: count, reasoningTokens: count },
  { requiredKeys: [] }
)
const json = fc.jsonValue().map((value) => JSON.parse(JSON.stringify(value)) as Model.ToolCallPart["input"])
const toolCalls = fc
  .uniqueArray(fc.string({ minLength: 1, maxLength: 6 }), { maxLength: 3 })
  .chain((ids) =>
    fc.tuple(
      ...ids.map((id) =>
        fc.tuple(fc.constantFrom("produce", "read"), json).map(([name, input]) => Model.toolCall(id, name, input))
      )
    )
  )
const response: fc.Arbitrary<Model.ModelResponse> = fc
  .record(
    {
      text: fc.string({ maxLength: 40 }),
      toolCalls,
      reasoning: fc.string({ minLength: 1, maxLength: 20 }),
      usage,
      finishReason: fc.constantFrom<Model.FinishReason>("stop", "length", "tool-calls", "other"),
      providerMetadata: fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 2 })
    },
    { requiredKeys: ["text", "toolCalls"] }
  )
  // Metadata travels with the finish event, which a response without a finish reason gets a default for.
  .map((value) => value as Model.ModelResponse)
  .filter((value) => value.providerMetadata === undefined || value.finishReason !== undefined)

const run = <A, E>(effect: Effect.Effect<A, E>): A => Effect.runSync(effect)

describe("streams and responses", () => {
  it("property: a generate-only model streams its response as one chunk that collects back to the same response; a lift that drops usage (control) does not", () => {
    const roundTrips = (lift: (response: Model.ModelResponse) => ReadonlyArray<Model.ModelStreamEvent>) =>
      fc.property(response, (answer) => {
        const collected = run(Model.collect(Stream.fromIterable(lift(answer))))
        assert.deepStrictEqual(collected, answer)
      })
    fc.assert(roundTrips(Model.responseEvents))
    fc.assert(
      fc.property(response, (answer) => {
        const model = Model.fromGenerate(() => Effect.succeed(answer))
        assert.deepStrictEqual(run(Model.collect(model.stream(request))), answer)
        assert.deepStrictEqual(run(model.generate(request)), answer, "generate is the adapter's own")
      })
    )
    const dropsUsage = (answer: Model.ModelResponse) =>
      Model.responseEvents(answer).filter((event) => event._tag !== "Usage")
    assert.isTrue(fc.check(roundTrips(dropsUsage)).failed, "control: a lift that loses usage is caught")
  })

  it("property: the scripted model streams text in several deltas that join to the text, and its generate is the collected stream", () => {
    fc.assert(
      fc.property(response, (answer) => {
        const events = ScriptedModel.streamEvents(answer)
        const deltas = events.flatMap((event) => (event._tag === "TextDelta" ? [event.delta] : []))
        assert.strictEqual(deltas.join(""), answer.text)
        assert.isTrue(deltas.every((delta) => delta.length > 0))
        if (Array.from(answer.text).length >= 2) assert.isAtLeast(deltas.length, 2)
        const model = run(ScriptedModel.make([answer, answer])).model
        const generated = run(model.generate(request))
        const streamed = run(Model.collect(model.stream(request)))
        assert.deepStrictEqual(generated, streamed)
        assert.deepStrictEqual(generated, {
          ...answer,
          finishReason: answer.finishReason ?? (answer.toolCalls.length > 0 ? "tool-calls" : "stop")
        })
      })
    )
  })

  it("a stream that begins a tool call and never completes it fails InvalidResponse naming the call", () => {
    const exit = Effect.runSyncExit(
      Model.collect(
        Stream.make<ReadonlyArray<Model.ModelStreamEvent>>(
          { _tag: "ToolCallDelta", id: "c9", name: "read", inputDelta: '{"pa' },
          { _tag: "Finish", reason: "tool-calls" }
        )
      )
    )
    assert.isTrue(Exit.isFailure(exit))
    const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
    const failure = error?._tag === "Fail" ? error.error : undefined
    assert.strictEqual(failure?._tag, "ModelError")
    if (failure?._tag === "ModelError") {
      assert.strictEqual(failure.reason, "InvalidResponse")
      assert.include(failure.detail, '"c9"')
    }
  })

  it.live("a streamed call outliving the model limit fails Timeout", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Model.collect(Timeouts.limitModelStream({ model: "20 millis" }, Stream.never)))
      assert.strictEqual(error._tag, "ModelError")
      if (error._tag === "ModelError") assert.strictEqual(error.reason, "Timeout")
    })
  )

  it("property: usage sums count by count; a count absent from both operands stays absent", () => {
    fc.assert(
      fc.property(usage, usage, (a, b) => {
        const sum = Model.addUsage(a, b)
        assert.deepStrictEqual(sum, Model.addUsage(b, a))
        for (const key of ["inputTokens", "outputTokens", "cachedInputTokens", "reasoningTokens"] as const) {
          if (a[key] === undefined && b[key] === undefined) assert.notProperty(sum, key)
          else assert.strictEqual(sum[key], (a[key] ?? 0) + (b[key] ?? 0))
        }
      })
    )
  })
})

describe("measuring and ordering requests", () => {
  const part = fc.string({ maxLength: 30 }).map((body) => Model.text("user", body))

  it("property: under reportedTokens a request extending the reported one measures the report plus the estimate of the rest; otherwise (another request, another measure) the estimate alone", () => {
    fc.assert(
      fc.property(
        fc.array(part, { minLength: 1, maxLength: 6 }),
        fc.array(part, { maxLength: 4 }),
        fc.integer({ min: 0, max: 100_000 }),
        (sent, added, inputTokens) => {
          const reported = { parts: sent, inputTokens }
          const next = [...sent, ...added]
          assert.strictEqual(
            Planning.measureRequestParts("reportedTokens", next, reported),
            inputTokens + Compaction.measureParts("reportedTokens", added)
          )
          const estimate = Compaction.measureParts("estimatedTokens", next)
          assert.strictEqual(Planning.measureRequestParts("estimatedTokens", next, reported), estimate)
          // The same texts as new objects are not the request the provider counted.
          const copies = next.map((p) => ({ ...p }))
          assert.strictEqual(Planning.measureRequestParts("reportedTokens", copies, reported), estimate)
        }
      )
    )
  })

  it("property: a compacted request opens with the task's leading system messages, then the summary, then the rest; the former order (control) does not", () => {
    const system = fc.string({ maxLength: 10 }).map((body) => Model.text("system", body))
    const scenario = fc.record({
      leading: fc.array(system, { minLength: 1, maxLength: 3 }),
      rest: fc.array(part, { maxLength: 3 }),
      summary: fc.array(part, { minLength: 1, maxLength: 2 })
    })
    const opensRight = (
      toParts: (history: History.History) => ReadonlyArray<Model.Part>,
      { leading, rest, summary }: { leading: Array<Model.Part>; rest: Array<Model.Part>; summary: Array<Model.Part> }
    ) => {
      const history = History.summarizeLeadingRounds(History.make([...leading, ...rest]), 0, {
        parts: summary,
        text: "s"
      })
      const parts = toParts(history)
      return (
        leading.every((p, index) => parts[index] === p) &&
        summary.every((p, index) => parts[leading.length + index] === p) &&
        parts.length === leading.length + summary.length + rest.length
      )
    }
    fc.assert(fc.property(scenario, (input) => opensRight(History.toParts, input)))
    const former = (history: History.History) => [...(history.summary?.parts ?? []), ...history.task, ...history.parts]
    assert.isTrue(fc.check(fc.property(scenario, (input) => opensRight(former, input))).failed)
  })
})
