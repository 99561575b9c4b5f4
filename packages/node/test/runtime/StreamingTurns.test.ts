/**
 * Model protocol v2 in real turns: streamed turns, usage in the journal,
 * the system message first after compaction, interrupted turns closed,
 * back-pressure, and the reported-tokens compaction measure.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@tessera/core"
import { Inspector } from "@tessera/node"
import {
  Compaction,
  EntryGate,
  Executor,
  History,
  Journal,
  JournalEntry,
  Model,
  PrivateSummaries,
  TaskExecution,
  Tool,
  ToolResults
} from "@tessera/runtime"
import type { ScriptedModel } from "@tessera/runtime/testing"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Queue, Ref, Schema, Stream } from "effect"
import { isSummaryRequest, journalFolder, requests, start, taskText, tools, turnLayer } from "./support/turns.ts"
import { platformLayer, runInWorld, task, type World } from "./support/world.ts"

/** What a streamed turn needs, as the stock `streamTurn` states it. */
type TurnServices = Stream.Services<ReturnType<typeof TaskExecution.streamTurn<never, never>>>

const produceCall = (id: string, size: number, fill: string) => Model.toolCall(id, "produce", { size, fill })

const boundWithPrivate = (world: World, policy: Compaction.Policy) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([world.privateRef]), output: Option.none() })
    return yield* EntryGate.bind(context, { policy })
  })

const boundDisabled = (world: World) => boundWithPrivate(world, Compaction.disabled)

/** A model given as a layer (its own, not the scripted one) with the task's journal. */
const modelLayer = (world: World, model: Layer.Layer<Model.Model>) =>
  Layer.unwrap(Effect.map(journalFolder(world), (folder) => Layer.merge(model, Journal.layer({ folder, task })))).pipe(
    Layer.provideMerge(platformLayer)
  )

const entriesOf = (world: World) =>
  Effect.flatMap(journalFolder(world), (folder) => Journal.readEntries({ folder, task }))

/** Two large tool results then an answer; every response (summary requests too) reports usage from its index. */
const usageOf = (index: number): Model.Usage => ({
  inputTokens: 1_000 + index,
  outputTokens: 10 + index,
  cachedInputTokens: index,
  reasoningTokens: index % 2
})
const compactingScript: ScriptedModel.Script = (request, index) => {
  const usage = usageOf(index)
  if (isSummaryRequest(request)) return Model.response({ text: "Both reports were produced.", usage })
  const answered = (id: string) => request.parts.some((part) => part._tag === "ToolResult" && part.callId === id)
  return answered("c2")
    ? Model.response({ text: "Report A is all 'a' and report B is all 'b'.", usage })
    : answered("c1")
      ? Model.response({ toolCalls: [produceCall("c2", 20_000, "b")], usage })
      : Model.response({ toolCalls: [produceCall("c1", 20_000, "a")], usage })
}
const compactingPolicy = Compaction.threshold({
  measure: "bytes",
  limit: 30_000,
  keepRecent: 1_000,
  pieceLimit: 200_000
})

