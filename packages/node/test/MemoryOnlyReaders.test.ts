/**
 * A harness's durability reaches every reader of its journals, not only the
 * journal `withTask` opens. Under memory-only durability the journal's lines
 * live in the store, never on disk: `Journal.readEntries`,
 * `TaskExecution.restoreHistory`, `TaskExecution.resume`, the harness's own
 * `readEntries` and `repairJournal` read them there, and a reader given
 * another durability after the journal closed fails saying where it is
 * instead of reading no entries. The default (per entry) durability reads
 * the file as before.
 *
 * The negative controls rebuild the old wiring inside this file: a reader
 * that locates the journal under the default durability (the file on disk)
 * instead of the harness's answers 0 entries, and a turn rebuilt from its
 * answer fails `TranscriptMissing`.
 */
import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { LocalHarness } from "@tessera/node"
import {
  type EntryGate,
  History,
  Journal,
  JournalEntry,
  JournalStorage,
  Model,
  PrivateSummaries,
  TaskExecution,
  Tool,
  Transcript
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Exit, Option, Schema } from "effect"
import * as fc from "fast-check"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const agent = agentId("reader")
const task = taskId("memory-task")
const namespace = "memory"
const start = History.make([Model.text("system", "You fetch reports."), Model.text("user", "Fetch the reports.")])

const fetchTool = (ran: Array<string>) =>
  Tool.make({
    name: "fetch",
    description: "Fetches a report",
    input: Schema.Struct({ id: Schema.String }),
    handler: ({ id }) =>
      Effect.sync(() => {
        ran.push(id)
        return `report ${id}`
      })
  })

/** A turn's script: per tool step, how many calls; an answer follows the last step. */
const scriptOf = (steps: ReadonlyArray<number>): ReadonlyArray<Model.ModelResponse> => [
  ...steps.map((calls, step) =>
    Model.response({
      text: `step ${step + 1}`,
      toolCalls: Array.from({ length: calls }, (_, call) =>
        Model.toolCall(`s${step + 1}c${call}`, "fetch", { id: `s${step + 1}c${call}` })
      )
    })
  ),
  Model.response({ text: "all fetched" })
]

const configFor = (ran: Array<string>): TaskExecution.ExecutionConfig => ({
  tools: Tool.registry(fetchTool(ran)),
  maxSteps: 6,
  durable: true
})

/** Opens a harness on `stateDir` (with `durability`, when given) for the scope of `body`. */
const withHarness = <A, E, R>(
  stateDir: string,
  durability: JournalStorage.Durability | undefined,
  body: (harness: LocalHarness.LocalHarnessService) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(
    Effect.flatMap(
      LocalHarness.open({ stateDir, namespace, agent, ...(durability === undefined ? {} : { durability }) }),
      body
    )
  )

const decodeLine = Schema.decodeUnknownSync(Schema.fromJsonString(JournalEntry.Entry))

/**
 * The old wiring, for the negative controls: a reader that locates the
 * journal under the default durability (per entry: the file on disk)
 * whatever the harness chose, and reads a missing file as no entries.
 */
const defaultDurabilityReader = (file: string): ReadonlyArray<JournalEntry.Entry> =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.length > 0)
        .map((line) => decodeLine(line))
    : []

/** What a reader's answer gets wrong about the journal it read: how many entries it holds, which is the last. */
const disagreements = (read: ReadonlyArray<JournalEntry.Entry>, state: Journal.JournalState): ReadonlyArray<string> => {
  const problems: Array<string> = []
  if (read.length !== state.entries) problems.push(`read ${read.length} entries, the journal holds ${state.entries}`)
  const last = Option.getOrUndefined(state.lastEntry)?.seq
  const readLast = read.at(-1)?.seq
  if (readLast !== last) problems.push(`last entry read ${readLast}, the journal's ${last}`)
  return problems
}

/** The transcript store of the bound task, as `TaskExecution` reads it. */
const transcriptOf = (binding: EntryGate.TaskBinding) =>
  Effect.gen(function* () {
    const journal = yield* Journal.Journal
    const capability = yield* PrivateSummaries.resolve(binding.context)
    return yield* Transcript.make(Option.some(journal)).pipe(PrivateSummaries.provide(capability))
  })

