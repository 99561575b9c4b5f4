/**
 * Issue 35: a plain JavaScript caller is not held to the types, so every
 * public entry it reaches checks the shape it was handed and refuses a wrong
 * one with a typed `InvalidInput` naming the field, where a TypeScript
 * caller would have had a type error; nothing is coerced.
 *
 * - A tool result that is not JSON (a `Map`, a cycle, a `bigint`,
 *   `undefined`, a `Date`, `NaN`, ...) becomes an error result naming the
 *   tool and the path of the offending value, and the turn goes on.
 * - `ArtifactPathPolicy.fromLocations` refuses a relative, NUL-bearing,
 *   non-normalised or non-string location instead of making a policy that
 *   refuses nothing.
 * - The turn entries (`Executor`, `TaskExecution`), `Tool.make` and
 *   `Tool.registry`, a hand-built tool's outcome, `Compaction.threshold`,
 *   `ToolResults.inlineLimitHooks`, `Timeouts` and `LocalHarness.open` refuse their options'
 *   wrong shapes before anything is journaled, sent or created.
 *
 * Casts stand in for the JavaScript caller. Each negative control runs the
 * same input through the unchecked wiring (rebuilt in this file from the
 * exported pieces, or as the old code was) and shows the guarantee failing.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactOffload, ArtifactPathPolicy } from "@tessera/artifacts"
import { HostAuthority, InvalidInput } from "@tessera/core"
import { LocalHarness, NodeDurableFiles, StateNamespace } from "@tessera/node"
import {
  Compaction,
  EntryGate,
  Executor,
  type History,
  Journal,
  Model,
  TaskExecution,
  Timeouts,
  Tool,
  ToolResults
} from "@tessera/runtime"
import { Cause, Effect, Exit, Layer, Option, Result, Schema } from "effect"
import * as fc from "fast-check"
import * as Inline from "../../../runtime/src/internal/inlineLimit.js"
import { taskHooks } from "../../../runtime/src/internal/taskHooks.js"
import { journalBytes, journalFolder, requests, start, tools, turnLayer } from "./support/turns.ts"
import { platformLayer, runInWorld, task, taskId, type World } from "./support/world.ts"

/** The typed failure of an exit, or a failure of the test naming what happened instead. */
const typedFailure = <A, E>(exit: Exit.Exit<A, E>, label: string): E => {
  if (Exit.isSuccess(exit)) throw new Error(`${label}: expected a failure, got a success`)
  const error = Cause.findErrorOption(exit.cause)
  if (Option.isNone(error)) throw new Error(`${label}: expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return error.value
}

const assertInvalid = (error: unknown, entry: string | RegExp, field: string, label: string) => {
  assert.instanceOf(error, InvalidInput.InvalidInput, label)
  const invalid = error as InvalidInput.InvalidInput
  if (typeof entry === "string") assert.strictEqual(invalid.entry, entry, label)
  else assert.match(invalid.entry, entry, label)
  assert.strictEqual(invalid.field, field, label)
}

/** What a synchronous constructor threw, or a failure of the test when it returned. */
const thrown = (body: () => unknown, label: string): unknown => {
  try {
    body()
  } catch (error) {
    return error
  }
  throw new Error(`${label}: expected a throw`)
}

// ---------------------------------------------------------------------------------------------------------------------
// Tool results
// ---------------------------------------------------------------------------------------------------------------------

class Widget {
  readonly size = 3
}

/** The values a JavaScript handler may return that are not JSON, with what the refusal must say was found. */
const badKinds: ReadonlyArray<readonly [label: string, make: () => unknown, found: RegExp]> = [
  ["a Map", () => new Map([["a", 1]]), /^an instance of Map$/],
  ["a Set", () => new Set([1]), /^an instance of Set$/],
  ["a Date", () => new Date(0), /^an instance of Date$/],
  ["a class instance", () => new Widget(), /^an instance of Widget$/],
  ["a bigint", () => 10n, /^a bigint \(10n\)$/],
  ["undefined", () => undefined, /^undefined$/],
  ["a function", () => () => 1, /^a function$/],
  ["a symbol", () => Symbol("s"), /^a symbol$/],
  ["NaN", () => Number.NaN, /^a non-finite number \(NaN\)$/],
  ["Infinity", () => Number.POSITIVE_INFINITY, /^a non-finite number \(Infinity\)$/],
  ["-Infinity", () => Number.NEGATIVE_INFINITY, /^a non-finite number \(-Infinity\)$/],
  ["a cycle", () => cycleMarker, /cycle/],
  ["a hole", () => holeMarker, /^an empty slot$/]
]
const cycleMarker = Symbol("plant a reference to the root here")
const holeMarker = Symbol("leave an empty slot here")

type Step =
  | { readonly kind: "index"; readonly before: ReadonlyArray<unknown>; readonly after: ReadonlyArray<unknown> }
  | { readonly kind: "key"; readonly key: string; readonly siblings: Readonly<Record<string, unknown>> }

const sibling = fc.jsonValue({ maxDepth: 2 })
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant("index" as const),
    before: fc.array(sibling, { maxLength: 3 }),
    after: fc.array(sibling, { maxLength: 3 })
  }),
  fc.record({
    kind: fc.constant("key" as const),
    key: fc.oneof(fc.constantFrom("items", "when", "a b", "0", "$x", "é"), fc.string({ maxLength: 5 })),
    siblings: fc.dictionary(fc.string({ maxLength: 4 }), sibling, { maxKeys: 3 })
  })
)
const planting = fc.record({ spine: fc.array(step, { maxLength: 5 }), kind: fc.nat({ max: badKinds.length - 1 }) })

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * A JSON structure along `spine` with the non-JSON value of `kind` planted at its end, and the path the
 * refusal must name (`result`, `result.items[3].when`, `result["a b"]`). Everything around it is JSON.
 */
const plant = (input: { readonly spine: ReadonlyArray<Step>; readonly kind: number }) => {
  const [label, make, found] = badKinds[input.kind] as (typeof badKinds)[number]
  const leaf = make()
  const last = input.spine.at(-1)
  // A hole needs an array slot and a cycle a container to point back at.
  const spine: ReadonlyArray<Step> =
    leaf === holeMarker && last?.kind !== "index"
      ? [...input.spine, { kind: "index", before: [1], after: [] }]
      : leaf === cycleMarker && last === undefined
        ? [{ kind: "key", key: "self", siblings: {} }]
        : input.spine
  let expected = "result"
  let slot: { container: Record<string | number, unknown>; at: string | number } | undefined
  const build = (depth: number): unknown => {
    const here = spine[depth]
    if (here === undefined) return leaf
    if (here.kind === "index") {
      expected += `[${here.before.length}]`
      const child = build(depth + 1)
      const container: Array<unknown> = [...here.before, child, ...here.after]
      if (depth === spine.length - 1) slot = { container: container as never, at: here.before.length }
      return container
    }
    expected += identifier.test(here.key) ? `.${here.key}` : `[${JSON.stringify(here.key)}]`
    const child = build(depth + 1)
    const container = Object.fromEntries([
      ...Object.entries(here.siblings).filter(([key]) => key !== here.key),
      [here.key, child]
    ])
    if (depth === spine.length - 1) slot = { container, at: here.key }
    return container
  }
  const value = build(0)
  if (leaf === cycleMarker && slot !== undefined) slot.container[slot.at] = value
  if (leaf === holeMarker && slot !== undefined) delete slot.container[slot.at]
  return { label, value, path: expected, found }
}

const returning = (value: unknown) =>
  Tool.registry(
    Tool.make({
      name: "lookup",
      description: "returns whatever the test planted",
      input: Schema.Struct({}),
      handler: () => Effect.succeed(value as Tool.ToolOutput)
    })
  )

const callLookup = Model.toolCall("c1", "lookup", {})

/** The text the old code gave the model for a handler's output: `JSON.stringify`, bigints as `"10n"`, else `String`. */
const oldRender = (output: unknown): string => {
  if (typeof output === "string") return output
  try {
    return JSON.stringify(output) ?? "null"
  } catch {
    try {
      return (
        JSON.stringify(output, (_key, inner: unknown) => (typeof inner === "bigint" ? `${inner}n` : inner)) ?? "null"
      )
    } catch {
      return String(output)
    }
  }
}

/** The broken wiring: a tool like `returning(value)` whose output is rendered the old way. */
const oldTool = (value: unknown): Tool.Registry => {
  const made = returning(value).tools.get("lookup") as Tool.Tool
  return Tool.registry({
    ...made,
    run: () => Effect.succeed({ content: oldRender(value), failure: Option.none() })
  })
}

describe("plain JavaScript callers: tool results that are not JSON", () => {
  it("property: a non-JSON value planted at a random path is refused as InvalidInput naming the tool and that exact path; the model gets a Defect error result, nothing coerced", () => {
    fc.assert(
      fc.property(planting, (input) => {
        const { found, label, path: expected, value } = plant(input)
        const refused = Tool.resultText("lookup", value)
        assert.isTrue(Result.isFailure(refused), label)
        if (Result.isSuccess(refused)) return
        assertInvalid(refused.failure, 'tool "lookup"', expected, label)
        assert.match(refused.failure.value, found, label)
        const outcome = Effect.runSync(Tool.run(returning(value), callLookup))
        assert.deepStrictEqual(outcome.failure, Option.some("Defect"), label)
        assert.strictEqual(outcome.content, refused.failure.message, label)
        assert.isTrue(outcome.content.startsWith(`tool "lookup": invalid ${expected} `), outcome.content)
      }),
      { numRuns: 300 }
    )
  })

  it("negative control: rendered the old way (JSON.stringify-style, built here), the same planted values pass as ordinary results and are silently changed", () => {
    fc.assert(
      fc.property(planting, (input) => {
        const { label, value } = plant(input)
        const outcome = Effect.runSync(Tool.run(oldTool(value), callLookup))
        assert.isTrue(Option.isNone(outcome.failure), `${label}: the old rendering reports nothing`)
      }),
      { numRuns: 100 }
    )
    // What the model was given instead of the value.
    assert.strictEqual(oldRender({ cache: new Map([["a", 1]]) }), '{"cache":{}}')
    assert.strictEqual(oldRender({ limit: 10n }), '{"limit":"10n"}')
    assert.strictEqual(oldRender({ when: new Date(0) }), '{"when":"1970-01-01T00:00:00.000Z"}')
    assert.strictEqual(oldRender({ gone: undefined, kept: 1 }), '{"kept":1}')
    assert.strictEqual(oldRender([Number.NaN]), "[null]")
  })

  it("a string result stays exactly as it is, and a JSON value is written as JSON.stringify writes it", () => {
    for (const text of ["", "plain", '{"looks":"like json"}', "10n", "\u0000\ud800"]) {
      assert.deepStrictEqual(Tool.resultText("lookup", text), Result.succeed(text))
      assert.strictEqual(Effect.runSync(Tool.run(returning(text), callLookup)).content, text)
    }
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        // A top-level string is the text itself (above); everything else is its JSON.
        const expected = typeof value === "string" ? value : JSON.stringify(value)
        assert.deepStrictEqual(Tool.resultText("lookup", value), Result.succeed(expected))
      }),
      { numRuns: 300 }
    )
  })

  it("what is checked is what is written: a getter is read once, and no toJSON is ever called", () => {
    let reads = 0
    const shifty = {
      get size() {
        reads++
        return reads === 1 ? 1 : new Map()
      }
    }
    assert.deepStrictEqual(Tool.resultText("lookup", shifty), Result.succeed('{"size":1}'))
    assert.strictEqual(reads, 1)
    let called = false
    const dressed = Object.defineProperty({ a: 1 }, "toJSON", {
      value: () => {
        called = true
        return "replaced"
      },
      enumerable: false
    })
    assert.deepStrictEqual(Tool.resultText("lookup", dressed), Result.succeed('{"a":1}'))
    assert.isFalse(called)
    // JSON.stringify itself would have called it: the text the model saw was not the value.
    assert.strictEqual(JSON.stringify(dressed), '"replaced"')
  })

  it("in a turn: the model receives an error result naming result.items[3].when, the journal records Defect, and the turn answers", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const items = [{ id: 0 }, { id: 1 }, { id: 2 }, { id: 3, when: new Date(0) }]
        const script = (_request: Model.ModelRequest, index: number) =>
          index === 0 ? Model.response({ toolCalls: [callLookup] }) : Model.response({ text: "done" })
        const sent = yield* Effect.gen(function* () {
          const outcome = yield* Executor.runTurn({ tools: returning({ items }), maxSteps: 4 }, start)
          assert.strictEqual(outcome._tag, "Answered")
          assert.strictEqual(outcome.text, "done")
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        const result = sent[1]?.parts.find((part) => part._tag === "ToolResult")
        assert.strictEqual(result?._tag, "ToolResult")
        if (result?._tag !== "ToolResult") return
        assert.isTrue(result.isError)
        assert.include(
          result.content,
          'tool "lookup": invalid result.items[3].when an instance of Date: not a JSON value'
        )
        assert.notInclude(result.content, "1970-01-01")
        const entries = yield* Journal.readEntries({ folder: yield* journalFolder(world), task }).pipe(
          Effect.provide(platformLayer)
        )
        const resulted = entries.find((entry) => entry._tag === "ToolResulted")
        assert.deepStrictEqual(resulted?._tag === "ToolResulted" ? [resulted.isError, resulted.failure] : [], [
          true,
          "Defect"
        ])
        assert.strictEqual(entries.at(-1)?._tag, "TurnClosed")
      })
    ))

  it("a hand-built tool whose run returns a non-string content, a bare value or throws gets a Defect result naming it", () => {
    const base = returning("x").tools.get("lookup") as Tool.Tool
    const cases: ReadonlyArray<readonly [string, Tool.Tool["run"], string]> = [
      ["content", () => Effect.succeed({ content: { a: 1 }, failure: Option.none() } as never), "outcome.content"],
      ["failure", () => Effect.succeed({ content: "x", failure: "Failed" } as never), "outcome.failure"],
      ["outcome", () => Effect.succeed("text" as never), "outcome"],
      ["bare", (() => "text") as never, "run"]
    ]
    for (const [label, run, field] of cases) {
      const outcome = Effect.runSync(Tool.run(Tool.registry({ ...base, run }), callLookup))
      assert.deepStrictEqual(outcome.failure, Option.some("Defect"), label)
      assert.include(outcome.content, `tool "lookup": invalid ${field} `, label)
    }
    const throwing = Effect.runSync(
      Tool.run(
        Tool.registry({
          ...base,
          run: () => {
            throw new Error("boom")
          }
        }),
        callLookup
      )
    )
    assert.deepStrictEqual([throwing.failure, throwing.content], [Option.some("Defect"), 'tool "lookup" crashed: boom'])
  })

  it("negative control: dispatched as the old Tool.run did (the tool's own run, built here), the hand-built outcome's object reaches the result's content", () => {
    const base = returning("x").tools.get("lookup") as Tool.Tool
    const handBuilt: Tool.Tool = {
      ...base,
      run: () => Effect.succeed({ content: { a: 1 }, failure: Option.none() } as never)
    }
    const oldRun = (registry: Tool.Registry, call: Model.ToolCallPart) =>
      (registry.tools.get(call.name) as Tool.Tool).run(call.input)
    const outcome = Effect.runSync(oldRun(Tool.registry(handBuilt), callLookup))
    const part = Model.toolResult({ callId: "c1", name: base.name, content: outcome.content, isError: false })
    assert.notStrictEqual(typeof part.content, "string")
    assert.isTrue(Option.isNone(outcome.failure))
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// ArtifactPathPolicy.fromLocations
// ---------------------------------------------------------------------------------------------------------------------

/** The old constructor, as it was: the locations taken as given. */
const oldFromLocations = (
  locations: ArtifactPathPolicy.InternalLocations
): ArtifactPathPolicy.ArtifactPathPolicyShape => ({
  isInternalState: (target) =>
    locations.stateLocations.some((location) => ArtifactPathPolicy.isAtOrBelow(location, target)),
  isUnderInternalRoot: (target) => ArtifactPathPolicy.isAtOrBelow(locations.internalRoot, target)
})

const nodeLayer = Layer.merge(NodeServices.layer, NodeDurableFiles.layer)

const hostFolder = () => {
  const folder = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-policy-")))
  const hostState = path.join(folder, "host-state")
  fs.mkdirSync(hostState)
  return { folder, hostState, cleanup: () => fs.rmSync(folder, { recursive: true, force: true }) }
}

/** An offload aimed at the host's credentials file (an artifact root inside the host's state). */
const offloadIntoCredentials = (hostState: string) =>
  ArtifactOffload.offload({
    content: `secret-ish\n${"x".repeat(2_000)}`,
    threshold: 64,
    root: hostState,
    target: "credentials.json",
    readTool: "read_artifact"
  })

const absolute = fc
  .array(fc.stringMatching(/^[a-z0-9_-]{1,6}$/), { minLength: 1, maxLength: 4 })
  .map((segments) => `/${segments.join("/")}`)
const badLocation: fc.Arbitrary<unknown> = fc.oneof(
  // Relative (no leading separator, no drive): matches no absolute target.
  fc.stringMatching(/^[a-z0-9_.-][a-z0-9_./-]{0,10}$/).filter((text) => !/^[A-Za-z]:/.test(text)),
  // NUL anywhere in an absolute path.
  fc.tuple(absolute, fc.nat()).map(([text, at]) => {
    const cut = 1 + (at % text.length)
    return `${text.slice(0, cut)}\u0000${text.slice(cut)}`
  }),
  // Not normalised: `.`, `..` or an empty segment compares lexically with nothing.
  fc.tuple(absolute, fc.constantFrom("/../x", "/./x", "//x", "/..")).map(([text, tail]) => `${text}${tail}`),
  // Not a string at all.
  fc.oneof(fc.integer(), fc.constant(null), fc.constant(undefined), fc.constant({}), fc.array(fc.string()))
)

describe("plain JavaScript callers: ArtifactPathPolicy.fromLocations", () => {
  it("property: a relative, NUL-bearing, non-normalised or non-string location anywhere is InvalidInput naming its field", () => {
    fc.assert(
      fc.property(
        badLocation,
        fc.array(absolute, { maxLength: 4 }),
        fc.nat({ max: 4 }),
        absolute,
        (bad, good, at, root) => {
          const inRoot = at === 0 || good.length === 0
          const index = inRoot ? -1 : at % (good.length + 1)
          const stateLocations = inRoot ? good : [...good.slice(0, index), bad, ...good.slice(index)]
          const made = ArtifactPathPolicy.fromLocations({
            internalRoot: (inRoot ? bad : root) as string,
            stateLocations: stateLocations as Array<string>
          })
          assert.isTrue(Result.isFailure(made), fc.stringify(bad))
          if (Result.isFailure(made)) {
            assertInvalid(
              made.failure,
              "ArtifactPathPolicy.fromLocations",
              inRoot ? "internalRoot" : `stateLocations[${index}]`,
              fc.stringify(bad)
            )
          }
        }
      ),
      { numRuns: 300 }
    )
    const noList = ArtifactPathPolicy.fromLocations({ internalRoot: "/srv" } as never)
    assert.isTrue(Result.isFailure(noList) && noList.failure.field === "stateLocations")
    const none = ArtifactPathPolicy.fromLocations(undefined as never)
    assert.isTrue(Result.isFailure(none) && none.failure.field === "locations")
    for (const accepted of ["/", "/srv/state/", "C:\\state\\x", "C:/state", "\\\\server\\share\\state"]) {
      assert.isTrue(
        Result.isSuccess(ArtifactPathPolicy.fromLocations({ internalRoot: accepted, stateLocations: [] })),
        accepted
      )
    }
  })

  it("a host giving host-state relative gets InvalidInput from the layer and nothing is written; the absolute locations refuse the write", () =>
    Effect.gen(function* () {
      const { cleanup, hostState } = hostFolder()
      try {
        const relative = ArtifactPathPolicy.layerFromLocations({
          internalRoot: "host-state",
          stateLocations: ["host-state/credentials.json"]
        })
        const exit = yield* Effect.exit(offloadIntoCredentials(hostState).pipe(Effect.provide(relative)))
        assertInvalid(typedFailure(exit, "relative"), "ArtifactPathPolicy.fromLocations", "internalRoot", "relative")
        assert.isFalse(fs.existsSync(path.join(hostState, "credentials.json")))
        const absoluteLayer = ArtifactPathPolicy.layerFromLocations({
          internalRoot: hostState,
          stateLocations: [path.join(hostState, "credentials.json")]
        })
        const refused = yield* offloadIntoCredentials(hostState).pipe(Effect.provide(absoluteLayer))
        assert.strictEqual(refused._tag, "Inline")
        assert.strictEqual(
          refused._tag === "Inline" ? Option.getOrUndefined(refused.reason)?._tag : "",
          "ArtifactInternalState"
        )
        assert.isFalse(fs.existsSync(path.join(hostState, "credentials.json")))
      } finally {
        cleanup()
      }
    }).pipe(Effect.provide(nodeLayer)))

  it("negative control: the old constructor (built here) accepts host-state and lets the write to host-state/credentials.json through", () =>
    Effect.gen(function* () {
      const { cleanup, hostState } = hostFolder()
      try {
        const old = ArtifactPathPolicy.layer(
          oldFromLocations({ internalRoot: "host-state", stateLocations: ["host-state/credentials.json"] })
        )
        const written = yield* offloadIntoCredentials(hostState).pipe(Effect.provide(old))
        assert.strictEqual(written._tag, "Offloaded")
        assert.isTrue(fs.existsSync(path.join(hostState, "credentials.json")))
      } finally {
        cleanup()
      }
    }).pipe(Effect.provide(nodeLayer)))
})

// ---------------------------------------------------------------------------------------------------------------------
// Turn entries
// ---------------------------------------------------------------------------------------------------------------------

/** A model that keeps asking for the `produce` tool, for as long as it is asked (up to 6 requests). */
const keepsCalling = (_request: Model.ModelRequest, index: number) =>
  index < 6
    ? Model.response({ toolCalls: [Model.toolCall(`c${index + 1}`, "produce", { size: 1, fill: "x" })] })
    : Model.response({ text: "done" })

const good: Executor.TurnConfig = { tools, maxSteps: 4 }

/** Wrong shapes a JavaScript caller hands `Executor.runTurn`, with the field the refusal must name. */
const badTurns: ReadonlyArray<readonly [field: string, config: unknown, history?: unknown]> = [
  ["config", undefined],
  ["tools", { maxSteps: 4 }],
  ["tools.tools", { tools: [tools.tools.get("produce")], maxSteps: 4 }],
  ["tools.specs", { tools: { tools: tools.tools }, maxSteps: 4 }],
  ['tools.tools["produce"].name', { tools: { tools: new Map([["produce", {}]]), specs: [] }, maxSteps: 4 }],
  [
    'tools.tools["produce"].run',
    { tools: { tools: new Map([["produce", { ...tools.tools.get("produce"), run: 1 }]]), specs: [] }, maxSteps: 4 }
  ],
  ["maxSteps", { tools }],
  ["maxSteps", { tools, maxSteps: "4" }],
  ["maxSteps", { tools, maxSteps: 0 }],
  ["maxSteps", { tools, maxSteps: Number.NaN }],
  ["timeouts.tool", { ...good, timeouts: { tool: "soon" } }],
  ["timeouts.model", { ...good, timeouts: { model: -5 } }],
  ['timeouts.tools["produce"]', { ...good, timeouts: { tools: { other: 5, produce: true } } }],
  ['timeouts.tools["produce"]', { ...good, timeouts: { tools: { produce: "-Infinity" } } }],
  ["hooks.onToolResult", { ...good, hooks: { onToolResult: 5 } }],
  ["hooks", { ...good, hooks: "none" }],
  ["onEvent", { ...good, onEvent: "log" }],
  ["recorder.resulted", { ...good, recorder: { opened: () => 1, rewritten: () => 1, responded: () => 1 } }],
  ["history", good, undefined],
  ["history.parts", good, { task: [] }],
  ["history.summary", good, { task: [], parts: [], summary: "old" }]
]

describe("plain JavaScript callers: turn entries", () => {
  it("Executor.runTurn, resumeTurn and resumeRebuilt refuse each wrong shape with InvalidInput naming the field: no model request, no journal byte", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const folder = yield* journalFolder(world)
        let index = 0
        for (const [field, config, history] of badTurns) {
          const id = taskId(`bad-${index++}`)
          const given = (history === undefined && field !== "history" ? start : history) as History.History
          for (const entry of ["runTurn", "resumeTurn"] as const) {
            const sent = yield* Effect.gen(function* () {
              const exit = yield* Effect.exit(Executor[entry](config as Executor.TurnConfig, given))
              assertInvalid(typedFailure(exit, `${entry} ${field}`), `Executor.${entry}`, field, `${entry} ${field}`)
              return yield* requests
            }).pipe(Effect.provide(turnLayer(world, id, keepsCalling)))
            assert.strictEqual(sent.length, 0, `${entry} ${field}: no request`)
            assert.strictEqual(journalBytes(folder, id), "", `${entry} ${field}: no journal entry`)
          }
        }
        // resumeRebuilt checks its configuration and both histories it may continue from.
        for (const [field, config, rebuilt] of [
          ["maxSteps", { tools }, { turn: 1, history: start, lostRequest: Option.none() }],
          ["rebuilt.history.parts", good, { turn: 1, history: { task: [] }, lostRequest: Option.none() }],
          [
            "rebuilt.lostRequest.history",
            good,
            { turn: 1, history: start, lostRequest: Option.some({ step: 1, history: null }) }
          ]
        ] as const) {
          const id = taskId(`bad-rebuilt-${index++}`)
          const sent = yield* Effect.gen(function* () {
            const exit = yield* Effect.exit(Executor.resumeRebuilt(config as never, rebuilt as never))
            assertInvalid(typedFailure(exit, field), "Executor.resumeRebuilt", field, field)
            return yield* requests
          }).pipe(Effect.provide(turnLayer(world, id, keepsCalling)))
          assert.strictEqual(sent.length, 0, field)
          assert.strictEqual(journalBytes(folder, id), "", field)
        }
        // The good configuration runs: the checks refuse only wrong shapes.
        const outcome = yield* Executor.runTurn({ ...good, maxSteps: 8 }, start).pipe(
          Effect.provide(turnLayer(world, taskId("good"), keepsCalling))
        )
        assert.strictEqual(outcome.steps, 7)
      })
    ))

  it("negative control: the unchecked turn (openTurn + continueTurn, built here) dies untyped, or runs past the limit, on the same shapes", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const folder = yield* journalFolder(world)
        const unchecked = (config: unknown) =>
          Effect.gen(function* () {
            const journal = yield* Journal.Journal
            const opened = yield* journal.openTurn
            return yield* Executor.continueTurn(
              config as Executor.TurnConfig,
              { task: journal.task, turn: opened.turn, firstStep: 1 },
              start
            )
          })
        for (const [label, config] of [
          ["tools", { maxSteps: 4 }],
          ["timeouts.tool", { ...good, timeouts: { tool: "soon" } }],
          ["hooks.onToolResult", { ...good, hooks: { onToolResult: 5 } }]
        ] as const) {
          const id = taskId(`unchecked-${label.replaceAll(".", "-")}`)
          const exit = yield* Effect.exit(unchecked(config).pipe(Effect.provide(turnLayer(world, id, keepsCalling))))
          assert.isTrue(Exit.isFailure(exit), label)
          if (Exit.isFailure(exit)) assert.isTrue(Option.isNone(Cause.findErrorOption(exit.cause)), `${label}: untyped`)
          // The turn was opened (and for the limit, the call journaled) before it died: it is left open.
          assert.include(journalBytes(folder, id), "TurnOpened", label)
        }
        const noLimit = yield* unchecked({ tools }).pipe(
          Effect.provide(turnLayer(world, taskId("unchecked-max-steps"), keepsCalling))
        )
        assert.strictEqual(noLimit.steps, 7, "without maxSteps the turn takes every step the model asks for")
        // The unchecked limit getter itself throws an untyped error where the turn reads it.
        assert.notInstanceOf(
          thrown(() => Timeouts.forTool({ tool: "soon" } as never, "produce"), "forTool"),
          InvalidInput.InvalidInput
        )
      })
    ))

  it("Timeouts.decode accepts every form of duration and names the wrong limit", () => {
    for (const fine of [
      undefined,
      {},
      { model: 5, tool: "2 seconds", tools: { produce: [1, 0] } },
      { tool: "Infinity" }
    ]) {
      assert.isTrue(Result.isSuccess(Timeouts.decode("test")(fine as never)), fc.stringify(fine))
    }
    const wrong = Timeouts.decode("test", "limits")({ tools: { "read file": "soon" } } as never)
    assert.isTrue(Result.isFailure(wrong))
    if (Result.isFailure(wrong)) assertInvalid(wrong.failure, "test", 'limits.tools["read file"]', "tools")
  })
})

/** A bound task on the world's runtime (private volume and output), with compaction disabled. */
const bound = (world: World) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef), [world.privateRef, world.outputRef])
    const scope = yield* world.scopeFor([world.privateRef, world.outputRef])
    const context = yield* runtime.bindTask({ scope, output: Option.some(world.outputRef) })
    return { context, binding: yield* EntryGate.bind(context, { policy: Compaction.disabled }) }
  })

const offload = { threshold: 1_000, readTool: "read_artifact", destination: "Output" } as const

describe("plain JavaScript callers: TaskExecution entries", () => {
  it("runTurn behind the gate refuses a wrong offload, inlineLimit or durable with InvalidInput naming the field: no request, no journal byte", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { binding } = yield* bound(world)
        const folder = yield* journalFolder(world)
        const cases: ReadonlyArray<readonly [string, unknown]> = [
          ["offload.destination", { ...good, offload: { ...offload, destination: "Privat" } }],
          ["offload.threshold", { ...good, offload: { ...offload, threshold: "1000" } }],
          ["offload.readTool", { ...good, offload: { ...offload, readTool: "" } }],
          ["offload.abstractBytes", { ...good, offload: { ...offload, abstractBytes: -1 } }],
          ["offload", { ...good, offload: true }],
          ["inlineLimit", { ...good, inlineLimit: "10" }],
          ["inlineLimit", { ...good, inlineLimit: Number.NaN }],
          ["durable", { ...good, durable: "yes" }],
          ["maxSteps", { tools, offload }]
        ]
        for (const [field, config] of cases) {
          const sent = yield* Effect.gen(function* () {
            const exit = yield* Effect.exit(TaskExecution.runTurn(binding, start, config as never))
            assertInvalid(typedFailure(exit, field), /^TaskExecution \(Turn entry\)$/, field, field)
            return yield* requests
          }).pipe(Effect.provide(turnLayer(world, task, keepsCalling)))
          assert.strictEqual(sent.length, 0, field)
          assert.strictEqual(journalBytes(folder, task), "", field)
        }
      })
    ))

  it("negative control: the unchecked hook assembly (taskHooks, called here without the entry's check) takes the misspelt destination for Private", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { binding } = yield* bound(world)
        const assembled = yield* taskHooks(binding, "Turn", {
          name: "Turn",
          tools: { _tag: "Registry", registry: tools },
          offload: { ...offload, destination: "Privat" } as never
        }).pipe(Effect.provide(turnLayer(world, task, keepsCalling)))
        const writer = Option.getOrThrow(assembled.capability)
        assert.deepStrictEqual(writer.volume, world.privateRef, "the output the host meant was not chosen")
      })
    ))
})

// ---------------------------------------------------------------------------------------------------------------------
// Constructors: Tool.make, Tool.registry, Compaction.threshold, ToolResults.inlineLimitHooks
// ---------------------------------------------------------------------------------------------------------------------

const makeOptions = {
  name: "lookup",
  description: "d",
  input: Schema.Struct({}),
  handler: () => Effect.succeed("x")
}

describe("plain JavaScript callers: constructors", () => {
  it("Tool.make throws InvalidInput naming the option for each wrong shape", () => {
    const cases: ReadonlyArray<readonly [string, unknown]> = [
      ["options", undefined],
      ["name", { ...makeOptions, name: undefined }],
      ["name", { ...makeOptions, name: "" }],
      ["description", { ...makeOptions, description: 5 }],
      ["input", { ...makeOptions, input: { type: "object" } }],
      ["input", { ...makeOptions, input: undefined }],
      ["handler", { ...makeOptions, handler: "run" }],
      ["needsApproval", { ...makeOptions, needsApproval: "always" }],
      ["idempotent", { ...makeOptions, idempotent: 1 }]
    ]
    for (const [field, options] of cases) {
      assertInvalid(
        thrown(() => Tool.make(options as never), field),
        "Tool.make",
        field,
        field
      )
    }
    assert.strictEqual(Tool.make({ ...makeOptions, needsApproval: () => true, idempotent: true }).name, "lookup")
  })

  it("Tool.registry throws InvalidInput naming the argument that is not a tool", () => {
    const made = Tool.make(makeOptions)
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]> = [
      ["tools[0]", [undefined]],
      ["tools[1]", [made, makeOptions.handler]],
      ["tools[1].run", [made, { ...made, name: "other", run: undefined }]],
      ["tools[0].name", [{ ...made, name: 7 }]],
      ["tools[0].needsApproval", [{ ...made, needsApproval: true }]]
    ]
    for (const [field, given] of cases) {
      assertInvalid(
        thrown(() => Tool.registry(...(given as Array<Tool.Tool>)), field),
        "Tool.registry",
        field,
        field
      )
    }
  })

  it("negative control: the old make and registry bodies (built here) die with a TypeError on the same input", () => {
    const oldRegistry = (...given: ReadonlyArray<Tool.Tool>) => {
      const byName = new Map<string, Tool.Tool>()
      for (const tool of given) byName.set(tool.name, tool)
      return { tools: byName, specs: given.map((tool) => tool.spec) }
    }
    assert.instanceOf(
      thrown(() => oldRegistry(undefined as never), "registry"),
      TypeError
    )
    const oldMakeStart = (options: { readonly input: Schema.Top }) => Schema.decodeUnknownEffect(options.input)
    assert.instanceOf(
      thrown(() => oldMakeStart({ input: undefined as never }), "make"),
      TypeError
    )
  })

  it("Compaction.threshold throws InvalidInput naming the option: a misspelt key, a wrong type, an out-of-range number, no object", () => {
    const cases: ReadonlyArray<readonly [string, unknown]> = [
      ["options", null],
      ["options", "bytes"],
      ["limt", { limt: 5_000 }],
      ["limit", { limit: "5000" }],
      ["limit", { limit: 0 }],
      ["keepRecent", { keepRecent: -1 }],
      ["measure", { measure: "words" }],
      ["summaryLimit", { summaryLimit: 1.5 }]
    ]
    for (const [field, options] of cases) {
      assertInvalid(
        thrown(() => Compaction.threshold(options as never), field),
        "Compaction.threshold",
        field,
        field
      )
    }
    const chosen = Compaction.threshold({ limit: 5_000, keepRecent: undefined } as never)
    assert.deepStrictEqual([chosen.limit, chosen.keepRecent], [5_000, Compaction.defaultThreshold.keepRecent])
    const respread = Compaction.threshold({ ...chosen, pieceLimit: 9 } as never)
    assert.strictEqual(respread.pieceLimit, 9)
  })

  it("negative control: the old threshold (a spread into make, built here) silently keeps the default limit for a misspelt key or null", () => {
    const oldThreshold = (options: object | null) =>
      Compaction.Threshold.make({ ...Compaction.defaultThreshold, ...options })
    assert.strictEqual(oldThreshold({ limt: 5_000 }).limit, Compaction.defaultThreshold.limit)
    assert.strictEqual(oldThreshold(null).limit, Compaction.defaultThreshold.limit)
  })

  it("ToolResults.inlineLimitHooks and limitResult throw InvalidInput for a limit that is not an integer >= 0", () => {
    const result = Model.toolResult({ callId: "c1", name: "produce", content: "x".repeat(100), isError: false })
    for (const limit of ["10", Number.NaN, -1, 1.5, undefined]) {
      const label = fc.stringify(limit)
      assertInvalid(
        thrown(() => ToolResults.inlineLimitHooks(limit as never), label),
        "ToolResults.inlineLimitHooks",
        "maxBytes",
        label
      )
      assertInvalid(
        thrown(() => Inline.limitResult(limit as never, result), label),
        "ToolResults.limitResult",
        "maxBytes",
        label
      )
    }
    assert.strictEqual(Inline.limitResult(0, result).content, Inline.note(0, 100, 0))
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// LocalHarness.open
// ---------------------------------------------------------------------------------------------------------------------

describe("plain JavaScript callers: LocalHarness.open", () => {
  it("each wrong option is InvalidInput naming it, before the namespace is locked or any folder is created", async () => {
    const stateDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-harness-")))
    try {
      const base = { namespace: "ns", agent: "agent-a", stateDir }
      const cases: ReadonlyArray<readonly [string, unknown]> = [
        ["options", undefined],
        ["namespace", { ...base, namespace: 5 }],
        ["agent", { ...base, agent: undefined }],
        ["agent", { ...base, agent: 5 }],
        ["agent", { ...base, agent: "../x" }],
        ["runtimeTask", { ...base, runtimeTask: "a/b" }],
        ["stateDir", { ...base, stateDir: 5 }],
        ["stateDir", { ...base, stateDir: `${stateDir}\u0000x` }],
        ["recoverStaleLock", { ...base, recoverStaleLock: "yes" }],
        ["authority", { ...base, authority: {} }],
        ["durability", { ...base, durability: "sometimes" }],
        ["durability.journals", { ...base, durability: { _tag: "MemoryOnly" } }]
      ]
      for (const [field, options] of cases) {
        const exit = await Effect.runPromiseExit(
          Effect.scoped(LocalHarness.open(options as never)).pipe(Effect.provide(NodeServices.layer))
        )
        assertInvalid(typedFailure(exit, field), "LocalHarness.open", field, field)
        assert.deepStrictEqual(fs.readdirSync(stateDir), [], `${field}: nothing created`)
      }
      const opened = await Effect.runPromise(
        Effect.scoped(
          Effect.map(
            LocalHarness.open({ ...base, agent: base.agent as never, authority: HostAuthority.permissive }),
            (harness) => harness.agent
          )
        ).pipe(Effect.provide(NodeServices.layer))
      )
      assert.strictEqual(opened, "agent-a")
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true })
    }
  })

  it("negative control: the unchecked pieces open builds on (scratchVolumeId, StateNamespace.open) die untyped on the same options", async () => {
    assert.instanceOf(
      thrown(() => LocalHarness.scratchVolumeId(5 as never), "scratchVolumeId"),
      TypeError
    )
    const stateDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-harness-")))
    try {
      const exit = await Effect.runPromiseExit(
        Effect.scoped(StateNamespace.open({ namespace: 5 as never, stateDir }, HostAuthority.permissive)).pipe(
          Effect.provide(NodeServices.layer)
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.isTrue(Option.isNone(Cause.findErrorOption(exit.cause)), "untyped")
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true })
    }
  })
})