describe("streamed turns", () => {
  /**
   * What the consumer saw of each event: whether the journal still showed
   * the step's request awaiting its response, and whether the model had
   * finished its response. The model sends "Hel", then waits (at most
   * 300 ms) for the consumer to have seen it, then finishes with "lo".
   */
  const firstDeltaBeforeStepEnd = (world: World, wrap: (model: Model.Model["Service"]) => Model.Model["Service"]) =>
    Effect.gen(function* () {
      const binding = yield* boundDisabled(world)
      const seen = yield* Deferred.make<void>()
      let modelDone = false
      const model = Model.fromStream(() =>
        Stream.concat(
          Stream.make<ReadonlyArray<Model.ModelStreamEvent>>({ _tag: "TextDelta", delta: "Hel" }),
          Stream.fromEffect(Effect.as(Effect.timeoutOption(Deferred.await(seen), "300 millis"), 0)).pipe(
            Stream.flatMap(() => {
              modelDone = true
              return Stream.make<ReadonlyArray<Model.ModelStreamEvent>>(
                { _tag: "TextDelta", delta: "lo" },
                { _tag: "Finish", reason: "stop" }
              )
            })
          )
        )
      )
      const observed: Array<{ readonly tag: string; readonly awaiting: boolean; readonly modelDone: boolean }> = []
      yield* Effect.gen(function* () {
        const journal = yield* Journal.Journal
        yield* Stream.runForEach(TaskExecution.streamTurn(binding, start, { tools, maxSteps: 2 }), (event) =>
          Effect.gen(function* () {
            const open = Journal.openTurn(yield* journal.state)
            observed.push({ tag: event._tag, awaiting: Option.isSome(open) && open.value.awaitingResponse, modelDone })
            if (event._tag === "TextDelta") yield* Deferred.succeed(seen, undefined)
          })
        )
      }).pipe(Effect.provide(modelLayer(world, Layer.succeed(Model.Model)(wrap(model)))))
      return observed
    })

  it("tokens_stream_before_step_end: text deltas reach the consumer while the model is still producing its response (the step's request still awaiting it); a model that only answers whole (control) delivers them only after it finished", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const observed = yield* firstDeltaBeforeStepEnd(world, (model) => model)
        assert.deepStrictEqual(
          observed.map((event) => event.tag),
          ["StepStarted", "TextDelta", "TextDelta", "StepFinished", "TurnClosed"]
        )
        assert.isFalse(observed[1]?.modelDone, "the first delta arrived before the model finished its response")
        assert.isTrue(observed[1]?.awaiting, "and before the step's response was journaled")
        // Control: the same model behind a non-streaming adapter (generate, lifted as one chunk).
        const control = yield* firstDeltaBeforeStepEnd(world, (model) => Model.fromGenerate(model.generate))
        const firstDelta = control.find((event) => event.tag === "TextDelta")
        assert.isTrue(firstDelta?.modelDone, "control: the text came only once the model had finished")
      })
    ))

  it("a streamed turn reports steps, tool calls and results, summary requests, the staged summary, usage, and closes; its journal is the one runTurn writes", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(world, compactingPolicy)
        const events = yield* Stream.runCollect(TaskExecution.streamTurn(binding, start, { tools, maxSteps: 8 })).pipe(
          Effect.provide(turnLayer(world, task, compactingScript))
        )
        const tags = events.map((event) => event._tag)
        const last = events.at(-1)
        assert.strictEqual(last?._tag, "TurnClosed")
        if (last?._tag === "TurnClosed")
          assert.strictEqual(last.outcome.text, "Report A is all 'a' and report B is all 'b'.")
        assert.strictEqual(tags.filter((tag) => tag === "StepStarted").length, 3)
        assert.strictEqual(tags.filter((tag) => tag === "StepFinished").length, 3)
        assert.deepStrictEqual(
          tags.filter((tag) => tag === "ToolCalled" || tag === "ToolResulted"),
          ["ToolCalled", "ToolResulted", "ToolCalled", "ToolResulted"]
        )
        // The third step compacts before its request: summary answered, staged, then the step's own text.
        const third = tags.lastIndexOf("StepStarted")
        assert.deepStrictEqual(tags.slice(third, third + 3), ["StepStarted", "SummaryRequestAnswered", "SummaryStaged"])
        assert.isTrue(tags.slice(third).includes("TextDelta"))
        const finished = events.filter((event) => event._tag === "StepFinished")
        assert.deepStrictEqual(
          finished.map((event) => (event._tag === "StepFinished" ? event.finishReason : undefined)),
          ["tool-calls", "tool-calls", "stop"]
        )
        // The scripted model streams the answer in several deltas; together they are the answer.
        const deltas = events.flatMap((event) => (event._tag === "TextDelta" && event.step === 3 ? [event.delta] : []))
        assert.isAbove(deltas.length, 1)
        assert.strictEqual(deltas.join(""), "Report A is all 'a' and report B is all 'b'.")
        const entries = yield* entriesOf(world)
        assert.strictEqual(entries.at(-1)?._tag, "TurnClosed")
      })
    ))

  it("back_pressure: a consumer that stalls holds at most the buffer; the turn waits instead of pulling the model's stream (an unbounded queue, control, takes it all)", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundDisabled(world)
        const total = 2_000
        const bufferSize = 8
        /** Runs `stream` with a consumer that stalls 300 ms on its first event; how many deltas the model had produced by then. */
        const stalled = (
          stream: (binding: EntryGate.TaskBinding) => Stream.Stream<Executor.TurnEvent, unknown, TurnServices>
        ) =>
          Effect.gen(function* () {
            const produced = yield* Ref.make(0)
            const model = Model.fromStream(() =>
              Stream.range(1, total, 1).pipe(
                Stream.mapEffect((n) =>
                  Effect.as(
                    Ref.update(produced, (count) => count + 1),
                    n
                  )
                ),
                Stream.map((n): Model.ModelStreamEvent => ({ _tag: "TextDelta", delta: String(n % 10) }))
              )
            )
            let atStall = -1
            let received = 0
            yield* Stream.runForEach(stream(binding), (event) =>
              Effect.gen(function* () {
                if (event._tag === "TextDelta") received++
                if (atStall === -1 && event._tag === "TextDelta") {
                  yield* Effect.sleep("300 millis")
                  atStall = yield* Ref.get(produced)
                }
              })
            ).pipe(Effect.provide(modelLayer(world, Layer.succeed(Model.Model)(model))))
            return { atStall, received }
          })
        const bounded = yield* stalled((binding) =>
          TaskExecution.streamTurn(binding, start, { tools, maxSteps: 2 }, { bufferSize })
        )
        assert.strictEqual(bounded.received, total, "every delta is delivered in the end")
        assert.isAtMost(bounded.atStall, 2 * bufferSize + 4, "the model was pulled no further than the buffer allows")
        // Control: the same turn forwarded through an unbounded queue.
        const unbounded = yield* stalled((binding) =>
          Stream.callback<Executor.TurnEvent, unknown, TurnServices>((queue) =>
            TaskExecution.runTurn(binding, start, {
              tools,
              maxSteps: 2,
              onEvent: (event) => Effect.asVoid(Queue.offer(queue, event))
            }).pipe(Effect.andThen(Queue.end(queue)))
          )
        )
        assert.strictEqual(unbounded.atStall, total, "control: unbounded forwarding lets the whole stream pile up")
      })
    ))

  it("streamTurn refuses a buffer size that is not a positive integer with InvalidInput naming the field, before anything runs", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundDisabled(world)
        const exit = yield* Effect.exit(
          Stream.runDrain(TaskExecution.streamTurn(binding, start, { tools, maxSteps: 2 }, { bufferSize: 0 }))
        ).pipe(Effect.provide(turnLayer(world, task, [Model.response({ text: "never" })])))
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
        assert.strictEqual(error?._tag === "Fail" ? (error.error as { _tag: string })._tag : undefined, "InvalidInput")
        assert.strictEqual(error?._tag === "Fail" ? (error.error as { field: string }).field : undefined, "bufferSize")
        assert.deepStrictEqual(yield* entriesOf(world), [])
      })
    ))
})