/** Asserts the fiber failed with an error of `tag`, and returns it. */
const failedWith = <A, E>(exit: Exit.Exit<A, E>, tag: string): E => {
  assert.isTrue(Exit.isFailure(exit), `expected a failure tagged ${tag}`)
  const error = Exit.isFailure(exit) ? Option.getOrUndefined(Exit.findErrorOption(exit)) : undefined
  assert.strictEqual((error as { readonly _tag?: unknown } | undefined)?._tag, tag)
  return error as E
}

describe("a memory-only harness's journals are read where they live", () => {
  it.live(
    "memory_only_readers_inside_the_task: after a durable turn, readEntries (under the harness's durability, and under the default one while the journal is open) returns exactly the entries the journal holds, restoreHistory the turn's history; nothing is on disk; the old wiring reads 0 entries and its rebuild fails TranscriptMissing (negative control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const memory = JournalStorage.memoryOnly()
        const seen = yield* withHarness(stateDir, memory, (harness) =>
          harness.withTask(task, (binding) =>
            Effect.gen(function* () {
              const outcome = yield* TaskExecution.runTurn(binding, start, configFor([]))
              const journal = yield* Journal.Journal
              const state = yield* journal.state
              const location = { folder: harness.journalFolder, task }
              const read = yield* Journal.readEntries(location)
              const readUnderDefault = yield* Journal.readEntries(location).pipe(
                Effect.provideService(JournalStorage.JournalDurability, JournalStorage.perEntry)
              )
              const restored = yield* TaskExecution.restoreHistory(binding)
              // The old wiring: the same questions answered from where the default durability keeps journals.
              const oldRead = defaultDurabilityReader(journal.file)
              const oldRebuild = yield* Effect.exit(
                Transcript.rebuild(yield* transcriptOf(binding), oldRead, state.turns.length)
              )
              return { outcome, state, file: journal.file, read, readUnderDefault, restored, oldRead, oldRebuild }
            }).pipe(Effect.provide(ScriptedModel.layer(scriptOf([2, 1]))))
          )
        )
        assert.strictEqual(seen.outcome._tag, "Answered")
        assert.isAbove(seen.state.entries, 4)
        assert.deepStrictEqual(disagreements(seen.read, seen.state), [])
        assert.deepStrictEqual(seen.readUnderDefault, seen.read, "the open journal's medium, whatever the reader's")
        const stored = new TextDecoder().decode(memory.journals.bytes(seen.file))
        assert.strictEqual(stored.split("\n").filter((line) => line.length > 0).length, seen.state.entries)
        assert.isFalse(fs.existsSync(seen.file), "a memory-only journal is never on disk")
        assert.strictEqual(
          yield* History.toJson(Option.getOrThrow(seen.restored)),
          yield* History.toJson(seen.outcome.history)
        )

        // Negative control: the old wiring's answers are what the checks above refuse.
        assert.deepStrictEqual(seen.oldRead, [])
        assert.isNotEmpty(disagreements(seen.oldRead, seen.state))
        failedWith(seen.oldRebuild, "TranscriptMissing")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "memory_only_resume: a durable turn broken after its first step is resumed in the same process, by a fresh harness, from the memory journal: answered, the earlier requests verified, no call with a journaled result run again; the old wiring's rebuild fails TranscriptMissing (negative control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const memory = JournalStorage.memoryOnly()
        const ran: Array<string> = []
        const script = scriptOf([2, 1])
        const broken = yield* withHarness(stateDir, memory, (harness) =>
          harness.withTask(task, (binding) =>
            Effect.flip(TaskExecution.runTurn(binding, start, configFor(ran))).pipe(
              Effect.provide(
                ScriptedModel.layer([
                  script[0] as Model.ModelResponse,
                  new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
                ])
              )
            )
          )
        )
        assert.strictEqual(broken._tag, "ModelError")
        assert.deepStrictEqual(ran, ["s1c0", "s1c1"])
        ran.length = 0

        const resumed = yield* withHarness(stateDir, memory, (harness) =>
          harness.withTask(task, (binding) =>
            Effect.gen(function* () {
              const journal = yield* Journal.Journal
              const before = yield* journal.state
              const oldRebuild = yield* Effect.exit(
                Transcript.rebuild(yield* transcriptOf(binding), defaultDurabilityReader(journal.file), 1)
              )
              const outcome = yield* TaskExecution.resume(binding, configFor(ran))
              return { before, oldRebuild, outcome }
            }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
          )
        )
        assert.isTrue(Option.isSome(Journal.openTurn(resumed.before)), "the reopened journal has the open turn")
        assert.strictEqual(resumed.outcome.outcome._tag, "Answered")
        assert.strictEqual(
          resumed.outcome.outcome._tag === "Answered" ? resumed.outcome.outcome.text : undefined,
          "all fetched"
        )
        assert.strictEqual(resumed.outcome.verifiedRequests, 2, "both earlier requests rebuilt and checked")
        assert.deepStrictEqual(ran, ["s2c0"], "s1c0 and s1c1 have journaled results and did not run again")
        // Negative control: located under the default durability, the open turn has no transcript to rebuild.
        failedWith(resumed.oldRebuild, "TranscriptMissing")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "memory_only_readers_after_the_scope: the harness's readEntries and repairJournal, and a reader in another task's body, find the closed memory journal; a reader given the default durability or another memory-only store fails JournalIoError naming memory-only instead of reading none, where the old wiring reads 0 entries and Journal.repair finds no journal (negative controls)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const memory = JournalStorage.memoryOnly()
        const other = taskId("other-task")
        const seen = yield* withHarness(stateDir, memory, (harness) =>
          Effect.gen(function* () {
            const state = yield* harness.withTask(task, (binding) =>
              Effect.andThen(
                TaskExecution.runTurn(binding, start, configFor([])).pipe(
                  Effect.provide(ScriptedModel.layer(scriptOf([1])))
                ),
                Effect.flatMap(Journal.Journal, (journal) => journal.state)
              )
            )
            const location = { folder: harness.journalFolder, task }
            // Another task's body runs under the harness's durability: the first task's journal is closed.
            const inOtherBody = yield* harness.withTask(other, () => Journal.readEntries(location))
            return {
              state,
              byHarness: yield* harness.readEntries(task),
              inOtherBody,
              repaired: yield* harness.repairJournal(task),
              underDefault: yield* Effect.exit(Journal.readEntries(location)),
              underAnotherStore: yield* Effect.exit(
                Journal.readEntries(location).pipe(
                  Effect.provideService(JournalStorage.JournalDurability, JournalStorage.memoryOnly())
                )
              ),
              oldRead: defaultDurabilityReader(`${harness.journalFolder}/${Journal.fileName(task)}`),
              oldRepair: yield* Effect.exit(Journal.repair(location))
            }
          })
        )
        assert.deepStrictEqual(disagreements(seen.byHarness, seen.state), [])
        assert.deepStrictEqual(seen.inOtherBody, seen.byHarness)
        assert.isTrue(Option.isNone(seen.repaired), "a healthy memory journal needs no repair")
        for (const refused of [seen.underDefault, seen.underAnotherStore]) {
          const error = failedWith(refused, "JournalIoError") as Journal.JournalIoError
          assert.match(error.detail, /memory-only store of this process \(JournalStorage\.memoryOnly\(\)\) holds/)
        }
        assert.match(
          (failedWith(seen.underDefault, "JournalIoError") as Journal.JournalIoError).detail,
          /PerEntry: the file/
        )

        // Negative controls: the old wiring answers as if the task had never journaled.
        assert.deepStrictEqual(seen.oldRead, [])
        assert.isNotEmpty(disagreements(seen.oldRead, seen.state))
        const oldRepair = failedWith(seen.oldRepair, "JournalIoError") as Journal.JournalIoError
        assert.match(oldRepair.detail, /the journal does not exist/)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "default_durability_unchanged: without a durability choice the journal is the file on disk; readEntries, the harness's readEntries and a reader given no durability after the scope all read the file's entries; restoreHistory and resume work as before",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const ran: Array<string> = []
        const script = scriptOf([1, 1])
        const first = yield* withHarness(stateDir, undefined, (harness) =>
          Effect.gen(function* () {
            const inside = yield* harness.withTask(task, (binding) =>
              Effect.gen(function* () {
                yield* Effect.flip(TaskExecution.runTurn(binding, start, configFor(ran))).pipe(
                  Effect.provide(
                    ScriptedModel.layer([
                      script[0] as Model.ModelResponse,
                      new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
                    ])
                  )
                )
                const journal = yield* Journal.Journal
                return {
                  state: yield* journal.state,
                  file: journal.file,
                  read: yield* Journal.readEntries({ folder: harness.journalFolder, task })
                }
              })
            )
            return { ...inside, byHarness: yield* harness.readEntries(task) }
          })
        )
        assert.deepStrictEqual(disagreements(first.read, first.state), [])
        assert.deepStrictEqual(defaultDurabilityReader(first.file), first.read, "the entries are the file's")
        assert.deepStrictEqual(first.byHarness, first.read)

        const resumed = yield* withHarness(stateDir, undefined, (harness) =>
          harness.withTask(task, (binding) =>
            Effect.gen(function* () {
              const outcome = yield* TaskExecution.resume(binding, configFor(ran))
              const restored = yield* TaskExecution.restoreHistory(binding)
              return { outcome, restored }
            }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
          )
        )
        assert.strictEqual(resumed.outcome.outcome._tag, "Answered")
        assert.strictEqual(
          yield* History.toJson(Option.getOrThrow(resumed.restored)),
          yield* History.toJson(resumed.outcome.outcome.history)
        )
        const after = yield* Journal.readEntries({ folder: `${stateDir}/${namespace}/volumes/journal`, task })
        assert.deepStrictEqual(after, defaultDurabilityReader(first.file))
        assert.isAbove(after.length, first.read.length)
      }).pipe(Effect.provide(nodeLayer))
  )

  it("readers_agree_under_every_durability: for any turn shape and durability, readEntries (inside the task and through the harness afterwards) returns the journal's entries and restoreHistory the turn's history", async () => {
    const durabilities = {
      PerEntry: () => JournalStorage.perEntry,
      GroupCommit: () => JournalStorage.groupCommit,
      MemoryOnly: (): JournalStorage.Durability => JournalStorage.memoryOnly()
    }
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("PerEntry", "GroupCommit", "MemoryOnly"),
        fc.array(fc.integer({ min: 1, max: 2 }), { maxLength: 3 }),
        async (choice, steps) => {
          const durability = durabilities[choice]()
          const problems = await Effect.runPromise(
            Effect.scoped(
              Effect.gen(function* () {
                const stateDir = yield* tempDir
                return yield* withHarness(stateDir, durability, (harness) =>
                  Effect.gen(function* () {
                    const inside = yield* harness.withTask(task, (binding) =>
                      Effect.gen(function* () {
                        const outcome = yield* TaskExecution.runTurn(binding, start, configFor([]))
                        const journal = yield* Journal.Journal
                        const state = yield* journal.state
                        const read = yield* Journal.readEntries({ folder: harness.journalFolder, task })
                        const restored = yield* TaskExecution.restoreHistory(binding)
                        const same =
                          Option.isSome(restored) &&
                          (yield* History.toJson(restored.value)) === (yield* History.toJson(outcome.history))
                        return { state, read, same }
                      }).pipe(Effect.provide(ScriptedModel.layer(scriptOf(steps))))
                    )
                    const afterwards = yield* harness.readEntries(task)
                    return [
                      ...disagreements(inside.read, inside.state).map((problem) => `inside: ${problem}`),
                      ...disagreements(afterwards, inside.state).map((problem) => `afterwards: ${problem}`),
                      ...(inside.same ? [] : ["restoreHistory is not the turn's history"])
                    ]
                  })
                )
              })
            ).pipe(Effect.provide(nodeLayer))
          )
          assert.deepStrictEqual(problems, [], `${choice} with steps ${JSON.stringify(steps)}`)
        }
      ),
      { numRuns: 12 }
    )
  }, 60_000)
})
