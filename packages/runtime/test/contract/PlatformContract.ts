/**
 * The platform contract: one suite of scenarios, run against every platform
 * layer the runtime has (Node in packages/node/test, OPFS in headless
 * Chromium in packages/browser/test). Everything here goes through the
 * platform's own services (`FileSystem`, `Path`, `DurableFiles`, the
 * `JournalStorage.JournalFile` in the layer), never through `node:fs`, so the same bytes
 * are checked the same way on both.
 *
 * Not a test file itself (no `.test.ts`): each platform's test file calls
 * {@link platformContract} with its layer.
 */
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles, HostAuthority, Ids, Volume } from "@tessera/core"
import {
  Compaction,
  EntryGate,
  FilesystemTaskRuntime,
  History,
  Journal,
  Model,
  PrivateSummaries,
  TaskExecution,
  TaskHost,
  Tool,
  VolumeStore
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import type { Scope } from "effect"
import { Cause, Effect, Exit, FileSystem, Layer, Option, Path, Schema } from "effect"
import * as fc from "fast-check"
import * as SummaryRequests from "../../src/internal/summaryRequests.js"

/** What a platform provides: the services the runtime needs from it. */
export type PlatformServices = FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles

/**
 * A platform under test. `layer` must provide the file system, paths and
 * durable files, and may set the `JournalStorage.JournalFile` and `Digest` references.
 */
export interface Platform {
  readonly name: string
  readonly layer: Layer.Layer<PlatformServices>
  /** Stagers racing for one summary key in each trial of the write-once scenario. */
  readonly stagers?: number
}

const agentId = Schema.decodeUnknownSync(Ids.AgentId)
const taskId = Schema.decodeUnknownSync(Ids.TaskId)
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)
const operationId = Schema.decodeUnknownSync(Ids.OperationId)
const agent = agentId("researcher")
const task = taskId("task-1")

const produce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size, made of one repeated character",
  input: Schema.Struct({ size: Schema.Int, fill: Schema.String }),
  handler: ({ fill, size }) => Effect.succeed(fill.repeat(size))
})
const tools = Tool.registry(produce)
const taskText = "Collect the two reports and tell me what they say."
const start = History.make([Model.text("user", taskText)])

/** A store with the standard volumes in a fresh folder of the platform. */
const makeWorld = Effect.fnUntraced(function* (root: string) {
  const host = yield* TaskHost.open({ root })
  const privateRef = yield* host.store.create({
    id: volumeId("researcher-private"),
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const journalRef = yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
  const journalFolder = yield* host.store.folderOf(journalRef)
  const scopeFor = (volumes: ReadonlyArray<Volume.VolumeRef>, forTask: Ids.TaskId = task) =>
    host.issueScope(
      forTask,
      volumes.map((volume) => ({ volume, access: ["read", "write"] as const })),
      agent
    )
  const openRuntime = (privateVolume: Option.Option<Volume.VolumeRef>, forTask: Ids.TaskId = task) =>
    Effect.flatMap(scopeFor(Option.toArray(privateVolume), forTask), (scope) =>
      FilesystemTaskRuntime.fromHost(host, { private: privateVolume, scope })
    )
  const bind = (privateVolume: Option.Option<Volume.VolumeRef>, forTask: Ids.TaskId = task) =>
    Effect.gen(function* () {
      const runtime = yield* openRuntime(privateVolume, forTask)
      return yield* runtime.bindTask({
        scope: yield* scopeFor(Option.toArray(privateVolume), forTask),
        output: Option.none()
      })
    })
  return { root, host, privateRef, journalRef, journalFolder, bind }
})
type World = Effect.Success<ReturnType<typeof makeWorld>>

const requests = Effect.flatMap(Effect.service(ScriptedModel.ScriptedModelRecorder), (recorder) => recorder.requests)

const turnLayer = (world: World, forTask: Ids.TaskId, script: ScriptedModel.Script) =>
  Layer.merge(ScriptedModel.layer(script), Journal.layer({ folder: world.journalFolder, task: forTask }))

/** The journal file's text, or "" when it was never created. */
const journalText = (world: World, forTask: Ids.TaskId) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const file = path.join(world.journalFolder, Journal.fileName(forTask))
    return (yield* fs.exists(file)) ? yield* fs.readFileString(file) : ""
  })

/**
 * Negative control for the zero-request refusal: the former ordering,
 * rebuilt here from public pieces (it is not in the library): admission
 * journaled, the summary requested, and only then the writer looked up.
 */
