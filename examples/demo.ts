/**
 * The Tessera demo: a realistic multi-step task on the embedded scripted model
 * against a fresh local harness folder.
 *
 * 1. A research turn whose tool results are large: they are offloaded to the
 *    agent's private volume (the model sees one-line pointers), and the
 *    history crosses the compaction threshold, so it is summarized into a
 *    private summary file. The same turn runs once more with offload and
 *    compaction off, for comparison.
 * 2. The four-request turn: two large tool results, no output volume, exactly
 *    four model requests, the last one starting with the summary file.
 * 3. Refusals: a private volume owned by another agent is refused when a
 *    runtime opens, and a runtime without a private volume that arms
 *    compaction is refused at the entry gate before any model request.
 *
 * Run: npm run demo   (or: node examples/demo.ts)
 * State folder: $TESSERA_DEMO_DIR, else $TESSERA_EXAMPLE_DIR, else a new temporary folder.
 *
 * With a real model (any OpenAI-compatible server: vLLM, llama.cpp, Ollama,
 * OpenAI itself; or Anthropic), the research task of section 1 runs against
 * it through `@tessera/ai-sdk`'s `AiSdkModel`, its text streamed as it comes;
 * section 2 needs the scripted model and is skipped:
 *
 *   npm run demo -- --provider openai-compatible --base-url http://127.0.0.1:8080/v1 --model NAME
 *   npm run demo -- --provider anthropic --model claude-sonnet-4-5   (key: $ANTHROPIC_API_KEY)
 *
 * The key is read from --api-key, else $TESSERA_API_KEY, else $OPENAI_API_KEY
 * or $ANTHROPIC_API_KEY (a local server usually needs none).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parseArgs } from "node:util"
import { createAnthropic } from "@ai-sdk/anthropic"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { AiSdkModel } from "@tessera/ai-sdk"
import { DefaultRedactor } from "@tessera/artifacts"
import { Ids, Volume } from "@tessera/core"
import { Inspector, LocalHarness, NodeTessera } from "@tessera/node"
import {
  Compaction,
  EntryGate,
  type Executor,
  FilesystemTaskRuntime,
  History,
  Journal,
  Model,
  TaskExecution,
  Tool,
  VolumeStore
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Path, Schema, Stream } from "effect"

// ---------------------------------------------------------------------------
// Which model: the scripted one (default) or a real provider.

const { values: args } = parseArgs({
  options: {
    provider: { type: "string" },
    "base-url": { type: "string" },
    model: { type: "string" },
    "api-key": { type: "string" }
  }
})

/** The real provider's model layer, or none (the scripted model) when no --provider is given. */
const providerLayer = (): Option.Option<{ readonly name: string; readonly layer: Layer.Layer<Model.Model> }> => {
  if (args.provider === undefined) return Option.none()
  const modelId = args.model
  if (modelId === undefined) throw new Error("--provider needs --model NAME")
  const apiKey = args["api-key"] ?? process.env.TESSERA_API_KEY
  switch (args.provider) {
    case "openai-compatible": {
      const baseURL = args["base-url"]
      if (baseURL === undefined) throw new Error("--provider openai-compatible needs --base-url URL")
      const provider = createOpenAICompatible({
        name: "openai-compatible",
        baseURL,
        apiKey: apiKey ?? process.env.OPENAI_API_KEY ?? "none",
        includeUsage: true
      })
      return Option.some({ name: `${modelId} at ${baseURL}`, layer: AiSdkModel.layer(provider.chatModel(modelId)) })
    }
    case "anthropic": {
      const baseURL = args["base-url"]
      const key = apiKey ?? process.env.ANTHROPIC_API_KEY
      const provider = createAnthropic({
        ...(baseURL === undefined ? {} : { baseURL }),
        ...(key === undefined ? {} : { apiKey: key })
      })
      return Option.some({ name: `${modelId} (Anthropic)`, layer: AiSdkModel.layer(provider.languageModel(modelId)) })
    }
    default:
      throw new Error(`unknown --provider ${args.provider}: use openai-compatible or anthropic`)
  }
}
const provider = providerLayer()

