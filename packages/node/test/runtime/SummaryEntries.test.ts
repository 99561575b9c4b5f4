import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Compaction, EntryGate, History, Journal, Model, PrivateSummaries, TaskExecution } from "@tessera/runtime"
import { Effect, Exit, type Layer, Option } from "effect"
import * as fc from "fast-check"
// The former ordering (the negative control) is written once, in the platform contract that runs it in the browser too.
import { formerOrdering } from "../../../runtime/test/contract/PlatformContract.ts"
import { journalBytes, journalFolder, requests, taskParts, tools, turnLayer } from "./support/turns.ts"
import {
  dataFolderOf,
  makeWorld,
  operationId,
  platformLayer,
  taskId,
  type World,
  withTempDir
} from "./support/world.ts"

interface RoundSpec {
  readonly kind: "text" | "tool"
  readonly size: number
  readonly lineBreaks: boolean
}

const roundArbitrary: fc.Arbitrary<RoundSpec> = fc.record({
  kind: fc.constantFrom("text" as const, "tool" as const),
  size: fc.integer({ min: 0, max: 20_000 }),
  lineBreaks: fc.boolean()
})

const historyOf = (rounds: ReadonlyArray<RoundSpec>): History.History =>
  rounds.reduce((history, round, index) => {
    const body = round.lineBreaks
      ? "a line of output\n".repeat(Math.ceil(round.size / 17) + 1).slice(0, Math.max(1, round.size))
      : "x".repeat(Math.max(1, round.size))
    return History.append(
      history,
      round.kind === "text"
        ? [Model.text("assistant", body)]
        : [
            Model.toolCall(`c${index}`, "produce", { size: round.size, fill: "x" }),
            Model.toolResult({ callId: `c${index}`, name: "produce", content: body, isError: false })
          ]
    )
  }, History.make(taskParts))

type Entry = "summarize" | "summaryFileTurn"
type PolicyChoice = "Disabled" | "Threshold"

const policyOf = (choice: PolicyChoice): Compaction.Policy =>
  choice === "Disabled" ? Compaction.disabled : Compaction.threshold({ measure: "bytes", limit: 1_000 })

/** A writerless task (runtime opened without a private volume, no output), bound with `Disabled`. */
const writerlessBinding = (world: World, task: ReturnType<typeof taskId>) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.none(), [])
    const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([], task), output: Option.none() })
    return yield* EntryGate.bind(context, { policy: Compaction.disabled })
  })

const runEntry = (entry: Entry, binding: EntryGate.TaskBinding, history: History.History, policy: Compaction.Policy) =>
  entry === "summarize"
    ? Effect.asVoid(TaskExecution.summarize(binding, history, { policy }))
    : Effect.asVoid(TaskExecution.runSummaryFileTurn(binding, history, { tools, maxSteps: 4 }, { policy }))

const withWorld = <A>(body: (world: World) => Promise<A>) =>
  withTempDir(async (dir) => body(await Effect.runPromise(makeWorld(dir).pipe(Effect.provide(platformLayer)))))

describe("summary entries resolve the private writer before anything else", () => {
  it("writerless_summary_entries: any history, any summary text, both entries, Disabled or Threshold: Unauthorized, zero model requests, zero journal writes", () =>
    withWorld(async (world) => {
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            rounds: fc.array(roundArbitrary, { maxLength: 6 }),
            summary: fc.string({ maxLength: 200 }),
            entry: fc.constantFrom<Entry>("summarize", "summaryFileTurn"),
            policy: fc.constantFrom<PolicyChoice>("Disabled", "Threshold")
          }),
          async ({ entry, policy, rounds, summary }) => {
            const task = taskId(`writerless-${run++}`)
            const outcome = await Effect.runPromise(
              Effect.gen(function* () {
                const binding = yield* writerlessBinding(world, task)
                const result = yield* Effect.result(runEntry(entry, binding, historyOf(rounds), policyOf(policy)))
                return { result, sent: (yield* requests).length }
              }).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: summary }))))
            )
            const journal = journalBytes(await Effect.runPromise(journalFolder(world)), task)
            return (
              outcome.result._tag === "Failure" &&
              outcome.result.failure._tag === "Unauthorized" &&
              outcome.sent === 0 &&
              journal === ""
            )
          }
        ),
        { numRuns: 40 }
      )
    }))

  it("negative control: the former ordering (writer resolved after dispatch) sends exactly one request before Unauthorized", () =>
    withWorld(async (world) => {
      const task = taskId("former-ordering")
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const binding = yield* writerlessBinding(world, task)
          const history = historyOf([
            { kind: "tool", size: 3_000, lineBreaks: true },
            { kind: "text", size: 500, lineBreaks: false }
          ])
          const error = yield* Effect.flip(formerOrdering(binding, history))
          return { error, sent: (yield* requests).length }
        }).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: "a summary" }))))
      )
      assert.strictEqual(outcome.error._tag, "Unauthorized")
      assert.strictEqual(outcome.sent, 1)
    }))

  it("the same session with the writer resolved first sends nothing", () =>
    withWorld(async (world) => {
      const task = taskId("current-ordering")
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const binding = yield* writerlessBinding(world, task)
          const error = yield* Effect.flip(
            TaskExecution.summarize(binding, historyOf([{ kind: "tool", size: 3_000, lineBreaks: true }]), {
              operation: operationId("current"),
              step: 1,
              policy: Compaction.disabled
            })
          )
          return { error, sent: (yield* requests).length }
        }).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: "a summary" }))))
      )
      assert.strictEqual(outcome.error._tag, "Unauthorized")
      assert.strictEqual(outcome.sent, 0)
    }))
})

