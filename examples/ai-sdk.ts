/**
 * Tessera inside the Vercel AI SDK 7: `generateText` over a model wrapped
 * with Tessera's middleware, made from a bound task of the local harness.
 *
 * The model is the AI SDK's own `MockLanguageModelV4`, scripted to call a
 * tool 30 times, each result 6,000 bytes with a credential in it. The
 * middleware offloads every result (scrubbed) to the task's private
 * volume, compacts the prompt when it crosses the policy's limit (summary
 * requests go to the same model and are reported in the step's usage), and
 * journals every step. The same conversation without the middleware is run
 * for comparison, and a task without a private writer is refused before the
 * first request.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/ai-sdk.ts
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { LanguageModelV4GenerateResult, LanguageModelV4StreamPart } from "@ai-sdk/provider"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { DefaultRedactor } from "@tessera/artifacts"
import { Ids } from "@tessera/core"
import { JournalForbiddingHost, LocalHarness, NodeDurableFiles } from "@tessera/node"
import { Compaction, type EntryGate } from "@tessera/runtime"
import { generateText, jsonSchema, type ModelMessage, stepCountIs, streamText, tool, wrapLanguageModel } from "ai"
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test"
import { Effect, Layer, Schema } from "effect"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-ai-sdk-"))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("ai-sdk-1")
const calls = 30

const fetchLog = tool({
  description: "Fetches a service's log",
  inputSchema: jsonSchema<{ service: string }>({
    type: "object",
    properties: { service: { type: "string" } },
    required: ["service"]
  }),
  execute: async ({ service }) =>
    Array.from({ length: 100 }, (_, line) => `${service} ${line}: ok (aws_access_key_id=AKIAIOSFODNN7EXAMPLE)`)
      .join("\n")
      .slice(0, 6_000)
})

const usage = {
  inputTokens: { total: 100, noCache: 100, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined }
}

/** A whole result as a provider streams it: text word by word, calls whole, then finish. */
const streamOf = (result: LanguageModelV4GenerateResult): ReadableStream<LanguageModelV4StreamPart> =>
  convertArrayToReadableStream<LanguageModelV4StreamPart>([
    ...result.content.flatMap(
      (part): Array<LanguageModelV4StreamPart> =>
        part.type === "text"
          ? [
              { type: "text-start", id: "t" },
              ...part.text
                .split(/(?<= )/)
                .map((delta): LanguageModelV4StreamPart => ({ type: "text-delta", id: "t", delta })),
              { type: "text-end", id: "t" }
            ]
          : part.type === "tool-call"
            ? [part]
            : []
    ),
    { type: "finish", usage: result.usage, finishReason: result.finishReason }
  ])

/**
 * The AI SDK's mock model: `calls` tool calls, then an answer; a request opening with a system message gets a
 * summary. Steps may stream (`streamText`); summary requests are plain generate calls.
 */
const scriptedModel = () => {
  let steps = 0
  const step = (): LanguageModelV4GenerateResult => {
    steps++
    return steps <= calls
      ? {
          content: [
            { type: "tool-call", toolCallId: `log-${steps}`, toolName: "fetchLog", input: `{"service":"svc-${steps}"}` }
          ],
          finishReason: { unified: "tool-calls", raw: undefined },
          usage,
          warnings: []
        }
      : {
          content: [{ type: "text", text: `All ${calls} services are ok.` }],
          finishReason: { unified: "stop", raw: undefined },
          usage,
          warnings: []
        }
  }
  return new MockLanguageModelV4({
    doStream: async () => ({ stream: streamOf(step()) }),
    doGenerate: async (options) => {
      if (options.prompt[0]?.role === "system") {
        return {
          content: [{ type: "text", text: "The logs fetched so far all say ok." }],
          finishReason: { unified: "stop", raw: undefined },
          usage,
          warnings: []
        }
      }
      return step()
    }
  })
}

const messages: Array<ModelMessage> = [{ role: "user", content: `Check the logs of ${calls} services.` }]
const largest = (model: MockLanguageModelV4) =>
  Math.max(
    ...model.doGenerateCalls
      .filter((call) => call.prompt[0]?.role !== "system")
      .map((call) => JSON.stringify(call.prompt).length)
  )

// #region ai-sdk-middleware
const runWithTessera = (binding: EntryGate.TaskBinding, model: MockLanguageModelV4) =>
  Effect.gen(function* () {
    const tessera = yield* TesseraMiddleware.make(binding, {
      offload: { threshold: 2_000, readTool: "read_artifact", destination: "Private" }
    })
    const result = yield* Effect.promise(() =>
      generateText({
        model: wrapLanguageModel({ model, middleware: tessera.middleware }),
        tools: { ...tessera.tools, fetchLog },
        messages,
        stopWhen: stepCountIs(calls + 1),
        prepareStep: tessera.prepareStep
      })
    )
    return { tessera, result }
  })