describe("usage in the journal", () => {
  it("usage_totals_match_provider: the journal's token total equals the sum of the usage the provider reported, summary requests included; the inspector shows it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(world, compactingPolicy)
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, compactingScript)))
        const summaries = sent.filter(isSummaryRequest).length
        assert.isAtLeast(summaries, 1, "the turn sent summary requests")
        const expected = sent.map((_, index) => usageOf(index)).reduce(Model.addUsage, {})
        const entries = yield* entriesOf(world)
        const total = JournalEntry.totalUsage(entries)
        assert.deepStrictEqual(total, {
          responses: sent.length,
          reported: sent.length,
          usage: expected,
          children: [],
          withChildren: expected
        })
        assert.strictEqual(entries.filter((entry) => entry._tag === "SummaryRequestAnswered").length, summaries)
        // Control: the entries the journal had before (no summary-request entries) do not add up.
        const withoutSummaries = JournalEntry.totalUsage(
          entries.filter((entry) => entry._tag !== "SummaryRequestAnswered")
        )
        assert.notDeepEqual(withoutSummaries.usage, expected)

        const report = yield* Inspector.inspect(world.root)
        const rendered = Inspector.render(report)
        assert.include(
          rendered,
          `tokens: ${Inspector.formatUsage(expected)} (${sent.length} of ${sent.length} responses`
        )
        assert.include(rendered, "SummaryRequestAnswered")
      })
    ))

  it("reported_tokens_measure: compaction measures from the provider's input tokens when it reports them and falls back to the estimate when it does not", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        /** A small turn whose second response reports `reported` input tokens (when given); whether it compacted. */
        const compacted = (measure: Compaction.SizeMeasure, reported: number | undefined) =>
          Effect.gen(function* () {
            const binding = yield* boundWithPrivate(
              world,
              Compaction.threshold({ measure, limit: 5_000, keepRecent: 10, pieceLimit: 50_000 })
            )
            const script: ScriptedModel.Script = (request, index) => {
              if (isSummaryRequest(request)) return Model.response({ text: "summary" })
              const usage = index === 1 && reported !== undefined ? { usage: { inputTokens: reported } } : {}
              const results = request.parts.filter((part) => part._tag === "ToolResult").length
              return results < 2
                ? Model.response({ toolCalls: [produceCall(`c${results}`, 100, "x")], ...usage })
                : Model.response({ text: "done" })
            }
            const sent = yield* Effect.gen(function* () {
              yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
              return yield* requests
            }).pipe(Effect.provide(turnLayer(world, task, script)))
            return sent.some(isSummaryRequest)
          })
        assert.isTrue(yield* compacted("reportedTokens", 50_000), "the provider's count crosses the limit")
        // Controls: the same small history under the estimate, and with no report, stays under the limit.
        assert.isFalse(yield* compacted("estimatedTokens", 50_000), "the estimate alone does not compact")
        assert.isFalse(yield* compacted("reportedTokens", undefined), "no report: the estimate is used")
      })
    ))
})

