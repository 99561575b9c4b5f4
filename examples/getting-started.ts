/**
 * The full API under the front door, as docs/getting-started.md §2 shows it:
 * a store with an agent-private volume and a journal, a runtime opened with
 * that private volume, one bound task, and a turn on the scripted model with
 * offload and compaction armed.
 *
 * Run: node examples/getting-started.ts (its state goes to ./tessera-full-api)
 */
// #region full-api
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
  Tool,
  VolumeStore
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"

const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

const openRuntime = Effect.gen(function* () {
  // A host is a volume store plus the host's authority over grants.
  const host = yield* TaskHost.open({ root: "tessera-full-api" })
  // Created on the first start, found on every later one (the runtime checks a found volume's kind and owner).
  const { ref: privateVolume } = yield* VolumeStore.createOrFind(host.store, {
    id: volumeId("researcher-private"),
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const { ref: journalVolume } = yield* VolumeStore.createOrFind(host.store, {
    id: volumeId("journal"),
    kind: "Journal",
    owner: Volume.hostOwner
  })
  // The host issues the task its grants; the authority may refuse some.
  const scope = yield* host.issueScope(task, [{ volume: privateVolume, access: ["read", "write"] }], agent)
  // `private` is required: Option.some(volume) or Option.none(), never forgotten.
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(privateVolume), scope })
  return { host, runtime, scope, journalVolume }
})

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) => Effect.succeed(`Report ${name}\n${"measurement 42.0 within tolerance\n".repeat(2_000)}`)
})

const script = [
  Model.response({ toolCalls: [Model.toolCall("call-1", "fetch_report", { name: "north" })] }),
  Model.response({ text: "The north report shows every measurement within tolerance." })
]

const program = Effect.gen(function* () {
  const { host, runtime, scope, journalVolume } = yield* openRuntime
  const context = yield* runtime.bindTask({ scope, output: Option.none() })
  // The entry gate: Threshold compaction is allowed because a private writer resolves.
  const binding = yield* EntryGate.bind(context, { policy: Compaction.threshold({ limit: 20_000 }) })
  const journal = Journal.layer({ folder: yield* host.store.folderOf(journalVolume), task })
  const outcome = yield* TaskExecution.runTurn(
    binding,
    History.make([Model.text("user", "Summarize the north report.")]),
    {
      tools: Tool.registry(fetchReport),
      maxSteps: 8,
      offload: { threshold: 8_192, readTool: "read_artifact", destination: "Private" }
    }
  ).pipe(Effect.provide(Layer.merge(journal, ScriptedModel.layer(script))))
  return outcome
})

const platform = Layer.merge(NodeTessera.layer, HostAuthority.permissive)

Effect.runPromise(program.pipe(Effect.provide(platform))).then((outcome) =>
  console.log(`answer after ${outcome.steps} model steps: ${outcome.text}`)
)
// #endregion full-api
