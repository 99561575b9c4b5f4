/**
 * A turn against a real model: any OpenAI-compatible server (vLLM,
 * llama.cpp, Ollama, OpenAI itself) through the AI SDK's
 * `@ai-sdk/openai-compatible` provider and `@tessera/ai-sdk`'s
 * `AiSdkModel`. The turn streams: its text is printed as it comes; large
 * tool results are offloaded to the agent's private volume and the history
 * is compacted into private summaries, as with any Tessera model.
 *
 * Run against your server:
 *   TESSERA_BASE_URL=http://127.0.0.1:8080/v1 TESSERA_MODEL=NAME node examples/real-provider.ts
 * (the key, if the server needs one, from $OPENAI_API_KEY). The smoke test
 * runs it against a loopback server speaking the same wire format.
 * State goes to $TESSERA_EXAMPLE_DIR, or to ./.tessera.
 */
// #region real-provider
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { AiSdkModel } from "@tessera/ai-sdk"
import { DefaultRedactor } from "@tessera/artifacts"
import { Ids } from "@tessera/core"
import { LocalHarness, NodeTessera } from "@tessera/node"
import { History, Journal, JournalEntry, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Layer, Schedule, Schema, Stream } from "effect"

// Destructured, so the program also compiles under `noPropertyAccessFromIndexSignature`.
const { OPENAI_API_KEY, TESSERA_BASE_URL, TESSERA_EXAMPLE_DIR, TESSERA_MODEL } = process.env

// The model: an AI SDK provider model, with retries (honouring Retry-After) and a time limit per request.
const provider = createOpenAICompatible({
  name: "my-server",
  baseURL: TESSERA_BASE_URL ?? "http://127.0.0.1:8080/v1",
  apiKey: OPENAI_API_KEY ?? "none",
  includeUsage: true
})
const model = AiSdkModel.layer(provider.chatModel(TESSERA_MODEL ?? "my-model"), {
  retry: Schedule.exponential("1 second").pipe(Schedule.jittered, Schedule.upTo({ times: 3 })),
  timeout: "2 minutes"
})

// A tool whose results are large: they are offloaded, and the model gets a pointer it can read from.
const fetchLog = Tool.make({
  name: "fetch_log",
  description: "Fetches a service's deployment log",
  input: Schema.Struct({ service: Schema.String }),
  handler: ({ service }) =>
    Effect.succeed(Array.from({ length: 2_000 }, (_, i) => `${service} line ${i}: request ok`).join("\n"))
})

const task = History.make([
  Model.text("system", "You are a careful site-reliability assistant."),
  Model.text("user", "Fetch the logs of north and south and tell me whether both are healthy.")
])

const program = Effect.gen(function* () {
  const harness = yield* LocalHarness.open({
    stateDir: TESSERA_EXAMPLE_DIR ?? ".tessera",
    namespace: "real-provider",
    agent: Schema.decodeUnknownSync(Ids.AgentId)("assistant")
  })
  const taskId = Schema.decodeUnknownSync(Ids.TaskId)(`check-${Date.now()}`)
  yield* harness.withTask(taskId, (binding) =>
    Stream.runForEach(
      TaskExecution.streamTurn(binding, task, {
        tools: Tool.registry(fetchLog),
        maxSteps: 10,
        offload: { threshold: 16 * 1024, readTool: "read_artifact", destination: "Private" }
      }),
      (event) =>
        Effect.sync(() => {
          if (event._tag === "TextDelta") process.stdout.write(event.delta)
          if (event._tag === "ToolCalled") console.log(`\n[tool] ${event.call.name}`)
          if (event._tag === "ArtifactOffloaded") console.log(`[offloaded] ${event.entry.path}`)
          if (event._tag === "SummaryStaged") console.log(`[summary staged] ${event.entry.path}`)
        })
    ).pipe(Effect.provide(Layer.merge(model, DefaultRedactor.layer())))
  )
  // Every request's usage is in the journal, summary requests included.
  const entries = yield* Journal.readEntries({ folder: harness.journalFolder, task: taskId })
  const total = JournalEntry.totalUsage(entries)
  console.log(
    `\ntokens: ${total.usage.inputTokens ?? 0} in, ${total.usage.outputTokens ?? 0} out, ${total.responses} responses`
  )
})

Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(NodeTessera.layer))).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
// #endregion real-provider
