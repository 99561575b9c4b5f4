/**
 * A host whose authority forbids task grants on journal storage.
 *
 * Such a host keeps no agent-private content: it opens its runtime with no
 * private volume. This example shows what follows:
 *
 * 1. a task's default compaction policy is `Disabled`, and a turn with two
 *    large tool results completes without any summary request;
 * 2. arming compaction explicitly is refused at entry with `Unauthorized`,
 *    before a single model request;
 * 3. granting a task access to the journal volume fails `GrantForbidden`.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/journal-forbidding-host.ts
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Ids } from "@tessera/core"
import { JournalForbiddingHost, NodeDurableFiles } from "@tessera/node"
import { Compaction, History, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-sealed-"))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const taskId = Schema.decodeUnknownSync(Ids.TaskId)

const produce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size",
  input: Schema.Struct({ size: Schema.Int, fill: Schema.String }),
  handler: ({ fill, size }) => Effect.succeed(fill.repeat(size))
})
const tools = Tool.registry(produce)
const start = History.make([Model.text("user", "Collect the two reports.")])

const program = Effect.gen(function* () {
  const host = yield* JournalForbiddingHost.open({ stateDir, namespace: "sealed", agent })
  console.log(`opened ${host.folder}; private volume: ${Option.isSome(host.runtime.privateVolume) ? "some" : "none"}`)

  // 1. Default policy: Disabled; the turn completes without compaction.
  const first = taskId("report-1")
  const { outcome, requests } = yield* host
    .withTask(first, (binding) =>
      Effect.gen(function* () {
        console.log(`task ${first}: default compaction policy is ${binding.policy._tag}`)
        const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
        const recorder = yield* ScriptedModel.ScriptedModelRecorder
        return { outcome, requests: yield* recorder.count }
      })
    )
    .pipe(
      Effect.provide(
        ScriptedModel.layer([
          Model.response({ toolCalls: [Model.toolCall("c1", "produce", { size: 60_000, fill: "a" })] }),
          Model.response({ toolCalls: [Model.toolCall("c2", "produce", { size: 60_000, fill: "b" })] }),
          Model.response({ text: "Report A is all 'a', report B all 'b'." })
        ])
      )
    )
  const entries = yield* Journal.readEntries({ folder: host.journalFolder, task: first })
  console.log(
    `  answered "${outcome.text}" after ${requests} model requests; journal: ${entries.length} entries, ` +
      `${entries.filter((entry) => entry._tag === "SummaryStaged").length} summaries staged`
  )

  // 2. Arming compaction explicitly is refused at entry.
  const second = taskId("report-2")
  const refused = yield* Effect.gen(function* () {
    const error = yield* Effect.flip(
      host.withTask(second, (binding) => TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 }), {
        policy: Compaction.threshold({ measure: "bytes", limit: 10_000 })
      })
    )
    const recorder = yield* ScriptedModel.ScriptedModelRecorder
    return { error, requests: yield* recorder.count }
  }).pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: "never sent" })])))
  console.log(`task ${second}: arming compaction -> ${refused.error.message}`)
  console.log(
    `  model requests sent: ${refused.requests}; journal file created: ${fs.existsSync(path.join(host.journalFolder, Journal.fileName(second)))}`
  )

  // 3. No task may be granted the journal.
  const grant = yield* Effect.flip(
    host.host.issueScope(second, [{ volume: host.volumes.journal, access: ["read"] }], agent)
  )
  console.log(`granting ${second} read on the journal -> ${grant.message}`)
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
