/**
 * Tessera's cold-start program: what a Node host does up to a turn's first
 * model call. It builds `NodeTessera.layer`, opens a store with an
 * agent-private and a journal volume in the folder `TESSERA_COLD_DIR`
 * names, binds a task, opens the task's journal and runs
 * `TaskExecution.runTurn` with one tool over a scripted model, which
 * answers at once.
 *
 * It imports Tessera's modules and Effect's by their own paths
 * (`@tessera/runtime/TaskExecution`, `effect/Effect`), as the packages do
 * and as docs/getting-started.md advises a program that starts often: an
 * index loads every module of its package (see bench/NOTES.md).
 */
import * as HostAuthority from "@tessera/core/HostAuthority"
import * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as NodeTessera from "@tessera/node/NodeTessera"
import * as EntryGate from "@tessera/runtime/EntryGate"
import * as FilesystemTaskRuntime from "@tessera/runtime/FilesystemTaskRuntime"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import * as Model from "@tessera/runtime/Model"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as TaskHost from "@tessera/runtime/TaskHost"
import * as Tool from "@tessera/runtime/Tool"
import { ScriptedModel } from "@tessera/runtime/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Answer, Probe } from "./Runner.ts"

const { TESSERA_COLD_DIR: root } = process.env
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) => Effect.succeed(`Report ${name}: every measurement within tolerance.`)
})

const turn = (folder: string, probe: Probe) =>
  Effect.gen(function* () {
    const host = yield* TaskHost.open({ root: folder })
    const privateVolume = yield* host.store.create({
      id: volumeId("researcher-private"),
      kind: "AgentPrivate",
      owner: Volume.agentOwner(agent)
    })
    const journalVolume = yield* host.store.create({
      id: volumeId("journal"),
      kind: "Journal",
      owner: Volume.hostOwner
    })
    const scope = yield* host.issueScope(task, [{ volume: privateVolume, access: ["read", "write"] }], agent)
    const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(privateVolume), scope })
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    const binding = yield* EntryGate.bind(context, {})
    const journal = Journal.layer({ folder: yield* host.store.folderOf(journalVolume), task })
    const model = ScriptedModel.layer(() => {
      probe()
      return Model.response({ text: "The north report shows every measurement within tolerance." })
    })
    return yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "Summarize the north report.")]), {
      tools: Tool.registry(fetchReport),
      maxSteps: 4
    }).pipe(Effect.provide(Layer.merge(journal, model)))
  })

export const firstCall = async (probe: Probe): Promise<Answer> => {
  if (root === undefined) throw new Error("TESSERA_COLD_DIR names no folder")
  const outcome = await Effect.runPromise(
    turn(root, probe).pipe(Effect.provide(Layer.merge(NodeTessera.layer, HostAuthority.permissive)))
  )
  return { text: outcome.text, library: import.meta.resolve("@tessera/runtime") }
}
