import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactRedactor } from "@tessera/artifacts"
import { Compaction, EntryGate, Model, PrivateSummaries, TaskExecution } from "@tessera/runtime"
import { Effect, Layer, Option } from "effect"
import { recordSpans } from "./support/spans.ts"
import {
  isSummaryRequest,
  journalBytes,
  journalFolder,
  requests,
  requestText,
  start,
  taskText,
  tools,
  turnLayer
} from "./support/turns.ts"
import { agent, dataFolderOf, runInWorld, task } from "./support/world.ts"

const produceCall = (id: string, size: number, fill: string) => Model.toolCall(id, "produce", { size, fill })

/** A turn that produces two results of `size` bytes and then answers; summary requests get `summary`. */
const twoLargeResults =
  (size: number, summary: string, answer: string) => (request: Model.ModelRequest, index: number) =>
    isSummaryRequest(request)
      ? Model.response({ text: summary })
      : index === 0
        ? Model.response({ toolCalls: [produceCall("c1", size, "a")] })
        : index === 1
          ? Model.response({ toolCalls: [produceCall("c2", size, "b")] })
          : Model.response({ text: answer })

const boundWithPrivate = (world: Parameters<Parameters<typeof runInWorld>[0]>[0], policy?: Compaction.Policy) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const scope = yield* world.scopeFor([world.privateRef])
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return yield* EntryGate.bind(context, policy === undefined ? {} : { policy })
  })

