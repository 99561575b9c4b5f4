/**
 * The inspector's entry filters (`--kind`, `--turn`, `--since`): an entry is
 * shown exactly when it matches every filter given, in journal order; the
 * rest of the report (tokens, resumable state, files) does not change; a bad
 * filter is refused before anything is read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Inspector } from "@tessera/node"
import { Journal, type JournalEntry } from "@tessera/runtime"
import { Effect, Result, Schema } from "effect"
import * as fc from "fast-check"
import { type FilterOptions, makeFilter, matches } from "../src/internal/inspectFilter.js"
import { inspectedFolder, redactedTask, runBin, verbatimTask } from "./support/inspectedFolder.ts"
import { nodeLayer, tempDir } from "./support/temp.ts"

/** What a filter reads of an entry; the rest of its fields take no part. Times from a small range, so equal ones occur. */
interface Shown {
  readonly _tag: JournalEntry.Entry["_tag"]
  readonly seq: number
  readonly at: number
  readonly turn?: number
}

/** The specification: every filter given holds; kinds may be grouped with commas. */
const oracle = (options: FilterOptions) => (entry: Shown) =>
  (options.kinds === undefined ||
    options.kinds.flatMap((item) => item.split(",")).some((kind) => kind === entry._tag)) &&
  (options.turn === undefined || entry.turn === options.turn) &&
  (options.since === undefined || entry.at >= new Date(options.since).getTime())

type Subject = (entries: ReadonlyArray<Shown>, options: FilterOptions) => ReadonlyArray<Shown>

const filtered: Subject = (entries, options) => {
  const filter = Result.getOrThrow(makeFilter(options))
  // The predicate reads `_tag`, `turn` and `at` only, so an entry reduced to them stands for the whole.
  return entries.filter((entry) => matches(filter, entry as JournalEntry.Entry))
}

const entryList = fc
  .array(
    fc.record(
      {
        _tag: fc.constantFrom(...Inspector.entryKinds),
        at: fc.integer({ min: 0, max: 20 }),
        turn: fc.integer({ min: 1, max: 4 })
      },
      { requiredKeys: ["_tag", "at"] }
    ),
    { maxLength: 40 }
  )
  .map((entries): ReadonlyArray<Shown> => entries.map((entry, seq) => ({ ...entry, seq })))

const filterOptions: fc.Arbitrary<FilterOptions> = fc.record(
  {
    kinds: fc
      .uniqueArray(fc.constantFrom(...Inspector.entryKinds), { minLength: 1, maxLength: 5 })
      .chain((kinds) => fc.constantFrom([kinds.join(",")], kinds, [kinds.slice(0, 1).join(","), ...kinds.slice(1)])),
    turn: fc.integer({ min: 1, max: 4 }),
    since: fc
      .integer({ min: 0, max: 20 })
      .chain((ms) => fc.constantFrom<Date | string>(new Date(ms), new Date(ms).toISOString()))
  },
  { requiredKeys: [] }
)

const property = (subject: Subject) =>
  fc.property(entryList, filterOptions, (entries, options) => {
    assert.deepStrictEqual(subject(entries, options), entries.filter(oracle(options)))
  })

