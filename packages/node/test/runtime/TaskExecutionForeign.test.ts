/**
 * `TaskExecution.foreignLoop` driven by hand, as an adapter of another framework's loop
 * drives it: the whole history handed over on every request, results
 * reported (or not) by the loop, the journal compared with the stock
 * executor's for the same turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Digest } from "@tessera/core"
import { Compaction, EntryGate, FilesystemTaskRuntime, History, Journal, Model, TaskExecution } from "@tessera/runtime"
import { Effect, Option } from "effect"
import {
  bindPrivate,
  journalBytes,
  journalFolder,
  requests,
  start,
  taskParts,
  tools,
  turnLayer
} from "./support/turns.ts"
import { runInWorld, task, taskId, type World } from "./support/world.ts"

const body = (fill: string) => fill.repeat(6_000)
const call = (n: number) => Model.toolCall(`tool:${n}:x`, "produce", { size: 6_000, fill: `r${n}` })
const result = (n: number) =>
  Model.toolResult({ callId: `tool:${n}:x`, name: "produce", content: body(`r${n}`), isError: false })

/** Two tool calls, then an answer: the script both the executor and the hand-driven loop follow. */
const script = [
  Model.response({ toolCalls: [call(1)] }),
  Model.response({ toolCalls: [call(2)] }),
  Model.response({ text: "both reports are filler" })
]

const tags = (journal: string): Array<string> =>
  journal
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => (JSON.parse(line) as { _tag: string })._tag)

const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" as const }

/**
 * The loop an AI-SDK-like framework would run: it keeps the whole history
 * itself (bodies included) and never reports results; each request goes
 * through prepare, dispatch, the model, receive.
 */
const drive = (loop: TaskExecution.ForeignLoop, rounds: number, extra: ReadonlyArray<Model.Part> = []) =>
  Effect.gen(function* () {
    const model = yield* Model.Model
    let history = History.append(History.make(taskParts), extra)
    for (let step = 0; step < rounds + 1; step++) {
      const prepared = yield* loop.prepare(history, model)
      const request: Model.ModelRequest = { parts: History.toParts(prepared), tools: tools.specs }
      const where = yield* loop.dispatch(request)
      const response = yield* model.generate(request)
      yield* loop.receive(where, request, response)
      if (response.toolCalls.length === 0) return history
      const n = step + 1
      history = History.append(history, [...response.toolCalls, result(n)])
    }
    return history
  })

