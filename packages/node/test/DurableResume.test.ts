/**
 * Durable turns: a task resumes from disk alone (journal + transcript).
 *
 * - The crash test: real child processes (fixtures/durableTurns.ts) run
 *   durable turns with offload and compaction and are killed with SIGKILL
 *   at random points, at least 100 times; each start continues from disk
 *   alone, and the task ends with the same conversation and the same
 *   request sequence as an uncrashed run, no call with a journaled result
 *   running again.
 * - In process: a turn broken mid-way and resumed by a fresh harness sends
 *   the requests the uninterrupted run sent; a resume that ignores the
 *   transcript fails the byte-identity check (negative control).
 * - A call in flight at a crash is reported, and runs again only for an
 *   idempotent tool; otherwise it waits for the host.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles } from "@tessera/core"
import { LocalHarness } from "@tessera/node"
import {
  Compaction,
  type EntryGate,
  History,
  Journal,
  type JournalEntry,
  Model,
  PrivateSummaries,
  TaskExecution,
  Tool,
  Transcript
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"
import * as Killable from "./support/killableFixture.ts"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const child = path.join(import.meta.dirname, "fixtures", "durableTurns.ts")

/** Starts the child; kills it `killAfterMs` after it is ready (never when `undefined`). */
const runChild = (stateDir: string, turns: number, killAfterMs: number | undefined) =>
  Killable.runFixture({
    fixture: child,
    args: [stateDir, String(turns)],
    env: { NODE_COMPILE_CACHE: path.join(stateDir, "..", "compile-cache") },
    kill: killAfterMs === undefined ? undefined : Killable.afterReady(killAfterMs)
  })

const readJournal = (stateDir: string) =>
  Effect.runPromise(
    Journal.readEntries({
      folder: path.join(stateDir, "durable", "volumes", "journal"),
      task: taskId("durable-task")
    }).pipe(Effect.provide(NodeServices.layer))
  )

/** The digests of the turn requests that were answered, in order (a request lost to a kill is not one). */
const answeredRequests = (entries: ReadonlyArray<JournalEntry.Entry>): ReadonlyArray<string> => {
  const answered: Array<string> = []
  let last: string | undefined
  for (const entry of entries) {
    if (entry._tag === "RequestDispatched") last = entry.sha256
    if (entry._tag === "ResponseReceived" && last !== undefined) answered.push(last)
  }
  return answered
}

const lines = (file: string): ReadonlyArray<string> =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.length > 0)
    : []

/**
 * Calls that ran more often than allowed: once, plus once for every time a
 * resume reported the call in flight (an idempotent tool runs it again).
 */
const ranTooOften = (sideEffects: ReadonlyArray<string>, inFlight: ReadonlyArray<string>): ReadonlyArray<string> => {
  const count = (list: ReadonlyArray<string>) => {
    const counts = new Map<string, number>()
    for (const id of list) counts.set(id, (counts.get(id) ?? 0) + 1)
    return counts
  }
  const ran = count(sideEffects)
  const allowed = count(inFlight)
  return [...ran]
    .filter(([id, times]) => times > 1 + (allowed.get(id) ?? 0))
    .map(([id, times]) => `${id} ran ${times} times`)
}

/** Transcript records under a final name whose bytes do not have the digest they are named by (torn or changed). */
const tornRecords = (stateDir: string): ReadonlyArray<string> => {
  const folder = path.join(stateDir, "durable", "volumes", "resumer-scratch", "transcripts", "durable-task")
  if (!fs.existsSync(folder)) return []
  return fs
    .readdirSync(folder)
    .filter((name) => !DurableFiles.isTemporaryName(name))
    .filter(
      (name) =>
        `${createHash("sha256")
          .update(fs.readFileSync(path.join(folder, name)))
          .digest("hex")}.json` !== name
    )
}

const finalDigest = (output: string): string | undefined => /final ([0-9a-f]{64})/.exec(output)?.[1]

