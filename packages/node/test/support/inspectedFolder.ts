/**
 * A namespace folder for the inspector's JSON, filter and follow tests,
 * written by real turns: `task-1` runs under the default redactor, offloads
 * one large result and compacts (a summary); `task-2` runs durably without a
 * redactor, reads a file whose result is offloaded, and pauses for a
 * deploy's approval, its user text and tool results holding {@link secretText}.
 */
import { spawn, spawnSync } from "node:child_process"
import { fileURLToPath } from "node:url"
import { DefaultRedactor } from "@tessera/artifacts"
import { LocalHarness } from "@tessera/node"
import { Compaction, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Schema } from "effect"
import { agentId, taskId } from "./temp.ts"
import { isSummaryRequest, produce, produceCall, start } from "./turns.ts"

export const agent = agentId("researcher")
export const redactedTask = taskId("task-1")
export const verbatimTask = taskId("task-2")
/** Text of the user's prompt and of a tool's result in `task-2`: a body, never shown without bodies. */
export const secretText = "the body nobody should see by default"

const deploy = Tool.make({
  name: "deploy",
  description: "Deploys",
  input: Schema.Struct({ target: Schema.String }),
  needsApproval: true,
  handler: (input) => Effect.succeed(`deployed ${input.target}`)
})
const read = Tool.make({
  name: "read",
  description: "Reads",
  input: Schema.Struct({ path: Schema.String }),
  handler: (input) => Effect.succeed(input.path === "small.txt" ? secretText : `${"r".repeat(6000)} ${secretText}`)
})

/** Writes the folder under `stateDir`; its namespace folder and journal folder. */
export const inspectedFolder = (stateDir: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const harness = yield* LocalHarness.open({ stateDir, namespace: "project-a", agent })
      let calls = 0
      const script: ScriptedModel.Script = (request) => {
        if (isSummaryRequest(request)) {
          return Model.response({ text: "Report A was offloaded.", usage: { inputTokens: 50, outputTokens: 7 } })
        }
        calls++
        const usage = { inputTokens: 100 * calls, outputTokens: 10 }
        return calls === 1
          ? Model.response({ toolCalls: [produceCall("c1", 20_000, "a")], usage })
          : calls === 2
            ? Model.response({ toolCalls: [produceCall("c2", 12_000, "b")], usage })
            : Model.response({ text: "Both reports are uniform.", usage })
      }
      yield* harness
        .withTask(
          redactedTask,
          (binding) =>
            TaskExecution.runTurn(binding, start, {
              tools: Tool.registry(produce),
              maxSteps: 8,
              offload: { threshold: 15_000, readTool: "read_artifact", destination: "Private" }
            }),
          { policy: Compaction.threshold({ measure: "bytes", limit: 10_000, keepRecent: 0, pieceLimit: 100_000 }) }
        )
        .pipe(Effect.provide([ScriptedModel.layer(script), DefaultRedactor.layer()]))
      const outcome = yield* harness
        .withTask(
          verbatimTask,
          (binding) =>
            TaskExecution.runTurn(binding, History.make([Model.text("user", `Deploy. ${secretText}`)]), {
              tools: Tool.registry(deploy, read),
              maxSteps: 4,
              durable: true,
              offload: { threshold: 4096, readTool: "read_artifact", destination: "Private" }
            }),
          { policy: Compaction.disabled }
        )
        .pipe(
          Effect.provide(
            ScriptedModel.layer([
              Model.response({ toolCalls: [Model.toolCall("r1", "read", { path: "notes.txt" })] }),
              Model.response({ toolCalls: [Model.toolCall("r2", "read", { path: "small.txt" })] }),
              Model.response({ toolCalls: [Model.toolCall("d1", "deploy", { target: "prod" })] })
            ])
          )
        )
      if (outcome._tag !== "AwaitingApproval") return yield* Effect.die(`task-2 did not pause: ${outcome._tag}`)
      return { folder: harness.folder, journal: harness.journalFolder }
    })
  )

const bin = fileURLToPath(new URL("../../bin/tessera-inspect.ts", import.meta.url))

/** Runs the inspector's bin to its end. */
export const runBin = (...args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, [bin, ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, INIT_CWD: undefined }
  })

/** Starts the inspector's bin and leaves it running (for `--follow`). */
export const startBin = (...args: ReadonlyArray<string>) =>
  spawn(process.execPath, [bin, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, INIT_CWD: undefined }
  })