describe("TaskExecution.foreignLoop", () => {
  it("foreign_loop_journal_as_executor: a hand-driven loop journals the same entries, in the same order, as the stock executor's turn", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(world, Compaction.disabled)
        const folder = yield* journalFolder(world)
        yield* Effect.gen(function* () {
          const loop = yield* TaskExecution.foreignLoop(binding, { offload })
          yield* drive(loop, 2)
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        const foreign = tags(journalBytes(folder, task))

        const other = yield* bindOther(world)
        yield* TaskExecution.runTurn(other, start, { tools, maxSteps: 4, offload }).pipe(
          Effect.provide(turnLayer(world, otherTask, script))
        )
        const executor = tags(journalBytes(folder, otherTask))
        assert.deepStrictEqual(foreign, executor)
        assert.include(foreign, "ArtifactOffloaded")
        assert.strictEqual(foreign.at(-1), "TurnClosed")
      })
    ))

  it("control: the executor's journal without offload differs from the loop's with it (the comparison sees a missing entry)", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(world, Compaction.disabled)
        const folder = yield* journalFolder(world)
        yield* Effect.gen(function* () {
          yield* drive(yield* TaskExecution.foreignLoop(binding, { offload }), 2)
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        const other = yield* bindOther(world)
        yield* TaskExecution.runTurn(other, start, { tools, maxSteps: 4 }).pipe(
          Effect.provide(turnLayer(world, otherTask, script))
        )
        assert.notDeepEqual(tags(journalBytes(folder, task)), tags(journalBytes(folder, otherTask)))
      })
    ))

  it("foreign_loop_summary_resumed: the whole history handed over again is compacted from the remembered summary, without a new summary request", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(
          world,
          Compaction.threshold({ measure: "bytes", limit: 20_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const replies = (request: Model.ModelRequest) =>
          request.parts[0]?._tag === "Text" && request.parts[0].role === "system"
            ? Model.response({ text: "the summary" })
            : Model.response({ text: "noted" })
        const dispatched: Array<Model.ModelRequest> = []
        const sent = yield* Effect.gen(function* () {
          const loop = yield* TaskExecution.foreignLoop(binding)
          const model = yield* Model.Model
          // A history already over the limit: four rounds of 6,000 bytes.
          let history = History.append(
            History.make(taskParts),
            [1, 2, 3, 4].flatMap((n) => [call(n), result(n)])
          )
          for (const n of [5, 6, 7]) {
            const prepared = yield* loop.prepare(history, model)
            const request: Model.ModelRequest = { parts: History.toParts(prepared), tools: tools.specs }
            const where = yield* loop.dispatch(request)
            dispatched.push(request)
            yield* loop.receive(
              where,
              request,
              Model.response({ toolCalls: [Model.toolCall(`tool:${n}:x`, "produce", {})] })
            )
            history = History.append(history, [
              Model.toolCall(`tool:${n}:x`, "produce", {}),
              Model.toolResult({ callId: `tool:${n}:x`, name: "produce", content: "small", isError: false })
            ])
          }
          // The one summary request is counted once, for the adapter to report with the step it preceded.
          assert.deepStrictEqual(loop.summaryUsage(), loop.takeSummaryUsage())
          assert.strictEqual(loop.summaryUsage().requests, 1)
          assert.strictEqual(loop.takeSummaryUsage().requests, 0, "taken once, then counted from zero")
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, replies)))
        const summaries = sent.filter(
          (request) => request.parts[0]?._tag === "Text" && request.parts[0].role === "system"
        )
        assert.strictEqual(summaries.length, 1, "one summary request for three requests over the same prefix")
        assert.strictEqual(sent.length, 1, "the model was asked for nothing but the summary")
        assert.strictEqual(dispatched.length, 3)
        for (const request of dispatched) {
          assert.strictEqual(request.parts[0]?._tag, "FileReference", "each request opens with the summary file")
          assert.notInclude(JSON.stringify(request.parts), body("r1").slice(0, 1_000))
        }
      })
    ))

  it("control: a loop with no memory (made anew for each request) asks for a summary every time", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(
          world,
          Compaction.threshold({ measure: "bytes", limit: 20_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const replies = (request: Model.ModelRequest) =>
          request.parts[0]?._tag === "Text" && request.parts[0].role === "system"
            ? Model.response({ text: "the summary" })
            : Model.response({ text: "noted" })
        const sent = yield* Effect.gen(function* () {
          const model = yield* Model.Model
          const history = History.append(
            History.make(taskParts),
            [1, 2, 3, 4].flatMap((n) => [call(n), result(n)])
          )
          for (let i = 0; i < 2; i++) {
            // Deliberately broken wiring: the memory is thrown away with the loop.
            const loop = yield* TaskExecution.foreignLoop(binding)
            const prepared = yield* loop.prepare(history, model)
            const request: Model.ModelRequest = { parts: History.toParts(prepared), tools: tools.specs }
            const where = yield* loop.dispatch(request)
            yield* loop.receive(where, request, Model.response({ toolCalls: [call(9 + i)] }))
            yield* loop.toolResult(
              call(9 + i),
              Model.toolResult({ callId: `tool:${9 + i}:x`, name: "produce", content: "x", isError: false })
            )
          }
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, replies)))
        const summaries = sent.filter(
          (request) => request.parts[0]?._tag === "Text" && request.parts[0].role === "system"
        )
        assert.strictEqual(summaries.length, 2)
      })
    ))

  it("foreign_loop_out_of_order: a dispatch nothing prepared, a second prepare before the dispatch, or a result no answer asked for, is refused before the journal gets it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(world, Compaction.disabled)
        const folder = yield* journalFolder(world)
        yield* Effect.gen(function* () {
          const loop = yield* TaskExecution.foreignLoop(binding)
          const model = yield* Model.Model
          const request: Model.ModelRequest = { parts: taskParts, tools: tools.specs }
          const unprepared = yield* Effect.flip(loop.dispatch(request))
          assert.strictEqual(unprepared._tag, "LoopOutOfOrder")
          assert.strictEqual(journalBytes(folder, task), "")
          const stray = yield* Effect.flip(loop.toolResult(call(1), result(1)))
          assert.strictEqual(stray._tag, "LoopOutOfOrder")
          assert.strictEqual(journalBytes(folder, task), "")
          yield* loop.prepare(start, model)
          const twice = yield* Effect.flip(loop.prepare(start, model))
          assert.strictEqual(twice._tag, "LoopOutOfOrder")
          assert.notInclude(journalBytes(folder, task), "RequestDispatched")
          // In order, the same request goes through.
          const where = yield* loop.dispatch(request)
          assert.include(journalBytes(folder, task), '"_tag":"RequestDispatched"')
          // Once a request was dispatched the wiring is proven: a prepared request the loop gave up on is replaced.
          yield* loop.receive(where, request, Model.response({ text: "done" }))
          yield* loop.prepare(start, model)
          yield* loop.prepare(start, model)
          const next = yield* loop.dispatch(request)
          assert.deepStrictEqual(next, { task, turn: 2, step: 1 })
          assert.strictEqual(journalBytes(folder, task).split('"_tag":"RequestDispatched"').length - 1, 2)
        }).pipe(Effect.provide(turnLayer(world, task, script)))
      })
    ))

  it("foreign_loop_lost_request_resumed: a request left without an answer (the process died) is counted as lost by a new loop on the task, and the turn goes on", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(world, Compaction.disabled)
        const folder = yield* journalFolder(world)
        yield* Effect.gen(function* () {
          const model = yield* Model.Model
          const request: Model.ModelRequest = { parts: taskParts, tools: tools.specs }
          // The first process prepares and dispatches, then dies before the answer.
          const first = yield* TaskExecution.foreignLoop(binding)
          yield* first.prepare(start, model)
          yield* first.dispatch(request)
          const again = yield* TaskExecution.foreignLoop(binding)
          yield* again.prepare(start, model)
          const where = yield* again.dispatch(request)
          assert.deepStrictEqual(where, { task, turn: 1, step: 2 })
          yield* again.receive(where, request, Model.response({ text: "done" }))
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        const journal = tags(journalBytes(folder, task))
        assert.deepStrictEqual(journal, [
          "TurnOpened",
          "RequestDispatched",
          "TurnResumed",
          "RequestDispatched",
          "ResponseReceived",
          "TurnClosed"
        ])
      })
    ))

  it("control: on that journal, a request dispatched without resuming the turn is refused", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(world, Compaction.disabled)
        const folder = yield* journalFolder(world)
        yield* Effect.gen(function* () {
          const model = yield* Model.Model
          const first = yield* TaskExecution.foreignLoop(binding)
          yield* first.prepare(start, model)
          yield* first.dispatch({ parts: taskParts, tools: tools.specs })
          // Deliberately broken wiring: the next request journaled straight, as a loop that never resumes would.
          const journal = yield* Journal.Journal
          const measured = yield* Digest.measureText("the next request")
          const refused = yield* Effect.flip(
            journal.append({ _tag: "RequestDispatched", turn: 1, step: 2, parts: 1, ...measured })
          )
          assert.strictEqual(refused._tag, "JournalSequenceError")
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        assert.deepStrictEqual(tags(journalBytes(folder, task)), ["TurnOpened", "RequestDispatched"])
      })
    ))

  it("foreign_loop_writerless_refused: private offload without a writer is refused when the loop is made, nothing journaled", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.none(), [])
        const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([]), output: Option.none() })
        const binding = yield* EntryGate.bind(context)
        const folder = yield* journalFolder(world)
        const refused = yield* Effect.flip(
          TaskExecution.foreignLoop(binding, { offload }).pipe(Effect.provide(turnLayer(world, task, script)))
        )
        assert.strictEqual(refused._tag, "Unauthorized")
        assert.strictEqual(journalBytes(folder, task), "")
        // Control: the same binding without offload needs no writer.
        yield* TaskExecution.foreignLoop(binding).pipe(Effect.provide(turnLayer(world, task, script)))
      })
    ))
})

const otherTask = taskId("task-2")

/** Task-2, bound like task-1, for the stock executor's run beside the loop's. */
const bindOther = (world: World) =>
  Effect.gen(function* () {
    const scope = yield* world.scopeFor([world.privateRef], otherTask)
    const runtime = yield* FilesystemTaskRuntime.fromHost(world.host, { private: Option.some(world.privateRef), scope })
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return yield* EntryGate.bind(context, { policy: Compaction.disabled })
  })
