/**
 * A real turn (offload and compaction armed, through TaskExecution) exported
 * with Effect's OTLP tracer and metrics to a loopback OTLP/HTTP receiver:
 * the span tree, the attributes an operator reads, the metrics, and no
 * content anywhere in what was exported.
 */
import { assert, describe, it } from "@effect/vitest"
import { Compaction, EntryGate, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Metric, Option, Schema, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpExporter, OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"
import {
  attributesOf,
  lastMetricsOf,
  type OtlpDataPoint,
  type OtlpSpan,
  type Received,
  receiver,
  spansOf
} from "./support/otlpReceiver.ts"
import { isSummaryRequest, turnLayer } from "./support/turns.ts"
import { runInWorld, task, type World } from "./support/world.ts"

/** Looks like a credential, and is in the task, the tool input, every tool result and the summary. */
const marker = "tsk_live_CANARY7Q2XW9"

const produceInput = Schema.Struct({ size: Schema.Int, fill: Schema.String })
const produceOutput = ({ fill, size }: typeof produceInput.Type) =>
  fill.repeat(Math.ceil(size / fill.length)).slice(0, size)

const produce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size, made of one repeated text",
  input: produceInput,
  handler: (input) => Effect.succeed(produceOutput(input))
})

/** Broken wiring: a tool instrumented the naive way, putting its output on its span. */
const leakyProduce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size, made of one repeated text",
  input: produceInput,
  handler: (input) =>
    Effect.as(Effect.annotateCurrentSpan("tool.output", produceOutput(input).slice(0, 200)), produceOutput(input))
})

const fill = `${marker} `
const call = (id: string, size: number) => Model.toolCall(id, "produce", { size, fill })

/** One result large enough to offload, then two that stay inline and push the history over the limit. */
const script = () => {
  let steps = 0
  return (request: Model.ModelRequest) => {
    if (isSummaryRequest(request)) return Model.response({ text: `The three results repeat ${marker}.` })
    steps++
    return steps === 1
      ? Model.response({ toolCalls: [call("c1", 20_000)] })
      : steps === 2
        ? Model.response({ toolCalls: [call("c2", 5_000)] })
        : steps === 3
          ? Model.response({ toolCalls: [call("c3", 5_000)] })
          : Model.response({ text: `Every result repeats ${marker}.` })
  }
}

const resource = { serviceName: "tessera-test" }

/** Broken wiring: an OTLP tracer that starts every span as a root, losing the tree. */
const flatTracer = (url: string) =>
  Layer.effect(
    Tracer.Tracer,
    Effect.map(OtlpTracer.make({ url, resource }), (otlp) =>
      Tracer.make({ span: (options) => otlp.span({ ...options, parent: Option.none(), root: true }) })
    )
  ).pipe(Layer.provideMerge(OtlpExporter.layerFlusher))

const otlpLayer = (url: string, tracing: "tree" | "flat") =>
  Layer.mergeAll(
    tracing === "tree" ? OtlpTracer.layer({ url: `${url}/v1/traces`, resource }) : flatTracer(`${url}/v1/traces`),
    OtlpMetrics.layer({ url: `${url}/v1/metrics`, resource })
  ).pipe(
    Layer.provide(OtlpSerialization.layerJson),
    Layer.provide(FetchHttpClient.layer),
    // A registry of this run's own, so the exported counts are this turn's.
    Layer.provideMerge(Layer.succeed(Metric.MetricRegistry, new Map()))
  )

/** Runs the turn with the OTLP layers pointed at a loopback receiver; returns what the receiver got. */
const exportTurn = (world: World, tool: typeof produce, tracing: "tree" | "flat" = "tree") =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([world.privateRef]), output: Option.none() })
    const binding = yield* EntryGate.bind(context, {
      policy: Compaction.threshold({ measure: "bytes", limit: 9_000, keepRecent: 0, pieceLimit: 200_000 })
    })
    const start = History.make([Model.text("user", `Produce three results of ${marker} and report.`)])
    const received = yield* Effect.scoped(
      Effect.gen(function* () {
        const otlp = yield* receiver
        const recorder = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, {
            tools: Tool.registry(tool),
            maxSteps: 8,
            offload: { threshold: 8_192, readTool: "read_artifact", destination: "Private" }
          })
          return yield* Effect.service(ScriptedModel.ScriptedModelRecorder)
        }).pipe(
          // The OTLP layers' scope ends here: their exporters flush everything before the receiver closes.
          Effect.provide(Layer.merge(turnLayer(world, task, script()), otlpLayer(otlp.url, tracing)))
        )
        const sent = yield* recorder.requests
        return { received: [...otlp.received], sent }
      })
    )
    return received
  })

