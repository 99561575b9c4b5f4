/**
 * A custom executor assembled from the stock pieces.
 *
 * The stock `Executor.runTurn` loops "model step, tool dispatch" until the
 * model answers. This harness wants two things the stock loop does not do:
 * it prints every step as it happens, and it clips oversized tool results
 * before the model (and the journal) see them. It reuses `modelStep` and
 * `dispatchTools`, so the journal records and tracing spans are the same as
 * for the stock executor; only the loop and the hooks are its own.
 *
 * It runs against the scripted model (no network) and writes the task's
 * journal into a temporary folder, then prints what the journal recorded.
 *
 * Run: node examples/custom-executor.ts
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Ids } from "@tessera/core"
import * as Executor from "@tessera/runtime/Executor"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import * as Model from "@tessera/runtime/Model"
import * as Tool from "@tessera/runtime/Tool"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, FileSystem, Layer, Schema } from "effect"

const task = Schema.decodeUnknownSync(Ids.TaskId)("custom-executor-demo")
const clipAt = 120

const listFiles = Tool.make({
  name: "list_files",
  description: "Lists the files of a folder",
  input: Schema.Struct({ folder: Schema.String }),
  handler: ({ folder }) =>
    Effect.succeed(["README.md", "src/index.ts", "src/turn.ts"].map((name) => `${folder}/${name}`))
})
const readFile = Tool.make({
  name: "read_file",
  description: "Reads a file",
  input: Schema.Struct({ path: Schema.String }),
  handler: ({ path }) => Effect.succeed(`// ${path}\n${"export const step = 1\n".repeat(40)}`)
})

/** The model's side of the conversation, scripted so the example needs no network. */
const script = [
  Model.response({
    text: "Let me look around.",
    toolCalls: [Model.toolCall("call-1", "list_files", { folder: "repo" })]
  }),
  Model.response({
    toolCalls: [
      Model.toolCall("call-2", "read_file", { path: "repo/src/turn.ts" }),
      Model.toolCall("call-3", "delete_file", { path: "repo/README.md" })
    ]
  }),
  Model.response({ text: "The repository has one turn module; I could not delete anything (no such tool)." })
]

/** Hooks: print each step, and clip large tool results before they are journaled or sent. */
const hooks: Executor.Hooks = {
  afterModelStep: (context, outcome) =>
    Effect.sync(() =>
      console.log(
        `step ${context.step}: sent ${outcome.request.parts.length} parts; model said ${JSON.stringify(outcome.response.text)}` +
          ` and asked for [${outcome.response.toolCalls.map((call) => call.name).join(", ")}]`
      )
    ),
  onToolResult: (context, result) =>
    Effect.sync(() => {
      const clipped =
        result.content.length > clipAt
          ? {
              ...result,
              content: `${result.content.slice(0, clipAt)}... [clipped ${result.content.length - clipAt} chars]`
            }
          : result
      console.log(
        `  tool ${context.call.name} (${context.call.id}): ${clipped.isError ? "error" : "ok"}, ${result.content.length} chars` +
          (clipped === result ? "" : `, clipped to ${clipped.content.length}`)
      )
      return clipped
    })
}

/** The custom loop: the stock pieces, a fixed step budget, and an explicit abandon when it runs out. */
const customTurn = (history: History.History) =>
  Effect.gen(function* () {
    const journal = yield* Journal.Journal
    const config: Executor.TurnConfig = { tools: Tool.registry(listFiles, readFile), maxSteps: 4, hooks }
    const { turn } = yield* journal.openTurn
    let current = history
    for (let step = 1; step <= config.maxSteps; step++) {
      const outcome = yield* Executor.modelStep(config, { task, turn, step }, current)
      current = outcome.history
      if (outcome.response.toolCalls.length === 0) {
        yield* journal.closeTurn
        return outcome.response.text
      }
      const results = yield* Executor.dispatchTools(config, { task, turn, step }, outcome.response.toolCalls)
      current = History.append(current, results)
    }
    yield* journal.abandonTurn(`no answer within ${config.maxSteps} steps`)
    return "(abandoned)"
  })

const program = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-example-" })
  const answer = yield* customTurn(History.make([Model.text("user", "Tell me what is in the repository.")])).pipe(
    Effect.provide(Layer.merge(ScriptedModel.layer(script), Journal.layer({ folder, task })))
  )
  console.log(`answer: ${answer}`)
  const entries = yield* Journal.readEntries({ folder, task })
  console.log(`journal (${entries.length} entries, sizes and digests only):`)
  for (const entry of entries) {
    const detail =
      entry._tag === "RequestDispatched"
        ? ` step ${entry.step}, ${entry.parts} parts, ${entry.size} bytes`
        : entry._tag === "ToolResulted"
          ? ` ${entry.name} ${entry.isError ? `error (${entry.failure})` : "ok"}, ${entry.size} bytes`
          : ""
    console.log(`  ${entry.seq} ${entry._tag}${detail}`)
  }
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(NodeServices.layer))).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
