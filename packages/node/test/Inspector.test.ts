import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Inspector, LocalHarness } from "@tessera/node"
import { Compaction, type JournalEntry, Model, TaskExecution, VolumeStore } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Path } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"
import { isSummaryRequest, produceCall, start, tools } from "./support/turns.ts"

const agent = agentId("researcher")
const task1 = taskId("task-1")
const task2 = taskId("task-2")
const bin = fileURLToPath(new URL("../bin/tessera-inspect.ts", import.meta.url))

/**
 * A namespace folder written by real turns: task-1 offloads one large result
 * to the scratch volume and compacts (a summary on the scratch volume);
 * task-2 answers at once. Plus one file a host wrote on the output volume.
 */
const populated = (stateDir: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const harness = yield* LocalHarness.open({ stateDir, namespace: "project-a", agent })
      let calls = 0
      const script: ScriptedModel.Script = (request) => {
        if (isSummaryRequest(request)) return Model.response({ text: "Report A was offloaded; report B is all 'b'." })
        calls++
        return calls === 1
          ? Model.response({ toolCalls: [produceCall("c1", 20_000, "a")] })
          : calls === 2
            ? Model.response({ toolCalls: [produceCall("c2", 12_000, "b")] })
            : Model.response({ text: "Both reports are uniform." })
      }
      yield* harness
        .withTask(
          task1,
          (binding) =>
            TaskExecution.runTurn(binding, start, {
              tools,
              maxSteps: 8,
              offload: { threshold: 15_000, readTool: "read_artifact", destination: "Private" }
            }),
          {
            policy: Compaction.threshold({ measure: "bytes", limit: 10_000, keepRecent: 0, pieceLimit: 100_000 })
          }
        )
        .pipe(Effect.provide(ScriptedModel.layer(script)))
      yield* harness
        .withTask(task2, (binding) => TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 }))
        .pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: "Nothing to do." })])))
      const output = yield* harness.host.store.folderOf(harness.volumes.output)
      fs.writeFileSync(path.join(output, "report.md"), "# Report\n")
      return {
        folder: harness.folder,
        scratch: VolumeStore.dataFolder(yield* Path.Path, harness.host.store.root, harness.volumes.scratch.volume),
        journal: harness.journalFolder
      }
    })
  )

/** Every file below `root` with its bytes, to prove inspection changed nothing. */
const snapshot = (root: string): ReadonlyArray<string> =>
  (fs.readdirSync(root, { recursive: true, encoding: "utf8" }) as Array<string>).sort().map((name) => {
    const full = path.join(root, name)
    const stat = fs.lstatSync(full)
    return stat.isDirectory() ? `${name}/` : `${name} ${fs.readFileSync(full).toString("base64")}`
  })

const runBin = (...args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, [bin, ...args], { encoding: "utf8", timeout: 60_000 })

