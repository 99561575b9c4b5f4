import { assert, describe, it } from "@effect/vitest"
import * as Model from "@tessera/runtime/Model"
import * as Observability from "@tessera/runtime/Observability"
import { Effect, Metric, Option, Tracer } from "effect"
import * as fc from "fast-check"

/** Runs `body` in a span of its own tracer and a fresh metric registry; returns the span and the metrics. */
const observe = <A, E>(body: Effect.Effect<A, E>) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span(options) {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })
  return Effect.gen(function* () {
    const exit = yield* Effect.exit(body.pipe(Effect.withSpan("under-test")))
    const metrics = yield* Metric.snapshot
    return { exit, span: spans[0] as Tracer.Span, metrics }
  }).pipe(Effect.withTracer(tracer), Effect.provideService(Metric.MetricRegistry, new Map()))
}

const histogramCount = (
  metrics: ReadonlyArray<Metric.Metric.Snapshot>,
  id: string,
  where: Record<string, string>
): { readonly count: number; readonly sum: number } =>
  metrics
    .filter((metric) => metric.id === id && metric.type === "Histogram")
    .filter((metric) => Object.entries(where).every(([key, value]) => metric.attributes?.[key] === value))
    .reduce(
      (total, metric) => {
        const state = metric.state as Metric.HistogramState
        return { count: total.count + state.count, sum: total.sum + state.sum }
      },
      { count: 0, sum: 0 }
    )

const tokens = fc.option(fc.integer({ min: 0, max: 2_000_000 }), { nil: undefined })
const usage = fc.record({
  inputTokens: tokens,
  outputTokens: tokens,
  finishReasons: fc.option(fc.array(fc.constantFrom("stop", "tool_calls", "length"), { maxLength: 2 }), {
    nil: undefined
  })
})

/** What a span and the token histogram must show for `given`: counts only when reported. */
const usageProblems = (
  given: Observability.Usage,
  span: Tracer.Span,
  metrics: ReadonlyArray<Metric.Metric.Snapshot>
): ReadonlyArray<string> => {
  const problems: Array<string> = []
  for (const [attribute, type, reported] of [
    ["gen_ai.usage.input_tokens", "input", given.inputTokens],
    ["gen_ai.usage.output_tokens", "output", given.outputTokens]
  ] as const) {
    if (span.attributes.get(attribute) !== reported) {
      problems.push(`${attribute} is ${String(span.attributes.get(attribute))}, reported ${String(reported)}`)
    }
    const recorded = histogramCount(metrics, "gen_ai.client.token.usage", { "gen_ai.token.type": type })
    const expected = reported === undefined ? { count: 0, sum: 0 } : { count: 1, sum: reported }
    if (recorded.count !== expected.count || recorded.sum !== expected.sum) {
      problems.push(`${type} tokens recorded ${recorded.count}x/${recorded.sum}, reported ${String(reported)}`)
    }
  }
  const reasons = span.attributes.get("gen_ai.response.finish_reasons")
  if (JSON.stringify(reasons) !== JSON.stringify(given.finishReasons)) {
    problems.push(`finish reasons ${JSON.stringify(reasons)}, reported ${JSON.stringify(given.finishReasons)}`)
  }
  return problems
}

describe("Observability", () => {
  it("recordUsage: the span and the token histogram carry exactly the counts and finish reasons the model reported", async () => {
    await fc.assert(
      fc.asyncProperty(usage, async (given) => {
        const { metrics, span } = await Effect.runPromise(observe(Observability.recordUsage("step", given)))
        assert.deepStrictEqual(usageProblems(given, span, metrics), [])
      })
    )
  })

  it("recordUsage negative control: a hook that records unreported counts as zero fails the same check", async () => {
    const zeroFilling = (given: Observability.Usage) =>
      Observability.recordUsage("step", {
        ...given,
        inputTokens: given.inputTokens ?? 0,
        outputTokens: given.outputTokens ?? 0
      })
    const given: Observability.Usage = { outputTokens: 12 }
    const { metrics, span } = await Effect.runPromise(observe(zeroFilling(given)))
    assert.deepStrictEqual(usageProblems(given, span, metrics), [
      "gen_ai.usage.input_tokens is 0, reported undefined",
      "input tokens recorded 1x/0, reported undefined"
    ])
  })

  it("timeModelRequest: a summary request is counted and timed; a failed one carries the error's tag, never its message", async () => {
    const secret = "sk-ant-LEAKED-in-provider-message"
    const failing = Effect.fail(new Model.ModelError({ reason: "ProviderFailure", detail: `echoed ${secret}` }))
    const { exit, metrics } = await Effect.runPromise(
      observe(
        Effect.andThen(
          Observability.timeModelRequest("summary")(Effect.succeed(Model.response({ text: "ok" }))),
          Observability.timeModelRequest("summary")(failing)
        )
      )
    )
    assert.isTrue(exit._tag === "Failure")
    const counter = metrics.find((metric) => metric.id === "tessera.summary.requests")
    assert.strictEqual(counter?.type === "Counter" ? counter.state.count : undefined, 2)
    assert.strictEqual(
      histogramCount(metrics, "gen_ai.client.operation.duration", { "tessera.request.kind": "summary" }).count,
      2
    )
    assert.strictEqual(
      histogramCount(metrics, "gen_ai.client.operation.duration", { "error.type": "ModelError" }).count,
      1
    )
    assert.notInclude(JSON.stringify(metrics.map((metric) => metric.attributes)), secret)
  })

  it("timeToolCall: each call is timed by tool name; a failed outcome carries its failure as error.type", async () => {
    const { metrics } = await Effect.runPromise(
      observe(
        Effect.andThen(
          Observability.timeToolCall("search")(Effect.succeed({ content: "found", failure: Option.none() })),
          Observability.timeToolCall("search")(Effect.succeed({ content: "late", failure: Option.some("TimedOut") }))
        )
      )
    )
    assert.strictEqual(histogramCount(metrics, "tessera.tool.duration", { "gen_ai.tool.name": "search" }).count, 2)
    assert.strictEqual(histogramCount(metrics, "tessera.tool.duration", { "error.type": "TimedOut" }).count, 1)
  })
})