describe("durable resume", () => {
  it("durable_resume_crash: >= 100 SIGKILLs at random points; each start resumes from disk alone; the task ends with the uncrashed run's conversation and request sequence; no call with a journaled result runs twice", async () => {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-durable-")))
    try {
      const started = Date.now()
      // Two lanes (two stores) run side by side, 50 kills each.
      const lanes = [path.join(root, "lane-a"), path.join(root, "lane-b")]
      const killsPerLane = 50
      const lane = async (stateDir: string) => {
        fs.mkdirSync(stateDir)
        let killed = 0
        let turns = 2
        let doneRuns = 0
        while (killed < killsPerLane) {
          const run = await runChild(stateDir, turns, Math.floor(Math.random() * 250))
          if (run.outcome === "done") {
            doneRuns++
            turns += 1
            continue
          }
          killed++
        }
        return { killed, turns, doneRuns }
      }
      const results = await Promise.all(lanes.map(lane))
      const turns = Math.max(...results.map((result) => result.turns))
      const finals = await Promise.all(lanes.map((stateDir) => runChild(stateDir, turns, undefined)))
      const reference = path.join(root, "reference")
      fs.mkdirSync(reference)
      const uncrashed = await runChild(reference, turns, undefined)
      assert.strictEqual(uncrashed.outcome, "done")
      const referenceEntries = await readJournal(reference)
      const expectedRequests = answeredRequests(referenceEntries)
      assert.strictEqual(
        referenceEntries.filter((entry) => entry._tag === "TurnClosed").length,
        turns,
        "the reference run closed every turn"
      )
      assert.isAbove(referenceEntries.filter((entry) => entry._tag === "SummaryStaged").length, 0, "the run compacts")
      assert.isAbove(
        referenceEntries.filter((entry) => entry._tag === "ArtifactOffloaded").length,
        0,
        "the run offloads"
      )
      let retried = 0
      let inFlightReported = 0
      for (const [index, stateDir] of lanes.entries()) {
        const final = finals[index] as Killable.FixtureRun
        assert.strictEqual(final.outcome, "done")
        assert.strictEqual(finalDigest(final.output), finalDigest(uncrashed.output), "the same conversation")
        const entries = await readJournal(stateDir)
        assert.deepStrictEqual(answeredRequests(entries), expectedRequests, "the same request sequence")
        assert.notInclude(
          entries.map((entry) => entry._tag),
          "TurnAbandoned"
        )
        assert.deepStrictEqual(tornRecords(stateDir), [], "every transcript record under a final name is whole")
        const inFlight = lines(path.join(stateDir, "in-flight.log"))
        assert.deepStrictEqual(ranTooOften(lines(path.join(stateDir, "side-effects.log")), inFlight), [])
        // Every call that has a result ran, and has exactly one result.
        const resulted = entries.flatMap((entry) => (entry._tag === "ToolResulted" ? [entry.callId] : []))
        assert.strictEqual(new Set(resulted).size, resulted.length)
        retried += entries.filter((entry) => entry._tag === "TurnResumed" && entry.retryStep !== undefined).length
        inFlightReported += inFlight.length
      }
      const kills = results.reduce((sum, result) => sum + result.killed, 0)
      assert.isAtLeast(kills, 100)
      console.info(
        `durable resume: ${kills} kills over ${turns} turns in ${((Date.now() - started) / 1000).toFixed(1)} s, ` +
          `${retried} lost requests sent again under their step, ${inFlightReported} calls reported in flight, ` +
          `${expectedRequests.length} requests compared`
      )
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  }, 600_000)

  it("negative control: the side-effect check finds a call that ran again without being reported in flight, and the record check a torn record", () => {
    assert.deepStrictEqual(ranTooOften(["a", "b", "b"], ["b"]), [])
    assert.deepStrictEqual(ranTooOften(["a", "a", "b"], ["b"]), ["a ran 2 times"])
    const stateDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-torn-")))
    try {
      const folder = path.join(stateDir, "durable", "volumes", "resumer-scratch", "transcripts", "durable-task")
      fs.mkdirSync(folder, { recursive: true })
      const whole = '{"_tag":"Resulted"}'
      fs.writeFileSync(path.join(folder, `${createHash("sha256").update(whole).digest("hex")}.json`), whole)
      // What writing under the final name first leaves when the kill lands mid-write.
      const torn = `${createHash("sha256").update('{"_tag":"Responded","text":"a"}').digest("hex")}.json`
      fs.writeFileSync(path.join(folder, torn), '{"_tag":"Respon')
      fs.writeFileSync(path.join(folder, DurableFiles.temporaryName("x.json", "t")), "{")
      assert.deepStrictEqual(tornRecords(stateDir), [torn])
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true })
    }
  })
})