describe("Inspector on a folder written by real turns", () => {
  it.live(
    "renders the store, volumes with kinds and owners, every journal entry on one line, summaries and artifacts with sizes, and writes nothing",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal, scratch } = yield* populated(stateDir)
        const before = snapshot(folder)
        const report = yield* Inspector.inspect(folder)
        const text = Inspector.render(report)
        assert.deepStrictEqual(snapshot(folder), before, "inspection changed nothing")

        assert.include(text, `store project-a at ${folder}`)
        assert.match(text, /journal\s+Journal\s+owned by the host/)
        assert.match(text, /output\s+Output\s+owned by the host/)
        assert.match(text, /researcher-scratch\s+AgentPrivate\s+owned by agent researcher/)

        assert.deepStrictEqual(
          report.journals.map((one) => one.task),
          [task1, task2]
        )
        const first = report.journals[0] as Inspector.JournalReport
        assert.strictEqual(first.file, path.join(journal, "task-1.jsonl"))
        const entryLines = text.split("\n").filter((line) => /^ {2}# *\d+ {2}\d{4}-/.test(line))
        assert.strictEqual(
          entryLines.length,
          report.journals.reduce((sum, one) => sum + one.entries.length, 0)
        )
        for (const tag of [
          "TurnOpened",
          "RequestDispatched",
          "ToolResulted",
          "ArtifactOffloaded",
          "SummaryStaged",
          "TurnClosed"
        ]) {
          assert.isTrue(
            entryLines.some((line) => line.includes(tag)),
            `a ${tag} line is shown`
          )
        }

        const staged = first.entries.find(
          (entry): entry is JournalEntry.Entry & { _tag: "SummaryStaged" } => entry._tag === "SummaryStaged"
        )
        assert.isDefined(staged)
        if (staged === undefined) return
        const summarySize = fs.statSync(path.join(scratch, staged.path)).size
        assert.deepStrictEqual(
          report.summaries.map((file) => [file.volume, file.path, file.size]),
          [["researcher-scratch", staged.path, summarySize]]
        )
        assert.include(text, `researcher-scratch:${staged.path}  ${summarySize} B`)
        assert.include(text, "researcher-scratch:artifacts/tool-results/task-1-t1-s1-c1.txt  19.5 KiB (20000 B)")
        assert.include(text, "output:report.md  9 B")
        assert.notInclude(text, "Report A was offloaded", "summary text is private and never printed")
        assert.notInclude(text, "task-1.jsonl  ", "journals are not listed as artifacts")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "with a task, shows only that task's journal and the summaries and artifacts its journal records; an unknown task is TaskNotFound",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder } = yield* populated(stateDir)
        const one = yield* Inspector.inspect(folder, { task: task1 })
        assert.deepStrictEqual(
          one.journals.map((journal) => journal.task),
          [task1]
        )
        assert.strictEqual(one.summaries.length, 1)
        assert.deepStrictEqual(
          one.artifacts.map((file) => file.path),
          ["artifacts/tool-results/task-1-t1-s1-c1.txt"]
        )
        assert.include(Inspector.render(one), "(task task-1 only)")

        const two = yield* Inspector.inspect(folder, { task: task2 })
        assert.deepStrictEqual(
          two.journals.map((journal) => journal.task),
          [task2]
        )
        assert.deepStrictEqual([two.summaries.length, two.artifacts.length], [0, 0])

        const missing = yield* Effect.flip(Inspector.inspect(folder, { task: taskId("task-9") }))
        assert.strictEqual(missing._tag, "TaskNotFound")
        assert.include(missing.message, "task-9")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "the CLI prints the report and exits 0; a bad folder prints one error naming the file and exits non-zero",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal } = yield* populated(stateDir)
        const good = runBin(folder, "--task", "task-1")
        assert.strictEqual(good.status, 0, good.stderr)
        assert.include(good.stdout, "journal of task task-1")
        assert.notInclude(good.stdout, "journal of task task-2")
        assert.include(good.stdout, "researcher-scratch:summaries/")

        const file = path.join(journal, "task-2.jsonl")
        const badLine = fs.readFileSync(file, "utf8").split("\n").length
        fs.appendFileSync(file, "{not an entry}\n")
        const bad = runBin(folder)
        assert.notStrictEqual(bad.status, 0)
        assert.include(bad.stderr, file)
        assert.include(bad.stderr, `line ${badLine}`)
        assert.strictEqual(bad.stdout, "")
      }).pipe(Effect.provide(nodeLayer))
  )
})