describe("compaction in a stock turn", () => {
  it("four_request_turn: two large tool results, no output volume: exactly 4 requests, the last starts with a summary file on the agent-owned private volume", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const big = 20_000
        const binding = yield* boundWithPrivate(
          world,
          Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const script = twoLargeResults(
          big,
          "Both reports were produced: report A is all 'a', report B is all 'b'.",
          "Report A is all 'a' and report B is all 'b'."
        )
        const { outcome, sent } = yield* Effect.gen(function* () {
          const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
          return { outcome, sent: yield* requests }
        }).pipe(Effect.provide(turnLayer(world, task, script)))

        assert.strictEqual(sent.length, 4)
        assert.isTrue(isSummaryRequest(sent[2] as Model.ModelRequest), "the third request is the summary request")
        assert.strictEqual(outcome.text, "Report A is all 'a' and report B is all 'b'.")
        const last = sent[3] as Model.ModelRequest
        const first = last.parts[0]
        assert.strictEqual(first?._tag, "FileReference")
        if (first?._tag !== "FileReference") return
        assert.match(first.path, /^summaries\/task-1-t1\/3\.txt$/)
        assert.deepStrictEqual(first.volume, world.privateRef)
        const facts = yield* world.host.store.custody(first.volume)
        assert.isTrue(Option.isSome(facts))
        if (Option.isSome(facts)) {
          assert.strictEqual(facts.value.kind, "AgentPrivate")
          assert.deepStrictEqual(facts.value.owner, { _tag: "Agent", agent })
        }
        const lastText = requestText(last)
        assert.notInclude(lastText, "a".repeat(1_000), "the big result A is gone from the final request")
        // B came after the model's latest answer: it reaches the model (here, whole) before any summary replaces it.
        assert.include(lastText, "b".repeat(20_000), "the big result B, not seen yet, is in the final request")
        assert.include(lastText, taskText, "the user's task is still there")
        const folder = dataFolderOf(world, world.privateRef)
        assert.strictEqual(
          fs.readFileSync(path.join(folder, first.path), "utf8"),
          "Both reports were produced: report A is all 'a', report B is all 'b'."
        )
        // The journal says a summary was staged, and where; never what it says.
        const journal = journalBytes(yield* journalFolder(world), task)
        assert.include(journal, '"_tag":"SummaryStaged"')
        assert.include(journal, first.path)
        assert.notInclude(journal, "Both reports were produced")
      })
    ))

  it("a trace shows a compaction span only for the step that compacted, inside that step's span", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(
          world,
          Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const script = twoLargeResults(20_000, "Both reports were produced.", "done")
        const { tracer, named } = recordSpans()
        yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 }).pipe(
          Effect.provide(turnLayer(world, task, script)),
          Effect.withTracer(tracer)
        )
        const steps = named("Executor.modelStep")
        assert.strictEqual(steps.length, 3, "three model steps; the compaction hook ran before each")
        const compactions = named("Compaction.compact")
        assert.strictEqual(compactions.length, 1, "only the third step compacted")
        const parent = Option.getOrUndefined(compactions[0]?.parent ?? Option.none())
        const third = steps.find((span) => span.attributes.get("tessera.step") === 3)
        assert.strictEqual(parent?.spanId, third?.spanId)
      })
    ))

  it("three_successive_compactions: the task is in every request, the third summary request builds on the second summary, a result without line breaks compacts", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(
          world,
          Compaction.threshold({ measure: "bytes", limit: 10_000, keepRecent: 0, pieceLimit: 100_000 })
        )
        let summaries = 0
        let calls = 0
        const noBreaks = "n".repeat(6_000)
        const script = (request: Model.ModelRequest) => {
          if (isSummaryRequest(request)) {
            summaries++
            return Model.response({ text: `summary number ${summaries}` })
          }
          calls++
          if (calls > 7) return Model.response({ text: "done" })
          // The fourth result has no line break at all; the others have many.
          const fill = calls === 4 ? "n" : "line of a report\n"
          return Model.response({ toolCalls: [produceCall(`c${calls}`, calls === 4 ? 6_000 : 360, fill)] })
        }
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 20 })
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, script)))

        const summaryRequests = sent.filter(isSummaryRequest)
        assert.isAtLeast(summaryRequests.length, 3)
        for (const request of sent) assert.include(requestText(request), taskText)
        assert.include(requestText(summaryRequests[2] as Model.ModelRequest), "summary number 2")
        assert.include(requestText(summaryRequests[1] as Model.ModelRequest), "summary number 1")
        const afterCompaction = sent.slice(sent.indexOf(summaryRequests.at(-1) as Model.ModelRequest) + 1)
        assert.isAbove(afterCompaction.length, 0)
        for (const request of afterCompaction) assert.notInclude(requestText(request), noBreaks)
        assert.isTrue(
          summaryRequests.some((request) => requestText(request).includes(noBreaks)),
          "the result without line breaks went into a summary request"
        )
      })
    ))

  it("summaries are scrubbed by the host's redactor before they touch disk, and the next request carries the scrubbed text", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(
          world,
          Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })
        )
        const script = (request: Model.ModelRequest, index: number) =>
          isSummaryRequest(request)
            ? Model.response({ text: "the token is SECRET-7731, keep it" })
            : index === 0
              ? Model.response({ toolCalls: [produceCall("c1", 6_000, "x")] })
              : index === 1
                ? Model.response({ toolCalls: [produceCall("c2", 10, "y")] })
                : Model.response({ text: "done" })
        const redactor = ArtifactRedactor.layer({
          redact: (body) => Effect.succeed(body.replaceAll("SECRET-7731", "[REDACTED]"))
        })
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
          return yield* requests
        }).pipe(Effect.provide(Layer.merge(turnLayer(world, task, script), redactor)))
        const folder = dataFolderOf(world, world.privateRef)
        // c1's result is summarized at step 3, once the model has seen it at step 2.
        const staged = fs.readFileSync(path.join(folder, "summaries", "task-1-t1", "3.txt"), "utf8")
        assert.strictEqual(staged, "the token is [REDACTED], keep it")
        const last = requestText(sent.at(-1) as Model.ModelRequest)
        assert.include(last, "the token is [REDACTED], keep it")
        assert.notInclude(last, "SECRET-7731")
      })
    ))
})

