/**
 * The transcript store and the rebuild, record by record: what a record
 * holds on disk (scrubbed with a redactor, verbatim without one), how a
 * summary is stored (a reference to its staged file, or inline) and read
 * back, how a rewrite is recorded, and what `rebuild` and `verify` make of
 * each journal entry, with every refusal's exact text (a resume reports it
 * to the host). Each guarantee has a control: the same record with the
 * check's condition broken (a store without a redactor keeps the secret; a
 * record edited after it was named fails the name check; an entry whose
 * digest is off by one field is refused where the untouched one passes).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactRedactor, DefaultRedactor } from "@tessera/artifacts"
import { DurableFiles, type Volume } from "@tessera/core"
import { LocalHarness } from "@tessera/node"
import {
  Compaction,
  History,
  type JournalEntry,
  Model,
  PrivateSummaries,
  Transcript,
  VolumeStore
} from "@tessera/runtime"
import { Effect, Layer, Option } from "effect"
import * as Compacting from "../../../runtime/src/internal/compacting.js"
// The measures are internal (the package blocks `./internal/*`); the test reaches them by path, as the journal does.
import { legacyRequestSha256, measureJson, measureRequest, measureText } from "../../../runtime/src/internal/digest.js"
import { agentId, nodeLayer, taskId, tempDir } from "../support/temp.ts"

const agent = agentId("scribe")
const task = taskId("transcript-task")
const namespace = "transcripts"
/** A key the default redactor's AWS rule replaces. */
const secret = "AKIAZ7Q2MXK4PLR9TBWD"

type SummaryRef = Extract<Transcript.StoredSummary, { readonly _tag: "SummaryRef" }>

type Host = Layer.Layer<never> | Layer.Layer<ArtifactRedactor.ArtifactRedactor>
const plain: Host = Layer.empty
const scrubbing: Host = Layer.orDie(DefaultRedactor.layer())

interface Fixture {
  readonly store: Transcript.TranscriptStore
  /** The data folder of the transcript's volume. */
  readonly folder: string
  readonly volume: Volume.VolumeRef
  readonly fileOf: (sha256: string) => string
  /** Another store of the same task and volume, as a later turn makes one. */
  readonly makeAnother: Effect.Effect<Transcript.TranscriptStore, unknown, never>
}

/** Runs `body` with a transcript store on a fresh harness's private volume, under `host`'s redactor (or none). */
const withStore = <A, E, R>(host: Host, body: (fixture: Fixture) => Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const harness = yield* LocalHarness.open({ stateDir, namespace, agent })
      return yield* harness.withTask(
        task,
        (binding) =>
          Effect.gen(function* () {
            const capability = yield* PrivateSummaries.resolve(binding.context)
            const store = yield* Transcript.make().pipe(PrivateSummaries.provide(capability))
            return yield* body({
              store,
              folder: capability.folder,
              volume: capability.volume,
              fileOf: (sha256) => path.join(capability.folder, VolumeStore.transcriptPath(task, sha256)),
              makeAnother: Transcript.make().pipe(PrivateSummaries.provide(capability)) as Effect.Effect<
                Transcript.TranscriptStore,
                unknown,
                never
              >
            })
          }),
        { policy: Compaction.disabled }
      )
    })
  ).pipe(Effect.provide(Layer.merge(nodeLayer, host)))

const sha256Hex = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex")

const opened = (history: Transcript.StoredHistory, redacted = false): Transcript.TranscriptRecord => ({
  _tag: "Opened",
  history,
  redacted
})

describe("records on disk", () => {
  it.live("record_named_by_digest: a record is stored under the SHA-256 of its bytes and reads back as written", () =>
    withStore(plain, ({ fileOf, store }) =>
      Effect.gen(function* () {
        const record = opened({ task: [Model.text("user", `hello ${secret}`)], parts: [] })
        const sha = yield* store.write(record)
        const bytes = fs.readFileSync(fileOf(sha))
        assert.strictEqual(sha256Hex(bytes), sha)
        assert.deepStrictEqual(JSON.parse(bytes.toString("utf8")), record)
        assert.deepStrictEqual(yield* store.read(sha), record)
        // Without a redactor the secret is kept verbatim: the control of the scrubbing tests below.
        assert.include(bytes.toString("utf8"), secret)
        // Written again: the same name, and the one file stays.
        assert.strictEqual(yield* store.write(record), sha)
        assert.deepStrictEqual(yield* store.writeBody(record), { transcript: sha })
        // No temporary file is left beside it.
        assert.deepStrictEqual(fs.readdirSync(path.dirname(fileOf(sha))), [`${sha}.json`])
        assert.strictEqual(store.task, task)
      })
    )
  )

  it.live(
    "record_checked_against_name: edited bytes, bytes that are not UTF-8, and a file that is no record are refused with what is wrong",
    () =>
      withStore(plain, ({ fileOf, store }) =>
        Effect.gen(function* () {
          const sha = yield* store.write(opened({ task: [Model.text("user", "start")], parts: [] }))
          const file = fileOf(sha)
          fs.chmodSync(file, 0o644)
          fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("start", "START"))
          const edited = yield* Effect.flip(store.read(sha))
          const actual = sha256Hex(fs.readFileSync(file))
          assert.strictEqual(
            edited.message,
            `transcript read ${file} failed: its bytes have digest ${actual}, not the ${sha} it is named by`
          )
          const planted = (bytes: Uint8Array) => {
            const digest = sha256Hex(bytes)
            fs.writeFileSync(fileOf(digest), bytes)
            return digest
          }
          const binary = planted(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))
          const notUtf8 = yield* Effect.flip(store.read(binary))
          assert.strictEqual(notUtf8.message, `transcript read ${fileOf(binary)} failed: not UTF-8`)
          const other = planted(new TextEncoder().encode(JSON.stringify({ _tag: "Unknown" })))
          const notRecord = yield* Effect.flip(store.read(other))
          assert.strictEqual(notRecord.operation, "decode")
          assert.strictEqual(notRecord.path, fileOf(other))
          const absent = yield* Effect.flip(store.read("0".repeat(64)))
          assert.strictEqual(absent.operation, "read")
          assert.strictEqual(absent.path, fileOf("0".repeat(64)))
          assert.isTrue(absent.message.startsWith(`transcript read ${fileOf("0".repeat(64))} failed: `))
        })
      )
  )
})