/** Where `needle` appears in any string of any export (span names, attributes, events, resources, metrics). */
const leaksOf = (received: ReadonlyArray<Received>, needle: string): ReadonlyArray<string> => {
  const found: Array<string> = []
  const walk = (value: unknown, at: string): void => {
    if (typeof value === "string") {
      if (value.includes(needle)) found.push(at)
    } else if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) walk(item, `${at}[${index}]`)
    } else if (typeof value === "object" && value !== null) {
      // An attribute is named by its key, so a report says which attribute leaked.
      const key = "key" in value && typeof value.key === "string" ? `{${value.key}}` : ""
      for (const [name, item] of Object.entries(value)) walk(item, `${at}${key}.${name}`)
    }
  }
  for (const entry of received) walk(JSON.parse(entry.body), entry.path)
  return found
}

const byName = (spans: ReadonlyArray<OtlpSpan>, name: string) => spans.filter((span) => span.name === name)
const parentOf = (spans: ReadonlyArray<OtlpSpan>, span: OtlpSpan | undefined) =>
  spans.find((candidate) => candidate.spanId === span?.parentSpanId)?.name

/**
 * How the exported spans differ from the tree a turn with offload and compaction makes: entry > gate
 * and turn; turn > model steps and tool calls; tool call > offload; the compacting step > compaction
 * > summary > summary requests, and compaction > publish > staging; all in one trace.
 */
const treeProblems = (spans: ReadonlyArray<OtlpSpan>): ReadonlyArray<string> => {
  const expected: ReadonlyArray<readonly [child: string, parent: string]> = [
    ["EntryGate.verify", "TaskExecution.runTurn"],
    ["Executor.runTurn", "TaskExecution.runTurn"],
    ["Executor.modelStep", "Executor.runTurn"],
    ["Executor.toolCall", "Executor.runTurn"],
    ["ToolResults.offloadResult", "Executor.toolCall"],
    ["Compaction.compact", "Executor.modelStep"],
    ["Compaction.summarize", "Compaction.compact"],
    ["Compaction.summaryRequest", "Compaction.summarize"],
    ["Compaction.publish", "Compaction.compact"],
    ["PrivateSummaries.stageOnce", "Compaction.publish"]
  ]
  const problems = expected.flatMap(([child, parent]) => {
    const found = byName(spans, child)
    if (found.length === 0) return [`no ${child} span`]
    return found.flatMap((span) => {
      const actual = parentOf(spans, span)
      return actual === parent ? [] : [`${child} is under ${actual ?? "nothing"}, not ${parent}`]
    })
  })
  const traces = new Set(spans.map((span) => span.traceId))
  return traces.size === 1 ? problems : [...problems, `${traces.size} traces, not one`]
}

const countOf = (points: ReadonlyArray<OtlpDataPoint>, where: Record<string, unknown>) =>
  points
    .filter((point) => {
      const attributes = attributesOf(point)
      return Object.entries(where).every(([key, value]) => attributes[key] === value)
    })
    .reduce((total, point) => total + Number(point.count ?? point.asInt ?? point.asDouble ?? 0), 0)

// OTLP's span kinds: 1 internal, 3 client.
const clientKind = 3