describe("the entry gate and the default policy", () => {
  it("a runtime opened without a private volume runs without compaction by default and completes its turn", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.none(), [])
        const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([]), output: Option.none() })
        const binding = yield* EntryGate.bind(context)
        assert.strictEqual(binding.policy._tag, "Disabled")
        const script = [
          Model.response({ toolCalls: [produceCall("c1", 50_000, "a")] }),
          Model.response({ toolCalls: [produceCall("c2", 50_000, "b")] }),
          Model.response({ text: "done" })
        ]
        const { outcome, sent } = yield* Effect.gen(function* () {
          const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
          return { outcome, sent: yield* requests }
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        assert.strictEqual(outcome.text, "done")
        assert.strictEqual(sent.length, 3)
        assert.isFalse(sent.some(isSummaryRequest))
      })
    ))

  it("the default policy is Threshold where the capability resolves", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(world)
        assert.deepStrictEqual(binding.policy, Compaction.defaultThreshold)
      })
    ))

  it("arming Threshold without a private volume is Unauthorized before any new model request; with the private volume the same turn completes", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const armed = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0 })
        // Each turn: one large tool result, then an answer (summary requests aside).
        let turnRequests = 0
        const script = (request: Model.ModelRequest) => {
          if (isSummaryRequest(request)) return Model.response({ text: "summary" })
          turnRequests++
          return turnRequests % 2 === 1
            ? Model.response({ toolCalls: [produceCall(`c${turnRequests}`, 6_000, "a")] })
            : Model.response({ text: "done" })
        }

        const runtime = yield* world.openRuntime(Option.none(), [])
        const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([]), output: Option.none() })
        const counts = yield* Effect.gen(function* () {
          // Some history first, so there are requests whose count must not move.
          const disabled = yield* EntryGate.bind(context)
          yield* TaskExecution.runTurn(disabled, start, { tools, maxSteps: 8 })
          const before = (yield* requests).length
          const atBind = yield* Effect.flip(EntryGate.bind(context, { policy: armed }))
          // A binding made by hand skips `bind`; the turn's gate refuses it as not minted.
          const atTurn = yield* Effect.flip(
            TaskExecution.runTurn({ context, policy: armed }, start, { tools, maxSteps: 8 })
          )
          return { before, after: (yield* requests).length, atBind, atTurn }
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        assert.strictEqual(counts.before, 2)
        assert.strictEqual(counts.after, 2)
        assert.strictEqual(counts.atBind._tag, "Unauthorized")
        assert.strictEqual(counts.atTurn._tag, "Unauthorized")
        if (counts.atBind._tag === "Unauthorized") {
          assert.strictEqual(counts.atBind.reason, "NoPrivateWriter")
          assert.include(counts.atBind.message, "Bind: compaction is armed (Threshold)")
        }
        if (counts.atTurn._tag === "Unauthorized") assert.strictEqual(counts.atTurn.reason, "NotMinted")

        // The same scenario on a runtime opened with the private volume completes.
        const withPrivate = yield* boundWithPrivate(world, armed)
        const outcome = yield* TaskExecution.runTurn(withPrivate, start, { tools, maxSteps: 8 }).pipe(
          Effect.provide(turnLayer(world, task, script))
        )
        assert.strictEqual(outcome.text, "done")
      })
    ))

  it("every gated entry refuses an armed writerless binding before any model request or journal write", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.none(), [])
        const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([]), output: Option.none() })
        // Made by hand: `EntryGate.bind` would already refuse it.
        const armed: EntryGate.TaskBinding = { context, policy: Compaction.threshold() }
        const config = { tools, maxSteps: 4 }
        const stepContext = { task, turn: 1, step: 1 }
        const entries = {
          runTurn: Effect.asVoid(TaskExecution.runTurn(armed, start, config)),
          resumeTurn: Effect.asVoid(TaskExecution.resumeTurn(armed, start, config)),
          modelStep: Effect.asVoid(TaskExecution.modelStep(armed, config, stepContext, start)),
          dispatchTools: Effect.asVoid(
            TaskExecution.dispatchTools(armed, config, stepContext, [produceCall("c1", 10, "a")])
          ),
          summarize: Effect.asVoid(TaskExecution.summarize(armed, start)),
          runSummaryFileTurn: Effect.asVoid(TaskExecution.runSummaryFileTurn(armed, start, config))
        }
        for (const [name, entry] of Object.entries(entries)) {
          const { error, sent } = yield* Effect.gen(function* () {
            const error = yield* Effect.flip(entry)
            return { error, sent: (yield* requests).length }
          }).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: "never" }))))
          assert.strictEqual(error._tag, "Unauthorized", name)
          assert.strictEqual(sent, 0, name)
          assert.strictEqual(journalBytes(yield* journalFolder(world), task), "", name)
        }
      })
    ))

  it("the runtime's private capability is what compaction publishes through", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* boundWithPrivate(world)
        const capability = yield* PrivateSummaries.resolve(binding.context)
        assert.strictEqual(capability.source, "RuntimePrivate")
        assert.strictEqual(capability.folder, dataFolderOf(world, world.privateRef))
      })
    ))
})
