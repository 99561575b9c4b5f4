/**
 * Tracing and metrics of a turn exported over OTLP/HTTP, as shown in
 * docs/tracing.md: a turn with offload and compaction on the scripted model,
 * with Effect's `OtlpTracer` and `OtlpMetrics` pointed at an endpoint.
 *
 * Run: node examples/tracing.ts
 *
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` set (for example
 * `http://127.0.0.1:4318`, a local OpenTelemetry Collector or Jaeger), the
 * spans and metrics go there. Without it, the example starts a receiver on
 * 127.0.0.1 itself and prints the span tree and the metrics it received.
 */
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeTessera } from "@tessera/node"
import {
  Compaction,
  EntryGate,
  FilesystemTaskRuntime,
  History,
  Journal,
  Model,
  TaskExecution,
  TaskHost,
  Tool
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpMetrics, OtlpSerialization, OtlpTracer } from "effect/observability"

const { TESSERA_EXAMPLE_DIR: callerFolder, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } = process.env
const folder = fs.mkdtempSync(path.join(callerFolder ?? os.tmpdir(), "tessera-tracing-"))

// #region otlp-layer
// Traces to <endpoint>/v1/traces and metrics to <endpoint>/v1/metrics, as OTLP/HTTP JSON
// (`OtlpSerialization.layerProtobuf` sends protobuf instead). Both exporters flush when the layer's scope ends.
const otlp = (baseUrl: string) =>
  Layer.mergeAll(
    OtlpTracer.layer({ url: `${baseUrl}/v1/traces`, resource: { serviceName: "tessera-example" } }),
    OtlpMetrics.layer({ url: `${baseUrl}/v1/metrics`, resource: { serviceName: "tessera-example" } })
  ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))
// #endregion otlp-layer

const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("traced-task")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name and length",
  input: Schema.Struct({ name: Schema.String, lines: Schema.Int }),
  handler: ({ lines, name }) => Effect.succeed(`Report ${name}\n${"measurement 42.0 within tolerance\n".repeat(lines)}`)
})

// A large report (offloaded), two medium ones that push the history over the compaction limit, an answer.
let steps = 0
const script = (request: Model.ModelRequest) => {
  if (Compaction.isSummaryRequest(request)) return Model.response({ text: "Three reports, all within tolerance." })
  steps++
  const report = (name: string, lines: number) =>
    Model.response({ toolCalls: [Model.toolCall(`call-${steps}`, "fetch_report", { name, lines })] })
  return steps === 1
    ? report("north", 600)
    : steps === 2
      ? report("east", 150)
      : steps === 3
        ? report("west", 150)
        : Model.response({ text: "All three reports are within tolerance." })
}

const turn = Effect.gen(function* () {
  const host = yield* TaskHost.open({ root: folder })
  const privateVolume = yield* host.store.create({
    id: volumeId("researcher-private"),
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const journalVolume = yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
  const scope = yield* host.issueScope(task, [{ volume: privateVolume, access: ["read", "write"] }], agent)
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(privateVolume), scope })
  const context = yield* runtime.bindTask({ scope, output: Option.none() })
  const binding = yield* EntryGate.bind(context, {
    policy: Compaction.threshold({ measure: "bytes", limit: 9_000, keepRecent: 0 })
  })
  const journal = Journal.layer({ folder: yield* host.store.folderOf(journalVolume), task })
  return yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "Check the three reports.")]), {
    tools: Tool.registry(fetchReport),
    maxSteps: 8,
    offload: { threshold: 8_192, readTool: "read_artifact", destination: "Private" }
  }).pipe(Effect.provide(Layer.merge(journal, ScriptedModel.layer(script))))
})

const platform = Layer.merge(NodeTessera.layer, HostAuthority.permissive)

// #region run-traced
// The OTLP layer wraps the whole program: every span of the turn reaches the endpoint, and the
// exporters flush when the program ends.
const traced = (baseUrl: string) => turn.pipe(Effect.provide(platform), Effect.provide(otlp(baseUrl)))
// #endregion run-traced

interface Export {
  readonly path: string
  readonly body: string
}

/** A loopback OTLP/HTTP receiver that keeps what it is sent, for when no endpoint is configured. */
const startReceiver = () =>
  new Promise<{ readonly url: string; readonly exports: Array<Export>; readonly close: () => void }>((resolve) => {
    const exports: Array<Export> = []
    const server = http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        exports.push({ path: request.url ?? "", body: Buffer.concat(chunks).toString("utf8") })
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({ url: `http://127.0.0.1:${port}`, exports, close: () => server.close() })
    })
  })

interface Span {
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

/** The received spans as an indented tree, each with the attributes an operator reads first. */
const printTree = (exports: ReadonlyArray<Export>) => {
  const spans = exports
    .filter((entry) => entry.path === "/v1/traces")
    .flatMap((entry) =>
      (
        JSON.parse(entry.body) as {
          resourceSpans: ReadonlyArray<{ scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<Span> }> }>
        }
      ).resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))
    )
  const shown = ["tessera.step", "gen_ai.operation.name", "gen_ai.tool.name", "tessera.offload.outcome"]
  const print = (parent: string | undefined, depth: number) => {
    for (const span of spans.filter((candidate) => candidate.parentSpanId === parent)) {
      const attributes = span.attributes
        .filter((attribute) => shown.includes(attribute.key))
        .map((attribute) => `${attribute.key}=${Object.values(attribute.value)[0]}`)
      console.log(`${"  ".repeat(depth)}${span.name} ${attributes.join(" ")}`.trimEnd())
      print(span.spanId, depth + 1)
    }
  }
  const ids = new Set(spans.map((span) => span.spanId))
  for (const root of spans.filter((span) => span.parentSpanId === undefined || !ids.has(span.parentSpanId))) {
    console.log(root.name)
    print(root.spanId, 1)
  }
  const metrics = exports
    .filter((entry) => entry.path === "/v1/metrics")
    .flatMap((entry) =>
      (
        JSON.parse(entry.body) as {
          resourceMetrics: ReadonlyArray<{ scopeMetrics: ReadonlyArray<{ metrics: ReadonlyArray<{ name: string }> }> }>
        }
      ).resourceMetrics.flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics))
    )
  console.log(`metrics received: ${[...new Set(metrics.map((metric) => metric.name))].sort().join(", ")}`)
}

const main = async () => {
  const local = endpoint === undefined ? await startReceiver() : undefined
  const baseUrl = endpoint ?? local?.url ?? ""
  try {
    const outcome = await Effect.runPromise(traced(baseUrl))
    console.log(`answer after ${outcome.steps} model steps: ${outcome.text}`)
    console.log(`exported to ${baseUrl}`)
    if (local !== undefined) printTree(local.exports)
  } finally {
    local?.close()
    if (callerFolder === undefined) fs.rmSync(folder, { recursive: true, force: true })
  }
}

await main()
