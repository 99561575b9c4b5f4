/**
 * The table of per-entry facts (`internal/entryFacts.ts`) is what the
 * journal does: one row per entry kind (checked by the compiler), group
 * commit syncs right after exactly the kinds the table marks `syncPoint`,
 * the turn tap hears exactly the kinds it marks `turnEvent`, and every
 * field it marks `scrubbed` is a text field of its kind. Each check is run
 * against a copy of the table with one row flipped too, which it must
 * catch: a check that agrees with any table proves nothing.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Volume } from "@tessera/core"
import * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as JournalStorage from "@tessera/runtime/JournalStorage"
import { Effect, FileSystem, Layer, Schema } from "effect"
// The table and the tap are internal (the package blocks `./internal/*`); the test reaches them by path.
import { type EntryTag, entryFacts, type FactsTable } from "../src/internal/entryFacts.js"
import { JournalTap } from "../src/internal/journalTap.js"

const task = Schema.decodeUnknownSync(Ids.TaskId)("entry-facts-1")
const digest = "0".repeat(64)
const childTask = Schema.decodeUnknownSync(Ids.TaskId)("entry-facts-1-child-0")
const childAgent = Schema.decodeUnknownSync(Ids.AgentId)("scout")
const volume = Schema.decodeUnknownSync(Volume.VolumeRef)({ store: "local", volume: "agent-private" })
const summary = { turn: 1, step: 2, operation: "Compaction", volume, path: "summaries/s.md", size: 4, sha256: digest }

/** One entry of every kind, in an order the journal accepts; some kinds more than once. */
const scenario: ReadonlyArray<JournalEntry.EntryInput> = [
  { _tag: "Admission", operation: "Turn", detail: "admitted" },
  { _tag: "TurnOpened", turn: 1, task },
  { _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 10, sha256: digest },
  { _tag: "ModelFailed", turn: 1, step: 1, reason: "Timeout", detail: "no answer" },
  { _tag: "TurnResumed", turn: 1 },
  { _tag: "RequestDispatched", turn: 1, step: 2, parts: 2, size: 20, sha256: digest },
  {
    _tag: "ResponseReceived",
    turn: 1,
    step: 2,
    textSize: 0,
    textSha256: digest,
    toolCalls: [
      { callId: "c1", name: "t" },
      { callId: "c2", name: "t" }
    ]
  },
  {
    _tag: "ApprovalRequested",
    turn: 1,
    step: 2,
    callId: "c1",
    name: "t",
    inputSize: 2,
    inputSha256: digest,
    reason: "Tool"
  },
  { _tag: "ApprovalDecided", turn: 1, step: 2, callId: "c1", approved: true, by: "alice" },
  { _tag: "ToolCalled", turn: 1, step: 2, callId: "c1", name: "t", inputSize: 2, inputSha256: digest },
  { _tag: "ArtifactOffloaded", turn: 1, step: 2, callId: "c1", path: "results/c1.txt", size: 5, sha256: digest },
  { _tag: "ToolResulted", turn: 1, step: 2, callId: "c1", name: "t", isError: false, size: 5, sha256: digest },
  { _tag: "ToolCalled", turn: 1, step: 2, callId: "c2", name: "t", inputSize: 2, inputSha256: digest },
  { _tag: "ChildDelegated", turn: 1, step: 2, callId: "c2", task: childTask, agent: childAgent },
  {
    _tag: "ChildAnswered",
    turn: 1,
    step: 2,
    callId: "c2",
    task: childTask,
    outcome: "Answered",
    size: 1,
    sha256: digest
  },
  { _tag: "ToolResulted", turn: 1, step: 2, callId: "c2", name: "t", isError: true, size: 1, sha256: digest },
  { _tag: "SummaryStarted", turn: 1, step: 2, operation: "Compaction", inputsSha256: digest },
  { _tag: "SummaryRequestAnswered", turn: 1, step: 2, operation: "Compaction", piece: 1, pieces: 1, textSize: 4 },
  { _tag: "SummaryStaged", ...summary },
  { _tag: "SummarySuperseded", ...summary, reason: "other inputs" },
  { _tag: "CompactionWarning", turn: 1, step: 2, reason: "TaskOverLimit", measure: "bytes", size: 10, limit: 5 },
  { _tag: "RequestDispatched", turn: 1, step: 3, parts: 3, size: 30, sha256: digest },
  { _tag: "ResponseReceived", turn: 1, step: 3, textSize: 4, textSha256: digest, toolCalls: [] },
  { _tag: "TurnClosed", turn: 1, steps: 3 },
  { _tag: "Rejection", operation: "Turn", reason: "Denied", detail: "refused" },
  { _tag: "TruncationRecovered", line: 2, keptBytes: 10, droppedBytes: 3, droppedSha256: digest },
  { _tag: "JournalRepaired", line: 2, keptBytes: 10, droppedBytes: 3, droppedSha256: digest, detail: "interleaved" },
  { _tag: "TurnOpened", turn: 2, task },
  { _tag: "TurnAbandoned", turn: 2, steps: 0, reason: "given up" }
]

const tags = Object.keys(entryFacts) as ReadonlyArray<EntryTag>