describe("Inspector entry filters", () => {
  it("filters_are_exactly_the_matching_entries: over generated entry lists and filters, the entries kept are exactly those matching every filter given, in order (controls: any filter instead of all, a strict since, a reordering each fail)", () => {
    fc.assert(property(filtered), { numRuns: 500 })

    const mutants: Record<string, Subject> = {
      "any filter instead of all": (entries, options) => {
        const only = (one: FilterOptions) => filtered(entries, one)
        const parts = [
          options.kinds === undefined ? undefined : only({ kinds: options.kinds }),
          options.turn === undefined ? undefined : only({ turn: options.turn }),
          options.since === undefined ? undefined : only({ since: options.since })
        ].filter((part) => part !== undefined)
        return parts.length === 0 ? entries : entries.filter((entry) => parts.some((part) => part.includes(entry)))
      },
      "a strict since": (entries, options) =>
        filtered(entries, options).filter(
          (entry) => options.since === undefined || entry.at > new Date(options.since).getTime()
        ),
      "a reordering": (entries, options) => [...filtered(entries, options)].sort((a, b) => a.at - b.at)
    }
    for (const [name, mutant] of Object.entries(mutants)) {
      assert.isTrue(fc.check(property(mutant), { numRuns: 500 }).failed, `the control "${name}" is caught`)
    }
  })

  it.live(
    "inspect_filters_entries_only: Inspector.inspect with filters keeps the matching entries of each journal and nothing else changes (tokens, resumable state, files, entry count); the text says what was filtered",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal } = yield* inspectedFolder(stateDir)
        const whole = yield* Inspector.inspect(folder)
        const all = yield* Journal.readEntries({ folder: journal, task: redactedTask })
        const since = new Date((all[6] as JournalEntry.Entry).at)
        const options = { kinds: ["ToolCalled,ToolResulted", "ArtifactOffloaded"], turn: 1, since: since.toISOString() }
        const report = yield* Inspector.inspect(folder, options)
        const first = report.journals[0]
        assert.deepStrictEqual(first?.entries, all.filter(oracle(options)))
        assert.isAbove(first?.entries.length ?? 0, 0)
        assert.isBelow(first?.entries.length ?? 0, all.length)
        assert.deepStrictEqual(
          report.journals.map(({ entries: _, ...rest }) => rest),
          whole.journals.map(({ entries: _, ...rest }) => rest)
        )
        assert.deepStrictEqual(
          [report.summaries, report.artifacts, report.transcripts],
          [whole.summaries, whole.artifacts, whole.transcripts]
        )
        const text = Inspector.render(report)
        assert.include(
          text,
          `(entries filtered: kind ToolCalled,ToolResulted,ArtifactOffloaded, turn 1, since ${since.toISOString()})`
        )
        assert.include(text, `journal of task task-1 (${all.length} entries, ${first?.entries.length} shown,`)
        assert.include(text, "tokens: in=650,out=37", "the token total is the whole journal's")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "bad_filters_are_refused_first: an unknown kind fails InvalidFilter naming it and every known kind, before the folder is read; a turn below 1 and a time that is not ISO 8601 fail alike",
    () =>
      Effect.gen(function* () {
        const missing = "/nonexistent/tessera/folder"
        const unknown = yield* Effect.flip(Inspector.inspect(missing, { kinds: ["ToolCalled,Nope"] }))
        assert.strictEqual(unknown._tag, "InvalidFilter")
        assert.include(unknown.message, '--kind: unknown entry kind "Nope"')
        for (const kind of Inspector.entryKinds) assert.include(unknown.message, kind)
        assert.strictEqual((yield* Effect.flip(Inspector.inspect(missing, { turn: 0 })))._tag, "InvalidFilter")
        assert.strictEqual(
          (yield* Effect.flip(Inspector.inspect(missing, { since: "yesterday" })))._tag,
          "InvalidFilter"
        )
        assert.strictEqual(
          (yield* Effect.flip(Inspector.inspect(missing, { since: new Date(Number.NaN) })))._tag,
          "InvalidFilter"
        )
        const control = yield* Effect.flip(
          Inspector.inspect(missing, { kinds: ["ToolCalled"], turn: 1, since: "2026-01-02" })
        )
        assert.strictEqual(control._tag, "NotAStoreFolder", "the control: good filters reach the folder")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "cli_filters: --kind repeats and takes commas, --json shows only the kept entries; --kind Nope exits 1 naming the known kinds; --follow-for prints the kept entries as text and exits 0; --follow without --task exits 1",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal } = yield* inspectedFolder(stateDir)
        const all = yield* Journal.readEntries({ folder: journal, task: verbatimTask })
        const json = runBin(
          folder,
          "--task",
          verbatimTask,
          "--json",
          "--kind",
          "ToolCalled,TurnOpened",
          "--kind",
          "ApprovalRequested"
        )
        assert.strictEqual(json.status, 0, json.stderr)
        const document = Schema.decodeUnknownSync(Schema.fromJsonString(Inspector.ReportJson))(json.stdout)
        assert.deepStrictEqual(
          document.tasks[0]?.entries,
          all.filter(oracle({ kinds: ["ToolCalled", "TurnOpened", "ApprovalRequested"] }))
        )
        assert.deepStrictEqual(document.filter.kinds, ["ToolCalled", "TurnOpened", "ApprovalRequested"])

        const bad = runBin(folder, "--kind", "Nope")
        assert.strictEqual(bad.status, 1)
        assert.include(bad.stderr, 'unknown entry kind "Nope"; the known kinds are TurnOpened, TurnResumed')
        assert.strictEqual(bad.stdout, "")

        const followed = runBin(folder, "--task", verbatimTask, "--follow-for", "1", "--kind", "ApprovalRequested")
        assert.strictEqual(followed.status, 0, followed.stderr)
        assert.deepStrictEqual(
          followed.stdout,
          all
            .filter((entry) => entry._tag === "ApprovalRequested")
            .map((entry) => `${Inspector.formatEntry(entry)}\n`)
            .join("")
        )
        const noTask = runBin(folder, "--follow")
        assert.strictEqual(noTask.status, 1)
        assert.include(noTask.stderr, "--follow needs --task")
      }).pipe(Effect.provide(nodeLayer))
  )
})
