/**
 * Tessera inside Pi's agent core: an `Agent` given Tessera's
 * `afterToolCall`, `transformContext` and `streamFn`, made from a bound task
 * of the local harness.
 *
 * The model is Pi's own faux provider (`registerFauxProvider`), scripted to
 * call a tool 30 times, each result 6,000 bytes with a credential in it;
 * Pi's tool-call ids hold `:`. The hooks offload every result (scrubbed) to
 * the task's private volume, so Pi's own transcript stores the pointer;
 * compact each request when it crosses the policy's limit (summary requests
 * go to the same model, their usage is added to the answers' usage); and
 * journal every step. The same conversation without the hooks is run for
 * comparison, and a task without a private writer is refused before the
 * first request.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/pi.ts
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Agent, type AgentOptions, type AgentTool } from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage,
  type Context,
  fauxAssistantMessage,
  fauxToolCall,
  registerFauxProvider,
  Type
} from "@mariozechner/pi-ai"
import { DefaultRedactor } from "@tessera/artifacts"
import { Ids } from "@tessera/core"
import { JournalForbiddingHost, LocalHarness, NodeDurableFiles } from "@tessera/node"
import { TesseraPi } from "@tessera/pi"
import { Compaction, type EntryGate } from "@tessera/runtime"
import { Effect, Layer, Schema } from "effect"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-pi-"))
const agentId = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("pi-1")
const calls = 30

const fetchLogParameters = Type.Object({ service: Type.String() })
const fetchLog: AgentTool<typeof fetchLogParameters> = {
  name: "fetchLog",
  label: "Fetch log",
  description: "Fetches a service's log",
  parameters: fetchLogParameters,
  execute: async (_id, { service }) => ({
    content: [
      {
        type: "text",
        text: Array.from(
          { length: 100 },
          (_, line) => `${service} ${line}: ok (aws_access_key_id=AKIAIOSFODNN7EXAMPLE)`
        )
          .join("\n")
          .slice(0, 6_000)
      }
    ],
    details: {}
  })
}

const isSummaryRequest = (context: Context) => context.systemPrompt?.startsWith(Compaction.summaryInstruction) === true

/** Pi's faux provider: `calls` tool calls (ids `log:<n>`), then an answer; a summary request gets a summary. */
const scripted = () => {
  const faux = registerFauxProvider()
  const sizes: Array<number> = []
  let steps = 0
  const respond = (context: Context) => {
    if (isSummaryRequest(context)) return fauxAssistantMessage("The logs fetched so far all say ok.")
    sizes.push(JSON.stringify(context.messages).length)
    steps++
    return steps <= calls
      ? fauxAssistantMessage(fauxToolCall("fetchLog", { service: `svc-${steps}` }, { id: `log:${steps}` }), {
          stopReason: "toolUse"
        })
      : fauxAssistantMessage(`All ${calls} services are ok.`)
  }
  faux.setResponses(Array.from({ length: 2 * calls + 10 }, () => respond))
  return { faux, largest: () => Math.max(...sizes), requests: () => faux.state.callCount }
}

const prompt = `Check the logs of ${calls} services.`
const lastText = (agent: Agent) =>
  (agent.state.messages.at(-1) as AssistantMessage).content
    .map((block) => (block.type === "text" ? block.text : ""))
    .join("")

// #region pi-hooks
const runWithTessera = (binding: EntryGate.TaskBinding, model: ReturnType<typeof scripted>) =>
  Effect.gen(function* () {
    const tessera = yield* TesseraPi.make(binding, {
      offload: { threshold: 2_000, readTool: "read_artifact", destination: "Private" }
    })
    const agent = new Agent({
      initialState: {
        systemPrompt: "You check services.",
        model: model.faux.getModel(),
        tools: [...tessera.tools, fetchLog]
      },
      ...tessera.agentOptions
    })
    yield* Effect.promise(() => agent.prompt(prompt))
    return { tessera, agent }
  })
// #endregion pi-hooks

const withoutTessera = (model: ReturnType<typeof scripted>, options: AgentOptions = {}) =>
  new Agent({
    initialState: { systemPrompt: "You check services.", model: model.faux.getModel(), tools: [fetchLog] },
    ...options
  })

const program = Effect.gen(function* () {
  const harness = yield* LocalHarness.open({ stateDir, namespace: "pi", agent: agentId })
  const withTessera = scripted()
  const agent = yield* harness.withTask(
    task,
    (binding) =>
      Effect.gen(function* () {
        const { agent, tessera } = yield* runWithTessera(binding, withTessera)
        console.log(`answer: ${lastText(agent)}`)
        console.log(`tool results offloaded: ${tessera.offloaded.size}`)
        console.log(`first pointer: ${tessera.offloaded.get("log:1")}`)
        const summary = tessera.summaryUsage()
        const counted = agent.state.messages
          .filter((message): message is AssistantMessage => message.role === "assistant")
          .reduce((sum, message) => sum + message.usage.input, 0)
        console.log(
          `summary requests: ${summary.requests} (${summary.input} input tokens), counted in the answers' usage: ${counted} input tokens in all`
        )
        return agent
      }).pipe(Effect.provide(DefaultRedactor.layer())),
    { policy: Compaction.threshold({ measure: "bytes", limit: 12_000, keepRecent: 2_000, pieceLimit: 100_000 }) }
  )
  withTessera.faux.unregister()
  const stored = JSON.stringify(agent.state.messages)
  console.log(
    `Pi's transcript holds the bodies: ${stored.includes("svc-1 90: ok") ? "YES" : "no (pointers)"}; model requests: ${withTessera.requests()}`
  )
  const without = scripted()
  yield* Effect.promise(() => withoutTessera(without).prompt(prompt))
  without.faux.unregister()
  console.log(
    `largest request: ${withTessera.largest()} bytes with Tessera, ${without.largest()} bytes without (${calls + 1} steps each)`
  )
  const scratch = path.join(harness.folder, "volumes", harness.volumes.scratch.volume)
  const artifacts = fs.readdirSync(path.join(scratch, "artifacts", "tool-results"))
  const bodies = artifacts.map((file) => fs.readFileSync(path.join(scratch, "artifacts", "tool-results", file), "utf8"))
  console.log(`first artifact: ${artifacts.sort()[0]}`)
  console.log(
    `artifacts on the private volume: ${artifacts.length}; credentials in them: ${bodies.some((body) => body.includes("AKIAIOSFODNN7EXAMPLE")) ? "YES" : "none (redacted)"}`
  )
  console.log(`summaries staged: ${fs.readdirSync(path.join(scratch, "summaries", `${task}-t1`)).join(", ")}`)

  // A host that gives tasks no private writer: the hooks cannot be made, so no request is ever sent.
  const sealed = yield* JournalForbiddingHost.open({ stateDir, namespace: "sealed", agent: agentId })
  const refusedModel = scripted()
  const refused = yield* Effect.flip(
    sealed.withTask(Schema.decodeUnknownSync(Ids.TaskId)("sealed-1"), (binding) =>
      TesseraPi.make(binding, { offload: { threshold: 2_000, readTool: "read_artifact", destination: "Private" } })
    )
  )
  refusedModel.faux.unregister()
  console.log(`writerless task refused: ${refused._tag}; model requests sent: ${refusedModel.requests()}`)
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