/** A journal file on a simulated device: what was written, and how much of it a sync made durable. */
const deviceFile = (device: { text: string; durable: number }): JournalStorage.JournalFileShape => ({
  openAppend: () =>
    Effect.sync(() => {
      const write = (line: string) => {
        device.text += line
      }
      const sync = () => {
        device.durable = device.text.length
      }
      return {
        append: (line) =>
          Effect.sync(() => {
            write(line)
            sync()
          }),
        write: (line) => Effect.sync(() => write(line)),
        sync: Effect.sync(sync),
        truncate: (size) =>
          Effect.sync(() => {
            device.text = device.text.slice(0, size)
            sync()
          })
      }
    })
})

/**
 * Appends the scenario under group commit: for each kind, whether its line was durable as soon as its append
 * returned (a kind seen twice must answer the same both times), and the kinds the turn tap heard.
 */
const runScenario = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-facts-" })
  const device = { text: "", durable: 0 }
  const heard: Array<EntryTag> = []
  const synced = new Map<EntryTag, boolean>()
  const inconsistent: Array<EntryTag> = []
  yield* Effect.scoped(
    Effect.gen(function* () {
      const journal = yield* Journal.open({ folder, task })
      for (const input of scenario) {
        yield* journal.append(input)
        const durable = device.durable === device.text.length
        if (synced.has(input._tag) && synced.get(input._tag) !== durable) inconsistent.push(input._tag)
        synced.set(input._tag, durable)
      }
    }).pipe(
      Effect.provideService(JournalTap, (entry) => Effect.sync(() => heard.push(entry._tag))),
      Effect.provide(
        Layer.merge(
          Layer.succeed(JournalStorage.JournalFile)(deviceFile(device)),
          JournalStorage.layer(JournalStorage.groupCommit)
        )
      )
    )
  )
  return { synced, heard, inconsistent }
})

/** The kinds on which `table` and what the journal did disagree. */
const syncMismatches = (table: FactsTable, synced: ReadonlyMap<EntryTag, boolean>) =>
  tags.filter((tag) => synced.get(tag) !== table[tag].syncPoint)

const turnEventMismatches = (table: FactsTable, heard: ReadonlyArray<EntryTag>) =>
  tags.filter((tag) => heard.includes(tag) !== table[tag].turnEvent)

/** The table with the one row of `tag` flipped in `column`: the broken wiring the checks must catch. */
const flipped = (tag: EntryTag, column: "syncPoint" | "turnEvent"): FactsTable => ({
  ...entryFacts,
  [tag]: { ...entryFacts[tag], [column]: !entryFacts[tag][column] }
})

describe("EntryFacts", () => {
  it("entry_facts_cover_every_kind: the table has one row per entry kind, and the scenario writes each kind", () => {
    const { ModelFailed: _, ...withoutOneRow } = entryFacts
    // @ts-expect-error a table without a row for every kind of the `Entry` union does not type-check
    const incomplete: FactsTable = withoutOneRow
    assert.strictEqual(Object.keys(incomplete).length, tags.length - 1)
    assert.deepStrictEqual(
      tags.filter((tag) => !scenario.some((input) => input._tag === tag)),
      [],
      "every kind of the table is in the scenario"
    )
  })

  it.effect(
    "group_commit_syncs_at_table_sync_points: under group commit an entry is durable on return exactly when its row says syncPoint",
    () =>
      Effect.gen(function* () {
        const { synced, inconsistent } = yield* runScenario
        assert.deepStrictEqual(inconsistent, [])
        assert.deepStrictEqual(syncMismatches(entryFacts, synced), [])
        // Negative control: a flipped row disagrees with what the journal does, and the check says where.
        assert.deepStrictEqual(syncMismatches(flipped("ModelFailed", "syncPoint"), synced), ["ModelFailed"])
        assert.deepStrictEqual(syncMismatches(flipped("ToolCalled", "syncPoint"), synced), ["ToolCalled"])
      }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
  )

  it.effect("turn_tap_hears_table_turn_events: the turn tap hears exactly the kinds whose row says turnEvent", () =>
    Effect.gen(function* () {
      const { heard } = yield* runScenario
      assert.isAbove(heard.length, 0)
      assert.deepStrictEqual(turnEventMismatches(entryFacts, heard), [])
      // Negative control: a flipped row is caught.
      assert.deepStrictEqual(turnEventMismatches(flipped("SummaryStaged", "turnEvent"), heard), ["SummaryStaged"])
      assert.deepStrictEqual(turnEventMismatches(flipped("ModelFailed", "turnEvent"), heard), ["ModelFailed"])
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))
  )

  it("entry_facts_scrubbed_fields_are_text: every field a row marks scrubbed holds text in its kind's entry", () => {
    const notText = (table: FactsTable) =>
      tags.flatMap((tag) =>
        (table[tag].scrubbed as ReadonlyArray<string>)
          .filter((field) => {
            const input = scenario.find((candidate) => candidate._tag === tag) as Record<string, unknown> | undefined
            return typeof input?.[field] !== "string"
          })
          .map((field) => `${tag}.${field}`)
      )
    assert.deepStrictEqual(notText(entryFacts), [])
    assert.isAbove(
      tags.filter((tag) => entryFacts[tag].scrubbed.length > 0).length,
      0,
      "some kind carries text to scrub"
    )
    // Negative control: a row naming a field that is not text is caught.
    const wrong = {
      ...entryFacts,
      ModelFailed: { ...entryFacts.ModelFailed, scrubbed: ["step"] }
    } as unknown as FactsTable
    assert.deepStrictEqual(notText(wrong), ["ModelFailed.step"])
  })
})
