import { createHash } from "node:crypto"
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Volume } from "@tessera/core"
import * as Digest from "@tessera/core/Digest"
import * as NodeDigest from "@tessera/node/NodeDigest"
import * as Executor from "@tessera/runtime/Executor"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Model from "@tessera/runtime/Model"
import * as Tool from "@tessera/runtime/Tool"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, FileSystem, Layer, Option, Ref, Schema, Tracer } from "effect"
import * as fc from "fast-check"
import { expectedRequestMeasure } from "../support/requestMeasure.ts"
import { recordSpans } from "./support/spans.ts"

const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")
const bytes = (text: string) => Buffer.byteLength(text, "utf8")

const tempFolder = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
})

/** The model and the journal of one "process": a scripted model and the task's journal in `folder`. */
const services = (folder: string, script: ScriptedModel.Script) =>
  Layer.merge(ScriptedModel.layer(script), Journal.layer({ folder, task })).pipe(Layer.provide(NodeServices.layer))

const requests = Effect.gen(function* () {
  const recorder = yield* ScriptedModel.ScriptedModelRecorder
  return yield* recorder.requests
})
const journalState = Effect.gen(function* () {
  const journal = yield* Journal.Journal
  return yield* journal.state
})
const reopenedState = (folder: string) =>
  Effect.scoped(Effect.flatMap(Journal.open({ folder, task }), (journal) => journal.state)).pipe(
    Effect.provide(NodeServices.layer)
  )
const entries = (folder: string) => Journal.readEntries({ folder, task }).pipe(Effect.provide(NodeServices.layer))

class Boom extends Schema.TaggedError<Boom>()("Boom", { detail: Schema.String }) {
  override get message(): string {
    return this.detail
  }
}

const read = Tool.make({
  name: "read",
  description: "Reads a file",
  input: Schema.Struct({ path: Schema.String }),
  handler: ({ path }) => Effect.succeed(`contents of ${path}`)
})
const produce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size",
  input: Schema.Struct({ size: Schema.Int }),
  handler: ({ size }) => Effect.succeed("y".repeat(size))
})
const failing = Tool.make({
  name: "fail",
  description: "Always fails",
  input: Schema.Struct({ detail: Schema.String }),
  handler: ({ detail }) => Effect.fail(new Boom({ detail }))
})
const crashing = Tool.make({
  name: "crash",
  description: "Always crashes",
  input: Schema.Struct({}),
  handler: () => Effect.die(new Error("kaboom"))
})
const structured = Tool.make({
  name: "stat",
  description: "Returns a structured value",
  input: Schema.Struct({ path: Schema.String }),
  handler: ({ path }) => Effect.succeed({ path, size: 3, tags: ["a", "b"] })
})

const tools = Tool.registry(read, produce, failing, crashing, structured)
/** The same tools with `read` declared idempotent: a resume may run a `read` cut short by a crash again. */
const rereadable = Tool.registry({ ...read, idempotent: true }, produce, failing, crashing, structured)
const taskParts: ReadonlyArray<Model.Part> = [
  Model.text("system", "You are careful."),
  Model.text("user", "Summarize a, b and c.")
]
const start = History.make(taskParts)

const call = Model.toolCall
const result = (callId: string, name: string, content: string, isError = false) =>
  Model.toolResult({ callId, name, content, isError })

