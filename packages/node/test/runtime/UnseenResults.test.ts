/**
 * Issue 17, finding 10: compaction keeps what the model has not seen. The
 * newest tool results reach the model at least once (whole, behind an
 * offload pointer, or cut with a note) before any summary replaces them,
 * whatever `keepRecent` says; a summary is bounded by the policy; a task
 * that alone exceeds the limit is reported once, as a typed warning entry.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import {
  Compaction,
  EntryGate,
  Executor,
  History,
  Journal,
  Model,
  PrivateSummaries,
  TaskExecution
} from "@tessera/runtime"
import { Effect, Option } from "effect"
import * as fc from "fast-check"
import * as Compacting from "../../../runtime/src/internal/compacting.js"
import * as Policies from "../../../runtime/src/internal/compactionPolicy.js"
import * as SummaryRequests from "../../../runtime/src/internal/summaryRequests.js"
import { isSummaryRequest, journalFolder, requests, requestText, start, tools, turnLayer } from "./support/turns.ts"
import { dataFolderOf, platformLayer, runInWorld, task, type World } from "./support/world.ts"

/** A generated turn: the result sizes of each step's calls, and the policy. */
interface Scenario {
  readonly steps: ReadonlyArray<ReadonlyArray<number>>
  readonly policy: Compaction.Threshold
  readonly offload: boolean
}

const callId = (step: number, index: number) => `c${step}x${index}`
/** Every result is its own marker repeated, so any piece of it names its call. */
const marker = (id: string) => `<${id}>`

const scriptFor = (steps: Scenario["steps"]) => {
  let turnRequests = 0
  let summaries = 0
  return (request: Model.ModelRequest) => {
    if (isSummaryRequest(request)) return Model.response({ text: `summary ${++summaries}` })
    const step = ++turnRequests
    const sizes = steps[step - 1]
    if (sizes === undefined) return Model.response({ text: "done" })
    return Model.response({
      toolCalls: sizes.map((size, index) =>
        Model.toolCall(callId(step, index), "produce", {
          size: Math.ceil(size / marker(callId(step, index)).length),
          fill: marker(callId(step, index))
        })
      )
    })
  }
}

/**
 * The calls whose results went into a summary request before any turn
 * request carried them, in the order the requests were sent.
 */
const summarizedUnseen = (sent: ReadonlyArray<Model.ModelRequest>): ReadonlyArray<string> => {
  const seen = new Set<string>()
  const violations: Array<string> = []
  const pattern = /<(c\d+x\d+)>|\[tool result (c\d+x\d+) /g
  for (const request of sent) {
    if (isSummaryRequest(request)) {
      for (const match of requestText(request).matchAll(pattern)) {
        const id = match[1] ?? match[2] ?? ""
        if (!seen.has(id) && !violations.includes(id)) violations.push(id)
      }
    } else {
      for (const part of request.parts) if (part._tag === "ToolResult") seen.add(part.callId)
    }
  }
  return violations
}

const bind = (world: World, policy: Compaction.Policy) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef), [world.privateRef, world.outputRef])
    const scope = yield* world.scopeFor([world.privateRef, world.outputRef])
    const context = yield* runtime.bindTask({ scope, output: Option.some(world.outputRef) })
    return yield* EntryGate.bind(context, { policy })
  })

const offload = { threshold: 1_000, readTool: "read", destination: "Output" as const }

/** The real wiring: the stock turn behind the gate, with compaction armed by the policy. */
const runReal = (scenario: Scenario) =>
  runInWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bind(world, scenario.policy)
      return yield* Effect.gen(function* () {
        yield* TaskExecution.runTurn(binding, start, {
          tools,
          maxSteps: scenario.steps.length + 1,
          ...(scenario.offload ? { offload } : {})
        })
        return yield* requests
      }).pipe(Effect.provide(turnLayer(world, task, scriptFor(scenario.steps))))
    })
  )

