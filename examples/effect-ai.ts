/**
 * Tessera inside Effect AI (`effect/ai`), both ways, on the local harness.
 *
 * No provider package for `effect/ai` loads on effect 4.1.0, and no mock
 * model ships with it, so the model here is a scripted provider written the
 * way a real one is: `LanguageModel.make({ generateText, streamText })`.
 *
 * 1. A `Chat` (Effect AI's own conversation, which runs the tools of its
 *    toolkit) over the provider wrapped with `TesseraLanguageModel`: 30 log
 *    fetches of 6,000 bytes each, a credential in every one. Each result is
 *    offloaded (scrubbed) to the task's private volume as soon as the tool
 *    returns, so the chat's own history keeps only pointers; the prompt is
 *    compacted with a private summary; the summary's cost rides on the
 *    step's finish part. The same chat on the bare provider is run for
 *    comparison.
 * 2. A Tessera turn (`TaskExecution.runTurn`) on the same provider, through
 *    `EffectAiModel.layer`.
 * 3. A task of a host that grants no private writer: the wrapper's layer
 *    fails to build, and the provider is never asked.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/effect-ai.ts
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { DefaultRedactor } from "@tessera/artifacts"
import { Ids } from "@tessera/core"
import { EffectAiModel, TesseraLanguageModel } from "@tessera/effect-ai"
import { JournalForbiddingHost, LocalHarness, NodeDurableFiles } from "@tessera/node"
import { Compaction, type EntryGate, History, Model, TaskExecution, Tool as TesseraTool } from "@tessera/runtime"
import { Effect, Layer, Ref, Schema, Stream } from "effect"
import { Chat, LanguageModel, type Response, Tool, Toolkit } from "effect/ai"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-effect-ai-"))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const taskId = Schema.decodeUnknownSync(Ids.TaskId)
const calls = 30
const logOf = (service: string) =>
  Array.from({ length: 100 }, (_, line) => `${service} ${line}: ok (aws_access_key_id=AKIAIOSFODNN7EXAMPLE)`)
    .join("\n")
    .slice(0, 6_000)

const usage = { inputTokens: { total: 100 }, outputTokens: { total: 10 } }

/** A whole response part as a provider streams it (text as start, one delta, end). */
const streamed = (part: Response.PartEncoded): Array<Response.StreamPartEncoded> =>
  part.type === "text"
    ? [
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: part.text },
        { type: "text-end", id: "t" }
      ]
    : part.type === "tool-call" || part.type === "finish"
      ? [part]
      : []

/** A scripted provider: `calls` log fetches, then an answer; a request opening with a system message gets a summary. */
const scriptedProvider = () => {
  const requests: Array<LanguageModel.ProviderOptions> = []
  let steps = 0
  const respond = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
    requests.push(options)
    if (options.prompt.content[0]?.role === "system") {
      return [
        { type: "text", text: "The logs fetched so far all say ok." },
        { type: "finish", reason: "stop", usage }
      ]
    }
    steps++
    return steps <= calls
      ? [
          { type: "tool-call", id: `log:${steps}`, name: "fetch_log", params: { service: `svc-${steps}` } },
          { type: "finish", reason: "tool-calls", usage }
        ]
      : [
          { type: "text", text: `All ${calls} services are ok.` },
          { type: "finish", reason: "stop", usage }
        ]
  }
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) => Effect.sync(() => respond(options)),
      streamText: (options) => Stream.suspend(() => Stream.fromIterable(respond(options).flatMap(streamed)))
    })
  )
  const largest = () =>
    Math.max(
      ...requests
        .filter((options) => options.prompt.content[0]?.role !== "system")
        .map((options) => JSON.stringify(options.prompt.content).length)
    )
  return { layer, requests, largest }
}

const FetchLog = Tool.make("fetch_log", {
  description: "Fetches a service's log",
  parameters: Schema.Struct({ service: Schema.String }),
  success: Schema.String
})
const Logs = Toolkit.make(FetchLog)
const logsLayer = Logs.toLayer({ fetch_log: ({ service }) => Effect.succeed(logOf(service)) })