export const formerOrdering = (binding: EntryGate.TaskBinding, history: History.History) =>
  Effect.gen(function* () {
    const journal = yield* Journal.Journal
    yield* journal.append({ _tag: "Admission", operation: operationId("former"), detail: "former ordering" })
    const model = yield* Model.Model
    yield* SummaryRequests.summarizeWith(model.generate, {
      task: history.task,
      previousSummary: History.summaryText(history),
      rounds: History.rounds(history),
      pieceBytes: 100_000
    })
    return yield* PrivateSummaries.resolve(binding.context)
  })

const writerlessHistory = History.append(start, [
  Model.toolCall("c0", "produce", { size: 3_000, fill: "x" }),
  Model.toolResult({ callId: "c0", name: "produce", content: "x".repeat(3_000), isError: false }),
  Model.text("assistant", "y".repeat(500))
])

/**
 * Registers the contract's tests for `platform`.
 */
export const platformContract = (platform: Platform): void => {
  const layer = Layer.merge(platform.layer, HostAuthority.permissive)
  /** Runs `body` in a fresh folder of the platform, removed afterwards. */
  const inFolder = <A, E>(
    body: (root: string) => Effect.Effect<A, E, PlatformServices | HostAuthority.HostAuthority | Scope.Scope>
  ): Promise<A> =>
    Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const root = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-contract-" })
          return yield* body(root)
        })
      ).pipe(Effect.provide(layer)) as Effect.Effect<A>
    )
  const inWorld = <A, E>(
    body: (world: World) => Effect.Effect<A, E, PlatformServices | HostAuthority.HostAuthority | Scope.Scope>
  ) => inFolder((root) => Effect.flatMap(makeWorld(root), body))

  describe(`platform contract: ${platform.name}`, () => {
    it("write_once_staging: stagers racing for one summary key, exactly one winner every trial, the file is the winner's", () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const context = yield* world.bind(Option.some(world.privateRef))
          const capability = yield* PrivateSummaries.resolve(context)
          const stagers = platform.stagers ?? 32
          for (let trial = 0; trial < 4; trial++) {
            const key = { operation: operationId("race"), step: trial + 1 }
            const outcomes = yield* Effect.forEach(
              Array.from({ length: stagers }, (_, stager) => stager),
              (stager) =>
                PrivateSummaries.stageOnce(key, `stager ${stager % 4} wrote this summary\n`.repeat(32)).pipe(
                  PrivateSummaries.provide(capability),
                  Effect.map((staged) => ({ stager, outcome: staged.outcome as string, file: staged.absolutePath })),
                  Effect.catchTag("StagingConflict", () => Effect.succeed({ stager, outcome: "Conflict", file: "" }))
                ),
              { concurrency: "unbounded" }
            )
            const winners = outcomes.filter((one) => one.outcome === "Published")
            assert.strictEqual(winners.length, 1, `trial ${trial}: ${winners.length} winners`)
            const winner = winners[0]
            if (winner === undefined) return
            assert.strictEqual(
              yield* fs.readFileString(winner.file),
              `stager ${winner.stager % 4} wrote this summary\n`.repeat(32)
            )
            for (const one of outcomes) {
              if (one.stager === winner.stager) continue
              assert.strictEqual(one.outcome, one.stager % 4 === winner.stager % 4 ? "AlreadyStaged" : "Conflict")
            }
            const path = yield* Path.Path
            const names = yield* fs.readDirectory(path.dirname(winner.file))
            assert.deepStrictEqual(
              names.filter((name) => !DurableFiles.isTemporaryName(name)).sort(),
              Array.from({ length: trial + 1 }, (_, t) => `${t + 1}.txt`).sort()
            )
            assert.deepStrictEqual(names.filter(DurableFiles.isTemporaryName), [], "no temporary name is left")
          }
        })
      ))

    it("containment: a new file is created if and only if its path stays below `within` (property over paths with `..`)", () =>
      inFolder((root) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const path = yield* Path.Path
          const durable = yield* DurableFiles.DurableFiles
          const within = path.join(root, "volume")
          yield* fs.makeDirectory(path.join(within, "a", "b"), { recursive: true })
          const realWithin = yield* durable.realPath(within)
          let n = 0
          const segment = fc.constantFrom("a", "b", "..", ".", "x")
          yield* Effect.promise(() =>
            fc.assert(
              fc.asyncProperty(fc.array(segment, { minLength: 1, maxLength: 5 }), async (segments) => {
                const name = `f${n++}.txt`
                const target = path.join(within, ...segments, name)
                const outcome = await Effect.runPromise(
                  Effect.result(durable.writeNewFile(target, "contained", { within: realWithin, createFolders: true }))
                )
                const below = path.relative(within, path.resolve(target))
                const stays = !below.startsWith("..") && !path.isAbsolute(below)
                if (stays) return outcome._tag === "Success"
                // Refused, and nothing was written where the path points.
                const written = await Effect.runPromise(Effect.provide(fs.exists(path.resolve(target)), layer))
                return outcome._tag === "Failure" && outcome.failure._tag === "OutsideWithin" && !written
              }),
              { numRuns: 60 }
            )
          )
          const outside = yield* Effect.flip(
            durable.readFile(path.join(within, "..", "outside.txt"), { within: realWithin })
          )
          assert.strictEqual(outside._tag, "OutsideWithin")
        })
      ))

    it("journal_torn_tail: a line cut short by a crash is dropped on reopen and recorded; the complete entries stay", () =>
      inFolder((root) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const path = yield* Path.Path
          const location = { folder: root, task }
          const append = (detail: string) =>
            Effect.scoped(
              Effect.flatMap(Journal.open(location), (journal) =>
                journal.append({ _tag: "Admission", operation: operationId("op"), detail })
              )
            )
          yield* append("first")
          yield* append("second")
          const file = path.join(root, Journal.fileName(task))
          const whole = yield* fs.readFileString(file)
          const torn = '{"_tag":"Admission","seq":3,"oper'
          yield* fs.writeFileString(file, whole + torn)
          const state = yield* Effect.scoped(Effect.flatMap(Journal.open(location), (journal) => journal.state))
          assert.deepStrictEqual(state.truncations, [{ line: 3, droppedBytes: new TextEncoder().encode(torn).length }])
          const reopened = yield* fs.readFileString(file)
          assert.isTrue(reopened.startsWith(whole), "the complete lines stay")
          assert.notInclude(reopened, torn, "the torn bytes are gone")
          yield* append("third")
          const entries = yield* Journal.readEntries(location)
          assert.deepStrictEqual(
            entries.flatMap((entry) => (entry._tag === "Admission" ? [entry.detail] : [])),
            ["first", "second", "third"]
          )
        })
      ))

    it("four_request_turn: two large tool results, no output volume: exactly 4 requests, the last starts with a summary file on the agent-owned private volume", () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const path = yield* Path.Path
          const context = yield* world.bind(Option.some(world.privateRef))
          const binding = yield* EntryGate.bind(context, {
            policy: Compaction.threshold({
              measure: "bytes",
              limit: 30_000,
              keepRecent: 1_000,
              pieceLimit: 200_000
            })
          })
          const script = (request: Model.ModelRequest, index: number) =>
            Compaction.isSummaryRequest(request)
              ? Model.response({ text: "Both reports were produced: A is all 'a', B is all 'b'." })
              : index === 0
                ? Model.response({ toolCalls: [Model.toolCall("c1", "produce", { size: 20_000, fill: "a" })] })
                : index === 1
                  ? Model.response({ toolCalls: [Model.toolCall("c2", "produce", { size: 20_000, fill: "b" })] })
                  : Model.response({ text: "A is all 'a' and B is all 'b'." })
          const { outcome, sent } = yield* Effect.gen(function* () {
            const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
            return { outcome, sent: yield* requests }
          }).pipe(Effect.provide(turnLayer(world, task, script)))
          assert.strictEqual(sent.length, 4)
          assert.isTrue(
            Compaction.isSummaryRequest(sent[2] as Model.ModelRequest),
            "the third request is the summary request"
          )
          assert.strictEqual(outcome.text, "A is all 'a' and B is all 'b'.")
          const first = (sent[3] as Model.ModelRequest).parts[0]
          assert.strictEqual(first?._tag, "FileReference")
          if (first?._tag !== "FileReference") return
          assert.match(first.path, /^summaries\/task-1-t1\/3\.txt$/)
          assert.deepStrictEqual(first.volume, world.privateRef)
          const lastText = (sent[3] as Model.ModelRequest).parts.map(Compaction.renderPart).join("\n")
          assert.notInclude(lastText, "a".repeat(1_000), "the big result A is gone from the final request")
          const summaryFile = path.join(
            VolumeStore.dataFolder(path, world.host.store.root, world.privateRef.volume),
            first.path
          )
          assert.strictEqual(
            yield* fs.readFileString(summaryFile),
            "Both reports were produced: A is all 'a', B is all 'b'."
          )
          const journal = yield* journalText(world, task)
          assert.include(journal, '"_tag":"SummaryStaged"')
          assert.notInclude(journal, "Both reports were produced")
        })
      ))

    it("zero_request_refusal: a writerless task asking for a summary is Unauthorized with zero model requests and nothing journaled", () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const writerless = taskId("writerless")
          const context = yield* world.bind(Option.none(), writerless)
          const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
          const outcome = yield* Effect.gen(function* () {
            const error = yield* Effect.flip(
              TaskExecution.summarize(binding, writerlessHistory, {
                operation: operationId("current"),
                step: 1,
                policy: Compaction.threshold({ measure: "bytes", limit: 1_000 })
              })
            )
            return { error, sent: (yield* requests).length }
          }).pipe(Effect.provide(turnLayer(world, writerless, () => Model.response({ text: "a summary" }))))
          assert.strictEqual(outcome.error._tag, "Unauthorized")
          assert.strictEqual(outcome.sent, 0)
          assert.strictEqual(yield* journalText(world, writerless), "")
        })
      ))

    it("negative control: the former ordering (writer resolved after dispatch) sends exactly one request before Unauthorized", () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const former = taskId("former-ordering")
          const context = yield* world.bind(Option.none(), former)
          const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
          const outcome = yield* Effect.gen(function* () {
            const error = yield* Effect.flip(formerOrdering(binding, writerlessHistory))
            return { error, sent: (yield* requests).length }
          }).pipe(Effect.provide(turnLayer(world, former, () => Model.response({ text: "a summary" }))))
          assert.strictEqual(outcome.error._tag, "Unauthorized")
          assert.strictEqual(outcome.sent, 1)
          assert.include(yield* journalText(world, former), "former ordering")
        })
      ))

    it("threshold_armed_without_writer: a runtime opened with private Option.none() that arms Threshold is Unauthorized at bind: zero requests, nothing journaled", () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const armed = taskId("armed-writerless")
          const context = yield* world.bind(Option.none(), armed)
          const outcome = yield* Effect.gen(function* () {
            const error = yield* Effect.flip(
              EntryGate.bind(context, { policy: Compaction.threshold({ measure: "bytes", limit: 1_000 }) })
            )
            return { error, sent: (yield* requests).length }
          }).pipe(Effect.provide(turnLayer(world, armed, () => Model.response({ text: "never" }))))
          assert.strictEqual(outcome.error._tag, "Unauthorized")
          assert.strictEqual(outcome.sent, 0)
          assert.strictEqual(yield* journalText(world, armed), "")
        })
      ))

    it("threshold_writer_lost_after_bind: an armed binding whose private volume changed owner is refused at the turn's own entry: zero requests, nothing journaled; with the volume restored the same turn runs", () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const path = yield* Path.Path
          const lost = taskId("writer-lost")
          const context = yield* world.bind(Option.some(world.privateRef), lost)
          const binding = yield* EntryGate.bind(context, {
            policy: Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000 })
          })
          const meta = path.join(
            world.root,
            ...VolumeStore.metaFolder,
            VolumeStore.metaFileName(world.privateRef.volume)
          )
          const original = yield* fs.readFileString(meta)
          const attempt = Effect.gen(function* () {
            const exit = yield* Effect.exit(
              TaskExecution.runTurn(binding, start, { tools, maxSteps: 4 }).pipe(Effect.flatMap(() => Effect.void))
            )
            return { exit, sent: (yield* requests).length }
          }).pipe(
            Effect.provide(
              turnLayer(world, lost, (_request, index) =>
                index === 0
                  ? Model.response({ toolCalls: [Model.toolCall("c1", "produce", { size: 100, fill: "a" })] })
                  : Model.response({ text: "done" })
              )
            )
          )
          const moved = original.replace(`"agent": "${agent}"`, '"agent": "another-agent"')
          assert.notStrictEqual(moved, original)
          yield* fs.writeFileString(meta, moved)
          const refused = yield* attempt
          assert.isTrue(Exit.isFailure(refused.exit), "the turn ran with a writer it no longer has")
          const error = Exit.isFailure(refused.exit) ? Cause.squash(refused.exit.cause) : undefined
          assert.strictEqual((error as { readonly _tag?: string } | undefined)?._tag, "Unauthorized")
          assert.strictEqual(refused.sent, 0)
          assert.strictEqual(yield* journalText(world, lost), "")
          // Negative control: with the volume's facts restored, the same binding's turn sends requests and journals.
          yield* fs.writeFileString(meta, original)
          const ran = yield* attempt
          assert.isTrue(Exit.isSuccess(ran.exit))
          assert.isAbove(ran.sent, 0)
          assert.notStrictEqual(yield* journalText(world, lost), "")
        })
      ))
  })
}
