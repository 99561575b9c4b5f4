/**
 * Issue 17, findings 1, 2, 5 and 7 at the runtime level: one writer per
 * journal and its explicit repair, summaries left by a crash, files that
 * never were journals, and file names that are one-to-one over call ids and
 * operation ids. Each guarantee has a negative control built here.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import type { Ids } from "@tessera/core"
import { NodeDigest } from "@tessera/node"
import { Compaction, History, Journal, Model, PrivateSummaries, TaskExecution, ToolResults } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Exit, Option } from "effect"
import * as fc from "fast-check"
import { compactThreeRounds, privateWriter, summaryKey, withJournal } from "./support/compacting.ts"
import { runInWorld, task, taskId, withTempDir } from "./support/world.ts"

const run = <A, E>(effect: Effect.Effect<A, E, NodeServices.NodeServices>) =>
  Effect.runPromise(Effect.exit(effect.pipe(Effect.provide(NodeServices.layer))))

describe("finding 1: one writer per task journal", () => {
  it("two fibers opening one task's journal: the second fails TaskInUse and writes nothing; once the first closes, it opens", () =>
    withTempDir(async (folder) => {
      const exit = await run(
        withJournal(folder, (first) =>
          Effect.gen(function* () {
            yield* first.openTurn
            const second = yield* Effect.exit(withJournal(folder, (journal) => journal.state))
            return second
          })
        )
      )
      assert.isTrue(Exit.isSuccess(exit))
      if (Exit.isSuccess(exit)) {
        const second = exit.value
        assert.isTrue(Exit.isFailure(second))
        if (Exit.isFailure(second)) {
          const error = second.cause.reasons[0]
          assert.strictEqual(error?._tag, "Fail")
          if (error?._tag === "Fail") {
            assert.strictEqual((error.error as { _tag: string })._tag, "TaskInUse")
            assert.include(String(error.error), "this process")
          }
        }
      }
      const after = await run(withJournal(folder, (journal) => journal.state))
      assert.isTrue(Exit.isSuccess(after))
      if (Exit.isSuccess(after)) assert.strictEqual(after.value.entries, 1)
    }))

  it("negative control: a second writer that bypasses the claim (lines appended by hand) corrupts the journal for good until repair", () =>
    withTempDir(async (folder) => {
      const file = path.join(folder, Journal.fileName(task))
      await run(withJournal(folder, (journal) => Effect.andThen(journal.openTurn, journal.abandonTurn("first"))))
      const firstWriter = fs.readFileSync(file, "utf8")
      // What a second writer that started from the same empty journal writes: its own entry 0 onwards.
      fs.appendFileSync(file, firstWriter)
      const reopened = await run(withJournal(folder, (journal) => journal.state))
      assert.isTrue(Exit.isFailure(reopened))
      assert.include(String(Exit.isFailure(reopened) ? reopened.cause : ""), "entry 0 found where entry 2 belongs")
    }))

  it("repair keeps the longest valid prefix, records JournalRepaired, and is explicit: without it the journal stays refused", () =>
    withTempDir(async (folder) => {
      const file = path.join(folder, Journal.fileName(task))
      await run(withJournal(folder, (journal) => Effect.andThen(journal.openTurn, journal.abandonTurn("first"))))
      const valid = fs.readFileSync(file)
      fs.appendFileSync(file, valid)
      const corrupt = fs.readFileSync(file)
      // Refused twice in a row: opening never repairs on its own, and leaves the file as it was.
      for (let attempt = 0; attempt < 2; attempt++) {
        assert.isTrue(Exit.isFailure(await run(withJournal(folder, (journal) => journal.state))))
        assert.deepStrictEqual(fs.readFileSync(file), corrupt)
      }
      const repaired = await run(Journal.repair({ folder, task }))
      assert.isTrue(Exit.isSuccess(repaired))
      if (Exit.isSuccess(repaired)) {
        assert.isTrue(Option.isSome(repaired.value))
        if (Option.isSome(repaired.value)) {
          assert.strictEqual(repaired.value.value.keptEntries, 2)
          assert.strictEqual(repaired.value.value.keptBytes, valid.length)
          assert.strictEqual(repaired.value.value.droppedBytes, valid.length)
          assert.strictEqual(repaired.value.value.line, 3)
        }
      }
      const entries = await run(Journal.readEntries({ folder, task }))
      assert.isTrue(Exit.isSuccess(entries))
      if (Exit.isSuccess(entries)) {
        assert.deepStrictEqual(
          entries.value.map((entry) => entry._tag),
          ["TurnOpened", "TurnAbandoned", "JournalRepaired"]
        )
      }
      const state = await run(withJournal(folder, (journal) => Effect.andThen(journal.openTurn, journal.state)))
      assert.isTrue(Exit.isSuccess(state))
      // A journal that opens needs no repair.
      const again = await run(Journal.repair({ folder, task }))
      assert.isTrue(Exit.isSuccess(again) && Option.isNone(again.value))
    }))
})

describe("finding 5: a file that never was a journal", () => {
  const entryLine = (seq: number) => `{"_tag":"TurnOpened","seq":${seq},"at":1,"turn":1,"task":"${task}"}`

  it("bytes without a newline that are neither an entry nor the start of one fail JournalNotRecognized and are left untouched", () =>
    withTempDir(async (folder) => {
      const file = path.join(folder, Journal.fileName(task))
      let run_ = 0
      await fc.assert(
        fc.asyncProperty(
          fc
            .uint8Array({ minLength: 1, maxLength: 4096 })
            .filter((bytes) => !bytes.includes(0x0a) && bytes[0] !== 0x7b),
          async (bytes) => {
            run_ += 1
            fs.writeFileSync(file, bytes)
            const exit = await run(withJournal(folder, (journal) => journal.state))
            assert.isTrue(Exit.isFailure(exit), `run ${run_}`)
            assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "JournalNotRecognized")
            assert.deepStrictEqual(new Uint8Array(fs.readFileSync(file)), bytes)
          }
        ),
        { numRuns: 40 }
      )
    }))

  it("one complete entry missing its newline is kept and its line finished; a line cut inside an entry is still recovered", () =>
    withTempDir(async (folder) => {
      const file = path.join(folder, Journal.fileName(task))
      fs.writeFileSync(file, entryLine(0))
      const kept = await run(withJournal(folder, (journal) => journal.state))
      assert.isTrue(Exit.isSuccess(kept))
      if (Exit.isSuccess(kept)) assert.strictEqual(kept.value.entries, 1)
      assert.strictEqual(fs.readFileSync(file, "utf8"), `${entryLine(0)}\n`)

      fs.writeFileSync(file, `${entryLine(0)}\n${entryLine(1).slice(0, 20)}`)
      const cut = await run(withJournal(folder, (journal) => journal.state))
      assert.isTrue(Exit.isSuccess(cut))
      if (Exit.isSuccess(cut)) assert.deepStrictEqual(cut.value.truncations, [{ line: 2, droppedBytes: 20 }])
    }))

  it("a trailing blank line is tolerated (cut and recorded); a blank line inside the journal is JournalCorrupt naming it", () =>
    withTempDir(async (folder) => {
      const file = path.join(folder, Journal.fileName(task))
      fs.writeFileSync(file, `${entryLine(0)}\n\n`)
      const read = await run(Journal.readEntries({ folder, task }))
      assert.isTrue(Exit.isSuccess(read) && read.value.length === 1)
      const opened = await run(withJournal(folder, (journal) => journal.state))
      assert.isTrue(Exit.isSuccess(opened))
      if (Exit.isSuccess(opened)) assert.deepStrictEqual(opened.value.truncations, [{ line: 2, droppedBytes: 1 }])

      fs.writeFileSync(file, `${entryLine(0)}\n\n${entryLine(1)}\n`)
      const inside = await run(withJournal(folder, (journal) => journal.state))
      assert.isTrue(Exit.isFailure(inside))
      assert.include(String(Exit.isFailure(inside) ? inside.cause : ""), "line 2")
      assert.include(String(Exit.isFailure(inside) ? inside.cause : ""), "blank")
    }))

  it("negative control: the former rule (whatever follows the last newline is a cut line) would drop a garbage file whole", () => {
    const formerCutBytes = (bytes: Uint8Array) => bytes.length - (bytes.lastIndexOf(0x0a) + 1)
    const garbage = new Uint8Array(4096).fill(0x41)
    assert.strictEqual(formerCutBytes(garbage), 4096, "the former rule keeps nothing of it")
  })
})

describe("finding 7: artifact and summary names are one-to-one", () => {
  const formerSegment = (text: string): string => text.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 96) || "call"
  const segment = (id: string) => Effect.runSync(ToolResults.callIdSegment(id).pipe(Effect.provide(NodeDigest.layer)))

  it("call ids map to distinct plain segments without '-', at most 96 characters (property)", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.string({ maxLength: 200 }), (a, b) => {
        const [x, y] = [segment(a), segment(b)]
        assert.match(x, /^[A-Za-z0-9_.~]{1,96}$/)
        assert.notInclude(x, "-")
        if (a !== b) assert.notStrictEqual(x, y)
      })
    )
    for (const [a, b] of [
      ["call:1", "call.1"],
      ["call-1", "call_1"],
      [`${"a".repeat(96)}x`, `${"a".repeat(96)}y`],
      ["", "~empty"]
    ] as const) {
      assert.notStrictEqual(segment(a), segment(b), `${a} / ${b}`)
    }
  })

  it("turn operations of tasks sharing their first 100 characters differ", () => {
    const long = (tail: string) => taskId(`${"t".repeat(110)}${tail}`)
    const operation = (id: Ids.TaskId) =>
      Effect.runSync(TaskExecution.turnOperation(id, 1).pipe(Effect.provide(NodeDigest.layer)))
    assert.notStrictEqual(operation(long("a")), operation(long("b")))
    assert.strictEqual(operation(taskId("short")), "short-t1")
    assert.isAtMost(operation(long("a")).length, 128)
  })

  it("negative control: the former encoding maps call:1 and call.1 (and ids sharing 96 characters) to one name", () => {
    assert.strictEqual(formerSegment("call:1"), formerSegment("call.1"))
    assert.strictEqual(formerSegment(`${"a".repeat(96)}x`), formerSegment(`${"a".repeat(96)}y`))
  })
})

const key = summaryKey

const summarizer = (wording: string) => ScriptedModel.layer(() => Model.response({ text: wording }))

describe("finding 2: a summary a crash left staged", () => {
  const setup = (world: Parameters<Parameters<typeof runInWorld>[0]>[0]) =>
    Effect.gen(function* () {
      const { capability, folder } = yield* privateWriter(world)
      const compact = (journal: Journal.JournalService, wording: string) =>
        compactThreeRounds(journal).pipe(PrivateSummaries.provide(capability), Effect.provide(summarizer(wording)))
      return { capability, folder, compact }
    })

  /** The journal as a crash right after staging leaves it: the SummaryStaged append never happens. */
  const crashingBeforeRecord = (journal: Journal.JournalService): Journal.JournalService => ({
    ...journal,
    append: (entry) =>
      entry._tag === "SummaryStaged"
        ? Effect.fail(new Journal.JournalIoError({ file: journal.file, operation: "append", detail: "killed" }))
        : journal.append(entry)
  })

  it("resume adopts a summary staged with the recorded inputs: no summary request, no StagingConflict, SummaryStaged(adopted)", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability, compact, folder } = yield* setup(world)
        const interrupted = yield* Effect.exit(
          withJournal(folder, (journal) => compact(crashingBeforeRecord(journal), "first wording"))
        )
        assert.isTrue(Exit.isFailure(interrupted))
        const resumed = yield* withJournal(folder, (journal) => compact(journal, "second, different wording"))
        assert.strictEqual(History.summaryText(resumed).pipe(Option.getOrThrow), "first wording")
        const entries = yield* Journal.readEntries({ folder, task })
        const last = entries.at(-1)
        assert.strictEqual(last?._tag, "SummaryStaged")
        if (last?._tag === "SummaryStaged") assert.isTrue(last.adopted)
        assert.deepStrictEqual(
          entries.map((entry) => entry._tag),
          // The one summary request is the interrupted attempt's; the resume adopts and sends none.
          ["SummaryStarted", "SummaryRequestAnswered", "SummaryStaged"]
        )
        const staged = path.join(capability.folder, PrivateSummaries.stagedPath(key))
        assert.strictEqual(fs.readFileSync(staged, "utf8"), "first wording")
      })
    ))

  it("a leftover the journal has no inputs for is superseded explicitly, then the key is staged again", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability, compact, folder } = yield* setup(world)
        yield* PrivateSummaries.stageOnce(key, "an older summary").pipe(PrivateSummaries.provide(capability))
        const resumed = yield* withJournal(folder, (journal) => compact(journal, "the new summary"))
        assert.strictEqual(History.summaryText(resumed).pipe(Option.getOrThrow), "the new summary")
        const entries = yield* Journal.readEntries({ folder, task })
        assert.deepStrictEqual(
          entries.map((entry) => entry._tag),
          ["SummarySuperseded", "SummaryStarted", "SummaryRequestAnswered", "SummaryStaged"]
        )
        const superseded = entries[0]
        if (superseded?._tag === "SummarySuperseded") assert.strictEqual(superseded.size, 16)
      })
    ))

  it("negative control: staging the resumed summary without recovery fails StagingConflict, as in the issue", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability, compact, folder } = yield* setup(world)
        yield* Effect.exit(withJournal(folder, (journal) => compact(crashingBeforeRecord(journal), "first wording")))
        const former = yield* Effect.exit(
          Compaction.publish({ key, summary: "second, different wording", journal: Option.none() }).pipe(
            PrivateSummaries.provide(capability)
          )
        )
        assert.isTrue(Exit.isFailure(former))
        assert.include(String(Exit.isFailure(former) ? former.cause : ""), "StagingConflict")
      })
    ))
})
