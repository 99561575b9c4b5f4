/**
 * What a durable turn adds per step: the same turn (one small tool call per
 * step, no offload, no compaction) on a local harness on this machine's
 * temporary folder, run plainly and with `durable: true`, reported as the
 * median wall time per model step over several turns. A standalone job (not
 * part of `npm run bench`):
 *
 *     node bench/src/DurableStep.ts [steps-per-turn] [turns]
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Ids from "@tessera/core/Ids"
import * as LocalHarness from "@tessera/node/LocalHarness"
import * as NodeDurableFiles from "@tessera/node/NodeDurableFiles"
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Schema } from "effect"

const steps = Number(process.argv[2] ?? 40)
const turns = Number(process.argv[3] ?? 5)

const echo = Tool.make({
  name: "echo",
  description: "Echoes",
  input: Schema.Struct({ n: Schema.Number }),
  handler: ({ n }) => Effect.succeed(`echo ${n}`)
})

const script = (): ScriptedModel.Script => {
  let step = 0
  return () => {
    step++
    return step < steps
      ? Model.response({ toolCalls: [Model.toolCall(`c${step}`, "echo", { n: step })] })
      : Model.response({ text: "done" })
  }
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

const measure = (durable: boolean) =>
  Effect.scoped(
    Effect.gen(function* () {
      const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-durable-step-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(stateDir, { recursive: true, force: true })))
      const harness = yield* LocalHarness.open({
        stateDir,
        namespace: "bench",
        agent: Schema.decodeUnknownSync(Ids.AgentId)("bench")
      })
      const perStep: Array<number> = []
      for (let turn = 0; turn < turns; turn++) {
        const started = performance.now()
        yield* harness
          .withTask(
            Schema.decodeUnknownSync(Ids.TaskId)(`task-${turn}`),
            (binding) =>
              TaskExecution.runTurn(binding, History.make([Model.text("user", "echo until done")]), {
                tools: Tool.registry(echo),
                maxSteps: steps + 1,
                durable
              }),
            { policy: Compaction.disabled }
          )
          .pipe(Effect.provide(ScriptedModel.layer(script())))
        perStep.push((performance.now() - started) / steps)
      }
      return median(perStep)
    })
  )

const program = Effect.gen(function* () {
  const plain = yield* measure(false)
  const durable = yield* measure(true)
  console.log(
    `${steps} steps per turn, median of ${turns} turns: plain ${plain.toFixed(2)} ms/step, durable ${durable.toFixed(2)} ms/step (+${(durable - plain).toFixed(2)} ms/step: one transcript record per response and per tool result)`
  )
})

Effect.runPromise(program.pipe(Effect.provide(Layer.merge(NodeServices.layer, NodeDurableFiles.layer)))).catch(
  (error: unknown) => {
    console.error(String(error))
    process.exit(1)
  }
)