/** The plan compaction used before this finding: `keepRecent` alone decides what is kept. */
const keepRecentOnlyPlan = (history: History.History, policy: Compaction.Threshold) => {
  if (Compaction.measureParts(policy.measure, History.toParts(history)) <= policy.limit) return 0
  const all = History.rounds(history)
  let kept = 0
  let keptSize = 0
  for (let index = all.length - 1; index >= 0; index--) {
    const size = Compaction.measureParts(policy.measure, all[index] ?? [])
    if (keptSize + size > policy.keepRecent) break
    keptSize += size
    kept++
  }
  return all.length - kept
}

/** Broken wiring, built here: compaction hooks planning with {@link keepRecentOnlyPlan}. */
const runBroken = (scenario: Scenario) =>
  runInWorld((world) =>
    Effect.gen(function* () {
      const policy = scenario.policy
      const hooks: Executor.Hooks<Model.ModelError, Model.Model> = {
        beforeModelStep: (_context, history) => {
          const count = keepRecentOnlyPlan(history, policy)
          if (count === 0) return Effect.succeed(history)
          return Effect.map(
            Compaction.summarize({
              task: history.task,
              previousSummary: History.summaryText(history),
              rounds: History.rounds(history).slice(0, count),
              pieceBytes: Policies.bytesFor(policy.measure, policy.pieceLimit)
            }),
            (summary) =>
              History.summarizeLeadingRounds(history, count, {
                parts: [Model.text("user", summary.text)],
                text: summary.text
              })
          )
        }
      }
      return yield* Effect.gen(function* () {
        yield* Executor.runTurn({ tools, maxSteps: scenario.steps.length + 1, hooks }, start)
        return yield* requests
      }).pipe(Effect.provide(turnLayer(world, task, scriptFor(scenario.steps))))
    })
  )

const scenario: fc.Arbitrary<Scenario> = fc.record({
  steps: fc.array(fc.array(fc.integer({ min: 1, max: 3_000 }), { minLength: 1, maxLength: 3 }), {
    minLength: 1,
    maxLength: 5
  }),
  policy: fc
    .record({
      limit: fc.integer({ min: 200, max: 6_000 }),
      keepRecent: fc.integer({ min: 0, max: 3_000 }),
      pieceLimit: fc.integer({ min: 300, max: 10_000 })
    })
    .map((numbers) => Compaction.threshold({ measure: "bytes", ...numbers })),
  offload: fc.boolean()
})

describe("unseen_results", () => {
  it("property: over generated turns (offload on and off, keepRecent 0 included), no tool result goes into a summary request before a turn request carried it", async () => {
    let compacted = 0
    await fc.assert(
      fc.asyncProperty(scenario, async (generated) => {
        const sent = await runReal(generated)
        assert.deepStrictEqual(summarizedUnseen(sent), [])
        if (sent.some(isSummaryRequest)) compacted++
      }),
      { numRuns: 30 }
    )
    assert.isAbove(compacted, 5, "the generated turns do compact")
  })

  it("a result is kept unseen-first even with keepRecent 0, and summarized at the next step", async () => {
    const sent = await runReal({
      steps: [[2_000], [10]],
      policy: Compaction.threshold({ measure: "bytes", limit: 500, keepRecent: 0, pieceLimit: 10_000 }),
      offload: false
    })
    const kinds = sent.map((request) => (isSummaryRequest(request) ? "summary" : "turn"))
    assert.deepStrictEqual(kinds, ["turn", "turn", "summary", "turn"])
    assert.include(requestText(sent[1] as Model.ModelRequest), marker("c1x0").repeat(100))
    assert.include(requestText(sent[2] as Model.ModelRequest), marker("c1x0"))
  })

  it("negative control: compaction planned by keepRecent alone (broken wiring built here) summarizes results the model never saw, and the property finds it", async () => {
    const sent = await runBroken({
      steps: [[2_000], [10]],
      policy: Compaction.threshold({ measure: "bytes", limit: 500, keepRecent: 0, pieceLimit: 10_000 }),
      offload: false
    })
    assert.deepStrictEqual(summarizedUnseen(sent), ["c1x0"])
    const failure = await fc
      .assert(
        fc.asyncProperty(scenario, async (generated) => {
          const sent = await runBroken(generated)
          assert.deepStrictEqual(summarizedUnseen(sent), [])
        }),
        // Finding one counterexample is the point here; shrinking it would only cost time.
        { numRuns: 30, endOnFailure: true }
      )
      .then(
        () => undefined,
        (error: unknown) => error
      )
    assert.instanceOf(failure, Error, "the property fails on the broken wiring")
  })
})