/** `model` with every request it is sent recorded, in order (summary requests included). */
const recording = (model: Layer.Layer<Model.Model>) => {
  const sent: Array<Model.ModelRequest> = []
  const record = (request: Model.ModelRequest) => Effect.sync(() => sent.push(request))
  const layer = Layer.effect(
    Model.Model,
    Effect.map(Model.Model, (inner) =>
      Model.Model.of({
        generate: (request) => Effect.andThen(record(request), inner.generate(request)),
        stream: (request) => Stream.unwrap(Effect.as(record(request), inner.stream(request)))
      })
    )
  ).pipe(Layer.provide(model))
  return { layer, sent }
}

const base = process.env.TESSERA_DEMO_DIR ?? process.env.TESSERA_EXAMPLE_DIR ?? os.tmpdir()
fs.mkdirSync(base, { recursive: true })
const stateDir = fs.mkdtempSync(path.join(base, "tessera-demo-"))

const taskId = Schema.decodeUnknownSync(Ids.TaskId)
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")

// ---------------------------------------------------------------------------
// Output helpers

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`
const heading = (text: string) => console.log(`\n== ${text} ${"=".repeat(Math.max(0, 70 - text.length))}`)
const requestBytes = (request: Model.ModelRequest) => Compaction.measureParts("bytes", request.parts)
const describeRequest = (request: Model.ModelRequest): string => {
  const [first, second] = request.parts
  if (Compaction.isSummaryRequest(request)) return "summary request"
  if (first?._tag === "FileReference") return `starts with ${first.path}`
  // A compacted request keeps the system message first, the summary right after it.
  if (first?._tag === "Text" && first.role === "system" && second?._tag === "FileReference") {
    return `system message, then ${second.path}`
  }
  return `${request.parts.length} parts`
}

// ---------------------------------------------------------------------------
// Tools: a log fetcher whose results are large (and carry a leaked credential)
// and a notes search whose results are medium-sized.

const fetchLog = Tool.make({
  name: "fetch_log",
  description: "Fetches a service's deployment log",
  input: Schema.Struct({ service: Schema.String }),
  handler: ({ service }) =>
    Effect.succeed(
      [
        `deployment log of ${service}`,
        `config: aws_access_key_id=AKIAIOSFODNN7EXAMPLE password=correct-horse-battery`,
        ...Array.from(
          { length: 900 },
          (_, i) => `${service} 12:${String(i % 60).padStart(2, "0")} request ok in ${i % 97} ms`
        )
      ].join("\n")
    )
})
const searchNotes = Tool.make({
  name: "search_notes",
  description: "Searches the team's notes",
  input: Schema.Struct({ query: Schema.String }),
  handler: ({ query }) =>
    Effect.succeed(`notes about ${query}: ${"the rollout was staged region by region; ".repeat(280)}`)
})
const tools = Tool.registry(fetchLog, searchNotes)

/** The model's side, keyed by the turn's own requests (summary requests are answered separately). */
const researchScript = (): ScriptedModel.Script => {
  let step = 0
  let summaries = 0
  return (request) => {
    if (describeRequest(request) === "summary request") {
      summaries++
      return Model.response({
        text: `Summary ${summaries}: logs of north and south fetched (both healthy, latencies under 100 ms); notes say the rollout was staged by region.`
      })
    }
    step++
    const plan: ReadonlyArray<Model.ModelResponse> = [
      Model.response({
        text: "Start with the logs.",
        toolCalls: [Model.toolCall("log-north", "fetch_log", { service: "north" })]
      }),
      Model.response({ toolCalls: [Model.toolCall("log-south", "fetch_log", { service: "south" })] }),
      Model.response({ toolCalls: [Model.toolCall("notes-1", "search_notes", { query: "rollout" })] }),
      Model.response({ toolCalls: [Model.toolCall("notes-2", "search_notes", { query: "regions" })] }),
      Model.response({ toolCalls: [Model.toolCall("notes-3", "search_notes", { query: "latency" })] }),
      Model.response({ text: "Both services are healthy; the staged rollout by region explains the quiet logs." })
    ]
    return plan[Math.min(step, plan.length) - 1] as Model.ModelResponse
  }
}

const researchTask = History.make([
  Model.text("system", "You are a careful site-reliability assistant."),
  Model.text("user", "Check the north and south deployments and tell me whether the rollout went well.")
])

const platform = NodeTessera.layer

/**
 * Runs one turn of `task` on the harness, with a fresh scripted model or
 * the real provider; returns the outcome and the requests. A real model's
 * turn is streamed: its text is printed as it comes.
 */
const runTurn = (
  harness: LocalHarness.LocalHarnessService,
  task: Ids.TaskId,
  script: ScriptedModel.Script,
  options: { readonly policy: Compaction.Policy; readonly offload: boolean }
) => {
  const model = recording(Option.isSome(provider) ? provider.value.layer : ScriptedModel.layer(script))
  const config = {
    tools,
    maxSteps: 12,
    ...(options.offload
      ? { offload: { threshold: 16 * 1024, readTool: "read_artifact", destination: "Private" as const } }
      : {})
  }
  return harness.withTask(
    task,
    (binding) =>
      Effect.gen(function* () {
        if (Option.isNone(provider)) {
          const outcome = yield* TaskExecution.runTurn(binding, researchTask, config)
          return { outcome, sent: model.sent }
        }
        console.log(`-- task ${task}, ${options.offload ? "with offload + compaction" : "plain"}, streamed:`)
        let outcome: Executor.TurnOutcome | undefined
        yield* Stream.runForEach(TaskExecution.streamTurn(binding, researchTask, config), (event) =>
          Effect.sync(() => {
            if (event._tag === "TextDelta") process.stdout.write(event.delta)
            if (event._tag === "ToolCalled")
              console.log(`  [tool] ${event.call.name} ${JSON.stringify(event.call.input)}`)
            if (event._tag === "StepFinished") {
              const usage = event.usage === undefined ? "no usage reported" : Inspector.formatUsage(event.usage)
              console.log(`\n  [step ${event.step}] ${event.finishReason ?? "finished"}; ${usage}`)
            }
            if (event._tag === "TurnClosed") outcome = event.outcome
          })
        )
        if (outcome === undefined) return yield* Effect.die(new Error("the streamed turn ended without closing"))
        return { outcome, sent: model.sent }
      }).pipe(Effect.provide(Layer.merge(model.layer, DefaultRedactor.layer()))),
    { policy: options.policy }
  )
}

const listFiles = (folder: string): ReadonlyArray<{ readonly file: string; readonly size: number }> =>
  fs
    .readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const file = path.join(entry.parentPath, entry.name)
      return { file: path.relative(folder, file), size: fs.statSync(file).size }
    })
    .sort((a, b) => a.file.localeCompare(b.file))

/** Section 2: two large results, no output volume, exactly four requests (scripted). */
const fourRequestTurn = (harness: LocalHarness.LocalHarnessService) =>
  Effect.gen(function* () {
    heading("2. The four-request turn: two large results, no output volume")
    let fourStep = 0
    const fourScript: ScriptedModel.Script = (request) => {
      if (describeRequest(request) === "summary request") {
        return Model.response({ text: "Summary: both logs were fetched; north and south are healthy." })
      }
      fourStep++
      return fourStep === 1
        ? Model.response({ toolCalls: [Model.toolCall("c1", "fetch_log", { service: "north" })] })
        : fourStep === 2
          ? Model.response({ toolCalls: [Model.toolCall("c2", "fetch_log", { service: "south" })] })
          : Model.response({ text: "Both deployments are healthy." })
    }
    const four = yield* harness.withTask(taskId("four-requests"), (binding) =>
      Effect.gen(function* () {
        // No output volume: the summary must land on the agent-owned private volume.
        const context = yield* harness.runtime.bindTask({ scope: binding.context.scope, output: Option.none() })
        const bare = yield* EntryGate.bind(context, {
          policy: Compaction.threshold({
            measure: "bytes",
            limit: 40 * 1024,
            keepRecent: 1024,
            pieceLimit: 128 * 1024
          })
        })
        yield* TaskExecution.runTurn(bare, researchTask, { tools, maxSteps: 8 })
        const recorder = yield* ScriptedModel.ScriptedModelRecorder
        return yield* recorder.requests
      }).pipe(Effect.provide(ScriptedModel.layer(fourScript)))
    )
    for (const [index, request] of four.entries()) {
      console.log(`  request ${index + 1}: ${describeRequest(request).padEnd(40)} ${kib(requestBytes(request))}`)
    }
    const [finalFirst, finalSecond] = four.at(-1)?.parts ?? []
    const opening =
      finalFirst?._tag === "FileReference"
        ? `${finalFirst.path} on volume ${finalFirst.volume.volume}`
        : finalFirst?._tag === "Text" && finalFirst.role === "system" && finalSecond?._tag === "FileReference"
          ? `the system message, then ${finalSecond.path} on volume ${finalSecond.volume.volume}`
          : "something else"
    console.log(`exactly ${four.length} model requests; the last starts with ${opening}`)
  })

const program = Effect.gen(function* () {
  const harness = yield* LocalHarness.open({ stateDir, namespace: "demo", agent })
  console.log(`Tessera demo: local harness namespace "demo" at ${harness.folder}`)
  console.log(`agent ${agent}; private volume ${harness.volumes.scratch.volume} (AgentPrivate, owned by ${agent})`)
  console.log(`model: ${Option.isSome(provider) ? provider.value.name : "the embedded scripted model"}`)

  // 1. The research turn, with and without offload + compaction.
  heading("1. A research task: offload and compaction")
  const policy = Compaction.threshold({ measure: "bytes", limit: 24 * 1024, keepRecent: 4 * 1024 })
  const bounded = yield* runTurn(harness, taskId("research"), researchScript(), { policy, offload: true })
  const plain = yield* runTurn(harness, taskId("research-plain"), researchScript(), {
    policy: Compaction.disabled,
    offload: false
  })
  const plainTurn = plain.sent
  let turnIndex = 0
  console.log("request  what                              plain       with offload + compaction")
  bounded.sent.forEach((request, index) => {
    const what = describeRequest(request)
    const comparable = what === "summary request" ? undefined : plainTurn[turnIndex++]
    console.log(
      `${String(index + 1).padStart(7)}  ${what.padEnd(32)}  ${(comparable === undefined ? "-" : kib(requestBytes(comparable))).padStart(10)}  ${kib(requestBytes(request)).padStart(10)}`
    )
  })
  const pointers = bounded.sent
    .flatMap((request) => request.parts)
    .flatMap((part) => (part._tag === "ToolResult" && part.content.startsWith("[artifact]") ? [part.content] : []))
  console.log(`\npointers the model received instead of the large results:`)
  for (const pointer of new Set(pointers)) console.log(`  ${pointer.slice(0, 180)}${pointer.length > 180 ? "..." : ""}`)
  console.log(`\nanswer: ${bounded.outcome.text}`)
  const largest = (sent: ReadonlyArray<Model.ModelRequest>) =>
    Math.max(...sent.filter((request) => describeRequest(request) !== "summary request").map(requestBytes))
  console.log(
    `largest turn request: ${kib(largest(bounded.sent))} with offload + compaction, ${kib(largest(plain.sent))} without; ` +
      `summary requests carry at most the policy's piece limit of history`
  )

  // 2. The four-request turn (scripted: a real model decides its own steps).
  if (Option.isSome(provider)) {
    heading("2. The four-request turn: skipped (it needs the scripted model)")
  } else {
    yield* fourRequestTurn(harness)
  }

  // 3. Refusals.
  heading("3. Refusals")
  const reviewerVolume = yield* harness.host.store.create({
    id: Schema.decodeUnknownSync(Ids.VolumeId)("reviewer-private"),
    kind: "AgentPrivate",
    owner: Volume.agentOwner(Schema.decodeUnknownSync(Ids.AgentId)("reviewer"))
  })
  const scope = yield* harness.host.issueScope(
    taskId("borrower"),
    [{ volume: reviewerVolume, access: ["write"] }],
    agent
  )
  const foreign = yield* Effect.flip(
    FilesystemTaskRuntime.fromHost(harness.host, { private: Option.some(reviewerVolume), scope })
  )
  console.log(`opening a runtime on another agent's private volume: ${foreign.message}`)

  const writerless = yield* FilesystemTaskRuntime.fromHost(harness.host, {
    private: Option.none(),
    scope: yield* harness.host.issueScope(taskId("writerless"), [], agent)
  })
  const context = yield* writerless.bindTask({
    scope: yield* harness.host.issueScope(taskId("writerless"), [], agent),
    output: Option.none()
  })
  const byDefault = yield* EntryGate.bind(context)
  console.log(`a runtime without a private volume gets the ${byDefault.policy._tag} policy by default`)
  const armed = yield* Effect.gen(function* () {
    const refusal = yield* Effect.flip(
      TaskExecution.runTurn({ context, policy: Compaction.threshold() }, researchTask, { tools, maxSteps: 4 })
    )
    const recorder = yield* ScriptedModel.ScriptedModelRecorder
    return { refusal, sent: (yield* recorder.requests).length }
  }).pipe(
    Effect.provide(
      Layer.merge(ScriptedModel.layer([]), Journal.layer({ folder: harness.journalFolder, task: context.task }))
    )
  )
  console.log(`arming compaction there anyway: ${armed.refusal.message}`)
  console.log(`model requests sent before the refusal: ${armed.sent}`)

  // 4. What is on disk.
  heading("4. Files written")
  for (const { file, size } of listFiles(harness.folder)) console.log(`  ${String(size).padStart(9)}  ${file}`)
  // Read back for display, located by the store layout: `folderOf` hands out no agent-private folder.
  const scratchFolder = VolumeStore.dataFolder(
    yield* Path.Path,
    harness.host.store.root,
    harness.volumes.scratch.volume
  )
  const summaryFiles = listFiles(scratchFolder).filter(({ file }) => file.startsWith("summaries"))
  const artifactFiles = listFiles(scratchFolder).filter(({ file }) => file.startsWith("artifacts"))
  const stored = artifactFiles.map(({ file }) => fs.readFileSync(path.join(scratchFolder, file), "utf8")).join("")
  const journalFiles = listFiles(harness.journalFolder)

  heading("Summary")
  console.log(`state folder:          ${harness.folder}`)
  console.log(`summaries staged:      ${summaryFiles.length} (private volume ${harness.volumes.scratch.volume})`)
  console.log(
    `artifacts offloaded:   ${artifactFiles.length}, leaked credentials in them: ${stored.includes("AKIAIOSFODNN7EXAMPLE") || stored.includes("correct-horse") ? "YES" : "none (redacted)"}`
  )
  console.log(`journals:              ${journalFiles.map(({ file }) => file).join(", ")}`)
  console.log(`inspect it with:       npm run inspect -- ${harness.folder}`)
})

Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(platform))).catch((error: unknown) => {
  console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
})
