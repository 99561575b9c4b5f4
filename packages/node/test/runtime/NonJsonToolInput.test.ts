/**
 * Issue 17, finding 6: a tool call whose input is not JSON (a buggy adapter's
 * `undefined`, cycle, bigint, function...) is refused at the model boundary
 * with a typed error naming the adapter's bug, and never reaches compaction.
 */
import { assert, describe, it } from "@effect/vitest"
import { Compaction, Executor, History, Journal, Model, Tool } from "@tessera/runtime"
import { Cause, Effect, Exit, Option } from "effect"
import * as fc from "fast-check"
import * as Planning from "../../../runtime/src/internal/compactionPlan.js"
import { journalFolder, start, tools, turnLayer } from "./support/turns.ts"
import { platformLayer, runInWorld, task, taskId } from "./support/world.ts"

const circular = (): Record<string, unknown> => {
  const value: Record<string, unknown> = { query: "x" }
  value.self = { back: value }
  return value
}

/** Inputs a buggy adapter might hand over, with the path and the finding the check must report. */
const badInputs: ReadonlyArray<readonly [label: string, input: () => unknown, path: string, found: RegExp]> = [
  ["undefined", () => undefined, "$", /^undefined$/],
  ["an undefined field", () => ({ query: undefined }), "$.query", /^undefined$/],
  ["a cycle", circular, "$.self.back", /cycle/],
  ["a bigint", () => ({ limit: 10n }), "$.limit", /bigint/],
  ["a function", () => ({ onDone: () => 1 }), "$.onDone", /function/],
  ["NaN", () => [1, Number.NaN], "$[1]", /non-finite/],
  ["a Date", () => ({ at: new Date(0) }), "$.at", /instance of Date/],
  // biome-ignore lint/suspicious/noSparseArray: the hole is the point
  ["a hole", () => [1, , 3], "$[1]", /empty slot/]
]

/** The turn's model: the first request asks for a call whose input is `input`, the next ones answer. */
const adapterReturning = (input: unknown) => (_request: Model.ModelRequest, index: number) =>
  index === 0
    ? Model.response({ toolCalls: [{ _tag: "ToolCall", id: "c1", name: "produce", input: input as never }] })
    : Model.response({ text: "done" })

const policy = Compaction.threshold({ measure: "bytes", limit: 10, keepRecent: 0, pieceLimit: 1_000 })