describe("system message first after compaction", () => {
  it("system_first_after_compaction: a compacted request opens with the system message, then the summary reference; the former order (control) fails the same check", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(world, compactingPolicy)
        const system = Model.text("system", "You are a careful research assistant.")
        const history = History.make([system, Model.text("user", taskText)])
        const seenHistories: Array<History.History> = []
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, history, {
            tools,
            maxSteps: 8,
            hooks: { afterModelStep: (_context, outcome) => Effect.sync(() => seenHistories.push(outcome.history)) }
          })
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, compactingScript)))
        const compacted = sent.filter((request) => !isSummaryRequest(request)).at(-1) as Model.ModelRequest
        /** The check: the system message first, the summary's file reference right after it. */
        const systemFirst = (parts: ReadonlyArray<Model.Part>) =>
          parts[0] === system && parts[1]?._tag === "FileReference"
        assert.isTrue(systemFirst(compacted.parts), "the compacted request opens with the system message")
        // Control: the former order (summary, then the whole task) built from the same compacted history.
        const after = seenHistories.at(-1) as History.History
        assert.isDefined(after.summary)
        const former = [...(after.summary?.parts ?? []), ...after.task, ...after.parts]
        assert.isFalse(systemFirst(former), "control: the former order puts the summary before the system message")
      })
    ))

  it("without a system message the summary still opens the request, ahead of the task", () => {
    const task = [Model.text("user", "do it")]
    const reference = Model.text("user", "[summary]")
    const history = History.summarizeLeadingRounds(History.make(task), 0, { parts: [reference], text: "s" })
    assert.deepStrictEqual(History.toParts(history), [reference, ...task])
  })
})