const journalEntries = (world: World) =>
  Effect.flatMap(journalFolder(world), (folder) => Journal.readEntries({ folder, task })).pipe(
    Effect.provide(platformLayer)
  )

describe("summary_bound", () => {
  const policy = Compaction.threshold({
    measure: "bytes",
    limit: 2_000,
    keepRecent: 0,
    pieceLimit: 10_000,
    summaryLimit: 300
  })
  const longSummary = "S".repeat(10_000)
  const script = () => {
    let turnRequests = 0
    return (request: Model.ModelRequest) => {
      if (isSummaryRequest(request)) return Model.response({ text: longSummary })
      turnRequests++
      return turnRequests <= 2
        ? Model.response({
            toolCalls: [Model.toolCall(`c${turnRequests}`, "produce", { size: 1_500, fill: "r" })]
          })
        : Model.response({ text: "done" })
    }
  }

  it("a 10,000-byte summary answer is cut to the policy's summary limit (300 bytes) with a note: on disk, in the journal and in the next request", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bind(world, policy)
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 4 })
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, script())))
        const staged = (yield* journalEntries(world)).filter((entry) => entry._tag === "SummaryStaged")
        assert.isAtLeast(staged.length, 1)
        const folder = dataFolderOf(world, world.privateRef)
        for (const entry of staged) {
          assert.isAtMost(entry.size, 300)
          const text = fs.readFileSync(path.join(folder, entry.path), "utf8")
          assert.isAtMost(Buffer.byteLength(text), 300)
          assert.include(text, "[summary cut: the model wrote 10000 bytes; the summary limit is 300 bytes")
        }
        const last = requestText(sent.at(-1) as Model.ModelRequest)
        assert.notInclude(last, "S".repeat(300))
      })
    ))

  it("negative control: summarizing without the bound (the former wiring, built here) keeps the whole 10,000-byte answer", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const outcome = yield* Compaction.summarize({
          task: start.task,
          previousSummary: Option.none(),
          rounds: [[Model.text("user", "something to summarize")]],
          pieceBytes: 10_000
        }).pipe(Effect.provide(turnLayer(world, task, script())))
        assert.strictEqual(outcome.text.length, 10_000)
      })
    ))

  it("property: a bounded summary measures at most the limit, is a prefix of the answer plus the note, and an answer within the limit is unchanged", () => {
    const noteBytes = Buffer.byteLength(SummaryRequests.summaryCutNote(99_999, 99_999, 99_999))
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 300 }),
        fc.integer({ min: noteBytes, max: noteBytes + 800 }),
        (answer, limit) => {
          const bounded = SummaryRequests.boundSummary(answer, limit)
          if (Buffer.byteLength(answer) <= limit) {
            assert.strictEqual(bounded, answer)
            return
          }
          assert.isAtMost(Buffer.byteLength(bounded), limit)
          const noteAt = bounded.lastIndexOf("\n[summary cut: ")
          assert.isTrue(answer.startsWith(bounded.slice(0, noteAt)))
        }
      ),
      { numRuns: 300 }
    )
  })

  it("the default summary limit is a quarter of the request limit", () => {
    assert.strictEqual(Policies.summaryLimitOf(Compaction.threshold({ limit: 10_000 })), 2_500)
    assert.strictEqual(Policies.summaryLimitOf(policy), 300)
  })
})