// #endregion ai-sdk-middleware

// #region ai-sdk-stream
const streamWithTessera = (binding: EntryGate.TaskBinding, model: MockLanguageModelV4) =>
  Effect.gen(function* () {
    const tessera = yield* TesseraMiddleware.make(binding, {
      offload: { threshold: 2_000, readTool: "read_artifact", destination: "Private" }
    })
    const result = streamText({
      model: wrapLanguageModel({ model, middleware: tessera.middleware }),
      tools: { ...tessera.tools, fetchLog },
      messages,
      stopWhen: stepCountIs(calls + 1),
      prepareStep: tessera.prepareStep
    })
    const deltas = yield* Effect.promise(async () => {
      const received: Array<string> = []
      for await (const delta of result.textStream) received.push(delta)
      return received
    })
    const steps = yield* Effect.promise(async () => await result.steps)
    return { deltas, steps, tessera }
  })
// #endregion ai-sdk-stream

const program = Effect.gen(function* () {
  const harness = yield* LocalHarness.open({ stateDir, namespace: "ai-sdk", agent })
  const withTessera = scriptedModel()
  const result = yield* harness.withTask(
    task,
    (binding) =>
      Effect.gen(function* () {
        const { result, tessera } = yield* runWithTessera(binding, withTessera)
        console.log(`answer: ${result.text}`)
        console.log(`tool results offloaded: ${tessera.offloaded.size}`)
        console.log(`first pointer: ${tessera.offloaded.get("log-1")}`)
        const summary = tessera.summaryUsage()
        console.log(
          `summary requests: ${summary.requests} (${summary.inputTokens} input tokens), counted in totalUsage: ${result.totalUsage.inputTokens} input tokens over ${result.steps.length} steps`
        )
        return result
      }).pipe(Effect.provide(DefaultRedactor.layer())),
    { policy: Compaction.threshold({ measure: "bytes", limit: 12_000, keepRecent: 2_000, pieceLimit: 100_000 }) }
  )
  const without = scriptedModel()
  yield* Effect.promise(() =>
    generateText({ model: without, tools: { fetchLog }, messages, stopWhen: stepCountIs(calls + 1) })
  )
  console.log(
    `largest request: ${largest(withTessera)} bytes with Tessera, ${largest(without)} bytes without (${result.steps.length} steps each)`
  )
  const scratch = path.join(harness.folder, "volumes", harness.volumes.scratch.volume)
  const artifacts = fs.readdirSync(path.join(scratch, "artifacts", "tool-results"))
  const stored = artifacts.map((file) => fs.readFileSync(path.join(scratch, "artifacts", "tool-results", file), "utf8"))
  console.log(
    `artifacts on the private volume: ${artifacts.length}; credentials in them: ${stored.some((body) => body.includes("AKIAIOSFODNN7EXAMPLE")) ? "YES" : "none (redacted)"}`
  )
  console.log(`summaries staged: ${fs.readdirSync(path.join(scratch, "summaries", `${task}-t1`)).join(", ")}`)

  const streamed = scriptedModel()
  const stream = yield* harness.withTask(
    Schema.decodeUnknownSync(Ids.TaskId)("ai-sdk-2"),
    (binding) => streamWithTessera(binding, streamed).pipe(Effect.provide(DefaultRedactor.layer())),
    { policy: Compaction.threshold({ measure: "bytes", limit: 12_000, keepRecent: 2_000, pieceLimit: 100_000 }) }
  )
  const reported = stream.steps.filter((step) => step.providerMetadata?.tessera !== undefined).length
  console.log(
    `streamText: ${stream.deltas.join("")} (${stream.deltas.length} deltas as streamed); tool results offloaded: ${stream.tessera.offloaded.size}; steps reporting summary usage: ${reported}`
  )

  // A host that gives tasks no private writer: the middleware cannot be made, so no request is ever sent.
  const sealed = yield* JournalForbiddingHost.open({ stateDir, namespace: "sealed", agent })
  const refusedModel = scriptedModel()
  const refused = yield* Effect.flip(
    sealed.withTask(Schema.decodeUnknownSync(Ids.TaskId)("sealed-1"), (binding) =>
      TesseraMiddleware.make(binding, {
        offload: { threshold: 2_000, readTool: "read_artifact", destination: "Private" }
      })
    )
  )
  console.log(`writerless task refused: ${refused._tag}; model requests sent: ${refusedModel.doGenerateCalls.length}`)
})

Effect.runPromise(
  Effect.scoped(program).pipe(Effect.provide(Layer.merge(NodeServices.layer, NodeDurableFiles.layer)))
).then(
  () => {
    if (process.env.TESSERA_EXAMPLE_DIR === undefined) fs.rmSync(stateDir, { recursive: true, force: true })
  },
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