describe("summaries of long histories", () => {
  it("a history larger than one summary request is summarized in bounded pieces, each building on the last, none dropped", () =>
    withWorld(async (world) => {
      const task = taskId("long-history")
      const rounds: ReadonlyArray<RoundSpec> = [
        { kind: "tool", size: 9_000, lineBreaks: false },
        { kind: "text", size: 3_000, lineBreaks: true },
        { kind: "tool", size: 12_000, lineBreaks: true }
      ]
      let index = 0
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const runtime = yield* world.openRuntime(Option.some(world.privateRef))
          const context = yield* runtime.bindTask({
            scope: yield* world.scopeFor([world.privateRef], task),
            output: Option.none()
          })
          const binding = yield* EntryGate.bind(context)
          const published = yield* TaskExecution.summarize(binding, historyOf(rounds), {
            policy: Compaction.threshold({ measure: "bytes", limit: 1_000, pieceLimit: 4_000 })
          })
          return { published, sent: yield* requests }
        }).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: `summary ${++index}` }))))
      )
      const historyBytes = rounds.reduce((total, round) => total + round.size, 0)
      assert.isAtLeast(outcome.sent.length, Math.ceil(historyBytes / 4_000))
      outcome.sent.forEach((request, i) => {
        const last = request.parts.at(-1)
        assert.isTrue(last?._tag === "Text" && last.text.includes(`part ${i + 1} of ${outcome.sent.length}`))
        // The piece itself stays within the bound (its header aside).
        const piece = last?._tag === "Text" ? last.text.slice(last.text.indexOf("\n") + 1) : ""
        assert.isAtMost(new TextEncoder().encode(piece).length, 4_000)
        if (i > 0) {
          assert.isTrue(request.parts.some((part) => part._tag === "Text" && part.text.includes(`summary ${i}`)))
        }
      })
      assert.strictEqual(outcome.published.text, `summary ${outcome.sent.length}`)
    }))
})