describe("non_json_tool_input", () => {
  it("each kind of non-JSON input fails the step with ModelError NonJsonToolInput naming the call, the path and the adapter, journaled as ModelFailed; nothing is appended", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        for (const [label, input, path, found] of badInputs) {
          const turnTask = `task-${label.replaceAll(/[^a-z]/g, "-")}`
          const id = taskId(turnTask)
          const exit = yield* Effect.gen(function* () {
            const outcome = yield* Effect.exit(Executor.runTurn({ tools, maxSteps: 4 }, start))
            const journal = yield* Journal.Journal
            return { outcome, state: yield* journal.state }
          }).pipe(Effect.provide(turnLayer(world, id, adapterReturning(input()))))
          assert.isTrue(Exit.isFailure(exit.outcome), label)
          if (Exit.isSuccess(exit.outcome)) continue
          const error = Cause.findErrorOption(exit.outcome.cause)
          assert.isTrue(Option.isSome(error), `${label}: a typed failure, not a defect`)
          if (Option.isNone(error)) continue
          assert.strictEqual(error.value._tag, "ModelError", label)
          if (error.value._tag !== "ModelError") continue
          assert.strictEqual(error.value.reason, "NonJsonToolInput", label)
          assert.include(error.value.detail, `tool call "c1" (tool "produce")`, label)
          assert.include(error.value.detail, `${path} is `, label)
          assert.match((error.value.detail.split(`${path} is `)[1] ?? "").split(";")[0] ?? "", found, label)
          assert.include(error.value.detail, "adapter", label)
          const entries = yield* Journal.readEntries({ folder: yield* journalFolder(world), task: id }).pipe(
            Effect.provide(platformLayer)
          )
          const tags = entries.map((entry) => entry._tag)
          assert.deepStrictEqual(tags, ["TurnOpened", "RequestDispatched", "ModelFailed"], label)
          const failed = entries.at(-1)
          assert.strictEqual(failed?._tag === "ModelFailed" ? failed.reason : "", "NonJsonToolInput", label)
        }
      })
    ))

  it("negative control: without the boundary check (a step built in this test), the same input reaches compaction, which dies with an untyped TypeError", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        for (const [label, input] of badInputs.filter(([label]) =>
          ["a cycle", "a bigint", "undefined"].includes(label)
        )) {
          // The broken wiring: the adapter's response goes into the history unchecked.
          const unchecked = Effect.gen(function* () {
            const model = yield* Model.Model
            const response = yield* model.generate({ parts: History.toParts(start), tools: tools.specs })
            const history = History.append(History.append(start, response.toolCalls), [
              Model.toolResult({ callId: "c1", name: "produce", content: "r", isError: false })
            ])
            return Planning.plan(History.append(history, [Model.text("user", "next")]), policy)
          })
          const exit = yield* Effect.exit(
            unchecked.pipe(Effect.provide(turnLayer(world, task, adapterReturning(input()))))
          )
          assert.isTrue(Exit.isFailure(exit), label)
          if (Exit.isFailure(exit)) {
            assert.isTrue(Option.isNone(Cause.findErrorOption(exit.cause)), `${label}: no typed error`)
            assert.instanceOf(Cause.squash(exit.cause), TypeError, label)
          }
        }
      })
    ))

  it("a valid call still runs: the check lets JSON through", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const outcome = yield* Executor.runTurn({ tools, maxSteps: 4 }, start).pipe(
          Effect.provide(turnLayer(world, task, adapterReturning({ size: 3, fill: "z" })))
        )
        assert.strictEqual(outcome.text, "done")
      })
    ))
})

// JSON's own round trip is the oracle: a value is JSON exactly when writing and reading it back gives it again.
const roundTrips = (value: unknown): boolean => {
  try {
    const written = JSON.stringify(value)
    return written !== undefined && fc.stringify(JSON.parse(written)) === fc.stringify(value)
  } catch {
    return false
  }
}

const badLeaf = fc.constantFrom<unknown>(
  undefined,
  10n,
  () => 1,
  Symbol("s"),
  Number.NaN,
  Number.POSITIVE_INFINITY,
  new Date(0),
  new Map()
)
const goodLeaf = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0)),
  fc.string()
)
const key = fc.string().filter((k) => k !== "__proto__")
const tree = (leaf: fc.Arbitrary<unknown>) =>
  fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      fc.array(tie("node"), { maxLength: 4 }),
      // Plain objects: the oracle's printer tells a null prototype apart, JSON does not.
      fc.dictionary(key, tie("node"), { maxKeys: 4, noNullPrototype: true })
    )
  })).node

describe("Tool.findNotJson", () => {
  it("property: a value is accepted exactly when it survives JSON's own round trip", () => {
    fc.assert(
      fc.property(tree(fc.oneof({ weight: 6, arbitrary: goodLeaf }, { weight: 1, arbitrary: badLeaf })), (value) => {
        assert.strictEqual(Tool.isJson(value), roundTrips(value), fc.stringify(value))
      }),
      { numRuns: 500 }
    )
  })

  it("property: every JSON value is accepted", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.isTrue(Option.isNone(Tool.findNotJson(value)))
      })
    )
  })

  it("a cycle is found, a shared (acyclic) object is accepted, and deep nesting does not overflow", () => {
    assert.isTrue(Option.isSome(Tool.findNotJson(circular())))
    const shared = { a: 1 }
    assert.isTrue(Tool.isJson({ left: shared, right: shared }))
    assert.isTrue(Tool.isJson(Object.assign(Object.create(null), { a: [1, "b"] })))
    let deep: unknown = 1
    for (let index = 0; index < 100_000; index++) deep = [deep]
    assert.isTrue(Tool.isJson(deep))
  })
})
