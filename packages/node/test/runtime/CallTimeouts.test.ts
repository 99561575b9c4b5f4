/**
 * Issue 17, finding 9: time limits for model calls and tool calls are
 * configuration (per tool, with a default); a call past its limit is
 * journaled as a tool-error result or a model failure, so a hung call never
 * hangs a turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { EntryGate, Executor, Journal, Model, TaskExecution, Timeouts, Tool } from "@tessera/runtime"
import { Cause, Duration, Effect, Exit, Option, Schema } from "effect"
import { journalFolder, start, turnLayer } from "./support/turns.ts"
import { platformLayer, runInWorld, task } from "./support/world.ts"

const hang = Tool.make({
  name: "hang",
  description: "Never finishes",
  input: Schema.Struct({}),
  handler: () => Effect.never
})
const hangPromise = Tool.make({
  name: "hangPromise",
  description: "Awaits a promise that never settles",
  input: Schema.Struct({}),
  handler: () => Effect.promise(() => new Promise<string>(() => {}))
})
const slow = Tool.make({
  name: "slow",
  description: "Answers after 150 ms",
  input: Schema.Struct({}),
  handler: () => Effect.as(Effect.sleep("150 millis"), "slow but done")
})
const tools = Tool.registry(hang, hangPromise, slow)

const call = (id: string, name: string) => Model.toolCall(id, name, {})
const timeouts: Timeouts.CallTimeouts = { tool: "50 millis", tools: { slow: "5 seconds" }, model: "200 millis" }

const entriesOf = (world: Parameters<Parameters<typeof runInWorld>[0]>[0]) =>
  Effect.flatMap(journalFolder(world), (folder) => Journal.readEntries({ folder, task })).pipe(
    Effect.provide(platformLayer)
  )

describe("call_timeouts", () => {
  it("a hung tool (Effect.never, a promise that never settles) becomes a TimedOut tool error, journaled, and the turn answers; a tool with its own longer limit finishes", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const script = [
          Model.response({ toolCalls: [call("h1", "hang"), call("h2", "hangPromise"), call("s1", "slow")] }),
          Model.response({ text: "done" })
        ]
        const started = Date.now()
        const outcome = yield* Executor.runTurn({ tools, maxSteps: 4, timeouts }, start).pipe(
          Effect.provide(turnLayer(world, task, script))
        )
        assert.strictEqual(outcome.text, "done")
        assert.isBelow(Date.now() - started, 4_000)
        const results = outcome.history.parts.filter((part) => part._tag === "ToolResult")
        assert.deepStrictEqual(
          results.map((part) => [part.callId, part.isError]),
          [
            ["h1", true],
            ["h2", true],
            ["s1", false]
          ]
        )
        assert.include(results[0]?.content, `tool "hang" did not finish within 50ms`)
        const resulted = (yield* entriesOf(world)).filter((entry) => entry._tag === "ToolResulted")
        assert.deepStrictEqual(
          resulted.map((entry) => [entry.callId, entry.failure]),
          [
            ["h1", "TimedOut"],
            ["h2", "TimedOut"],
            ["s1", undefined]
          ]
        )
      })
    ))

  it("a hung model call fails the step with ModelError Timeout, journaled as ModelFailed; the open turn then resumes and answers", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const script = (_request: Model.ModelRequest, index: number) =>
          index === 0 ? Effect.never : Model.response({ text: "answered on resume" })
        const layer = turnLayer(world, task, script)
        const { first, resumed } = yield* Effect.gen(function* () {
          const first = yield* Effect.exit(Executor.runTurn({ tools, maxSteps: 4, timeouts }, start))
          const resumed = yield* Executor.resumeTurn({ tools, maxSteps: 4, timeouts }, start)
          return { first, resumed }
        }).pipe(Effect.provide(layer))
        assert.isTrue(Exit.isFailure(first))
        if (Exit.isFailure(first)) {
          const error = Cause.findErrorOption(first.cause)
          assert.isTrue(Option.isSome(error) && error.value._tag === "ModelError" && error.value.reason === "Timeout")
        }
        assert.strictEqual(resumed.text, "answered on resume")
        const tags = (yield* entriesOf(world)).map((entry) =>
          entry._tag === "ModelFailed" ? `ModelFailed:${entry.reason}` : entry._tag
        )
        assert.deepStrictEqual(tags, [
          "TurnOpened",
          "RequestDispatched",
          "ModelFailed:Timeout",
          "TurnResumed",
          "RequestDispatched",
          "ResponseReceived",
          "TurnClosed"
        ])
      })
    ))

  it("summary requests sent by a beforeModelStep hook are limited too", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const summarizing: Executor.Hooks<Model.ModelError, Model.Model> = {
          beforeModelStep: (_context, history) =>
            Effect.as(
              Effect.flatMap(Effect.service(Model.Model), (model) =>
                model.generate({ parts: [Model.text("system", "summarize")], tools: [] })
              ),
              history
            )
        }
        const script = (request: Model.ModelRequest) =>
          request.parts[0]?._tag === "Text" && request.parts[0].text === "summarize"
            ? Effect.never
            : Model.response({ text: "unreachable" })
        const exit = yield* Effect.exit(
          Executor.runTurn({ tools, maxSteps: 4, timeouts, hooks: summarizing }, start).pipe(
            Effect.provide(turnLayer(world, task, script))
          )
        )
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const error = Cause.findErrorOption(exit.cause)
          assert.isTrue(Option.isSome(error) && error.value._tag === "ModelError" && error.value.reason === "Timeout")
        }
      })
    ))

  it("negative control: the same hung tool with the limits left out of the configuration (broken wiring built here) still hangs the turn, and the call stays owed", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const script = [Model.response({ toolCalls: [call("h1", "hang")] }), Model.response({ text: "done" })]
        const { timeouts: _dropped, ...withoutLimits } = { tools, maxSteps: 4, timeouts }
        const outcome = yield* Executor.runTurn(withoutLimits, start).pipe(
          Effect.timeoutOption("500 millis"),
          Effect.provide(turnLayer(world, task, script))
        )
        assert.isTrue(Option.isNone(outcome), "the turn did not finish")
        const tags = (yield* entriesOf(world)).map((entry) => entry._tag)
        assert.include(tags, "ToolCalled")
        assert.notInclude(tags, "ToolResulted")
      })
    ))

  it("the gated entry (TaskExecution.runTurn) passes the limits on to the executor", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.none(), [])
        const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([]), output: Option.none() })
        const binding = yield* EntryGate.bind(context)
        const script = [Model.response({ toolCalls: [call("h1", "hang")] }), Model.response({ text: "done" })]
        const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 4, timeouts }).pipe(
          Effect.timeoutOption("5 seconds"),
          Effect.provide(turnLayer(world, task, script))
        )
        assert.strictEqual(Option.map(outcome, (turn) => turn.text).pipe(Option.getOrUndefined), "done")
        const resulted = (yield* entriesOf(world)).filter((entry) => entry._tag === "ToolResulted")
        assert.deepStrictEqual(
          resulted.map((entry) => entry.failure),
          ["TimedOut"]
        )
      })
    ))

  it("limits resolve per tool, then the default, then none", () => {
    const limits: Timeouts.CallTimeouts = { tool: "1 second", tools: { slow: "3 seconds" } }
    assert.deepStrictEqual(Timeouts.forTool(limits, "slow"), Option.some(Duration.seconds(3)))
    assert.deepStrictEqual(Timeouts.forTool(limits, "other"), Option.some(Duration.seconds(1)))
    assert.deepStrictEqual(Timeouts.forTool({ tools: { slow: 10 } }, "other"), Option.none())
    assert.deepStrictEqual(Timeouts.forTool(undefined, "other"), Option.none())
    assert.deepStrictEqual(Timeouts.forModel(limits), Option.none())
  })
})