describe("OTLP export of a turn", () => {
  it("otlp_span_tree: a turn with offload and compaction reaches a loopback OTLP/HTTP receiver as one tree with the operator's attributes and the request, tool and summary metrics, and no content", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { received, sent } = yield* exportTurn(world, produce)
        assert.isTrue(
          received.some((entry) => entry.path === "/v1/traces" && entry.contentType.startsWith("application/json"))
        )
        const spans = spansOf(received)

        assert.deepStrictEqual(treeProblems(spans), [])
        const [turn] = byName(spans, "Executor.runTurn")
        const steps = byName(spans, "Executor.modelStep")
        assert.deepStrictEqual(steps.map((span) => attributesOf(span)["tessera.step"]).sort(), [1, 2, 3, 4])
        const toolCalls = byName(spans, "Executor.toolCall")
        assert.strictEqual(toolCalls.length, 3)
        const offloads = byName(spans, "ToolResults.offloadResult")
        assert.strictEqual(offloads.length, 3)
        const [compaction] = byName(spans, "Compaction.compact")
        const compactingStep = spans.find((span) => span.spanId === compaction?.parentSpanId)
        assert.strictEqual(attributesOf(compactingStep as OtlpSpan)["tessera.step"], 4)
        const summaryRequests = byName(spans, "Compaction.summaryRequest")

        // The attributes an operator reads.
        assert.deepInclude(attributesOf(turn as OtlpSpan), {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.conversation.id": task,
          "tessera.task": task,
          "tessera.turn": 1,
          "tessera.steps": 4
        })
        for (const step of steps) {
          const attributes = attributesOf(step)
          assert.strictEqual(step.kind, clientKind)
          assert.deepInclude(attributes, { "gen_ai.operation.name": "chat", "gen_ai.conversation.id": task })
          assert.isAbove(Number(attributes["tessera.request.size"]), 0)
          assert.isAbove(Number(attributes["tessera.request.parts"]), 0)
          assert.isNumber(attributes["tessera.response.size"])
        }
        for (const [index, toolCall] of toolCalls.entries()) {
          const attributes = attributesOf(toolCall)
          assert.deepInclude(attributes, {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "produce",
            "gen_ai.tool.call.id": `c${index + 1}`,
            "gen_ai.tool.type": "function",
            "tessera.step": index + 1
          })
          assert.isAbove(Number(attributes["tessera.tool.input.size"]), 0)
          assert.isAbove(Number(attributes["tessera.tool.result.size"]), 0)
        }
        assert.deepStrictEqual(
          offloads.map((span) => attributesOf(span)["tessera.offload.outcome"]),
          ["Written", "Inline", "Inline"]
        )
        assert.deepInclude(attributesOf(offloads[0] as OtlpSpan), {
          "tessera.offload.size": 20_000,
          "tessera.offload.threshold": 8_192,
          "gen_ai.tool.call.id": "c1"
        })
        assert.deepInclude(attributesOf(compaction as OtlpSpan), { "tessera.task": task, "tessera.turn": 1 })
        assert.isAbove(Number(attributesOf(compaction as OtlpSpan)["tessera.compaction.rounds"]), 0)
        for (const request of summaryRequests) {
          assert.strictEqual(request.kind, clientKind)
          assert.isAbove(Number(attributesOf(request)["tessera.summary.piece.size"]), 0)
        }
        assert.deepInclude(attributesOf(byName(spans, "PrivateSummaries.stageOnce")[0] as OtlpSpan), {
          "tessera.staging.outcome": "Published"
        })
        assert.deepInclude(attributesOf(byName(spans, "EntryGate.verify")[0] as OtlpSpan), {
          "tessera.task": task,
          "tessera.entry": "Turn",
          "tessera.policy": "Threshold"
        })

        // The metrics: one duration per request and per tool call, and the summary requests counted.
        const metrics = lastMetricsOf(received)
        const metric = (name: string) => metrics.find((candidate) => candidate.name === name)
        const durations = metric("gen_ai.client.operation.duration")?.histogram?.dataPoints ?? []
        const summaries = sent.filter(isSummaryRequest).length
        assert.isAbove(summaries, 0)
        assert.strictEqual(countOf(durations, { "tessera.request.kind": "step" }), 4)
        assert.strictEqual(countOf(durations, { "tessera.request.kind": "summary" }), summaries)
        assert.strictEqual(summaryRequests.length, summaries)
        const toolDurations = metric("tessera.tool.duration")?.histogram?.dataPoints ?? []
        assert.strictEqual(countOf(toolDurations, { "gen_ai.tool.name": "produce" }), 3)
        assert.strictEqual(countOf(metric("tessera.summary.requests")?.sum?.dataPoints ?? [], {}), summaries)

        // The marker is in every request the model saw, and in nothing exported.
        assert.include(JSON.stringify(sent), marker)
        assert.deepStrictEqual(leaksOf(received, marker), [])
      })
    ))

  it("otlp_span_tree negative control: the same turn through a tracer that starts every span as a root fails the tree check", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { received } = yield* exportTurn(world, produce, "flat")
        const problems = treeProblems(spansOf(received))
        assert.include(problems, "Executor.modelStep is under nothing, not Executor.runTurn")
        assert.include(problems, "ToolResults.offloadResult is under nothing, not Executor.toolCall")
      })
    ))

  it("otlp_no_content negative control: a tool that puts its output on its span is caught by the same check", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { received } = yield* exportTurn(world, leakyProduce)
        const leaks = leaksOf(received, marker)
        assert.isAbove(leaks.length, 0)
        assert.isTrue(
          leaks.every((at) => at.includes("{tool.output}")),
          `only the planted attribute leaks: ${leaks.join(", ")}`
        )
      })
    ))
})