describe("stock executor", () => {
  it.effect(
    "a turn with two tool steps sends exactly 3 requests in order, and the reopened journal has the same state",
    () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        const script = [
          Model.response({ toolCalls: [call("c1", "read", { path: "a.txt" })] }),
          Model.response({
            text: "two more",
            toolCalls: [call("c2", "read", { path: "b.txt" }), call("c3", "stat", { path: "c.txt" })]
          }),
          Model.response({ text: "a, b and c summarized" })
        ]
        const { live, outcome, sent } = yield* Effect.gen(function* () {
          const outcome = yield* Executor.runTurn({ tools, maxSteps: 8 }, start)
          return { outcome, sent: yield* requests, live: yield* journalState }
        }).pipe(Effect.provide(services(folder, script)))

        const step1 = [call("c1", "read", { path: "a.txt" }), result("c1", "read", "contents of a.txt")]
        const step2 = [
          Model.text("assistant", "two more"),
          call("c2", "read", { path: "b.txt" }),
          call("c3", "stat", { path: "c.txt" }),
          result("c2", "read", "contents of b.txt"),
          result("c3", "stat", JSON.stringify({ path: "c.txt", size: 3, tags: ["a", "b"] }))
        ]
        assert.strictEqual(sent.length, 3)
        assert.deepStrictEqual(
          sent.map((request) => request.parts),
          [taskParts, [...taskParts, ...step1], [...taskParts, ...step1, ...step2]]
        )
        for (const request of sent) assert.deepStrictEqual(request.tools, tools.specs)
        assert.deepStrictEqual(outcome, {
          _tag: "Answered",
          turn: 1,
          steps: 3,
          text: "a, b and c summarized",
          history: History.append(start, [...step1, ...step2, Model.text("assistant", "a, b and c summarized")])
        })

        const reopened = yield* reopenedState(folder)
        assert.deepStrictEqual(reopened, live)
        assert.strictEqual(reopened.turns[0]?.status, "Closed")

        const written = yield* entries(folder)
        assert.deepStrictEqual(
          written.map((entry) => entry._tag),
          [
            "TurnOpened",
            "RequestDispatched",
            "ResponseReceived",
            "ToolCalled",
            "ToolResulted",
            "RequestDispatched",
            "ResponseReceived",
            "ToolCalled",
            "ToolResulted",
            "ToolCalled",
            "ToolResulted",
            "RequestDispatched",
            "ResponseReceived",
            "TurnClosed"
          ]
        )
        // Sizes and digests describe exactly what was sent and seen, checked with an independent SHA-256:
        // a request's size is the length of its JSON (bodies counted unescaped), its digest the hash chain over its
        // parts' digests closed by the tools' (see `RequestDispatched`).
        const dispatched = written.filter((entry) => entry._tag === "RequestDispatched")
        sent.forEach((request, index) => {
          const expected = expectedRequestMeasure(request)
          assert.deepStrictEqual(
            dispatched[index] && [dispatched[index].parts, dispatched[index].size, dispatched[index].sha256],
            [request.parts.length, expected.size, expected.sha256]
          )
        })
        const resulted = written.filter((entry) => entry._tag === "ToolResulted")
        const seen = (sent[2]?.parts ?? []).filter((part) => part._tag === "ToolResult")
        assert.deepStrictEqual(
          resulted.map((entry) => [entry.callId, entry.size, entry.sha256]),
          seen.map((part) => [part.callId, bytes(part.content), sha256(part.content)])
        )
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it("property: for random conversations, the journal reopened in a new instance equals what was recorded live", async () => {
    const scratch = nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "tessera-"))
    let run = 0
    const callSpec = fc.record({
      kind: fc.constantFrom("ok", "fail", "crash", "unknown", "badInput"),
      size: fc.integer({ min: 0, max: 20_000 })
    })
    const conversation = fc.record({
      steps: fc.array(fc.array(callSpec, { minLength: 1, maxLength: 3 }), { maxLength: 4 }),
      answer: fc.string({ maxLength: 40 })
    })
    try {
      await fc.assert(
        fc.asyncProperty(conversation, async ({ answer, steps }) => {
          run += 1
          const folder = nodePath.join(scratch, `run-${run}`)
          const script = [
            ...steps.map((calls, step) =>
              Model.response({
                text: step % 2 === 0 ? "" : `step ${step}`,
                toolCalls: calls.map(({ kind, size }, index) => {
                  const id = `s${step}c${index}`
                  const byKind = {
                    ok: () => call(id, "produce", { size }),
                    fail: () => call(id, "fail", { detail: `failure ${size}` }),
                    crash: () => call(id, "crash", {}),
                    unknown: () => call(id, "no-such-tool", { size }),
                    badInput: () => call(id, "produce", { size: `${size}` })
                  }
                  return byKind[kind]()
                })
              })
            ),
            Model.response({ text: answer })
          ]
          const program = Effect.gen(function* () {
            const outcome = yield* Executor.runTurn({ tools, maxSteps: steps.length + 1 }, start)
            return { outcome, sent: yield* requests, live: yield* journalState }
          }).pipe(Effect.provide(services(folder, script)))
          const { live, outcome, sent } = await Effect.runPromise(program)
          const reopened = await Effect.runPromise(reopenedState(folder))
          assert.deepStrictEqual(reopened, live)

          assert.strictEqual(sent.length, steps.length + 1)
          assert.strictEqual(outcome.steps, steps.length + 1)
          const turn = live.turns[0]
          assert.strictEqual(turn?.status, "Closed")
          const expectedErrors = steps.flat().filter(({ kind }) => kind !== "ok").length
          assert.strictEqual(turn?.toolResults, steps.flat().length)
          assert.strictEqual(turn?.toolErrors, expectedErrors)

          // Every journaled result describes exactly the result the model saw next, and no body is in the journal.
          const written = await Effect.runPromise(entries(folder))
          const seen = (sent.at(-1)?.parts ?? []).filter((part) => part._tag === "ToolResult")
          assert.deepStrictEqual(
            written
              .filter((entry) => entry._tag === "ToolResulted")
              .map((entry) => [entry.callId, entry.isError, entry.size, entry.sha256]),
            seen.map((part) => [part.callId, part.isError, bytes(part.content), sha256(part.content)])
          )
          const fileSize = nodeFs.statSync(nodePath.join(folder, Journal.fileName(task))).size
          assert.isBelow(fileSize, 400 * written.length, "entries hold sizes and digests, not payloads")
        }),
        { numRuns: 40 }
      )
    } finally {
      nodeFs.rmSync(scratch, { recursive: true, force: true })
    }
  })

  it.effect("a tool failure or crash becomes a tool-error result the model sees, and the turn goes on", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const script = [
        Model.response({ toolCalls: [call("c1", "fail", { detail: "disk on fire" }), call("c2", "crash", {})] }),
        Model.response({ text: "I saw both errors" })
      ]
      const { outcome, sent } = yield* Effect.gen(function* () {
        const outcome = yield* Executor.runTurn({ tools, maxSteps: 4 }, start)
        return { outcome, sent: yield* requests }
      }).pipe(Effect.provide(services(folder, script)))
      assert.strictEqual(outcome.text, "I saw both errors")
      const seen = (sent[1]?.parts ?? []).filter((part) => part._tag === "ToolResult")
      assert.deepStrictEqual(seen, [
        result("c1", "fail", 'tool "fail" failed: disk on fire', true),
        result("c2", "crash", 'tool "crash" crashed: kaboom', true)
      ])
      const written = yield* entries(folder)
      assert.deepStrictEqual(
        written.flatMap((entry) =>
          entry._tag === "ToolResulted" ? [[entry.callId, entry.isError, entry.failure]] : []
        ),
        [
          ["c1", true, "Failed"],
          ["c2", true, "Defect"]
        ]
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("an unknown tool and an input failing its Schema get clear error results; the handler never runs", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const ran = yield* Ref.make(0)
      const counted = Tool.make({
        name: "count",
        description: "Counts its runs",
        input: Schema.Struct({ path: Schema.String }),
        handler: () =>
          Effect.as(
            Ref.update(ran, (n) => n + 1),
            "counted"
          )
      })
      const script = [
        Model.response({ toolCalls: [call("c1", "teleport", { to: "mars" }), call("c2", "count", { path: 42 })] }),
        Model.response({ text: "ok" })
      ]
      const sent = yield* Executor.runTurn({ tools: Tool.registry(read, counted), maxSteps: 4 }, start).pipe(
        Effect.andThen(requests),
        Effect.provide(services(folder, script))
      )
      const [unknown, invalid] = (sent[1]?.parts ?? []).filter((part) => part._tag === "ToolResult")
      assert.strictEqual(unknown?.isError, true)
      assert.strictEqual(unknown?.content, 'unknown tool "teleport": available tools are "read", "count"')
      assert.strictEqual(invalid?.isError, true)
      assert.match(invalid?.content ?? "", /^invalid input for tool "count": /)
      assert.include(invalid?.content ?? "", "path", "the Schema issue names the offending field")
      assert.include(invalid?.content ?? "", "string", "the Schema issue says what was expected")
      assert.strictEqual(yield* Ref.get(ran), 0)
      const written = yield* entries(folder)
      assert.deepStrictEqual(
        written.flatMap((entry) =>
          entry._tag === "ToolCalled" || entry._tag === "ToolResulted"
            ? [[entry._tag, entry.name, entry._tag === "ToolResulted" ? entry.failure : undefined]]
            : []
        ),
        [
          ["ToolCalled", "teleport", undefined],
          ["ToolResulted", "teleport", "UnknownTool"],
          ["ToolCalled", "count", undefined],
          ["ToolResulted", "count", "InvalidInput"]
        ]
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("the step limit fails with StepLimitExceeded and leaves a consistent open turn that can be abandoned", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const forever: ScriptedModel.Script = (_request, index) =>
        Model.response({ toolCalls: [call(`c${index}`, "read", { path: `${index}.txt` })] })
      yield* Effect.gen(function* () {
        const error = yield* Effect.flip(Executor.runTurn({ tools, maxSteps: 3 }, start))
        assert.strictEqual(error._tag, "StepLimitExceeded")
        if (error._tag === "StepLimitExceeded") {
          assert.strictEqual(error.maxSteps, 3)
          assert.include(error.message, "limit of 3 model steps")
        }
        assert.strictEqual((yield* requests).length, 3)
        const journal = yield* Journal.Journal
        const open = Option.getOrThrow(Journal.openTurn(yield* journal.state))
        assert.deepStrictEqual([open.steps, open.owedCalls.length, open.answered, open.toolResults], [3, 0, false, 3])
        const unfinished = yield* Effect.flip(journal.closeTurn)
        assert.isTrue(unfinished._tag === "TurnUnfinished" && unfinished.reason === "NoFinalAnswer")
        assert.strictEqual((yield* journal.abandonTurn("step limit")).status, "Abandoned")
      }).pipe(Effect.provide(services(folder, forever)))
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a model failure is journaled, leaves the turn open, and a later process resumes it to the end", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const saved = yield* Ref.make(start)
      const remember: Executor.Hooks = {
        beforeModelStep: (_context, history) => Effect.as(Ref.set(saved, history), history)
      }
      const error = yield* Effect.flip(Executor.runTurn({ tools, maxSteps: 5, hooks: remember }, start)).pipe(
        Effect.provide(
          services(folder, [
            Model.response({ toolCalls: [call("c1", "read", { path: "a.txt" })] }),
            new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
          ])
        )
      )
      assert.strictEqual(error._tag, "ModelError")
      const afterFailure = yield* reopenedState(folder)
      const failedTurn = Option.getOrThrow(Journal.openTurn(afterFailure))
      assert.deepStrictEqual([failedTurn.steps, failedTurn.modelFailures, failedTurn.awaitingResponse], [2, 1, false])
      assert.strictEqual(Option.getOrThrow(afterFailure.lastEntry)._tag, "ModelFailed")

      const history = yield* Ref.get(saved)
      const { outcome, sent } = yield* Effect.gen(function* () {
        const outcome = yield* Executor.resumeTurn({ tools, maxSteps: 5 }, history)
        return { outcome, sent: yield* requests }
      }).pipe(Effect.provide(services(folder, [Model.response({ text: "done after retry" })])))
      assert.deepStrictEqual(
        sent.map((request) => request.parts),
        [History.toParts(history)]
      )
      assert.deepStrictEqual([outcome.turn, outcome.steps, outcome.text], [1, 3, "done after retry"])
      const final = yield* reopenedState(folder)
      assert.deepStrictEqual(
        final.turns.map((turn) => [turn.status, turn.resumptions]),
        [["Closed", 1]]
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect(
    "a turn cut between a tool call and its result cannot be closed, refuses a mismatched history, and resumes",
    () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        class HookCrash extends Schema.TaggedError<HookCrash>()("HookCrash", {}) {}
        const cut: Executor.Hooks<HookCrash> = {
          onToolResult: (context, produced) =>
            context.call.id === "c2" ? Effect.fail(new HookCrash()) : Effect.succeed(produced)
        }
        const calls = [call("c1", "read", { path: "a.txt" }), call("c2", "read", { path: "b.txt" })]
        const crashed = yield* Effect.flip(Executor.runTurn({ tools, maxSteps: 5, hooks: cut }, start)).pipe(
          Effect.provide(services(folder, [Model.response({ toolCalls: calls })]))
        )
        assert.strictEqual(crashed._tag, "HookCrash")

        yield* Effect.gen(function* () {
          const journal = yield* Journal.Journal
          const unfinished = yield* Effect.flip(journal.closeTurn)
          assert.strictEqual(unfinished._tag, "TurnUnfinished")
          if (unfinished._tag === "TurnUnfinished") {
            assert.strictEqual(unfinished.reason, "ToolResultsMissing")
            assert.deepStrictEqual(unfinished.pendingCalls, ["c2"])
          }
          // The harness's transcript: both calls, only the first result.
          const transcript = History.append(start, [...calls, result("c1", "read", "contents of a.txt")])
          const mismatch = yield* Effect.flip(
            Executor.resumeTurn({ tools, maxSteps: 5 }, History.append(transcript, [result("c2", "read", "made up")]))
          )
          assert.strictEqual(mismatch._tag, "ResumeMismatch")
          if (mismatch._tag === "ResumeMismatch") {
            assert.deepStrictEqual([mismatch.journalCalls, mismatch.historyCalls], [["c2"], []])
          }
          assert.strictEqual((yield* requests).length, 0, "a refused resume dispatches nothing")

          const outcome = yield* Executor.resumeTurn({ tools: rereadable, maxSteps: 5 }, transcript)
          assert.strictEqual(outcome.text, "resumed")
          const sent = yield* requests
          assert.deepStrictEqual(
            sent.map((request) => request.parts),
            [
              [
                ...taskParts,
                ...calls,
                result("c1", "read", "contents of a.txt"),
                result("c2", "read", "contents of b.txt")
              ]
            ]
          )
        }).pipe(Effect.provide(services(folder, [Model.response({ text: "resumed" })])))

        const written = yield* entries(folder)
        assert.deepStrictEqual(
          written
            .slice(-7)
            .map((entry) =>
              entry._tag === "ToolCalled" || entry._tag === "ToolResulted"
                ? `${entry._tag}:${entry.callId}`
                : entry._tag
            ),
          [
            "ToolCalled:c2",
            "TurnResumed",
            "ToolCalled:c2",
            "ToolResulted:c2",
            "RequestDispatched",
            "ResponseReceived",
            "TurnClosed"
          ]
        )
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a failing entry gate (beforeTurn) costs zero model requests and zero journal writes", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      class Refused extends Schema.TaggedError<Refused>()("Refused", {}) {}
      const gate: Executor.Hooks<Refused> = { beforeTurn: () => Effect.fail(new Refused()) }
      const { error, sent, state } = yield* Effect.gen(function* () {
        const error = yield* Effect.flip(Executor.runTurn({ tools, maxSteps: 3, hooks: gate }, start))
        return { error, sent: yield* requests, state: yield* journalState }
      }).pipe(Effect.provide(services(folder, [Model.response({ text: "never" })])))
      assert.strictEqual(error._tag, "Refused")
      assert.strictEqual(sent.length, 0)
      assert.strictEqual(state.entries, 0)
      const fs = yield* FileSystem.FileSystem
      // Refused before the first entry: the journal file was never created.
      assert.isFalse(yield* fs.exists(nodePath.join(folder, Journal.fileName(task))))
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("beforeModelStep can rewrite the history mid-turn, and can fail a step before it is dispatched", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const volume = Schema.decodeUnknownSync(Volume.VolumeRef)({ store: "local", volume: "agent-private" })
      const summary = Model.fileReference({
        role: "user",
        volume,
        path: "summaries/turn-1/2.txt",
        mediaType: "text/plain"
      })
      class Gate extends Schema.TaggedError<Gate>()("Gate", { step: Schema.Int }) {}
      const compacting: Executor.Hooks<Gate> = {
        beforeModelStep: (context, history) =>
          context.step === 2
            ? Effect.succeed(History.replaceLeadingRounds(history, 1, [summary]))
            : context.step === 3
              ? Effect.fail(new Gate({ step: 3 }))
              : Effect.succeed(history)
      }
      const script = [
        Model.response({ toolCalls: [call("c1", "produce", { size: 5000 })] }),
        Model.response({ toolCalls: [call("c2", "read", { path: "b.txt" })] })
      ]
      const { error, sent, state } = yield* Effect.gen(function* () {
        const error = yield* Effect.flip(Executor.runTurn({ tools, maxSteps: 5, hooks: compacting }, start))
        return { error, sent: yield* requests, state: yield* journalState }
      }).pipe(Effect.provide(services(folder, script)))
      assert.deepStrictEqual(sent[1]?.parts, [...taskParts, summary], "the big result was replaced, the task kept")
      assert.strictEqual(error._tag, "Gate")
      assert.strictEqual(sent.length, 2, "the failed step dispatched nothing")
      const open = Option.getOrThrow(Journal.openTurn(state))
      assert.deepStrictEqual([open.steps, open.awaitingResponse], [2, false], "and journaled no request")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect(
    "onToolResult replaces a large result before it is journaled and before the next request; no body reaches the journal",
    () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        const marker = "UNIQUE-PAYLOAD-MARKER"
        const big = Tool.make({
          name: "dump",
          description: "Dumps a lot",
          input: Schema.Struct({}),
          handler: () => Effect.succeed(`${marker}${"z".repeat(200_000)}`)
        })
        const pointer = "[artifact artifacts/c1.txt, 200021 bytes; read it with read_artifact]"
        const offload: Executor.Hooks = {
          onToolResult: (_context, produced) =>
            Effect.succeed(produced.content.length > 1000 ? { ...produced, content: pointer } : produced)
        }
        const sent = yield* Executor.runTurn({ tools: Tool.registry(big), maxSteps: 3, hooks: offload }, start).pipe(
          Effect.andThen(requests),
          Effect.provide(
            services(folder, [Model.response({ toolCalls: [call("c1", "dump", {})] }), Model.response({ text: "ok" })])
          )
        )
        assert.deepStrictEqual(sent[1]?.parts.at(-1), result("c1", "dump", pointer))
        const written = yield* entries(folder)
        const resulted = written.find((entry) => entry._tag === "ToolResulted")
        assert.deepStrictEqual(resulted && [resulted.size, resulted.sha256], [bytes(pointer), sha256(pointer)])
        const fs = yield* FileSystem.FileSystem
        const text = yield* fs.readFileString(nodePath.join(folder, Journal.fileName(task)))
        assert.notInclude(text, marker)
        assert.notInclude(text, pointer)
        assert.isBelow(text.length, 5000)
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("composed hooks run in order, each fed the previous one's output", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const tag = (label: string): Executor.Hooks => ({
        onToolResult: (_context, produced) => Effect.succeed({ ...produced, content: `${produced.content}|${label}` })
      })
      const sent = yield* Executor.runTurn(
        { tools, maxSteps: 3, hooks: Executor.composeHooks(tag("first"), tag("second")) },
        start
      ).pipe(
        Effect.andThen(requests),
        Effect.provide(
          services(folder, [
            Model.response({ toolCalls: [call("c1", "read", { path: "a" })] }),
            Model.response({ text: "ok" })
          ])
        )
      )
      assert.deepStrictEqual(sent[1]?.parts.at(-1), result("c1", "read", "contents of a|first|second"))
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("each turn, model step and tool call runs in a span carrying task, step and sizes", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const { tracer, named } = recordSpans()
      yield* Executor.runTurn({ tools, maxSteps: 3 }, start).pipe(
        Effect.provide(
          services(folder, [
            Model.response({ toolCalls: [call("c1", "read", { path: "a" })] }),
            Model.response({ text: "ok" })
          ])
        ),
        Effect.withTracer(tracer)
      )
      const [turn] = named("Executor.runTurn")
      assert.deepStrictEqual([turn?.attributes.get("tessera.task"), turn?.attributes.get("tessera.turn")], [task, 1])
      const steps = named("Executor.modelStep")
      assert.deepStrictEqual(
        steps.map((span) => span.attributes.get("tessera.step")),
        [1, 2]
      )
      for (const span of steps) {
        assert.strictEqual(span.attributes.get("tessera.task"), task)
        assert.isAbove(Number(span.attributes.get("tessera.request.size")), 0)
        assert.strictEqual(Option.getOrUndefined(span.parent)?.spanId, turn?.spanId)
      }
      const [toolSpan] = named("Executor.toolCall")
      assert.deepStrictEqual(
        ["tessera.tool.name", "tessera.tool.callId", "tessera.step", "tessera.tool.result.size"].map((key) =>
          toolSpan?.attributes.get(key)
        ),
        ["read", "c1", 1, bytes("contents of a")]
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )
})

describe("spans only when traced", () => {
  // Effect's default tracer is the one a program gets without providing one; counting what it is asked for shows
  // every span opened while no tracer is installed.
  const countDefaultSpans = <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        const names: Array<string> = []
        const spans: Array<Tracer.Span> = []
        const original = Tracer.nativeTracer.span
        const patched: typeof original = (options) => {
          names.push(options.name)
          const span = original.call(Tracer.nativeTracer, options)
          spans.push(span)
          return span
        }
        Object.assign(Tracer.nativeTracer, { span: patched })
        return { names, spans, original }
      }),
      ({ names, spans }) => Effect.map(self, (value) => ({ value, names, spans })),
      ({ original }) => Effect.sync(() => Object.assign(Tracer.nativeTracer, { span: original }))
    )
  const seenByTool = (seen: Array<string>, extra?: (effect: Effect.Effect<void>) => Effect.Effect<void>) =>
    Tool.make({
      name: "look",
      description: "Records the span it runs in",
      input: Schema.Struct({}),
      handler: () => {
        const record = Effect.matchEffect(Effect.currentSpan, {
          onFailure: () => Effect.sync(() => void seen.push("(none)")),
          onSuccess: (span) => Effect.sync(() => void seen.push(span.name))
        })
        return Effect.as(extra === undefined ? record : extra(record), "looked")
      }
    })
  const script = [Model.response({ toolCalls: [call("c1", "look", {})] }), Model.response({ text: "ok" })]

  it.effect(
    "spans_only_when_traced: with no tracer installed a turn opens no span, and a tool sees none of the runtime's",
    () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        const seen: Array<string> = []
        const { names } = yield* countDefaultSpans(
          Executor.runTurn({ tools: Tool.registry(seenByTool(seen)), maxSteps: 3 }, start).pipe(
            Effect.provide(services(folder, script))
          )
        )
        assert.deepStrictEqual(names, [])
        assert.deepStrictEqual(seen, ["(none)"])
        // Inside a span of the host's own (kept in memory by the default tracer), the tool sees that span, and the
        // runtime sets none of its attributes on it.
        const inHostSpan = yield* countDefaultSpans(
          Executor.runTurn({ tools: Tool.registry(seenByTool(seen)), maxSteps: 3 }, start).pipe(
            Effect.provide(services(yield* tempFolder, script)),
            Effect.withSpan("host.turn")
          )
        )
        assert.deepStrictEqual(inHostSpan.names, ["host.turn"])
        assert.deepStrictEqual(seen, ["(none)", "host.turn"])
        assert.deepStrictEqual([...(inHostSpan.spans[0]?.attributes.keys() ?? [])], [])
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("spans_only_when_traced: an installed tracer gets every span; switched off, none", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      const tools = Tool.registry(seenByTool(seen))
      const traced = recordSpans()
      yield* Executor.runTurn({ tools, maxSteps: 3 }, start).pipe(
        Effect.provide(services(yield* tempFolder, script)),
        Effect.withTracer(traced.tracer)
      )
      assert.deepStrictEqual(
        ["Executor.runTurn", "Executor.modelStep", "Executor.toolCall"].map((name) => traced.named(name).length),
        [1, 2, 1]
      )
      assert.deepStrictEqual(seen, ["Executor.toolCall"])
      const off = recordSpans()
      const { names } = yield* countDefaultSpans(
        Executor.runTurn({ tools, maxSteps: 3 }, start).pipe(
          Effect.provide(services(yield* tempFolder, script)),
          Effect.withTracer(off.tracer),
          Effect.withTracerEnabled(false)
        )
      )
      assert.deepStrictEqual(
        [off.named("Executor.runTurn").length, off.named("Executor.modelStep").length, names],
        [0, 0, []]
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("spans_only_when_traced, negative control: a span opened the plain way under no tracer is counted", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const seen: Array<string> = []
      // The wiring the runtime no longer uses: `Effect.withSpan` whatever the tracer.
      const plainSpan = (effect: Effect.Effect<void>) => Effect.withSpan(effect, "Executor.toolCall")
      const { names } = yield* countDefaultSpans(
        Executor.runTurn({ tools: Tool.registry(seenByTool(seen, plainSpan)), maxSteps: 3 }, start).pipe(
          Effect.provide(services(folder, script))
        )
      )
      assert.deepStrictEqual(names, ["Executor.toolCall"])
      assert.deepStrictEqual(seen, ["Executor.toolCall"])
    }).pipe(Effect.provide(NodeServices.layer))
  )
})

/** A digest that counts what it is asked to hash, then hashes with `node:crypto`. */
const countingDigest = () => {
  const counts = { calls: 0, bytes: 0 }
  const digest: Digest.DigestShape = {
    sha256: (bytes) => {
      counts.calls += 1
      counts.bytes += bytes.length
      return NodeDigest.nodeCrypto.sha256(bytes)
    },
    measureText: (text) => {
      counts.calls += 1
      counts.bytes += bytes(text)
      return NodeDigest.nodeCrypto.measureText(text)
    }
  }
  return { counts, layer: Layer.succeed(Digest.Digest)(digest) }
}

/** The entries of a journal without their timestamps, which differ from run to run. */
const timeless = (written: ReadonlyArray<JournalEntry.Entry>) => written.map(({ at: _at, ...rest }) => rest)

describe("measuring", () => {
  const script = (steps: number, size: number) => [
    ...Array.from({ length: steps }, (_, index) =>
      Model.response({
        text: index % 2 === 0 ? "" : `step ${index}`,
        toolCalls: [call(`c${index}`, "produce", { size })]
      })
    ),
    Model.response({ text: "done" })
  ]

  it.effect("a host's Digest replaces the WebCrypto default and journals the very same sizes and digests", () =>
    Effect.gen(function* () {
      const byDefault = yield* tempFolder
      const byHost = yield* tempFolder
      const counting = countingDigest()
      const turn = Executor.runTurn({ tools, maxSteps: 10 }, start)
      yield* turn.pipe(Effect.provide(services(byDefault, script(4, 3000))))
      yield* turn.pipe(Effect.provide(services(byHost, script(4, 3000))), Effect.provide(counting.layer))
      assert.isAbove(counting.counts.calls, 0, "the provided digest was the one used")
      const expected = timeless(yield* entries(byDefault))
      assert.deepStrictEqual(timeless(yield* entries(byHost)), expected)
      assert.strictEqual(expected.filter((entry) => entry._tag === "RequestDispatched").length, 5)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a request's parts are hashed once each, so the bytes hashed per step do not grow with the history", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const counting = countingDigest()
      const steps = 30
      const size = 10_000
      const sent = yield* Executor.runTurn({ tools, maxSteps: steps + 1 }, start).pipe(
        Effect.andThen(requests),
        Effect.provide(services(folder, script(steps, size))),
        Effect.provide(counting.layer)
      )
      // Hashing whole requests would hash every earlier result again at every step.
      const wholeRequests = sent.reduce((total, request) => total + bytes(JSON.stringify(request)), 0)
      const results = steps * size
      assert.isAbove(wholeRequests, 10 * results, "the scenario is one where whole-request hashing is quadratic")
      // Each result is hashed twice (as the tool result, and inside its request part), plus 64 bytes per part per request.
      assert.isBelow(counting.counts.bytes, 3 * results)
    }).pipe(Effect.provide(NodeServices.layer))
  )
})

describe("History", () => {
  it("rounds never separate a tool call from its result, and replacing rounds keeps the task", () => {
    const exchange = fc.record({
      input: fc.boolean(),
      text: fc.boolean(),
      calls: fc.integer({ min: 0, max: 3 })
    })
    fc.assert(
      fc.property(fc.array(exchange, { maxLength: 8 }), fc.integer({ min: 0, max: 10 }), (exchanges, count) => {
        let history = start
        exchanges.forEach(({ calls, input, text }, index) => {
          const ids = Array.from({ length: calls }, (_, n) => `e${index}c${n}`)
          history = History.append(history, [
            ...(input ? [Model.text("user", `more ${index}`)] : []),
            ...(text ? [Model.text("assistant", `thinking ${index}`)] : []),
            ...ids.map((id) => call(id, "read", { path: id })),
            ...ids.map((id) => result(id, "read", id))
          ])
        })
        const rounds = History.rounds(history)
        assert.deepStrictEqual(rounds.flat(), history.parts, "rounds partition the parts in order")
        for (const round of rounds) {
          const calls = new Set(round.flatMap((part) => (part._tag === "ToolCall" ? [part.id] : [])))
          for (const part of round) if (part._tag === "ToolResult") assert.isTrue(calls.has(part.callId))
        }
        const replaced = History.replaceLeadingRounds(history, count, [Model.text("user", "summary")])
        assert.deepStrictEqual(replaced.task, taskParts)
        assert.deepStrictEqual(History.unansweredCalls(replaced), [])
      }),
      { numRuns: 300 }
    )
  })
})