describe("interrupted turns", () => {
  const answer: ScriptedModel.Script = () => Model.response({ text: "fine now" })

  it("interrupted_turn_closed: a turn timed out mid-request is journaled abandoned, the model call saw the interruption, and the next runTurn succeeds; a loop without the executor's guard (control) leaves the turn open", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundDisabled(world)
        const interrupted = yield* Ref.make(false)
        const script: ScriptedModel.Script = (_request, index) =>
          index === 0
            ? Effect.never.pipe(Effect.onInterrupt(() => Ref.set(interrupted, true)))
            : Model.response({ text: "fine now" })
        yield* Effect.gen(function* () {
          const timedOut = yield* Effect.exit(
            TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 }).pipe(Effect.timeout("50 millis"))
          )
          assert.isTrue(Exit.isFailure(timedOut))
          assert.isTrue(yield* Ref.get(interrupted), "the model call received the interruption")
          const journal = yield* Journal.Journal
          const state = yield* journal.state
          assert.strictEqual(state.turns[0]?.status, "Abandoned")
          const next = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 })
          assert.strictEqual(next.turn, 2)
          assert.strictEqual(next.text, "fine now")
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        const entries = yield* entriesOf(world)
        const abandoned = entries.find((entry) => entry._tag === "TurnAbandoned")
        assert.strictEqual(
          abandoned?._tag === "TurnAbandoned" ? abandoned.reason : undefined,
          Executor.interruptedReason
        )
        assert.strictEqual(entries.at(-1)?._tag, "TurnClosed")
      })
    ).then(() =>
      // Control: the same interruption through a loop composed without the guard leaves the turn open.
      runInWorld((world) =>
        Effect.gen(function* () {
          const binding = yield* boundDisabled(world)
          const script: ScriptedModel.Script = (_request, index) =>
            index === 0 ? Effect.never : Model.response({ text: "fine now" })
          yield* Effect.gen(function* () {
            const journal = yield* Journal.Journal
            const unguarded = Effect.flatMap(journal.openTurn, (opened) =>
              Executor.continueTurn({ tools, maxSteps: 2 }, { task, turn: opened.turn, firstStep: 1 }, start)
            )
            yield* Effect.exit(unguarded.pipe(Effect.timeout("50 millis")))
            const next = yield* Effect.flip(TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 }))
            assert.strictEqual(next._tag, "TurnAlreadyOpen")
          }).pipe(Effect.provide(turnLayer(world, task, script)))
        })
      )
    ))

  it("a turn interrupted by Fiber.interrupt while a tool runs: the tool saw the interruption, the turn is abandoned, the next runTurn succeeds", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundDisabled(world)
        const started = yield* Deferred.make<void>()
        const toolInterrupted = yield* Ref.make(false)
        const hang = Tool.make({
          name: "hang",
          description: "Never finishes",
          input: Schema.Struct({}),
          handler: () =>
            Deferred.succeed(started, undefined).pipe(
              Effect.andThen(Effect.never),
              Effect.onInterrupt(() => Ref.set(toolInterrupted, true))
            )
        })
        const script: ScriptedModel.Script = (_request, index) =>
          index === 0 ? Model.response({ toolCalls: [Model.toolCall("h1", "hang", {})] }) : answer(_request, index)
        yield* Effect.gen(function* () {
          const fiber = yield* Effect.forkChild(
            TaskExecution.runTurn(binding, start, { tools: Tool.registry(hang), maxSteps: 3 })
          )
          yield* Deferred.await(started)
          yield* Fiber.interrupt(fiber)
          assert.isTrue(yield* Ref.get(toolInterrupted), "the tool call received the interruption")
          const next = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 })
          assert.strictEqual(next.turn, 2)
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        const entries = yield* entriesOf(world)
        assert.deepStrictEqual(
          entries.filter((entry) => entry._tag === "TurnAbandoned" || entry._tag === "TurnClosed").map((e) => e._tag),
          ["TurnAbandoned", "TurnClosed"]
        )
      })
    ))

  it("a consumer that stops listening to a streamed turn abandons it; the next turn opens", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundDisabled(world)
        const script: ScriptedModel.Script = (_request, index) =>
          index === 0
            ? Model.response({ toolCalls: [produceCall("c1", 10, "z")] })
            : Model.response({ text: "answered" })
        yield* Effect.gen(function* () {
          const firstTwo = yield* Stream.runCollect(
            Stream.take(TaskExecution.streamTurn(binding, start, { tools, maxSteps: 4 }), 2)
          )
          assert.strictEqual(firstTwo.length, 2)
          const journal = yield* Journal.Journal
          assert.strictEqual((yield* journal.state).turns[0]?.status, "Abandoned")
          const next = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 4 })
          assert.strictEqual(next.turn, 2)
        }).pipe(Effect.provide(turnLayer(world, task, script)))
      })
    ))

  it("abandonTurn is public and gated: it closes a failed turn so the next one opens; a copied binding and an empty reason are refused and write nothing", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundDisabled(world)
        const script: ScriptedModel.Script = (_request, index) =>
          index === 0 ? new Model.ModelError({ reason: "ProviderFailure", detail: "down" }) : answer(_request, index)
        yield* Effect.gen(function* () {
          const failed = yield* Effect.flip(TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 }))
          assert.strictEqual(failed._tag, "ModelError")
          const blocked = yield* Effect.flip(TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 }))
          assert.strictEqual(blocked._tag, "TurnAlreadyOpen")
          const journal = yield* Journal.Journal
          const before = (yield* journal.state).entries
          const copied = yield* Effect.flip(TaskExecution.abandonTurn({ ...binding }, "given up"))
          assert.strictEqual(copied._tag, "Unauthorized")
          const empty = yield* Effect.flip(TaskExecution.abandonTurn(binding, ""))
          assert.strictEqual(empty._tag, "InvalidInput")
          if (empty._tag === "InvalidInput") assert.strictEqual(empty.field, "reason")
          assert.strictEqual((yield* journal.state).entries, before, "refusals write nothing")
          const closed = yield* TaskExecution.abandonTurn(binding, "given up")
          assert.strictEqual(closed.status, "Abandoned")
          const next = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 })
          assert.strictEqual(next.turn, 2)
        }).pipe(Effect.provide(turnLayer(world, task, script)))
      })
    ))
})

