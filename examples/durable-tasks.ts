/**
 * Durable tasks: a turn resumed from disk alone, and a tool call paused for
 * a person's approval across a restart.
 *
 * Each "process" below is its own scope opening the local harness on the
 * same state folder and keeping nothing in memory from the one before: what
 * it knows, it reads from the journal and the transcript (the agent-private
 * volume's `transcripts/<task>/`).
 *
 * 1. A durable turn whose second model request fails (as if the provider
 *    went down): the next process resumes it with `TaskExecution.resume`,
 *    which rebuilds the conversation, checks it byte for byte against the
 *    journal's request digests and sends the failed request again.
 * 2. A turn asks for a tool that needs approval: it ends as
 *    `AwaitingApproval`; a later process records the decision with
 *    `TaskExecution.decide`, and another resumes the turn.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/durable-tasks.ts
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Ids } from "@tessera/core"
import { LocalHarness, NodeDurableFiles } from "@tessera/node"
import { Compaction, type EntryGate, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-durable-"))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("assistant")

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  // Fetching twice is harmless: a call cut short by a crash may simply run again.
  idempotent: true,
  handler: ({ name }) => Effect.succeed(`report ${name}: ${"all systems nominal; ".repeat(400)}`)
})

/** One "process": the harness on the state folder, one task, nothing kept from earlier processes. */
const inProcess = <A, E, R>(task: string, body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.flatMap(LocalHarness.open({ stateDir, namespace: "durable", agent }), (harness) =>
      harness.withTask(Schema.decodeUnknownSync(Ids.TaskId)(task), body, { policy: Compaction.disabled })
    )
  )

const config: TaskExecution.ExecutionConfig = {
  tools: Tool.registry(fetchReport),
  maxSteps: 6,
  durable: true, // store the transcript, so the turn can be resumed from disk alone
  offload: { threshold: 4_096, readTool: "read_artifact", destination: "Private" }
}

const askForReports = [
  Model.response({ toolCalls: [Model.toolCall("c1", "fetch_report", { name: "north" })] }),
  Model.response({ toolCalls: [Model.toolCall("c2", "fetch_report", { name: "south" })] }),
  Model.response({ text: "North and south: all systems nominal." })
]

const resumeFromDisk = Effect.gen(function* () {
  // Process 1: the second request fails; the turn stays open in the journal.
  const failed = yield* inProcess("reports", (binding) =>
    Effect.flip(TaskExecution.runTurn(binding, History.make([Model.text("user", "Check both reports.")]), config)).pipe(
      Effect.provide(
        ScriptedModel.layer([
          askForReports[0] as Model.ModelResponse,
          new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
        ])
      )
    )
  )
  console.log(`process 1: the turn failed mid-way (${failed._tag})`)

  // Process 2: nothing in memory; the turn is rebuilt from the journal and the transcript.
  const resumed = yield* inProcess("reports", (binding) =>
    TaskExecution.resume(binding, config).pipe(Effect.provide(ScriptedModel.layer(askForReports.slice(1))))
  )
  console.log(
    `process 2: resumed from disk, ${resumed.verifiedRequests} earlier request(s) checked byte for byte; answer: ${resumed.outcome.text}`
  )

  // Process 3: the next turn starts from the conversation on disk.
  const history = yield* inProcess("reports", (binding) => TaskExecution.restoreHistory(binding))
  console.log(`process 3: the conversation on disk holds ${History.toParts(Option.getOrThrow(history)).length} parts`)
})

const deploy = Tool.make({
  name: "deploy",
  description: "Deploys a release to an environment",
  input: Schema.Struct({ environment: Schema.String }),
  // A predicate on the input: staging deploys run at once, anything else waits for a person.
  needsApproval: ({ environment }) => environment !== "staging",
  handler: ({ environment }) => Effect.succeed(`deployed to ${environment}`)
})

const approvals = Effect.gen(function* () {
  const tools: TaskExecution.ExecutionConfig = { tools: Tool.registry(deploy), maxSteps: 4, durable: true }
  const script = [
    Model.response({
      toolCalls: [
        Model.toolCall("d1", "deploy", { environment: "production" }),
        Model.toolCall("d2", "deploy", { environment: "eu-production" })
      ]
    }),
    Model.response({ text: "Production is deployed; eu-production was rejected, so I left it alone." })
  ]
  // Process 1: the turn pauses; nothing of the step ran.
  const paused = yield* inProcess("release", (binding) =>
    TaskExecution.runTurn(binding, History.make([Model.text("user", "Ship the release.")]), tools).pipe(
      Effect.provide(ScriptedModel.layer(script))
    )
  )
  if (paused._tag === "AwaitingApproval") {
    console.log(`process 1: awaiting approval for ${paused.awaiting.map((pending) => pending.call.id).join(", ")}`)
  }
  // Process 2: a person decides (journaled with who decided).
  yield* inProcess("release", (binding) =>
    Effect.andThen(
      TaskExecution.decide(binding, { callId: "d1", approved: true, by: "alice" }),
      TaskExecution.decide(binding, { callId: "d2", approved: false, by: "bob", note: "freeze in the EU" })
    )
  )
  // Process 3: the turn continues; the model sees the result of d1 and the rejection of d2.
  const done = yield* inProcess("release", (binding) =>
    TaskExecution.resume(binding, tools).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
  )
  console.log(`process 3: ${done.outcome.text}`)
})

Effect.runPromise(
  Effect.andThen(resumeFromDisk, approvals).pipe(
    Effect.provide(Layer.merge(NodeServices.layer, NodeDurableFiles.layer))
  )
).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(String(error))
    process.exit(1)
  }
)