/** An Effect AI harness's own loop: a Chat that runs its tools, until the model answers. */
const chatLoop = Effect.gen(function* () {
  const chat = yield* Chat.fromPrompt(`Check the logs of ${calls} services.`)
  let answer = ""
  let summaryMetadata: unknown
  for (let step = 0; step <= calls; step++) {
    const response = yield* chat.generateText({ prompt: [], toolkit: Logs })
    const finish = response.content.find((part) => part.type === "finish")
    if (finish?.metadata.tessera !== undefined) summaryMetadata = finish.metadata.tessera
    answer = response.text
    if (response.toolCalls.length === 0) break
  }
  const history = JSON.stringify((yield* Ref.get(chat.history)).content)
  return { answer, summaryMetadata, historyBytes: history.length, historyHasBodies: history.includes("svc-1 99: ok") }
})

const policy = Compaction.threshold({ measure: "bytes", limit: 12_000, keepRecent: 2_000, pieceLimit: 100_000 })
const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const

// #region effect-ai-wrapper
/** The harness's own Chat loop, on the provider wrapped with Tessera for the bound task. */
const chatWithTessera = (binding: EntryGate.TaskBinding, provider: Layer.Layer<LanguageModel.LanguageModel>) =>
  chatLoop.pipe(
    Effect.provide(
      Layer.merge(TesseraLanguageModel.layer(binding, { offload }).pipe(Layer.provide(provider)), logsLayer)
    )
  )
// #endregion effect-ai-wrapper

// #region effect-ai-model
const fetchLog = TesseraTool.make({
  name: "fetch_log",
  description: "Fetches a service's log",
  input: Schema.Struct({ service: Schema.String }),
  handler: ({ service }) => Effect.succeed(logOf(service))
})

/** A Tessera turn whose model is the Effect AI provider. */
const tesseraTurn = (binding: EntryGate.TaskBinding, provider: Layer.Layer<LanguageModel.LanguageModel>) =>
  TaskExecution.runTurn(binding, History.make([Model.text("user", `Check the logs of ${calls} services.`)]), {
    tools: TesseraTool.registry(fetchLog),
    maxSteps: calls + 1,
    offload
  }).pipe(Effect.provide(EffectAiModel.layer.pipe(Layer.provide(provider))))
// #endregion effect-ai-model

const program = Effect.gen(function* () {
  const harness = yield* LocalHarness.open({ stateDir, namespace: "effect-ai", agent })

  const provider = scriptedProvider()
  const withTessera = yield* harness.withTask(
    taskId("effect-ai-1"),
    (binding) => chatWithTessera(binding, provider.layer).pipe(Effect.provide(DefaultRedactor.layer())),
    { policy }
  )
  console.log(`answer: ${withTessera.answer}`)
  console.log(`summary usage on the step's finish part: ${JSON.stringify(withTessera.summaryMetadata)}`)
  const bare = scriptedProvider()
  const without = yield* chatLoop.pipe(Effect.provide(Layer.merge(bare.layer, logsLayer)))
  console.log(`largest request: ${provider.largest()} bytes with Tessera, ${bare.largest()} bytes without`)
  console.log(
    `the chat's own history: ${withTessera.historyBytes} bytes with Tessera (log bodies in it: ${withTessera.historyHasBodies ? "yes" : "none"}), ${without.historyBytes} bytes without`
  )
  const scratch = path.join(harness.folder, "volumes", harness.volumes.scratch.volume)
  const folder = path.join(scratch, "artifacts", "tool-results")
  const stored = fs.readdirSync(folder).map((file) => fs.readFileSync(path.join(folder, file), "utf8"))
  console.log(
    `tool results offloaded: ${stored.length}; credentials in them: ${stored.some((body) => body.includes("AKIAIOSFODNN7EXAMPLE")) ? "YES" : "none (redacted)"}`
  )

  const reader = scriptedProvider()
  const outcome = yield* harness.withTask(taskId("effect-ai-2"), (binding) => tesseraTurn(binding, reader.layer))
  console.log(`Tessera turn on the Effect AI provider: ${outcome.text} (${outcome.steps} steps)`)

  // A host that gives tasks no private writer: the wrapper cannot be built, so no request is ever sent.
  const sealed = yield* JournalForbiddingHost.open({ stateDir, namespace: "sealed", agent })
  const refusedProvider = scriptedProvider()
  const refused = yield* Effect.flip(
    sealed.withTask(taskId("sealed-1"), (binding) =>
      chatLoop.pipe(
        Effect.provide(
          Layer.merge(
            TesseraLanguageModel.layer(binding, { offload }).pipe(Layer.provide(refusedProvider.layer)),
            logsLayer
          )
        )
      )
    )
  )
  console.log(
    `writerless task refused: ${(refused as { _tag: string })._tag}; model requests sent: ${refusedProvider.requests.length}`
  )
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
