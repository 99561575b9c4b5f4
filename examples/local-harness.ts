/**
 * The local harness: a state namespace on this machine, one runtime at a
 * time, with the agent's scratch volume as the runtime's private volume.
 *
 * This example opens a harness, runs one turn on the scripted model (a
 * large tool result is offloaded to the scratch volume, the history crosses
 * the compaction threshold and is summarized onto the scratch volume),
 * shows that a second open of the same namespace is refused while the first
 * holds it, and finally prints what the inspector sees in the folder.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder; never
 * to the home folder (a real harness would omit `stateDir` and use
 * `StateNamespace.defaultStateDir`).
 *
 * Run: node examples/local-harness.ts
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Ids } from "@tessera/core"
import { Inspector, LocalHarness, NodeDurableFiles } from "@tessera/node"
import { Compaction, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Schema } from "effect"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-harness-"))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("survey-1")

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String, lines: Schema.Int }),
  handler: ({ lines, name }) =>
    Effect.succeed(
      Array.from({ length: lines }, (_, index) => `${name} line ${index + 1}: all systems nominal`).join("\n")
    )
})

const isSummaryRequest = (request: Model.ModelRequest) => {
  const first = request.parts[0]
  return first?._tag === "Text" && first.role === "system"
}

let turnRequests = 0
const script: ScriptedModel.Script = (request) => {
  if (isSummaryRequest(request)) {
    return Model.response({ text: "The uptime report was offloaded; the incident report says all systems nominal." })
  }
  turnRequests++
  if (turnRequests === 1)
    return Model.response({ toolCalls: [Model.toolCall("c1", "fetch_report", { name: "uptime", lines: 600 })] })
  if (turnRequests === 2)
    return Model.response({ toolCalls: [Model.toolCall("c2", "fetch_report", { name: "incidents", lines: 150 })] })
  return Model.response({ text: "Both reports say all systems are nominal." })
}

const program = Effect.gen(function* () {
  const folder = yield* Effect.scoped(
    Effect.gen(function* () {
      const harness = yield* LocalHarness.open({ stateDir, namespace: "example", agent })
      console.log(
        `opened namespace ${harness.namespace} at ${harness.folder} (lock held by pid ${harness.lock.record.pid})`
      )
      console.log(
        `private volume: ${harness.volumes.scratch.volume}; journal volume: ${harness.volumes.journal.volume}`
      )

      const second = yield* Effect.flip(LocalHarness.open({ stateDir, namespace: "example", agent }))
      console.log(`a second open while held is refused: ${second._tag}: ${second.message}`)

      const outcome = yield* harness
        .withTask(
          task,
          (binding) =>
            Effect.gen(function* () {
              console.log(`task ${binding.context.task} bound with policy ${binding.policy._tag}`)
              return yield* TaskExecution.runTurn(
                binding,
                History.make([Model.text("user", "Summarize the two reports.")]),
                {
                  tools: Tool.registry(fetchReport),
                  maxSteps: 8,
                  offload: { threshold: 16_000, readTool: "read_artifact", destination: "Private" }
                }
              )
            }),
          { policy: Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 64_000 }) }
        )
        .pipe(Effect.provide(ScriptedModel.layer(script)))
      console.log(`turn ${outcome.turn} answered in ${outcome.steps} steps: ${outcome.text}`)
      return harness.folder
    })
  )
  console.log("the scope closed: the namespace is released\n")
  console.log(`what tessera-inspect ${folder} shows:\n`)
  console.log(Inspector.render(yield* Inspector.inspect(folder)))
})

Effect.runPromise(program.pipe(Effect.provide(Layer.merge(NodeServices.layer, NodeDurableFiles.layer)))).then(
  () => {
    if (process.env.TESSERA_EXAMPLE_DIR === undefined) fs.rmSync(stateDir, { recursive: true, force: true })
  },
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