describe("redaction before a record touches disk", () => {
  const reference = (volume: Volume.VolumeRef) =>
    Model.fileReference({ role: "user", volume, path: "notes.txt", mediaType: "text/plain" })

  it.live(
    "scrubbed_everywhere: every text of a history record is scrubbed, other values kept, and the record marked redacted",
    () =>
      withStore(scrubbing, ({ fileOf, store, volume }) =>
        Effect.gen(function* () {
          const input = { list: [secret, 7, null, true, { deep: `k=${secret}` }], flag: false, count: 3 }
          const history: Transcript.StoredHistory = {
            task: [Model.text("user", `use ${secret}`), reference(volume)],
            parts: [
              Model.toolCall("c1", "fetch", input),
              Model.toolResult({ callId: "c1", name: "fetch", content: `got ${secret}`, isError: false }),
              Model.text("assistant", "clean text")
            ],
            summary: { _tag: "SummaryInline", parts: [Model.text("user", `sum ${secret}`)], text: `sum ${secret}` }
          }
          const written = yield* store.writeBody(opened(history))
          const onDisk = fs.readFileSync(fileOf(written.transcript), "utf8")
          assert.notInclude(onDisk, secret)
          // A changed history record is vouched for by its own digest.
          assert.deepStrictEqual(written, { transcript: written.transcript, storedSha256: written.transcript })
          const back = yield* store.read(written.transcript)
          assert.strictEqual(back._tag, "Opened")
          if (back._tag !== "Opened") return
          assert.isTrue(back.redacted)
          const [taskText, taskRef] = back.history.task
          assert.strictEqual(taskText?._tag === "Text" && taskText.text.startsWith("use [REDACTED:"), true)
          assert.deepStrictEqual(taskRef, reference(volume))
          const [call, result, clean] = back.history.parts
          assert.deepStrictEqual(clean, Model.text("assistant", "clean text"))
          assert.strictEqual(call?._tag, "ToolCall")
          const scrubbedInput = (call as Model.ToolCallPart).input as typeof input
          assert.deepStrictEqual(Object.keys(scrubbedInput), ["list", "flag", "count"])
          assert.deepStrictEqual(scrubbedInput.list.slice(1, 4), [7, null, true])
          assert.match(scrubbedInput.list[0] as string, /^\[REDACTED:/)
          assert.match((scrubbedInput.list[4] as { deep: string }).deep, /^k=\[REDACTED:/)
          assert.strictEqual(scrubbedInput.flag, false)
          assert.strictEqual(scrubbedInput.count, 3)
          assert.strictEqual((call as Model.ToolCallPart).id, "c1")
          assert.strictEqual(result?._tag === "ToolResult" && result.content.startsWith("got [REDACTED:"), true)
          assert.strictEqual(result?._tag === "ToolResult" && result.callId === "c1" && result.name === "fetch", true)
          const summary = back.history.summary
          assert.strictEqual(summary?._tag, "SummaryInline")
          if (summary?._tag === "SummaryInline") {
            assert.match(summary.text, /^sum \[REDACTED:/)
            assert.match((summary.parts[0] as Model.TextPart).text, /^sum \[REDACTED:/)
          }
          // Replaced is scrubbed the same way; a history without a summary keeps none.
          const replaced = yield* store.writeBody({
            _tag: "Replaced",
            history: { task: [Model.text("user", secret)], parts: [] },
            redacted: false
          })
          const replacedBack = yield* store.read(replaced.transcript)
          assert.strictEqual(replacedBack._tag, "Replaced")
          if (replacedBack._tag === "Replaced") {
            assert.isTrue(replacedBack.redacted)
            assert.deepStrictEqual(Object.keys(replacedBack.history), ["task", "parts"])
            assert.match((replacedBack.history.task[0] as Model.TextPart).text, /^\[REDACTED:/)
            assert.deepStrictEqual(replacedBack.history.parts, [])
          }
          assert.notInclude(JSON.stringify(replacedBack), secret)
          assert.notProperty((replacedBack as { history: object }).history, "summary")
        })
      )
  )

  it.live(
    "scrubbed_bodies: a response and a result are scrubbed, and their stored body's digest is what a reader measures",
    () =>
      withStore(scrubbing, ({ store }) =>
        Effect.gen(function* () {
          const response: Transcript.TranscriptRecord = {
            _tag: "Responded",
            text: `the key is ${secret}`,
            toolCalls: [Model.toolCall("c1", "fetch", { key: secret, n: 1 })],
            redacted: false
          }
          const written = yield* store.writeBody(response)
          const back = (yield* store.read(written.transcript)) as Transcript.RespondedRecord
          assert.isTrue(back.redacted)
          assert.notInclude(JSON.stringify(back), secret)
          assert.strictEqual(back.toolCalls[0]?.id, "c1")
          assert.strictEqual(back.toolCalls[0]?.name, "fetch")
          assert.strictEqual((back.toolCalls[0]?.input as { n: number } | undefined)?.n, 1)
          assert.strictEqual(written.storedSha256, yield* Transcript.storedBodySha256(back))
          assert.strictEqual(
            written.storedSha256,
            (yield* measureJson({ text: back.text, toolCalls: back.toolCalls })).sha256
          )
          assert.notStrictEqual(written.storedSha256, written.transcript)
          const result: Transcript.TranscriptRecord = {
            _tag: "Resulted",
            result: Model.toolResult({ callId: "c1", name: "fetch", content: `row ${secret}`, isError: true }),
            redacted: false
          }
          const resultWritten = yield* store.writeBody(result)
          const resultBack = (yield* store.read(resultWritten.transcript)) as Transcript.ResultedRecord
          assert.isTrue(resultBack.redacted)
          assert.isTrue(resultBack.result.isError)
          assert.match(resultBack.result.content, /^row \[REDACTED:/)
          assert.strictEqual(resultWritten.storedSha256, (yield* measureText(resultBack.result.content)).sha256)
        })
      )
  )

  it.live(
    "unchanged_stays_unmarked: a record the redactor leaves alone is stored as given, unmarked unless it was marked",
    () =>
      withStore(scrubbing, ({ fileOf, store }) =>
        Effect.gen(function* () {
          const records: ReadonlyArray<Transcript.TranscriptRecord> = [
            opened({ task: [Model.text("user", "nothing secret")], parts: [] }),
            { _tag: "Rewritten", drop: 2, redacted: false },
            {
              _tag: "Rewritten",
              drop: 1,
              summary: { _tag: "SummaryInline", parts: [Model.text("user", "s")], text: "s" },
              redacted: false
            },
            { _tag: "Responded", text: "plain", toolCalls: [Model.toolCall("c", "t", { a: "b" })], redacted: false },
            {
              _tag: "Resulted",
              result: Model.toolResult({ callId: "c", name: "t", content: "ok", isError: false }),
              redacted: false
            }
          ]
          for (const record of records) {
            const written = yield* store.writeBody(record)
            assert.deepStrictEqual(written, { transcript: written.transcript }, record._tag)
            assert.deepStrictEqual(yield* store.read(written.transcript), record)
            assert.strictEqual(sha256Hex(fs.readFileSync(fileOf(written.transcript))), written.transcript)
          }
          // A record marked by its writer stays marked.
          const marked = yield* store.write(opened({ task: [Model.text("user", "plain")], parts: [] }, true))
          assert.isTrue((yield* store.read(marked)).redacted)
          // A summary reference is a pointer, not text: it is stored as it is.
          const ref: Transcript.StoredSummary = {
            _tag: "SummaryRef",
            volume: { store: "s", volume: "v" } as Volume.VolumeRef,
            path: `summaries/${secret}.md`,
            size: 1,
            sha256: "a".repeat(64)
          }
          const rewritten = yield* store.writeBody({ _tag: "Rewritten", drop: 0, summary: ref, redacted: false })
          assert.deepStrictEqual(rewritten, { transcript: rewritten.transcript })
          const inline = yield* store.writeBody({
            _tag: "Rewritten",
            drop: 0,
            summary: { _tag: "SummaryInline", parts: [], text: secret },
            redacted: false
          })
          assert.strictEqual(inline.storedSha256, inline.transcript)
          const inlineBack = yield* store.read(inline.transcript)
          assert.deepStrictEqual((inlineBack as { summary?: Transcript.StoredSummary }).summary?._tag, "SummaryInline")
          assert.notInclude(JSON.stringify(inlineBack), secret)
          assert.strictEqual((inlineBack as { drop: number }).drop, 0)
        })
      )
  )
})

describe("summaries: a staged summary by reference, any other inline", () => {
  it.live(
    "summary_reference: a summary in the staged form on the transcript's volume is stored as a reference and read back from its file",
    () =>
      withStore(plain, ({ folder, store, volume }) =>
        Effect.gen(function* () {
          const text = "the summary ✓"
          const file = { volume, path: "summaries/one.md" }
          fs.mkdirSync(path.join(folder, "summaries"), { recursive: true })
          fs.writeFileSync(path.join(folder, file.path), text)
          const staged: History.HistorySummary = { parts: Compacting.summaryParts(file, text), text }
          const stored = yield* store.storeSummary(staged)
          assert.deepStrictEqual(stored, {
            _tag: "SummaryRef",
            volume,
            path: file.path,
            size: new TextEncoder().encode(text).byteLength,
            sha256: sha256Hex(text)
          })
          // Read back, the summary carries the digest of the file it was verified against.
          const verified: History.HistorySummary = {
            ...staged,
            file: { volume, path: file.path, size: new TextEncoder().encode(text).byteLength, sha256: sha256Hex(text) }
          }
          assert.deepStrictEqual(yield* store.restoreSummary(stored), verified)
          // A history holds it the same way, and one without a summary holds none.
          const history: History.History = { task: [Model.text("user", "t")], parts: [], summary: staged }
          const storedHistory = yield* store.store(history)
          assert.deepStrictEqual(storedHistory, { task: history.task, parts: [], summary: stored })
          assert.deepStrictEqual(yield* store.restore(storedHistory), { ...history, summary: verified })
          const bare = yield* store.store({ task: history.task, parts: history.parts })
          assert.deepStrictEqual(bare, { task: history.task, parts: [] })
          assert.notProperty(bare, "summary")
          const restoredBare = yield* store.restore(bare)
          assert.notProperty(restoredBare, "summary")
          // The staged file changed: refused, naming both digests.
          fs.writeFileSync(path.join(folder, file.path), "another summary")
          const changed = yield* Effect.flip(store.restoreSummary(stored))
          assert.strictEqual(
            changed.message,
            `transcript read summary ${path.join(folder, file.path)} failed: the staged summary has digest ${sha256Hex("another summary")}, not the ${sha256Hex(text)} the transcript recorded`
          )
          const viaHistory = yield* Effect.flip(store.restore(storedHistory))
          assert.strictEqual(viaHistory.operation, "read summary")
          // A reference that leaves the volume is refused before any file is read.
          const escaping = yield* Effect.flip(
            store.restoreSummary({ ...(stored as SummaryRef), path: "../outside.md" })
          )
          assert.strictEqual(
            escaping.message,
            `transcript read summary ${path.join(folder, "../outside.md")} failed: outside the private volume`
          )
          const missing = yield* Effect.flip(
            store.restoreSummary({ ...(stored as SummaryRef), path: "summaries/none.md" })
          )
          assert.strictEqual(missing.operation, "read summary")
        })
      )
  )

  it.live(
    "summary_inline: a summary not in the staged form, or on another volume, is stored with its parts and text",
    () =>
      withStore(plain, ({ store, volume }) =>
        Effect.gen(function* () {
          const text = "sum"
          const file = { volume, path: "summaries/one.md" }
          const elsewhere = { volume: { ...volume, volume: "other" } as Volume.VolumeRef, path: file.path }
          const otherStore = { volume: { ...volume, store: "other" } as Volume.VolumeRef, path: file.path }
          const cases: ReadonlyArray<History.HistorySummary> = [
            { parts: [], text },
            { parts: [Model.text("user", text)], text },
            { parts: Compacting.summaryParts(elsewhere, text), text },
            { parts: Compacting.summaryParts(otherStore, text), text },
            { parts: Compacting.summaryParts(file, "another text"), text },
            { parts: [...Compacting.summaryParts(file, text), Model.text("user", "more")], text },
            { parts: Compacting.summaryParts(file, text).slice(0, 1), text }
          ]
          for (const summary of cases) {
            const stored = yield* store.storeSummary(summary)
            assert.deepStrictEqual(
              stored,
              { _tag: "SummaryInline", parts: summary.parts, text },
              JSON.stringify(summary)
            )
            assert.deepStrictEqual(yield* store.restoreSummary(stored), summary)
          }
        })
      )
  )
})

describe("rewrite records", () => {
  it.live(
    "rewrite_record_shapes: leading parts dropped is a Rewritten with the count, a new summary added to it; any other change is Replaced whole",
    () =>
      withStore(plain, ({ store }) =>
        Effect.gen(function* () {
          const taskParts = [Model.text("user", "task")]
          const [a, b, c] = [Model.text("user", "a"), Model.text("assistant", "b"), Model.text("user", "c")]
          const summary: History.HistorySummary = { parts: [Model.text("user", "s")], text: "s" }
          const before: History.History = { task: taskParts, parts: [a, b, c] }
          const withSummary: History.History = { ...before, summary }
          const record = (from: History.History, to: History.History) => Transcript.rewriteRecord(store, from, to)
          assert.deepStrictEqual(yield* record(before, { task: taskParts, parts: [c] }), {
            _tag: "Rewritten",
            drop: 2,
            redacted: false
          })
          assert.deepStrictEqual(yield* record(before, before), { _tag: "Rewritten", drop: 0, redacted: false })
          assert.deepStrictEqual(yield* record(withSummary, { task: taskParts, parts: [b, c], summary }), {
            _tag: "Rewritten",
            drop: 1,
            redacted: false
          })
          assert.deepStrictEqual(yield* record(before, { task: taskParts, parts: [], summary }), {
            _tag: "Rewritten",
            drop: 3,
            summary: { _tag: "SummaryInline", parts: summary.parts, text: "s" },
            redacted: false
          })
          const replaced = (to: History.History, history: Transcript.StoredHistory) =>
            Effect.map(record(before, to), (got) =>
              assert.deepStrictEqual(got, { _tag: "Replaced", history, redacted: false }, JSON.stringify(to))
            )
          // Another task, a changed part, parts added, parts out of order.
          yield* replaced(
            { task: [Model.text("user", "task")], parts: [c] },
            { task: [Model.text("user", "task")], parts: [c] }
          )
          yield* replaced(
            { task: taskParts, parts: [b, Model.text("user", "c")] },
            { task: taskParts, parts: [b, Model.text("user", "c")] }
          )
          yield* replaced({ task: taskParts, parts: [a, b, c, a] }, { task: taskParts, parts: [a, b, c, a] })
          yield* replaced({ task: taskParts, parts: [b, a] }, { task: taskParts, parts: [b, a] })
          // A summary removed cannot be written as a drop.
          assert.deepStrictEqual(yield* record(withSummary, { task: taskParts, parts: [c] }), {
            _tag: "Replaced",
            history: { task: taskParts, parts: [c] },
            redacted: false
          })
        })
      )
  )
})

// ---------------------------------------------------------------------------------------------------------------
// rebuild and verify over journal entries written here, with the journal's own measures.

const header = { seq: 0, at: 0 }
const entry = (fields: Record<string, unknown>): JournalEntry.Entry =>
  ({ ...header, ...fields }) as unknown as JournalEntry.Entry

const turnOpened = (turn: number, transcript?: string, storedSha256?: string) =>
  entry({
    _tag: "TurnOpened",
    turn,
    task,
    ...(transcript === undefined ? {} : { transcript }),
    ...(storedSha256 === undefined ? {} : { storedSha256 })
  })
const dispatched = (turn: number, step: number, sha256: string, transcript?: string, storedSha256?: string) =>
  entry({
    _tag: "RequestDispatched",
    turn,
    step,
    parts: 0,
    size: 0,
    sha256,
    ...(transcript === undefined ? {} : { transcript }),
    ...(storedSha256 === undefined ? {} : { storedSha256 })
  })

const startHistory = History.make([Model.text("user", "Fetch both reports.")])
const calls = [Model.toolCall("c1", "fetch", { id: "c1" }), Model.toolCall("c2", "fetch", { id: "c2" })]
const results = [
  Model.toolResult({ callId: "c1", name: "fetch", content: "report one", isError: false }),
  Model.toolResult({ callId: "c2", name: "fetch", content: "report two ✓", isError: true })
]
const tools: ReadonlyArray<Model.ToolSpec> = []

/**
 * A turn as the executor journals it: opened, a request, a response with two calls (c1 ran, c2 waited for
 * approval), both results, a second request after a rewrite dropping the first part, and (when `answered`)
 * the final response. Records are written to the store; the digests are the journal's own measures.
 */
const journalTurn = (store: Transcript.TranscriptStore, options: { readonly answered: boolean }) =>
  Effect.gen(function* () {
    const openedSha = yield* store.write(opened(yield* store.store(startHistory)))
    const first = yield* measureRequest({ parts: History.toParts(startHistory), tools })
    const respondedRecord: Transcript.RespondedRecord = {
      _tag: "Responded",
      text: "fetching both",
      toolCalls: calls,
      redacted: false
    }
    const respondedSha = yield* store.write(respondedRecord)
    const text = yield* measureText("fetching both")
    const inputs = [yield* measureJson(calls[0]?.input), yield* measureJson(calls[1]?.input)]
    const afterResponse = History.append(startHistory, History.responseParts(respondedRecord))
    const resultShas: Array<string> = []
    const resultEntries: Array<JournalEntry.Entry> = []
    let afterResults = afterResponse
    for (const [index, result] of results.entries()) {
      const sha = yield* store.write({ _tag: "Resulted", result, redacted: false })
      resultShas.push(sha)
      const measured = yield* measureText(result.content)
      resultEntries.push(
        entry({
          _tag: "ToolResulted",
          turn: 1,
          step: 1,
          callId: result.callId,
          name: result.name,
          isError: result.isError,
          size: measured.size,
          sha256: measured.sha256,
          transcript: sha
        })
      )
      afterResults = History.append(afterResults, [result])
      void index
    }
    const rewrittenSha = yield* store.write({ _tag: "Rewritten", drop: 1, redacted: false })
    const rewritten: History.History = { ...afterResults, parts: afterResults.parts.slice(1) }
    const second = yield* measureRequest({ parts: History.toParts(rewritten), tools })
    const finalRecord: Transcript.RespondedRecord = { _tag: "Responded", text: "done", toolCalls: [], redacted: false }
    const finalSha = yield* store.write(finalRecord)
    const finalText = yield* measureText("done")
    const entries: Array<JournalEntry.Entry> = [
      entry({ _tag: "TaskStarted", task }),
      turnOpened(1, openedSha),
      dispatched(1, 1, first.sha256),
      entry({
        _tag: "ResponseReceived",
        turn: 1,
        step: 1,
        textSize: text.size,
        textSha256: text.sha256,
        toolCalls: calls.map((call) => ({ callId: call.id, name: call.name })),
        transcript: respondedSha
      }),
      entry({
        _tag: "ToolCalled",
        turn: 1,
        step: 1,
        callId: "c1",
        name: "fetch",
        inputSize: inputs[0]?.size,
        inputSha256: inputs[0]?.sha256
      }),
      entry({
        _tag: "ApprovalRequested",
        turn: 1,
        step: 1,
        callId: "c2",
        name: "fetch",
        inputSize: inputs[1]?.size,
        inputSha256: inputs[1]?.sha256,
        reason: "RequiresApproval"
      }),
      ...resultEntries,
      dispatched(1, 2, second.sha256, rewrittenSha),
      entry({ _tag: "ModelFailed", turn: 1, step: 2, reason: "Unavailable", detail: "down" }),
      ...(options.answered
        ? [
            entry({
              _tag: "ResponseReceived",
              turn: 1,
              step: 2,
              textSize: finalText.size,
              textSha256: finalText.sha256,
              toolCalls: [],
              transcript: finalSha
            })
          ]
        : [])
    ]
    const finalHistory = options.answered ? History.append(rewritten, History.responseParts(finalRecord)) : rewritten
    return {
      entries,
      openedSha,
      respondedSha,
      resultShas,
      rewrittenSha,
      rewritten,
      afterResponse,
      finalHistory,
      first,
      second
    }
  })

/** The entries with the first one `which` picks replaced by `change(it)`. */
const replacing = (
  entries: ReadonlyArray<JournalEntry.Entry>,
  which: (entry: JournalEntry.Entry) => boolean,
  change: (entry: Record<string, unknown>) => Record<string, unknown>
): ReadonlyArray<JournalEntry.Entry> => {
  const index = entries.findIndex(which)
  assert.isAtLeast(index, 0)
  return entries.map((one, at) => (at === index ? (change(one as unknown as Record<string, unknown>) as never) : one))
}
const isTag =
  (tag: string, step?: number, callId?: string) =>
  (one: JournalEntry.Entry): boolean =>
    one._tag === tag &&
    (step === undefined || (one as { step?: number }).step === step) &&
    (callId === undefined || (one as { callId?: string }).callId === callId)
const without = (entries: ReadonlyArray<JournalEntry.Entry>, which: (entry: JournalEntry.Entry) => boolean) =>
  entries.filter((one) => !which(one))

describe("rebuild: the turn from its entries and records", () => {
  it.live("rebuild_turn: history, requests with their digests and answers, the lost request, and verify's count", () =>
    withStore(plain, ({ store }) =>
      Effect.gen(function* () {
        const lost = yield* journalTurn(store, { answered: false })
        const rebuilt = yield* Transcript.rebuild(store, lost.entries, 1)
        assert.strictEqual(rebuilt.turn, 1)
        assert.deepStrictEqual(rebuilt.history, lost.rewritten)
        assert.isFalse(rebuilt.redacted)
        assert.deepStrictEqual(rebuilt.requests, [
          { step: 1, parts: History.toParts(startHistory), sha256: lost.first.sha256, answered: true },
          { step: 2, parts: History.toParts(lost.rewritten), sha256: lost.second.sha256, answered: false }
        ])
        // The failed request is the one to send again.
        assert.deepStrictEqual(rebuilt.lostRequest, Option.some({ step: 2, history: lost.rewritten }))
        assert.strictEqual(yield* Transcript.verify(task, rebuilt, tools), 2)

        const answered = yield* journalTurn(store, { answered: true })
        const done = yield* Transcript.rebuild(store, answered.entries, 1)
        assert.deepStrictEqual(done.history, answered.finalHistory)
        assert.isTrue(Option.isNone(done.lostRequest))
        assert.deepStrictEqual(
          done.requests.map((request) => request.answered),
          [true, true]
        )
        // Entries of another turn, and entries without a turn, change nothing.
        const noisy = [
          turnOpened(2, "f".repeat(64)),
          ...answered.entries,
          dispatched(2, 1, "e".repeat(64)),
          entry({ _tag: "ModelFailed", turn: 2, step: 1, reason: "x", detail: "y" })
        ]
        assert.deepStrictEqual(yield* Transcript.rebuild(store, noisy, 1), done)
        // A request after the response opens a new lost request with the history as it stands.
        const extra = [...answered.entries, dispatched(1, 3, "d".repeat(64))]
        const pending = yield* Transcript.rebuild(store, extra, 1)
        assert.deepStrictEqual(pending.lostRequest, Option.some({ step: 3, history: answered.finalHistory }))
        assert.strictEqual(pending.requests[2]?.answered, false)
        assert.strictEqual(pending.requests[1]?.answered, true)
      })
    )
  )

  it.live(
    "rebuild_replaced_and_summary: a Replaced record is the whole history; a rewrite with a summary restores it",
    () =>
      withStore(plain, ({ store }) =>
        Effect.gen(function* () {
          const openedSha = yield* store.write(opened(yield* store.store(startHistory)))
          const other: History.History = History.make([Model.text("user", "something else")])
          const replacedSha = yield* store.write({
            _tag: "Replaced",
            history: yield* store.store(other),
            redacted: false
          })
          const summary: History.HistorySummary = { parts: [Model.text("user", "so far")], text: "so far" }
          const summarizedSha = yield* store.write({
            _tag: "Rewritten",
            drop: 0,
            summary: yield* store.storeSummary(summary),
            redacted: false
          })
          const replaced = yield* Transcript.rebuild(
            store,
            [turnOpened(1, openedSha), dispatched(1, 1, "a".repeat(64), replacedSha)],
            1
          )
          assert.deepStrictEqual(replaced.history, other)
          assert.deepStrictEqual(replaced.requests[0]?.parts, History.toParts(other))
          const summarized = yield* Transcript.rebuild(
            store,
            [turnOpened(1, openedSha), dispatched(1, 1, "a".repeat(64), summarizedSha)],
            1
          )
          assert.deepStrictEqual(summarized.history, { task: startHistory.task, parts: [], summary })
        })
      )
  )

  it.live(
    "rebuild_missing: an entry that introduced content without a record, or content before the turn opened, is TranscriptMissing naming it",
    () =>
      withStore(plain, ({ store }) =>
        Effect.gen(function* () {
          const turn = yield* journalTurn(store, { answered: true })
          const missing = (entries: ReadonlyArray<JournalEntry.Entry>) =>
            Effect.flip(Transcript.rebuild(store, entries, 1))
          const cases: ReadonlyArray<readonly [ReadonlyArray<JournalEntry.Entry>, string]> = [
            [replacing(turn.entries, isTag("TurnOpened"), ({ transcript: _, ...rest }) => rest), "TurnOpened"],
            [
              replacing(turn.entries, isTag("ResponseReceived", 1), ({ transcript: _, ...rest }) => rest),
              "ResponseReceived"
            ],
            [
              replacing(turn.entries, isTag("ToolResulted", 1, "c2"), ({ transcript: _, ...rest }) => rest),
              "ToolResulted"
            ],
            [without(turn.entries, isTag("TurnOpened")), "TurnOpened"],
            [[], "TurnOpened"],
            [turn.entries.filter((one) => one._tag === "ResponseReceived"), "TurnOpened"],
            [turn.entries.filter((one) => one._tag === "ToolResulted"), "TurnOpened"]
          ]
          for (const [entries, named] of cases) {
            const error = yield* missing(entries)
            assert.strictEqual(error._tag, "TranscriptMissing")
            assert.strictEqual(
              error.message,
              `turn 1 of task ${task} cannot be rebuilt from disk: its ${named} entry names no transcript record (the turn was not run durably)`
            )
          }
          // A turn whose entries are all of another turn is missing too.
          const other = yield* missing(
            turn.entries.map((one) => ("turn" in one ? ({ ...one, turn: 2 } as never) : one))
          )
          assert.strictEqual((other as Transcript.TranscriptMissing).entry, "TurnOpened")
        })
      )
  )

  it.live(
    "rebuild_wrong_kind: a record of another kind where the journal needs one is refused, saying both kinds",
    () =>
      withStore(plain, ({ store }) =>
        Effect.gen(function* () {
          const turn = yield* journalTurn(store, { answered: true })
          const kinds: ReadonlyArray<readonly [ReadonlyArray<JournalEntry.Entry>, string, string]> = [
            [
              replacing(turn.entries, isTag("TurnOpened"), (one) => ({ ...one, transcript: turn.respondedSha })),
              turn.respondedSha,
              "the journal names a Responded record where a Opened record belongs"
            ],
            [
              replacing(turn.entries, isTag("ResponseReceived", 1), (one) => ({ ...one, transcript: turn.openedSha })),
              turn.openedSha,
              "the journal names a Opened record where a Responded record belongs"
            ],
            [
              replacing(turn.entries, isTag("ToolResulted", 1, "c1"), (one) => ({
                ...one,
                transcript: turn.respondedSha
              })),
              turn.respondedSha,
              "the journal names a Responded record where a Resulted record belongs"
            ],
            [
              replacing(turn.entries, isTag("RequestDispatched", 2), (one) => ({
                ...one,
                transcript: turn.respondedSha
              })),
              turn.respondedSha,
              "the journal names a Responded record where a rewrite belongs"
            ],
            [
              replacing(turn.entries, isTag("RequestDispatched", 2), (one) => ({ ...one, transcript: turn.openedSha })),
              turn.openedSha,
              "the journal names a Opened record where a rewrite belongs"
            ]
          ]
          for (const [entries, at, detail] of kinds) {
            const error = yield* Effect.flip(Transcript.rebuild(store, entries, 1))
            assert.strictEqual(error._tag, "TranscriptError")
            assert.strictEqual(error.message, `transcript rebuild ${at} failed: ${detail}`)
          }
        })
      )
  )

  it.live(
    "rebuild_record_mismatch: each field of a response or result record the journal disagrees with is named, with both values",
    () =>
      withStore(plain, ({ store }) =>
        Effect.gen(function* () {
          const turn = yield* journalTurn(store, { answered: true })
          const c1 = isTag("ToolResulted", 1, "c1")
          const response = isTag("ResponseReceived", 1)
          const refuse = (entries: ReadonlyArray<JournalEntry.Entry>) =>
            Effect.flip(Transcript.rebuild(store, entries, 1)) as Effect.Effect<Transcript.TranscriptRecordMismatch>
          const resultCases: ReadonlyArray<readonly [Record<string, unknown>, string, string, string]> = [
            [{ callId: "c9" }, "call id", "c9", "c1"],
            [{ name: "other" }, "tool name", "other", "fetch"],
            [{ isError: true }, "error flag", "true", "false"],
            [{ sha256: "b".repeat(64) }, "content digest", "b".repeat(64), sha256Hex("report one")],
            [{ size: 99 }, "content size", "99", "10"],
            [{ storedSha256: "c".repeat(64) }, "stored content digest", "c".repeat(64), sha256Hex("report one")]
          ]
          for (const [change, field, journal, stored] of resultCases) {
            const error = yield* refuse(replacing(turn.entries, c1, (one) => ({ ...one, ...change })))
            assert.strictEqual(error._tag, "TranscriptRecordMismatch", field)
            assert.deepStrictEqual(
              {
                field: error.field,
                journal: error.journal,
                stored: error.stored,
                kind: error.kind,
                entry: error.entry,
                step: error.step,
                turn: error.turn,
                record: error.record,
                callId: error.callId
              },
              {
                field,
                journal,
                stored,
                kind: "Resulted",
                entry: "ToolResulted",
                step: 1,
                turn: 1,
                record: turn.resultShas[0],
                callId: change.callId === undefined ? "c1" : "c9"
              },
              field
            )
          }
          const one = yield* refuse(replacing(turn.entries, c1, (entry) => ({ ...entry, size: 99 })))
          assert.strictEqual(
            one.message,
            `turn 1 of task ${task}: the Resulted record ${turn.resultShas[0]} named by the ToolResulted entry of step 1, call "c1" does not hold what the journal recorded: its content size is 10, the journal recorded 99 (a changed record)`
          )
          // A result whose stored digest the journal vouches for passes, redacted.
          const vouched = replacing(turn.entries, c1, (entry) => ({
            ...entry,
            storedSha256: sha256Hex("report one"),
            sha256: "b".repeat(64),
            size: 0
          }))
          assert.isTrue((yield* Transcript.rebuild(store, vouched, 1)).redacted)

          const text = sha256Hex("fetching both")
          const responseCases: ReadonlyArray<readonly [Record<string, unknown>, string, string, string]> = [
            [{ toolCalls: [{ callId: "c1", name: "fetch" }] }, "tool calls", "[c1:fetch]", "[c1:fetch, c2:fetch]"],
            [
              {
                toolCalls: [
                  { callId: "c1", name: "fetch" },
                  { callId: "c3", name: "fetch" }
                ]
              },
              "tool calls",
              "[c1:fetch, c3:fetch]",
              "[c1:fetch, c2:fetch]"
            ],
            [
              {
                toolCalls: [
                  { callId: "c1", name: "fetch" },
                  { callId: "c2", name: "send" }
                ]
              },
              "tool calls",
              "[c1:fetch, c2:send]",
              "[c1:fetch, c2:fetch]"
            ],
            [
              {
                toolCalls: [
                  { callId: "c1", name: "fetch" },
                  { callId: "c2", name: "fetch" },
                  { callId: "c3", name: "fetch" }
                ]
              },
              "tool calls",
              "[c1:fetch, c2:fetch, c3:fetch]",
              "[c1:fetch, c2:fetch]"
            ],
            [{ textSha256: "d".repeat(64) }, "text digest", "d".repeat(64), text],
            [{ textSize: 1 }, "text size", "1", "13"],
            [
              { storedSha256: "e".repeat(64) },
              "stored body digest",
              "e".repeat(64),
              yield* Transcript.storedBodySha256({
                _tag: "Responded",
                text: "fetching both",
                toolCalls: calls,
                redacted: false
              })
            ]
          ]
          for (const [change, field, journal, stored] of responseCases) {
            const error = yield* refuse(replacing(turn.entries, response, (entry) => ({ ...entry, ...change })))
            assert.strictEqual(error._tag, "TranscriptRecordMismatch", field)
            assert.deepStrictEqual(
              [
                error.field,
                error.journal,
                error.stored,
                error.kind,
                error.entry,
                error.step,
                error.record,
                error.callId
              ],
              [field, journal, stored, "Responded", "ResponseReceived", 1, turn.respondedSha, undefined],
              field
            )
          }
          const textError = yield* refuse(replacing(turn.entries, response, (entry) => ({ ...entry, textSize: 1 })))
          assert.strictEqual(
            textError.message,
            `turn 1 of task ${task}: the Responded record ${turn.respondedSha} named by the ResponseReceived entry of step 1 does not hold what the journal recorded: its text size is 13, the journal recorded 1 (a changed record)`
          )
          // Inputs: each digest journaled for the call, ran or waited, of this step and turn.
          const inputOf = (id: string) => measureJson({ id })
          for (const [tag, callId] of [
            ["ToolCalled", "c1"],
            ["ApprovalRequested", "c2"]
          ] as const) {
            const error = yield* refuse(
              replacing(turn.entries, isTag(tag, 1, callId), (entry) => ({ ...entry, inputSha256: "f".repeat(64) }))
            )
            assert.deepStrictEqual(
              [error.field, error.journal, error.stored, error.callId],
              ["input digest", "f".repeat(64), (yield* inputOf(callId)).sha256, callId]
            )
            assert.include(error.message, `, call "${callId}" does not hold`)
          }
          // A second digest for the same call is checked too; the first agreeing does not excuse it.
          const twice = [
            ...turn.entries,
            entry({
              _tag: "ToolCalled",
              turn: 1,
              step: 1,
              callId: "c1",
              name: "fetch",
              inputSize: 1,
              inputSha256: "a".repeat(64)
            })
          ]
          const second = yield* refuse(twice)
          assert.strictEqual(second.journal, "a".repeat(64))
          // Nor does a later agreeing digest excuse an earlier one (the approval asked for another input than ran).
          const calledAt = turn.entries.findIndex(isTag("ToolCalled", 1, "c1"))
          const earlier = [
            ...turn.entries.slice(0, calledAt),
            entry({
              _tag: "ApprovalRequested",
              turn: 1,
              step: 1,
              callId: "c1",
              name: "fetch",
              inputSize: 1,
              inputSha256: "b".repeat(64),
              reason: "RequiresApproval"
            }),
            ...turn.entries.slice(calledAt)
          ]
          const approvedOther = yield* refuse(earlier)
          assert.deepStrictEqual([approvedOther.field, approvedOther.journal], ["input digest", "b".repeat(64)])
          // Digests journaled for another step or another turn are not this call's.
          const elsewhere = [
            ...turn.entries,
            entry({
              _tag: "ToolCalled",
              turn: 1,
              step: 2,
              callId: "c1",
              name: "fetch",
              inputSize: 1,
              inputSha256: "a".repeat(64)
            }),
            entry({
              _tag: "ToolCalled",
              turn: 2,
              step: 1,
              callId: "c1",
              name: "fetch",
              inputSize: 1,
              inputSha256: "a".repeat(64)
            }),
            entry({
              _tag: "ToolResulted",
              turn: 2,
              step: 1,
              callId: "c1",
              name: "x",
              isError: false,
              size: 0,
              sha256: "a".repeat(64)
            })
          ]
          assert.isFalse((yield* Transcript.rebuild(store, elsewhere, 1)).redacted)
          // A response whose stored body the journal vouches for passes, and marks the turn redacted.
          const body = yield* Transcript.storedBodySha256({
            _tag: "Responded",
            text: "fetching both",
            toolCalls: calls,
            redacted: false
          })
          const vouchedResponse = replacing(turn.entries, response, (entry) => ({
            ...entry,
            storedSha256: body,
            textSize: 0
          }))
          const redacted = yield* Transcript.rebuild(store, vouchedResponse, 1)
          assert.isTrue(redacted.redacted)
          assert.strictEqual(yield* Transcript.verify(task, redacted, tools), 0)
        })
      )
  )

  it.live(
    "rebuild_history_record_mark: a history record is redacted exactly when the journal says so, by its own digest",
    () =>
      withStore(plain, ({ store }) =>
        Effect.gen(function* () {
          const turn = yield* journalTurn(store, { answered: true })
          const markedOpened = yield* store.write(opened(yield* store.store(startHistory), true))
          const refuse = (entries: ReadonlyArray<JournalEntry.Entry>) =>
            Effect.flip(Transcript.rebuild(store, entries, 1)) as Effect.Effect<Transcript.TranscriptRecordMismatch>
          const unvouched = yield* refuse(
            replacing(turn.entries, isTag("TurnOpened"), (one) => ({ ...one, transcript: markedOpened }))
          )
          assert.deepStrictEqual(
            [
              unvouched.field,
              unvouched.journal,
              unvouched.stored,
              unvouched.kind,
              unvouched.entry,
              unvouched.step,
              unvouched.record
            ],
            ["redacted", "false", "true", "Opened", "TurnOpened", 0, markedOpened]
          )
          const wrongDigest = yield* refuse(
            replacing(turn.entries, isTag("TurnOpened"), (one) => ({ ...one, storedSha256: "a".repeat(64) }))
          )
          assert.deepStrictEqual(
            [wrongDigest.field, wrongDigest.journal, wrongDigest.stored],
            ["digest", "a".repeat(64), turn.openedSha]
          )
          // Vouched for by its own digest: accepted, and the turn counts as redacted.
          const vouched = yield* Transcript.rebuild(
            store,
            replacing(turn.entries, isTag("TurnOpened"), (one) => ({
              ...one,
              transcript: markedOpened,
              storedSha256: markedOpened
            })),
            1
          )
          assert.isTrue(vouched.redacted)
          // The same for a rewrite record.
          const markedRewrite = yield* store.write({ _tag: "Rewritten", drop: 1, redacted: true })
          const rewriteUnvouched = yield* refuse(
            replacing(turn.entries, isTag("RequestDispatched", 2), (one) => ({ ...one, transcript: markedRewrite }))
          )
          assert.deepStrictEqual(
            [rewriteUnvouched.field, rewriteUnvouched.kind, rewriteUnvouched.entry, rewriteUnvouched.step],
            ["redacted", "Rewritten", "RequestDispatched", 2]
          )
          const rewriteWrong = yield* refuse(
            replacing(turn.entries, isTag("RequestDispatched", 2), (one) => ({ ...one, storedSha256: "b".repeat(64) }))
          )
          assert.deepStrictEqual([rewriteWrong.field, rewriteWrong.record], ["digest", turn.rewrittenSha])
          const rewriteVouched = yield* Transcript.rebuild(
            store,
            replacing(turn.entries, isTag("RequestDispatched", 2), (one) => ({
              ...one,
              transcript: markedRewrite,
              storedSha256: markedRewrite
            })),
            1
          )
          assert.isTrue(rewriteVouched.redacted)
          // And for a whole-history replacement.
          const markedReplaced = yield* store.write({
            _tag: "Replaced",
            history: yield* store.store(History.make([Model.text("user", "edited on disk")])),
            redacted: true
          })
          const replacedUnvouched = yield* refuse(
            replacing(turn.entries, isTag("RequestDispatched", 2), (one) => ({ ...one, transcript: markedReplaced }))
          )
          assert.deepStrictEqual(
            [replacedUnvouched.field, replacedUnvouched.kind, replacedUnvouched.entry, replacedUnvouched.record],
            ["redacted", "Replaced", "RequestDispatched", markedReplaced]
          )
          const replacedWrong = yield* refuse(
            replacing(turn.entries, isTag("RequestDispatched", 2), (one) => ({
              ...one,
              transcript: markedReplaced,
              storedSha256: "c".repeat(64)
            }))
          )
          assert.deepStrictEqual([replacedWrong.field, replacedWrong.kind], ["digest", "Replaced"])
          // Control: the untouched turn is not redacted.
          assert.isFalse((yield* Transcript.rebuild(store, turn.entries, 1)).redacted)
        })
      )
  )
})

describe("verify: every request rebuilt byte for byte", () => {
  it.live(
    "verify_mismatch: a request whose digest differs fails naming the step and both digests; a legacy digest is accepted",
    () =>
      withStore(plain, ({ store }) =>
        Effect.gen(function* () {
          const turn = yield* journalTurn(store, { answered: true })
          const rebuilt = yield* Transcript.rebuild(store, turn.entries, 1)
          const wrong = "9".repeat(64)
          const broken: Transcript.RebuiltTurn = {
            ...rebuilt,
            requests: rebuilt.requests.map((request) => (request.step === 2 ? { ...request, sha256: wrong } : request))
          }
          const error = yield* Effect.flip(Transcript.verify(task, broken, tools))
          assert.deepStrictEqual(
            [error.step, error.turn, error.journalSha256, error.rebuiltSha256],
            [2, 1, wrong, turn.second.sha256]
          )
          assert.strictEqual(
            error.message,
            `turn 1 of task ${task}: the request rebuilt for step 2 has digest ${turn.second.sha256.slice(0, 12)}, but the journal recorded 999999999999 (a different transcript, different tools, or a changed record)`
          )
          // Other tools make another request.
          const spec: Model.ToolSpec = {
            name: "fetch",
            description: "d",
            inputSchema: { type: "object" }
          } as Model.ToolSpec
          const withTools = yield* Effect.flip(Transcript.verify(task, rebuilt, [spec]))
          assert.strictEqual(withTools.step, 1)
          // A journal from before bodies were measured on their own records the legacy digest.
          const legacy: Transcript.RebuiltTurn = {
            ...rebuilt,
            requests: yield* Effect.forEach(rebuilt.requests, (request) =>
              Effect.map(legacyRequestSha256({ parts: request.parts, tools }), (sha256) => ({ ...request, sha256 }))
            )
          }
          assert.notStrictEqual(legacy.requests[0]?.sha256, rebuilt.requests[0]?.sha256)
          assert.strictEqual(yield* Transcript.verify(task, legacy, tools), 2)
          // A redacted turn is not checked at all.
          assert.strictEqual(yield* Transcript.verify(task, { ...broken, redacted: true }, tools), 0)
          assert.strictEqual(yield* Transcript.verify(task, { ...rebuilt, requests: [] }, tools), 0)
        })
      )
  )
})

describe("the read-only view", () => {
  it.live("reader_reads_only: a reader over the same folder reads and restores what the store wrote", () =>
    withStore(plain, ({ folder, store, volume }) =>
      Effect.gen(function* () {
        const turn = yield* journalTurn(store, { answered: true })
        const reader = yield* Transcript.reader({ folder, task, volume })
        assert.deepStrictEqual(Object.keys(reader).sort(), ["read", "restore", "restoreSummary", "task", "volume"])
        assert.strictEqual(reader.task, task)
        assert.deepStrictEqual(reader.volume, volume)
        const fromReader = yield* Transcript.rebuild(reader, turn.entries, 1)
        assert.deepStrictEqual(fromReader, yield* Transcript.rebuild(store, turn.entries, 1))
        const restored = yield* reader.restoreSummary({ _tag: "SummaryInline", parts: [], text: "x" })
        assert.deepStrictEqual(restored, { parts: [], text: "x" })
      })
    )
  )
})

describe("failures of the store are typed and named", () => {
  it.live(
    "write_failures: a record that does not encode, a redactor that fails, and a folder that cannot be made are TranscriptErrors naming the step",
    () =>
      Effect.gen(function* () {
        for (const host of [plain, scrubbing]) {
          yield* withStore(host, ({ folder, store }) =>
            Effect.gen(function* () {
              for (const drop of [-1, 1.5]) {
                const error = yield* Effect.flip(store.write({ _tag: "Rewritten", drop, redacted: false }))
                assert.strictEqual(error._tag, "TranscriptError")
                assert.strictEqual(error.operation, "encode", `${drop}`)
                assert.strictEqual(error.path, folder)
              }
              // Control: a whole count encodes.
              assert.isString(yield* store.write({ _tag: "Rewritten", drop: 0, redacted: false }))
            })
          )
        }
        const failing: Host = Layer.succeed(ArtifactRedactor.ArtifactRedactor)({
          redact: () => Effect.fail(new ArtifactRedactor.ArtifactRedactionFailed({ detail: "rule exploded" }))
        })
        yield* withStore(failing, ({ folder, store }) =>
          Effect.gen(function* () {
            const error = yield* Effect.flip(store.write(opened({ task: [Model.text("user", "x")], parts: [] })))
            assert.strictEqual(error.operation, "redact")
            assert.strictEqual(error.path, folder)
            assert.strictEqual(
              error.detail,
              new ArtifactRedactor.ArtifactRedactionFailed({ detail: "rule exploded" }).message
            )
          })
        )
        yield* withStore(plain, ({ fileOf, folder, store }) =>
          Effect.gen(function* () {
            // The task's transcript folder is a file: nothing can be written below it.
            const taskFolder = path.dirname(fileOf("0".repeat(64)))
            fs.mkdirSync(path.dirname(taskFolder), { recursive: true })
            fs.writeFileSync(taskFolder, "not a folder")
            const record = opened({ task: [Model.text("user", "x")], parts: [] })
            const error = yield* Effect.flip(store.write(record))
            assert.strictEqual(error.operation, "write")
            const sha = sha256Hex(JSON.stringify(record))
            assert.strictEqual(error.path, fileOf(sha))
            assert.isTrue(error.message.startsWith(`transcript write ${fileOf(sha)} failed: `))
            void folder
          })
        )
      }).pipe(Effect.scoped)
  )

  it.live(
    "write_once_across_stores: a second store of the task writing a record already on disk succeeds, and the file stays",
    () =>
      withStore(plain, ({ fileOf, makeAnother, store }) =>
        Effect.gen(function* () {
          const record = opened({ task: [Model.text("user", "twice")], parts: [] })
          const sha = yield* store.write(record)
          const inode = fs.statSync(fileOf(sha)).ino
          const second = yield* makeAnother
          assert.strictEqual(yield* second.write(record), sha)
          assert.deepStrictEqual(yield* second.writeBody(record), { transcript: sha })
          assert.strictEqual(fs.statSync(fileOf(sha)).ino, inode)
          assert.deepStrictEqual(fs.readdirSync(path.dirname(fileOf(sha))), [`${sha}.json`])
          assert.deepStrictEqual(yield* second.read(sha), record)
          // Control: the old order (the loss forgiven before the exit was looked at) leaves the temporary file.
          const files = yield* DurableFiles.DurableFiles
          const folder = path.dirname(fileOf(sha))
          const temp = path.join(folder, DurableFiles.temporaryName(`${sha}.json`))
          yield* files.writeNewFile(temp, fs.readFileSync(fileOf(sha)), { within: folder, syncFolder: false })
          yield* files.publishOnce(temp, fileOf(sha)).pipe(Effect.catchTag("AlreadyExists", () => Effect.void))
          assert.deepStrictEqual(fs.readdirSync(folder).sort(), [path.basename(temp), `${sha}.json`].sort())
        })
      )
  )

  it.live(
    "record_fields_checked: a record naming a summary by a digest that is not one, or a count that is not whole, does not decode",
    () =>
      withStore(plain, ({ fileOf, store, volume }) =>
        Effect.gen(function* () {
          const plant = (record: unknown) => {
            const bytes = new TextEncoder().encode(JSON.stringify(record))
            const digest = sha256Hex(bytes)
            fs.mkdirSync(path.dirname(fileOf(digest)), { recursive: true })
            fs.writeFileSync(fileOf(digest), bytes)
            return digest
          }
          const ref = (sha256: string, size: number) => ({
            _tag: "Rewritten",
            drop: 0,
            summary: { _tag: "SummaryRef", volume, path: "s.md", size, sha256 },
            redacted: false
          })
          const good = plant(ref("a".repeat(64), 3))
          assert.strictEqual((yield* store.read(good))._tag, "Rewritten")
          for (const bad of [
            ref("A".repeat(64), 3),
            ref("a".repeat(63), 3),
            ref(`${"a".repeat(64)}0`, 3),
            ref(`x${"a".repeat(63)}`, 3),
            ref(`${"a".repeat(63)}g`, 3),
            ref("a".repeat(64), -1),
            ref("a".repeat(64), 2.5),
            ref("a".repeat(64), 2 ** 53),
            { _tag: "Rewritten", drop: -1, redacted: false }
          ]) {
            const error = yield* Effect.flip(store.read(plant(bad)))
            assert.strictEqual(error.operation, "decode", JSON.stringify(bad))
          }
        })
      )
  )

  it.live("response_without_journaled_input: a call no entry measured is not checked; the record is still taken", () =>
    withStore(plain, ({ store }) =>
      Effect.gen(function* () {
        const turn = yield* journalTurn(store, { answered: true })
        const entries = without(turn.entries, (one) => one._tag === "ToolCalled" || one._tag === "ApprovalRequested")
        const rebuilt = yield* Transcript.rebuild(store, entries, 1)
        assert.deepStrictEqual(rebuilt.history, turn.finalHistory)
        // Control: a wrong digest of the same call is refused.
        const wrong = [
          ...entries,
          entry({
            _tag: "ToolCalled",
            turn: 1,
            step: 1,
            callId: "c2",
            name: "fetch",
            inputSize: 1,
            inputSha256: "a".repeat(64)
          })
        ]
        const error = yield* Effect.flip(Transcript.rebuild(store, wrong, 1))
        assert.strictEqual((error as Transcript.TranscriptRecordMismatch).field, "input digest")
      })
    )
  )

  it.live(
    "forged_capability: a store is made only under a minted capability, and the refusal names Transcript.make",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const stateDir = yield* tempDir
          const harness = yield* LocalHarness.open({ stateDir, namespace, agent })
          yield* harness.withTask(
            task,
            (binding) =>
              Effect.gen(function* () {
                const capability = yield* PrivateSummaries.resolve(binding.context)
                const forged = { ...capability } as typeof capability
                const error = yield* Effect.flip(Transcript.make().pipe(PrivateSummaries.provide(forged)))
                assert.include(String((error as { message?: string }).message), "Transcript.make:")
                // Control: the minted one makes a store.
                const store = yield* Transcript.make().pipe(PrivateSummaries.provide(capability))
                assert.strictEqual(store.task, task)
              }),
            { policy: Compaction.disabled }
          )
        })
      ).pipe(Effect.provide(nodeLayer))
  )
})
