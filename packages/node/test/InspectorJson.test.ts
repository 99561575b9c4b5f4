/**
 * The inspector's JSON document (`--json`, `Inspector.toJson`): decodable
 * with `Inspector.ReportJson`, every entry as journaled, bodies only with
 * `--bodies`; and each task's redaction decision, in JSON and in text.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Inspector } from "@tessera/node"
import { Journal, type JournalEntry } from "@tessera/runtime"
import { Effect, Schema } from "effect"
import { redactionOf } from "../src/internal/inspectRedaction.js"
import { inspectedFolder, redactedTask, runBin, secretText, verbatimTask } from "./support/inspectedFolder.ts"
import { nodeLayer, taskId, tempDir } from "./support/temp.ts"

const decodeReport = Schema.decodeUnknownSync(Schema.fromJsonString(Inspector.ReportJson))

describe("Inspector --json", () => {
  it.live(
    "inspector_json_decodes: the CLI's --json output decodes with Inspector.ReportJson and equals toJson of the report; each task has its journal file, every entry as journaled, its usage, resumable state and redaction (control: another schema name or a mangled entry does not decode)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal } = yield* inspectedFolder(stateDir)
        const result = runBin(folder, "--json")
        assert.strictEqual(result.status, 0, result.stderr)
        const decoded = decodeReport(result.stdout)
        const report = yield* Inspector.inspect(folder)
        assert.deepStrictEqual(JSON.parse(result.stdout), Inspector.toJson(report))

        assert.strictEqual(decoded.schema, "tessera-inspect/1")
        assert.strictEqual(decoded.root, folder)
        assert.strictEqual(decoded.onlyTask, null)
        assert.deepStrictEqual(
          decoded.volumes.map((volume) => [volume.id, volume.kind]),
          report.volumes.map(({ descriptor }) => [descriptor.id, descriptor.kind])
        )
        assert.deepStrictEqual(
          decoded.tasks.map((task) => task.task),
          [redactedTask, verbatimTask]
        )
        for (const task of decoded.tasks) {
          const entries = yield* Journal.readEntries({ folder: journal, task: task.task })
          assert.strictEqual(task.journalFile, path.join(journal, `${task.task}.jsonl`))
          assert.deepStrictEqual(task.entries, entries, "every entry, as the journal holds it")
          assert.strictEqual(task.journaledEntries, entries.length)
          const lines = fs.readFileSync(task.journalFile, "utf8").trimEnd().split("\n")
          assert.deepStrictEqual(
            task.entries.map((entry) => Inspector.formatEntryJson(entry)),
            lines,
            "an entry's JSON is its journal line"
          )
        }
        const [one, two] = decoded.tasks
        assert.deepStrictEqual(one?.usage, {
          responses: 4,
          reported: 4,
          usage: { inputTokens: 650, outputTokens: 37 },
          withChildren: { inputTokens: 650, outputTokens: 37 }
        })
        assert.deepStrictEqual(one?.children, [])
        assert.strictEqual(one?.redaction, "Scrubbed")
        assert.strictEqual(two?.redaction, "Verbatim")
        assert.deepStrictEqual(one?.resumable.lastTurn?.status, "Closed")
        assert.deepStrictEqual(
          two?.resumable.awaitingApproval.map((call) => [call.callId, call.name, call.approval?.status]),
          [["d1", "deploy", "Requested"]]
        )
        assert.strictEqual(two?.resumable.conversation._tag, "Rebuilt")
        assert.deepStrictEqual(
          [decoded.summaries.length, decoded.artifacts.length > 0, decoded.transcripts.count > 0],
          [1, true, true]
        )

        const document = JSON.parse(result.stdout)
        assert.throws(() => decodeReport(JSON.stringify({ ...document, schema: "tessera-inspect/2" })))
        const mangled = structuredClone(document)
        delete mangled.tasks[0].entries[0].seq
        assert.throws(() => decodeReport(JSON.stringify(mangled)))
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "inspector_json_hides_bodies: without --bodies the JSON holds no body (user text, tool inputs and results, pointer abstracts), only sizes; with --bodies (control) they are there",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder } = yield* inspectedFolder(stateDir)
        const hidden = runBin(folder, "--json", "--task", verbatimTask)
        assert.strictEqual(hidden.status, 0, hidden.stderr)
        assert.notInclude(hidden.stdout, secretText)
        assert.notInclude(hidden.stdout, '"prod"')
        const parts = decodeReport(hidden.stdout).tasks[0]?.resumable.conversation
        assert.strictEqual(parts?._tag, "Rebuilt")
        if (parts?._tag !== "Rebuilt") return
        const offloaded = parts.parts.find((part) => part._tag === "ToolResult" && part.offloaded !== undefined)
        assert.isDefined(offloaded, "an offloaded result is shown as its pointer")
        assert.isTrue(parts.parts.every((part) => !("text" in part) && !("content" in part) && !("input" in part)))

        const shown = runBin(folder, "--json", "--task", verbatimTask, "--bodies")
        assert.strictEqual(shown.status, 0, shown.stderr)
        assert.include(shown.stdout, secretText, "the control: --bodies shows the user's text")
        assert.include(shown.stdout, '"prod"')
        assert.isTrue(decodeReport(shown.stdout).bodies)
      }).pipe(Effect.provide(nodeLayer))
  )
})

describe("Inspector redaction decision", () => {
  it.live(
    "inspector_shows_redaction: the text report marks a task whose last turn ran without a redactor (bodies stored verbatim) and says scrubbed for a redacted one; a journal without the record reads Unknown (control: the same journal with the field stripped from its lines)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal } = yield* inspectedFolder(stateDir)
        const text = runBin(folder).stdout
        const section = (task: string) => text.slice(text.indexOf(`journal of task ${task}`))
        assert.match(
          section(verbatimTask),
          /^journal of task task-2 [^\n]*\n {2}!! redaction: none \(bodies stored verbatim\)/
        )
        assert.match(section(redactedTask), /^journal of task task-1 [^\n]*\n {2}redaction: scrubbed/)
        assert.include(text, "redaction=Verbatim", "the TurnOpened line shows the decision too")

        const file = path.join(journal, `${verbatimTask}.jsonl`)
        fs.writeFileSync(file, fs.readFileSync(file, "utf8").replaceAll(',"redaction":"Verbatim"', ""))
        const older = yield* Inspector.inspect(folder, { task: verbatimTask })
        assert.strictEqual(older.journals[0]?.redaction, "Unknown")
        const olderText = Inspector.render(older)
        assert.include(olderText, "redaction: unknown")
        assert.notInclude(olderText, "!! redaction")
      }).pipe(Effect.provide(nodeLayer))
  )

  it("redaction_is_the_last_turns: a later turn's decision replaces an earlier one's; no turn is Unknown", () => {
    const opened = (seq: number, turn: number, redaction?: "Scrubbed" | "Verbatim"): JournalEntry.Entry => ({
      _tag: "TurnOpened",
      seq,
      at: 0,
      turn,
      task: taskId("t"),
      ...(redaction === undefined ? {} : { redaction })
    })
    const closed = (seq: number, turn: number): JournalEntry.Entry => ({
      _tag: "TurnClosed",
      seq,
      at: 0,
      turn,
      steps: 1
    })
    assert.strictEqual(redactionOf([]), "Unknown")
    assert.strictEqual(redactionOf([opened(0, 1, "Scrubbed"), closed(1, 1), opened(2, 2, "Verbatim")]), "Verbatim")
    assert.strictEqual(
      redactionOf([opened(0, 1, "Verbatim"), closed(1, 1), opened(2, 2, "Scrubbed"), closed(3, 2)]),
      "Scrubbed"
    )
    assert.strictEqual(redactionOf([opened(0, 1, "Verbatim"), closed(1, 1), opened(2, 2)]), "Unknown")
  })
})