describe("a public summary entry takes the one summary path, recovery included", () => {
  const task = taskId("summary-leftover")
  const operation = operationId("notes")
  const rounds: ReadonlyArray<RoundSpec> = [
    { kind: "tool", size: 3_000, lineBreaks: false },
    { kind: "text", size: 2_000, lineBreaks: true }
  ]

  /** The journal as a crash right after staging leaves it: the SummaryStaged append never happens. */
  const crashingBeforeRecord = Effect.map(
    Journal.Journal,
    (journal): Journal.JournalService => ({
      ...journal,
      append: (entry) =>
        entry._tag === "SummaryStaged"
          ? Effect.fail(new Journal.JournalIoError({ file: journal.file, operation: "append", detail: "killed" }))
          : journal.append(entry)
    })
  )

  const bound = (world: World) =>
    Effect.gen(function* () {
      const runtime = yield* world.openRuntime(Option.some(world.privateRef))
      const context = yield* runtime.bindTask({
        scope: yield* world.scopeFor([world.privateRef], task),
        output: Option.none()
      })
      return { binding: yield* EntryGate.bind(context), capability: yield* PrivateSummaries.resolve(context) }
    })

  const interruptedThenAgain = (
    world: World,
    again: (
      binding: EntryGate.TaskBinding,
      capability: PrivateSummaries.PrivateWriterCapability
    ) => Effect.Effect<unknown, unknown, Journal.Journal | Layer.Success<typeof platformLayer> | Model.Model>
  ) =>
    Effect.gen(function* () {
      const { binding, capability } = yield* bound(world)
      const interrupted = yield* Effect.exit(
        TaskExecution.summarize(binding, historyOf(rounds), { operation }).pipe(
          Effect.provideServiceEffect(Journal.Journal, crashingBeforeRecord)
        )
      )
      assert.isTrue(Exit.isFailure(interrupted))
      const before = (yield* requests).length
      const result = yield* Effect.exit(again(binding, capability))
      const entries = yield* Journal.readEntries({ folder: yield* journalFolder(world), task })
      return { result, sentAgain: (yield* requests).length - before, entries }
    })

  it("summary_entry_adopts_its_leftover: a summary a crash left staged is adopted on the next call, with no request", () =>
    withWorld(async (world) => {
      let wording = 0
      const outcome = await Effect.runPromise(
        interruptedThenAgain(world, (binding) =>
          TaskExecution.summarize(binding, historyOf(rounds), { operation })
        ).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: `wording ${++wording}` }))))
      )
      assert.isTrue(Exit.isSuccess(outcome.result))
      if (Exit.isSuccess(outcome.result)) {
        assert.strictEqual((outcome.result.value as Compaction.PublishedSummary).text, "wording 1")
      }
      assert.strictEqual(outcome.sentAgain, 0)
      const last = outcome.entries.at(-1)
      assert.isTrue(last?._tag === "SummaryStaged" && last.adopted === true)
    }))

  const fileTurn = (
    binding: EntryGate.TaskBinding,
    journal?: Effect.Effect<Journal.JournalService, never, Journal.Journal>
  ) => {
    const run = TaskExecution.runSummaryFileTurn(
      binding,
      History.make([Model.text("user", "write the notes")]),
      { tools, maxSteps: 4 },
      { operation, step: 1 }
    )
    return journal === undefined ? run : run.pipe(Effect.provideServiceEffect(Journal.Journal, journal))
  }
  const stagedText = (world: World) =>
    Effect.sync(() =>
      fs.readFileSync(
        path.join(dataFolderOf(world, world.privateRef), PrivateSummaries.stagedPath({ operation, step: 1 })),
        "utf8"
      )
    )

  it("summary_file_turn_supersedes_its_leftover: a file a crash left unrecorded under the key is superseded, and the rerun's answer staged", () =>
    withWorld(async (world) => {
      let wording = 0
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const { binding } = yield* bound(world)
          assert.isTrue(Exit.isFailure(yield* Effect.exit(fileTurn(binding, crashingBeforeRecord))))
          assert.strictEqual(yield* stagedText(world), "wording 1")
          const again = yield* fileTurn(binding)
          const entries = yield* Journal.readEntries({ folder: yield* journalFolder(world), task })
          return { again, entries, text: yield* stagedText(world) }
        }).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: `wording ${++wording}` }))))
      )
      assert.strictEqual(outcome.again.published.text, "wording 2")
      assert.strictEqual(outcome.text, "wording 2")
      const tags = outcome.entries.map((entry) => entry._tag)
      const superseded = outcome.entries.find((entry) => entry._tag === "SummarySuperseded")
      assert.isTrue(superseded?._tag === "SummarySuperseded" && superseded.reason.includes("records no staging"))
      assert.isBelow(tags.indexOf("SummarySuperseded"), tags.lastIndexOf("SummaryStaged"))
    }))

  it("summary_file_turn_supersedes_its_leftover negative control: a summary the journal records under the key is never superseded (StagingConflict)", () =>
    withWorld(async (world) => {
      let wording = 0
      const outcome = await Effect.runPromise(
        Effect.gen(function* () {
          const { binding } = yield* bound(world)
          yield* fileTurn(binding)
          const again = yield* Effect.exit(fileTurn(binding))
          return { again, text: yield* stagedText(world) }
        }).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: `wording ${++wording}` }))))
      )
      assert.isTrue(Exit.isFailure(outcome.again))
      if (Exit.isFailure(outcome.again)) assert.include(String(outcome.again.cause), "StagingConflict")
      assert.strictEqual(outcome.text, "wording 1")
    }))

  it("summary_entry_adopts_its_leftover negative control: the former route (publish without recovery) fails StagingConflict", () =>
    withWorld(async (world) => {
      let wording = 0
      const outcome = await Effect.runPromise(
        interruptedThenAgain(world, (_, capability) =>
          Effect.flatMap(Journal.Journal, (journal) =>
            Compaction.publish({
              key: { operation, step: 1 },
              summary: `wording ${++wording}`,
              journal: Option.some(journal)
            })
          ).pipe(PrivateSummaries.provide(capability))
        ).pipe(Effect.provide(turnLayer(world, task, () => Model.response({ text: `wording ${++wording}` }))))
      )
      assert.isTrue(Exit.isFailure(outcome.result))
      if (Exit.isFailure(outcome.result)) assert.include(String(outcome.result.cause), "StagingConflict")
    }))
})