// In process: a turn broken mid-way, resumed by a fresh harness on the same store.

const agent = agentId("resumer")
const task = taskId("durable-task")
const policy = Compaction.threshold({ measure: "bytes", limit: 2500, keepRecent: 600, pieceLimit: 6000 })
const taskParts = [Model.text("system", "You fetch reports."), Model.text("user", "Fetch the reports.")]
const start = History.append(History.make(taskParts), [Model.text("user", "turn 1: fetch")])

const withHarness = <A, E, R>(stateDir: string, body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.flatMap(LocalHarness.open({ stateDir, namespace: "durable", agent }), (harness) =>
      harness.withTask(task, body, { policy })
    )
  )

const fetchTool = (sideEffects: Array<string>, idempotent: boolean) =>
  Tool.make({
    name: "fetch",
    description: "Fetches a report",
    input: Schema.Struct({ id: Schema.String, large: Schema.Boolean }),
    idempotent,
    handler: (input) =>
      Effect.sync(() => {
        sideEffects.push(input.id)
        return input.large ? `BEGIN ${input.id}\n${"x".repeat(9000)}\nEND` : `small ${input.id}`
      })
  })

const script = [
  Model.response({
    text: "fetching",
    toolCalls: [
      Model.toolCall("c1", "fetch", { id: "c1", large: true }),
      Model.toolCall("c2", "fetch", { id: "c2", large: false })
    ]
  }),
  Model.response({ toolCalls: [Model.toolCall("c3", "fetch", { id: "c3", large: true })] }),
  Model.response({ text: "all fetched" })
]

const configFor = (tools: Tool.Registry): TaskExecution.ExecutionConfig => ({
  tools,
  maxSteps: 5,
  durable: true,
  offload: { threshold: 4096, readTool: "read_artifact", destination: "Private" }
})

const recorded = Effect.flatMap(Effect.service(ScriptedModel.ScriptedModelRecorder), (recorder) => recorder.requests)