describe("task_over_limit_warning", () => {
  const policy = Compaction.threshold({ measure: "bytes", limit: 1_000, keepRecent: 0, pieceLimit: 10_000 })
  const bigTask = History.make([Model.text("system", "Follow these rules. ".repeat(200))])
  const steps = [[10], [10], [10]]

  const warnings = (world: World) =>
    Effect.map(journalEntries(world), (entries) => entries.filter((entry) => entry._tag === "CompactionWarning"))

  it("a system prompt that alone is over the limit is reported once as a CompactionWarning entry (size and limit), not on every request, nor again in a second turn with fresh hooks", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bind(world, policy)
        const sent = yield* Effect.gen(function* () {
          const first = yield* TaskExecution.runTurn(binding, bigTask, { tools, maxSteps: 5 })
          yield* TaskExecution.runTurn(binding, History.append(first.history, [Model.text("user", "again")]), {
            tools,
            maxSteps: 5
          })
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, scriptFor(steps))))
        assert.isAtLeast(sent.filter((request) => !isSummaryRequest(request)).length, 5)
        const found = yield* warnings(world)
        assert.strictEqual(found.length, 1)
        const warning = found[0]
        assert.strictEqual(warning?.reason, "TaskOverLimit")
        assert.strictEqual(warning?.limit, 1_000)
        assert.isAbove(warning?.size ?? 0, 4_000)
      })
    ))

  it("a task under the limit gives no warning", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bind(world, policy)
        yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 5 }).pipe(
          Effect.provide(turnLayer(world, task, scriptFor(steps)))
        )
        assert.strictEqual((yield* warnings(world)).length, 0)
      })
    ))

  it("negative controls (wiring built here): compaction hooks without the warning stay silent, and a warning without its once-guard reports on every request", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bind(world, policy)
        const capability = yield* PrivateSummaries.resolve(binding.context)
        yield* Effect.gen(function* () {
          const journal = yield* Journal.Journal
          const compactOnly: Executor.Hooks<TaskExecution.CompactionError, TaskExecution.CompactionRequirements> = {
            beforeModelStep: (context, history) =>
              Effect.flatMap(TaskExecution.turnOperation(context.task, context.turn), (operation) =>
                Compaction.compact({
                  history,
                  policy,
                  operation,
                  step: context.step,
                  journal: Option.some(journal),
                  turn: context.turn
                })
              ).pipe(PrivateSummaries.provide(capability))
          }
          yield* Executor.runTurn({ tools, maxSteps: 5, hooks: compactOnly }, bigTask)
        }).pipe(Effect.provide(turnLayer(world, task, scriptFor(steps))))
        assert.strictEqual((yield* warnings(world)).length, 0, "silent without the warning")
        yield* Effect.gen(function* () {
          const journal = yield* Journal.Journal
          // Warns whenever the task is over the limit, with no memory of having warned.
          const unguarded: Executor.Hooks<Journal.JournalIoError | Journal.JournalSequenceError> = {
            beforeModelStep: (context, history) =>
              Option.match(Compacting.taskOverLimit(history, policy), {
                onNone: () => Effect.succeed(history),
                onSome: (size) =>
                  Effect.as(
                    journal.append({
                      _tag: "CompactionWarning",
                      turn: context.turn,
                      step: context.step,
                      reason: "TaskOverLimit",
                      measure: policy.measure,
                      size,
                      limit: policy.limit
                    }),
                    history
                  )
              })
          }
          yield* Executor.runTurn({ tools, maxSteps: 5, hooks: unguarded }, bigTask)
        }).pipe(Effect.provide(turnLayer(world, task, scriptFor(steps))))
        assert.isAbove((yield* warnings(world)).length, 1, "a warning on every step is not once")
      })
    ))
})