describe("Inspector on bad or partial folders", () => {
  it.live(
    "a missing folder, a file, an empty folder and a store without meta/volumes each fail NotAStoreFolder naming the path, and nothing is created",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const missing = path.join(dir, "missing")
        const file = path.join(dir, "file.txt")
        fs.writeFileSync(file, "x")
        const empty = path.join(dir, "empty")
        fs.mkdirSync(empty)
        const partial = path.join(dir, "partial")
        fs.mkdirSync(path.join(partial, "volumes"), { recursive: true })
        fs.writeFileSync(path.join(partial, "store.json"), '{"format":1,"store":"partial"}\n')
        const cases = [
          { folder: missing, names: missing, says: "no such folder" },
          { folder: file, names: file, says: "not a folder" },
          { folder: empty, names: path.join(empty, "store.json"), says: "not a Tessera store" },
          { folder: partial, names: path.join(partial, "meta", "volumes"), says: "incomplete" }
        ]
        const before = snapshot(dir)
        for (const { folder, names, says } of cases) {
          const error = yield* Effect.flip(Inspector.inspect(folder))
          assert.strictEqual(error._tag, "NotAStoreFolder", folder)
          assert.include(error.message, names)
          assert.include(error.message, says)
        }
        assert.deepStrictEqual(snapshot(dir), before)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "a corrupt store.json, corrupt volume metadata and a corrupt journal line each fail with the runtime's typed error naming the file",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal } = yield* populated(stateDir)
        const manifest = path.join(folder, "store.json")
        const meta = path.join(folder, "meta", "volumes", "output.json")
        const journalFile = path.join(journal, "task-1.jsonl")
        const keep = [manifest, meta, journalFile].map((file) => [file, fs.readFileSync(file, "utf8")] as const)
        const restore = () => {
          for (const [file, text] of keep) fs.writeFileSync(file, text)
        }

        fs.writeFileSync(manifest, '{"format":1,"store":"../bad"}')
        const badManifest = yield* Effect.flip(Inspector.inspect(folder))
        assert.strictEqual(badManifest._tag, "StoreManifestInvalid")
        assert.include(badManifest.message, manifest)
        restore()

        fs.writeFileSync(meta, '{"id":"output","kind":"Attic","owner":{"_tag":"Host"}}')
        const badMeta = yield* Effect.flip(Inspector.inspect(folder))
        assert.strictEqual(badMeta._tag, "VolumeMetadataInvalid")
        assert.include(badMeta.message, meta)
        restore()

        const lines = fs.readFileSync(journalFile, "utf8").split("\n")
        lines[2] = '{"_tag":"TurnOpened"}'
        fs.writeFileSync(journalFile, lines.join("\n"))
        const badJournal = yield* Effect.flip(Inspector.inspect(folder))
        assert.strictEqual(badJournal._tag, "JournalCorrupt")
        assert.include(badJournal.message, journalFile)
        assert.include(badJournal.message, "line 3")
        assert.strictEqual(fs.readFileSync(journalFile, "utf8"), lines.join("\n"), "the journal is left as it was")
      }).pipe(Effect.provide(nodeLayer))
  )
})

describe("formatEntry", () => {
  it("puts seq, ISO time, tag and the entry's key fields on one line", () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5)
    const line = (entry: JournalEntry.Entry) => Inspector.formatEntry(entry)
    const requestLine = line({
      _tag: "RequestDispatched",
      seq: 3,
      at,
      turn: 1,
      step: 2,
      parts: 4,
      size: 1234,
      sha256: "ab".repeat(32)
    })
    assert.strictEqual(
      requestLine,
      "#  3  2026-01-02T03:04:05.000Z  RequestDispatched   turn=1 step=2 parts=4 size=1234 sha256=abababababab"
    )
    const summaryLine = line({
      _tag: "SummaryStaged",
      seq: 12,
      at,
      turn: 1,
      step: 3,
      operation: "task-1-t1",
      volume: { store: "s", volume: "v" } as never,
      path: "summaries/task-1-t1/3.txt",
      size: 70,
      sha256: "cd".repeat(32)
    })
    assert.include(summaryLine, "SummaryStaged")
    assert.include(summaryLine, "operation=task-1-t1 file=s/v:summaries/task-1-t1/3.txt size=70")
    assert.notInclude(summaryLine, "\n")
    assert.include(
      line({
        _tag: "ResponseReceived",
        seq: 0,
        at,
        turn: 1,
        step: 1,
        textSize: 5,
        textSha256: "e".repeat(64),
        toolCalls: [{ callId: "c1", name: "produce" }]
      }),
      "calls=[c1:produce]"
    )
  })

  it("formatSize keeps exact bytes next to the human unit", () => {
    assert.strictEqual(Inspector.formatSize(9), "9 B")
    assert.strictEqual(Inspector.formatSize(20_000), "19.5 KiB (20000 B)")
    assert.strictEqual(Inspector.formatSize(3 * 1024 * 1024), "3.0 MiB (3145728 B)")
  })
})