describe("durable resume in process", () => {
  it.live(
    "a durable turn broken after its first step is resumed by a fresh harness from disk alone: the same requests as the uninterrupted run, byte for byte; ignoring the transcript fails the check (negative control)",
    () =>
      Effect.gen(function* () {
        const effects: Array<string> = []
        const tools = Tool.registry(fetchTool(effects, false))
        // The uninterrupted run.
        const reference = yield* tempDir
        const uninterrupted = yield* withHarness(reference, (binding) =>
          Effect.gen(function* () {
            const outcome = yield* TaskExecution.runTurn(binding, start, configFor(tools))
            return { outcome, requests: yield* recorded }
          }).pipe(Effect.provide(ScriptedModel.layer(script)))
        )
        assert.strictEqual(uninterrupted.outcome._tag, "Answered")
        assert.strictEqual(uninterrupted.requests.length, 3)

        // The same turn, whose second request fails: the process gives up there.
        const stateDir = yield* tempDir
        const broken = yield* withHarness(stateDir, (binding) =>
          Effect.flip(TaskExecution.runTurn(binding, start, configFor(tools))).pipe(
            Effect.provide(
              ScriptedModel.layer([
                script[0] as Model.ModelResponse,
                new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
              ])
            )
          )
        )
        assert.strictEqual(broken._tag, "ModelError")
        effects.length = 0

        // A fresh harness on the same store, with nothing but the disk.
        const resumed = yield* withHarness(stateDir, (binding) =>
          Effect.gen(function* () {
            const outcome = yield* TaskExecution.resume(binding, configFor(tools))
            return { outcome, requests: yield* recorded }
          }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
        )
        assert.strictEqual(resumed.outcome.outcome._tag, "Answered")
        assert.strictEqual(resumed.outcome.outcome.text, "all fetched")
        assert.strictEqual(resumed.outcome.verifiedRequests, 2, "both earlier requests rebuilt and checked")
        assert.deepStrictEqual(resumed.outcome.inFlight, [])
        assert.deepStrictEqual(effects, ["c3"], "c1 and c2 have journaled results and did not run again")
        // Byte for byte: the requests the resume sent are the uninterrupted run's second and third.
        assert.strictEqual(JSON.stringify(resumed.requests), JSON.stringify(uninterrupted.requests.slice(1)))

        // The conversation restored from disk equals the uninterrupted run's.
        const restored = yield* withHarness(stateDir, (binding) => TaskExecution.restoreHistory(binding))
        assert.strictEqual(
          yield* History.toJson(Option.getOrThrow(restored)),
          yield* History.toJson(uninterrupted.outcome.history)
        )

        // Negative control: a resume that ignores the transcript has only what the harness kept without it
        // (the task and the user's message) and fails the byte-identity check at the first request it changes.
        const control = yield* withHarness(reference, (binding) =>
          Effect.gen(function* () {
            const journal = yield* Journal.Journal
            const capability = yield* PrivateSummaries.resolve(binding.context)
            const transcript = yield* Transcript.make(Option.some(journal)).pipe(PrivateSummaries.provide(capability))
            const entries = yield* Journal.readEntries({ folder: path.dirname(journal.file), task })
            const rebuilt = yield* Transcript.rebuild(transcript, entries, 1)
            const real = yield* Transcript.verify(task, rebuilt, uninterrupted.requests[0]?.tools ?? [])
            const ignoring: Transcript.RebuiltTurn = {
              ...rebuilt,
              requests: rebuilt.requests.map((request) => ({ ...request, parts: History.toParts(start) }))
            }
            return {
              real,
              refused: yield* Effect.flip(Transcript.verify(task, ignoring, uninterrupted.requests[0]?.tools ?? []))
            }
          })
        )
        assert.strictEqual(control.real, 3)
        assert.strictEqual(control.refused._tag, "TranscriptMismatch")
        assert.strictEqual(control.refused.step, 2)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "a resume that journaled its retry and died before sending it is resumed again: the request goes out under the same step, from the history the lost request was built from (hooks not run again), byte for byte the uninterrupted run's",
    () =>
      Effect.gen(function* () {
        const tools = Tool.registry(fetchTool([], false))
        // A hook that rewrites the history before step 2 (as compaction does), and would rewrite it again
        // if it ran twice: the retry must send the history the lost request was built from, not run it anew.
        const noted: TaskExecution.ExecutionConfig = {
          ...configFor(tools),
          hooks: {
            beforeModelStep: (context, history) =>
              Effect.succeed(
                context.step === 2 ? History.append(history, [Model.text("user", "note before step 2")]) : history
              )
          }
        }
        const reference = yield* tempDir
        const uninterrupted = yield* withHarness(reference, (binding) =>
          Effect.gen(function* () {
            yield* TaskExecution.runTurn(binding, start, noted)
            return yield* recorded
          }).pipe(Effect.provide(ScriptedModel.layer(script)))
        )
        const stateDir = yield* tempDir
        yield* withHarness(stateDir, (binding) =>
          Effect.flip(TaskExecution.runTurn(binding, start, noted)).pipe(
            Effect.provide(
              ScriptedModel.layer([
                script[0] as Model.ModelResponse,
                new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
              ])
            )
          )
        )
        // The resume that died: its retry is journaled, its request never left.
        yield* withHarness(stateDir, () =>
          Effect.flatMap(Effect.service(Journal.Journal), (journal) =>
            journal.append({ _tag: "TurnResumed", turn: 1, retryStep: 2 })
          )
        )
        const resumed = yield* withHarness(stateDir, (binding) =>
          Effect.gen(function* () {
            const outcome = yield* TaskExecution.resume(binding, noted)
            const journal = yield* Journal.Journal
            const entries = yield* Journal.readEntries({ folder: path.dirname(journal.file), task })
            return { outcome, requests: yield* recorded, entries }
          }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
        )
        assert.strictEqual(resumed.outcome.outcome._tag, "Answered")
        assert.strictEqual(JSON.stringify(resumed.requests), JSON.stringify(uninterrupted.slice(1)))
        const dispatched = resumed.entries.flatMap((entry) => (entry._tag === "RequestDispatched" ? [entry.step] : []))
        assert.deepStrictEqual(dispatched, [1, 2, 2, 3])
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "a call in flight at a crash is reported; a tool not declared idempotent is not run again but put to the host (InFlight), and a rejection reaches the model; an idempotent one runs again (control)",
    () =>
      Effect.gen(function* () {
        const run = (idempotent: boolean) =>
          Effect.gen(function* () {
            const stateDir = yield* tempDir
            const effects: Array<string> = []
            const tools = Tool.registry(fetchTool(effects, idempotent))
            class Crash extends Schema.TaggedError<Crash>()("Crash", {}) {}
            // c2 runs, then the process "dies" before its result is journaled.
            const crashing: TaskExecution.ExecutionConfig<Crash> = {
              ...configFor(tools),
              hooks: {
                onToolResult: (context, result) =>
                  context.call.id === "c2" ? Effect.fail(new Crash()) : Effect.succeed(result)
              }
            }
            const crashed = yield* withHarness(stateDir, (binding) =>
              Effect.flip(TaskExecution.runTurn(binding, start, crashing)).pipe(
                Effect.provide(ScriptedModel.layer(script))
              )
            )
            assert.strictEqual(crashed._tag, "Crash")
            const resumed = yield* withHarness(stateDir, (binding) =>
              Effect.gen(function* () {
                const first = yield* TaskExecution.resume(binding, configFor(tools))
                if (first.outcome._tag === "Answered") return { first, second: undefined, requests: yield* recorded }
                yield* TaskExecution.decide(binding, {
                  callId: "c2",
                  approved: false,
                  by: "operator",
                  note: "report it as missing"
                })
                const second = yield* TaskExecution.resume(binding, configFor(tools))
                return { first, second, requests: yield* recorded }
              }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
            )
            return { effects, resumed }
          })
        const strict = yield* run(false)
        assert.deepStrictEqual(strict.resumed.first.inFlight, [{ callId: "c2", name: "fetch", rerun: false }])
        assert.strictEqual(strict.resumed.first.outcome._tag, "AwaitingApproval")
        if (strict.resumed.first.outcome._tag === "AwaitingApproval") {
          assert.deepStrictEqual(
            strict.resumed.first.outcome.awaiting.map((pending) => [pending.call.id, pending.reason]),
            [["c2", "InFlight"]]
          )
        }
        assert.strictEqual(strict.resumed.second?.outcome._tag, "Answered")
        assert.deepStrictEqual(strict.effects, ["c1", "c2", "c3"], "c2 was not run again")
        const sawRejection = strict.resumed.requests[0]?.parts.find(
          (part) => part._tag === "ToolResult" && part.callId === "c2"
        )
        assert.isTrue(sawRejection?._tag === "ToolResult" && sawRejection.isError)
        assert.include(
          sawRejection?._tag === "ToolResult" ? sawRejection.content : "",
          "rejected by operator: report it as missing"
        )

        const lenient = yield* run(true)
        assert.deepStrictEqual(lenient.resumed.first.inFlight, [{ callId: "c2", name: "fetch", rerun: true }])
        assert.strictEqual(lenient.resumed.first.outcome._tag, "Answered")
        assert.deepStrictEqual(lenient.effects, ["c1", "c2", "c2", "c3"], "the idempotent c2 ran again")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "transcript_tamper_loud: a transcript record changed on disk fails the resume with TranscriptError naming it, before anything is sent or journaled (control: the untouched record resumes)",
    () =>
      Effect.gen(function* () {
        const tools = Tool.registry(fetchTool([], false))
        const breakAfterFirstStep = (stateDir: string) =>
          withHarness(stateDir, (binding) =>
            Effect.flip(TaskExecution.runTurn(binding, start, configFor(tools))).pipe(
              Effect.provide(
                ScriptedModel.layer([
                  script[0] as Model.ModelResponse,
                  new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
                ])
              )
            )
          )
        const resumeIn = (stateDir: string) =>
          withHarness(stateDir, (binding) =>
            Effect.gen(function* () {
              const journal = yield* Journal.Journal
              const before = (yield* journal.state).entries
              const result = yield* Effect.result(TaskExecution.resume(binding, configFor(tools)))
              return { result, before, after: (yield* journal.state).entries, sent: (yield* recorded).length }
            }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
          )
        const tampered = yield* tempDir
        yield* breakAfterFirstStep(tampered)
        const records = path.join(tampered, "durable", "volumes", "resumer-scratch", "transcripts", "durable-task")
        // The record of the small result: change one character of its content.
        const victim = fs
          .readdirSync(records)
          .find((name) => fs.readFileSync(path.join(records, name), "utf8").includes('"small c2"'))
        assert.isDefined(victim)
        const file = path.join(records, victim as string)
        fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace('"small c2"', '"small c9"'))
        const refused = yield* resumeIn(tampered)
        assert.isTrue(refused.result._tag === "Failure")
        if (refused.result._tag === "Failure") {
          assert.strictEqual(refused.result.failure._tag, "TranscriptError")
          assert.include(refused.result.failure.message, victim as string)
        }
        assert.strictEqual(refused.sent, 0)
        assert.strictEqual(refused.after, refused.before)

        const untouched = yield* tempDir
        yield* breakAfterFirstStep(untouched)
        const control = yield* resumeIn(untouched)
        assert.isTrue(control.result._tag === "Success")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "a turn that was not run durably cannot be resumed from disk: TranscriptMissing, nothing sent or written",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const tools = Tool.registry(fetchTool([], false))
        const plain = { ...configFor(tools), durable: false }
        yield* withHarness(stateDir, (binding) =>
          Effect.flip(TaskExecution.runTurn(binding, start, plain)).pipe(
            Effect.provide(
              ScriptedModel.layer([
                script[0] as Model.ModelResponse,
                new Model.ModelError({ reason: "ProviderFailure", detail: "x" })
              ])
            )
          )
        )
        const outcome = yield* withHarness(stateDir, (binding) =>
          Effect.gen(function* () {
            const journal = yield* Journal.Journal
            const before = (yield* journal.state).entries
            const error = yield* Effect.flip(TaskExecution.resume(binding, configFor(tools)))
            return { error, before, after: (yield* journal.state).entries, requests: yield* recorded }
          }).pipe(Effect.provide(ScriptedModel.layer(script)))
        )
        assert.strictEqual(outcome.error._tag, "TranscriptMissing")
        assert.strictEqual(outcome.after, outcome.before)
        assert.strictEqual(outcome.requests.length, 0)
      }).pipe(Effect.provide(nodeLayer))
  )
})