describe("every gated entry's onEvent hears every event", () => {
  const offload = { threshold: 4_096, readTool: "read_artifact", destination: "Private" as const }
  const journalKinds = ["ArtifactOffloaded", "SummaryRequestAnswered", "SummaryStaged"]
  // Small enough that the offloaded results' pointers alone cross it.
  const pointerPolicy = Compaction.threshold({ measure: "bytes", limit: 300, keepRecent: 50 })

  it("on_event_every_event: runTurn's onEvent receives what streamTurn yields, offloads, summary requests and staged summaries included, in order; a loop without the tap (control) misses them", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const streamed = yield* Effect.gen(function* () {
          const binding = yield* boundWithPrivate(world, pointerPolicy)
          return yield* Stream.runCollect(
            TaskExecution.streamTurn(binding, start, { tools, maxSteps: 8, offload })
          ).pipe(Effect.provide(turnLayer(world, task, compactingScript)))
        })
        const other = Schema.decodeUnknownSync(Ids.TaskId)("on-event-task")
        const heard: Array<Executor.TurnEvent> = []
        const onEvent = (event: Executor.TurnEvent) => Effect.sync(() => void heard.push(event))
        yield* Effect.gen(function* () {
          const runtime = yield* world.openRuntime(Option.some(world.privateRef))
          const context = yield* runtime.bindTask({
            scope: yield* world.scopeFor([world.privateRef], other),
            output: Option.none()
          })
          const binding = yield* EntryGate.bind(context, { policy: pointerPolicy })
          return yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8, offload, onEvent })
        }).pipe(Effect.provide(turnLayer(world, other, compactingScript)))
        const tags = (events: Iterable<Executor.TurnEvent>) =>
          [...events].map((event) => event._tag).filter((tag) => tag !== "TextDelta")
        for (const kind of journalKinds) assert.include(tags(heard), kind, `onEvent never heard ${kind}`)
        assert.deepStrictEqual(tags(heard), tags(streamed))

        // Negative control: the same turn through the ungated loop with the same offload hook, as runTurn was
        // wired before (no journal tap): the entries are journaled, but onEvent never hears of them.
        const control = Schema.decodeUnknownSync(Ids.TaskId)("on-event-control")
        const missed: Array<Executor.TurnEvent> = []
        const entries = yield* Effect.gen(function* () {
          const runtime = yield* world.openRuntime(Option.some(world.privateRef))
          const context = yield* runtime.bindTask({
            scope: yield* world.scopeFor([world.privateRef], control),
            output: Option.none()
          })
          const capability = yield* PrivateSummaries.resolve(context)
          const journal = yield* Journal.Journal
          const target = yield* ToolResults.privateTarget.pipe(PrivateSummaries.provide(capability))
          const hooks = yield* ToolResults.offloadHooks(offload, target, journal).pipe(
            PrivateSummaries.provide(capability)
          )
          yield* Executor.runTurn(
            { tools, maxSteps: 8, hooks, onEvent: (event) => Effect.sync(() => void missed.push(event)) },
            start
          )
          return yield* Journal.readEntries({ folder: yield* journalFolder(world), task: control })
        }).pipe(Effect.provide(turnLayer(world, control, compactingScript)))
        assert.isTrue(entries.some((entry) => entry._tag === "ArtifactOffloaded"))
        assert.throws(() => assert.include(tags(missed), "ArtifactOffloaded"))
      })
    ))
})
