/**
 * Turn scenarios on a real world: the task's journal on the store's journal
 * volume, a scripted model, and a `produce` tool whose result size the
 * script chooses.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { Ids } from "@tessera/core"
import { Compaction, EntryGate, History, Journal, Model, type TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"
import { platformLayer, type World } from "./world.ts"

export const produce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size, made of one repeated character",
  input: Schema.Struct({ size: Schema.Int, fill: Schema.String }),
  handler: ({ fill, size }) => Effect.succeed(fill.repeat(size))
})

export const tools = Tool.registry(produce)

export const taskText = "Collect the two reports and tell me what they say."
export const taskParts: ReadonlyArray<Model.Part> = [Model.text("user", taskText)]
export const start = History.make(taskParts)

/** The journal volume's folder (the host writes the journal; the task holds no grant on it). */
export const journalFolder = (world: World) => world.host.store.folderOf(world.journalRef)

/** A scripted model and the task's journal on the world's journal volume. */
export const turnLayer = (world: World, task: Ids.TaskId, script: ScriptedModel.Script) =>
  Layer.unwrap(
    Effect.map(journalFolder(world), (folder) =>
      Layer.merge(ScriptedModel.layer(script), Journal.layer({ folder, task }))
    )
  ).pipe(Layer.provideMerge(platformLayer))

export const requests = Effect.flatMap(
  Effect.service(ScriptedModel.ScriptedModelRecorder),
  (recorder) => recorder.requests
)

export const isSummaryRequest = Compaction.isSummaryRequest

/** Every text a request carries, joined: for "does this request contain X" checks. */
export const requestText = (request: Model.ModelRequest): string => request.parts.map(Compaction.renderPart).join("\n")

/** The raw bytes of the task's journal file ("" when it was never created). */
export const journalBytes = (folder: string, task: Ids.TaskId): string => {
  const file = path.join(folder, Journal.fileName(task))
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
}

/** The world's task bound under `policy`, with its agent's private volume granted and the runtime's. */
export const bindPrivate = (world: World, policy: Compaction.Policy) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([world.privateRef]), output: Option.none() })
    return yield* EntryGate.bind(context, { policy })
  })

/**
 * One step of a foreign loop as an adapter drives it: prepare (told the
 * request's tools when `toldTools` is given), dispatch, the model's answer,
 * receive.
 */
export const foreignStep = (
  loop: TaskExecution.ForeignLoop,
  history: History.History,
  toldTools?: ReadonlyArray<Model.ToolSpec>
) =>
  Effect.gen(function* () {
    const model = yield* Model.Model
    const prepared = yield* loop.prepare(history, model, toldTools)
    const request: Model.ModelRequest = { parts: History.toParts(prepared), tools: tools.specs }
    const where = yield* loop.dispatch(request)
    const response = yield* model.generate(request)
    yield* loop.receive(where, request, response)
    return { request, response }
  })
