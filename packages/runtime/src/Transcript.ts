/**
 * A task's transcript: what the model saw, stored durably beside the
 * agent's other private content, so that a turn can be resumed (or a new
 * one started) from what is on disk alone.
 *
 * The journal records bodies by size and digest only; the transcript holds
 * them. It is a set of write-once records on the task's agent-private
 * volume, at `VolumeStore.transcriptPath(task, sha256)`, each named by the
 * SHA-256 of its own bytes, and each referenced from the journal entry that
 * introduced its content (the `transcript` field of `TurnOpened`,
 * `RequestDispatched`, `ResponseReceived` and `ToolResulted`):
 *
 * - `Opened`: the history a turn starts from;
 * - `Rewritten`: how hooks rewrote the history before a request (compaction:
 *   leading parts dropped, a new summary), when they did;
 * - `Responded`: the model's text and tool calls, inputs included;
 * - `Resulted`: a tool result as the history holds it (after offload: the
 *   pointer, never the offloaded body).
 *
 * A summary is stored as a reference to its staged file (volume, path,
 * size, digest) and read back from it, never copied; offloaded results are
 * stored as their pointer lines. Writes go through `DurableFiles` (a
 * temporary name, synced, then published by hard link, never replacing),
 * under the private-summaries capability: the transcript is private content
 * and lands only where summaries may.
 *
 * **Redaction.** With an `ArtifactRedactor` in context, every text a record
 * holds (text parts, tool results, the string values of tool-call inputs,
 * an inline summary) is scrubbed before it touches disk, like summaries and
 * artifacts; without one, records are stored verbatim. A record whose text
 * the redactor changed is marked `redacted`, and a resumed turn whose
 * history holds one sends the scrubbed text: its requests then differ from
 * the uninterrupted run's where the secret was, and {@link verify} does not
 * claim byte identity for them. See docs/security-model.md.
 *
 * **Records are checked against the journal, not only their names.** A
 * record's name only proves its bytes are the ones named; whoever can write
 * the volume can write a new record and point the journal at it. So
 * {@link rebuild} checks every `Responded` and `Resulted` record against the
 * digests the journal entry naming it recorded of what was sent (and, for a
 * record the redactor changed, of what was stored: `storedSha256`), before
 * anything is rebuilt on it ({@link TranscriptRecordMismatch} otherwise).
 *
 * @since 0.1.0
 */
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as History from "./History.ts"
import { summaryParts } from "./internal/compacting.ts"
import {
  legacyRequestSha256,
  makeRequestChain,
  measureJson,
  measureRequest,
  measureText,
  sha256Bytes
} from "./internal/digest.ts"
import type { JournalService } from "./Journal.ts"
import type { Entry } from "./JournalEntry.ts"
import type { Part, ToolResultPart, ToolSpec } from "./Model.ts"
import { Part as PartSchema, ToolCallPart, ToolResultPart as ToolResultSchema } from "./Model.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"
import * as VolumeStore from "./VolumeStore.ts"

const Sha256 = Schema.String.check(
  Schema.makeFilter((value: string) => /^[0-9a-f]{64}$/.test(value), { expected: "a lowercase hex SHA-256 digest" })
)
const Count = Schema.Number.check(
  Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= 0, { expected: "an integer >= 0" })
)

/**
 * A summary held by a stored history: a reference to its staged file on the
 * transcript's own volume (read back and checked against `sha256`), or,
 * for a summary a harness built otherwise, its parts and text.
 *
 * @since 0.1.0
 * @category records
 */
export const StoredSummary = Schema.Union([
  Schema.TaggedStruct("SummaryRef", { volume: Volume.VolumeRef, path: Schema.String, size: Count, sha256: Sha256 }),
  Schema.TaggedStruct("SummaryInline", { parts: Schema.Array(PartSchema), text: Schema.String })
])
/**
 * @since 0.1.0
 * @category records
 */
export type StoredSummary = typeof StoredSummary.Type

/**
 * A history as a record stores it (see {@link StoredSummary}).
 *
 * @since 0.1.0
 * @category records
 */
export const StoredHistory = Schema.Struct({
  task: Schema.Array(PartSchema),
  parts: Schema.Array(PartSchema),
  summary: Schema.optionalKey(StoredSummary)
})
/**
 * @since 0.1.0
 * @category records
 */
export type StoredHistory = typeof StoredHistory.Type

/**
 * The history a turn starts from.
 *
 * @since 0.1.0
 * @category records
 */
export const Opened = Schema.TaggedStruct("Opened", { history: StoredHistory, redacted: Schema.Boolean })

/**
 * Hooks rewrote the history before a request: the first `drop` parts after
 * the task went, and (when present) `summary` replaced the summary. A
 * rewrite of another shape is stored whole, as {@link Replaced}.
 *
 * @since 0.1.0
 * @category records
 */
export const Rewritten = Schema.TaggedStruct("Rewritten", {
  drop: Count,
  summary: Schema.optionalKey(StoredSummary),
  redacted: Schema.Boolean
})

/**
 * Hooks replaced the history before a request by one that is not the old
 * one with leading parts dropped: stored whole.
 *
 * @since 0.1.0
 * @category records
 */
export const Replaced = Schema.TaggedStruct("Replaced", { history: StoredHistory, redacted: Schema.Boolean })

/**
 * The model's response as the history holds it: its text and its calls.
 *
 * @since 0.1.0
 * @category records
 */
export const Responded = Schema.TaggedStruct("Responded", {
  text: Schema.String,
  toolCalls: Schema.Array(ToolCallPart),
  redacted: Schema.Boolean
})

/**
 * A tool result as the history holds it.
 *
 * @since 0.1.0
 * @category records
 */
export const Resulted = Schema.TaggedStruct("Resulted", { result: ToolResultSchema, redacted: Schema.Boolean })

/**
 * @since 0.1.0
 * @category records
 */
export type RespondedRecord = typeof Responded.Type

/**
 * @since 0.1.0
 * @category records
 */
export type ResultedRecord = typeof Resulted.Type

/**
 * Any transcript record.
 *
 * @since 0.1.0
 * @category records
 */
export const TranscriptRecord = Schema.Union([Opened, Rewritten, Replaced, Responded, Resulted])
/**
 * @since 0.1.0
 * @category records
 */
export type TranscriptRecord = typeof TranscriptRecord.Type

/**
 * A record as the bytes of its file: the record's JSON. A record's file
 * name is the SHA-256 of these bytes.
 *
 * @since 0.1.0
 * @category records
 */
export const TranscriptRecordJson = Schema.fromJsonString(TranscriptRecord)
const encodeRecord = Schema.encodeEffect(TranscriptRecordJson)
const decodeRecord = Schema.decodeUnknownEffect(TranscriptRecordJson)

/**
 * Reading or writing a transcript record failed, or a record is not what
 * its name says (its bytes do not have the digest it is named by, it does
 * not decode, or the journal names a record that is not there).
 *
 * @since 0.1.0
 * @category errors
 */
export class TranscriptError extends Schema.TaggedError<TranscriptError>()("TranscriptError", {
  operation: Schema.String,
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `transcript ${this.operation} ${this.path} failed: ${this.detail}`
  }
}

/**
 * The journal of a turn names no transcript record where one is needed: the
 * turn was not run durably (see `TaskExecution.ExecutionConfig.durable`), so
 * it cannot be rebuilt from disk. Nothing was sent or written.
 *
 * @since 0.1.0
 * @category errors
 */
export class TranscriptMissing extends Schema.TaggedError<TranscriptMissing>()("TranscriptMissing", {
  task: Schema.String,
  turn: Schema.Int,
  entry: Schema.String
}) {
  override get message(): string {
    return `turn ${this.turn} of task ${this.task} cannot be rebuilt from disk: its ${this.entry} entry names no transcript record (the turn was not run durably)`
  }
}

/**
 * A rebuilt request is not the request the journal recorded: the digest of
 * the parts rebuilt for `step` (with the tools of the resuming
 * configuration) differs from the one `RequestDispatched` holds. A resume
 * fails with it before it sends anything or writes a journal entry.
 *
 * @since 0.1.0
 * @category errors
 */
export class TranscriptMismatch extends Schema.TaggedError<TranscriptMismatch>()("TranscriptMismatch", {
  task: Schema.String,
  turn: Schema.Int,
  step: Schema.Int,
  journalSha256: Schema.String,
  rebuiltSha256: Schema.String
}) {
  override get message(): string {
    return `turn ${this.turn} of task ${this.task}: the request rebuilt for step ${this.step} has digest ${this.rebuiltSha256.slice(0, 12)}, but the journal recorded ${this.journalSha256.slice(0, 12)} (a different transcript, different tools, or a changed record)`
  }
}

/**
 * A `Responded` or `Resulted` record is not what the journal entry naming it
 * recorded: `entry` of `step` (for a result, or a response's call: `callId`)
 * points at `record`, a `kind` record, whose `field` differs from the
 * journal's digest (or id, name or flag): `journal` is what the entry
 * recorded, `stored` what the record holds. A record edited on disk and the
 * entry's pointer rewritten to it fails here, redacted or not. A resume
 * fails with it before it sends anything or writes a journal entry.
 *
 * @since 0.1.0
 * @category errors
 */
export class TranscriptRecordMismatch extends Schema.TaggedError<TranscriptRecordMismatch>()(
  "TranscriptRecordMismatch",
  {
    task: Schema.String,
    turn: Schema.Int,
    step: Schema.Int,
    entry: Schema.Literals(["TurnOpened", "RequestDispatched", "ResponseReceived", "ToolResulted"]),
    kind: Schema.Literals(["Opened", "Replaced", "Rewritten", "Responded", "Resulted"]),
    record: Schema.String,
    callId: Schema.optionalKey(Schema.String),
    field: Schema.String,
    journal: Schema.String,
    stored: Schema.String
  }
) {
  override get message(): string {
    const call = this.callId === undefined ? "" : `, call "${this.callId}"`
    return `turn ${this.turn} of task ${this.task}: the ${this.kind} record ${this.record} named by the ${this.entry} entry of step ${this.step}${call} does not hold what the journal recorded: its ${this.field} is ${this.stored}, the journal recorded ${this.journal} (a changed record)`
  }
}

/**
 * The digest of the body a `Responded` or `Resulted` record stores, as the
 * `storedSha256` field of the journal entry naming it records it (new in
 * 0.5.0, journaled only for a record the redactor changed, whose body then
 * differs from what was sent):
 *
 * - `Resulted`: the SHA-256 of the UTF-8 bytes of `result.content` (measured
 *   as `ToolResulted.sha256` measures the content that was sent);
 * - `Responded`: the SHA-256 of the canonical JSON of `{ text, toolCalls }`
 *   of the record as decoded from its file (the text and every call, inputs
 *   included, since the redactor scrubs both).
 *
 * @since 0.1.0
 * @category records
 */
export const storedBodySha256 = (record: RespondedRecord | ResultedRecord): Effect.Effect<string> =>
  Effect.map(
    record._tag === "Resulted"
      ? measureText(record.result.content)
      : measureJson({ text: record.text, toolCalls: record.toolCalls }),
    (measure) => measure.sha256
  )

/**
 * What writing a response or result record gave: the record's digest (the
 * entry's `transcript` pointer) and, when the redactor changed the record,
 * the digest of its stored body ({@link storedBodySha256}) for the entry's
 * `storedSha256`.
 *
 * @since 0.1.0
 * @category models
 */
export interface WrittenBody {
  readonly transcript: string
  readonly storedSha256?: string
}

/**
 * Reads and writes the transcript records of one task on the volume of an
 * admitted private-summaries capability.
 *
 * @since 0.1.0
 * @category models
 */
export interface TranscriptStore extends TranscriptReader {
  /** Scrubs (with the redactor in context), stores write-once, and returns the record's digest. */
  readonly write: (record: TranscriptRecord) => Effect.Effect<string, TranscriptError>
  /**
   * Like `write`, and also says the stored body's digest when the redactor
   * changed the record (see {@link WrittenBody}), which the entry naming it
   * must record for {@link rebuild} to accept the record: for a response or
   * result its stored body's digest, for a history record (opened,
   * replaced, rewritten) the record's own digest.
   */
  readonly writeBody: (record: TranscriptRecord) => Effect.Effect<WrittenBody, TranscriptError>
  /** The stored form of a history (a staged summary as its reference). */
  readonly store: (history: History.History) => Effect.Effect<StoredHistory>
  /** The stored form of a summary. */
  readonly storeSummary: (summary: History.HistorySummary) => Effect.Effect<StoredSummary>
}

/**
 * Reads the transcript records of one task on one volume (what
 * {@link rebuild} needs); writes nothing.
 *
 * @since 0.1.0
 * @category models
 */
export interface TranscriptReader {
  readonly task: Ids.TaskId
  readonly volume: Volume.VolumeRef
  /** The record named `sha256`, checked against its name. */
  readonly read: (sha256: string) => Effect.Effect<TranscriptRecord, TranscriptError>
  /** The history a stored history stands for (a summary reference read back and checked). */
  readonly restore: (stored: StoredHistory) => Effect.Effect<History.History, TranscriptError>
  /** The summary a stored summary stands for. */
  readonly restoreSummary: (stored: StoredSummary) => Effect.Effect<History.HistorySummary, TranscriptError>
}

const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: true })

type Redact = (text: string) => Effect.Effect<string, TranscriptError>

const scrubJson = (redact: Redact, value: Schema.Json): Effect.Effect<Schema.Json, TranscriptError> => {
  if (typeof value === "string") return redact(value)
  if (Array.isArray(value)) return Effect.forEach(value, (inner) => scrubJson(redact, inner))
  if (value !== null && typeof value === "object") {
    const record = value as { readonly [key: string]: Schema.Json }
    return Effect.map(
      Effect.forEach(Object.keys(record), (key) =>
        Effect.map(scrubJson(redact, record[key] as Schema.Json), (inner) => [key, inner] as const)
      ),
      (pairs) => Object.fromEntries(pairs)
    )
  }
  return Effect.succeed(value)
}

const scrubPart = (redact: Redact, part: Part): Effect.Effect<Part, TranscriptError> => {
  switch (part._tag) {
    case "Text":
      return Effect.map(redact(part.text), (scrubbed) => (scrubbed === part.text ? part : { ...part, text: scrubbed }))
    case "ToolResult":
      return Effect.map(redact(part.content), (scrubbed) =>
        scrubbed === part.content ? part : { ...part, content: scrubbed }
      )
    case "ToolCall":
      return Effect.map(scrubJson(redact, part.input), (input) => ({ ...part, input }))
    default:
      return Effect.succeed(part)
  }
}

const scrubParts = (redact: Redact, parts: ReadonlyArray<Part>) =>
  Effect.forEach(parts, (part) => scrubPart(redact, part))

const scrubSummary = (redact: Redact, summary: StoredSummary): Effect.Effect<StoredSummary, TranscriptError> =>
  summary._tag === "SummaryRef"
    ? Effect.succeed(summary)
    : Effect.map(
        Effect.all([scrubParts(redact, summary.parts), redact(summary.text)]),
        ([parts, scrubbed]) => ({ _tag: "SummaryInline", parts, text: scrubbed }) as const
      )

const scrubHistory = (redact: Redact, history: StoredHistory): Effect.Effect<StoredHistory, TranscriptError> =>
  Effect.map(
    Effect.all([
      scrubParts(redact, history.task),
      scrubParts(redact, history.parts),
      history.summary === undefined ? Effect.succeed(undefined) : scrubSummary(redact, history.summary)
    ]),
    ([task, parts, summary]) => (summary === undefined ? { task, parts } : { task, parts, summary })
  )

/** The record with its texts scrubbed, without its `redacted` mark (set by the caller). */
const scrubRecord = (redact: Redact, record: TranscriptRecord): Effect.Effect<TranscriptRecord, TranscriptError> => {
  switch (record._tag) {
    case "Opened":
    case "Replaced":
      return Effect.map(scrubHistory(redact, record.history), (history) => ({ ...record, history }))
    case "Rewritten":
      return record.summary === undefined
        ? Effect.succeed(record)
        : Effect.map(scrubSummary(redact, record.summary), (summary) => ({ ...record, summary }))
    case "Responded":
      return Effect.map(
        Effect.all([redact(record.text), Effect.forEach(record.toolCalls, (call) => scrubPart(redact, call))]),
        ([scrubbed, toolCalls]) => ({ ...record, text: scrubbed, toolCalls: toolCalls as typeof record.toolCalls })
      )
    case "Resulted":
      return Effect.map(scrubPart(redact, record.result), (result) => ({
        ...record,
        result: result as ToolResultPart
      }))
  }
}

/**
 * The transcript store of the task the private-summaries capability in
 * context was minted for, on its volume. The capability is admitted here
 * (`PrivateSummaries.admit`: minted, bound to `journal` when given, volume
 * unchanged), once for the store's lifetime (a turn): a refused capability
 * reads and writes nothing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function* (
  journal: Option.Option<Pick<JournalService, "task" | "file">> = Option.none()
) {
  const capability = yield* PrivateSummaries.admit("Transcript.make", journal)
  return yield* at({ folder: capability.folder, task: capability.task, volume: capability.volume })
})

/**
 * A read-only view of a task's transcript in a volume's data folder, for
 * hosts and tools that read a store without writing to it (the inspector).
 * Every read goes through `DurableFiles.readFile` (no symlink followed) and
 * is checked against the digest it is named by.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reader = (location: {
  readonly folder: string
  readonly task: Ids.TaskId
  readonly volume: Volume.VolumeRef
}): Effect.Effect<TranscriptReader, never, DurableFiles.DurableFiles | FileSystem.FileSystem | Path.Path> =>
  Effect.map(at(location), ({ read, restore, restoreSummary, task, volume }) => ({
    task,
    volume,
    read,
    restore,
    restoreSummary
  }))

const at = Effect.fnUntraced(function* (location: {
  readonly folder: string
  readonly task: Ids.TaskId
  readonly volume: Volume.VolumeRef
}) {
  const files = yield* DurableFiles.DurableFiles
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const redactor = yield* Effect.serviceOption(ArtifactRedactor.ArtifactRedactor)
  const task = location.task
  const folder = location.folder
  const volume = location.volume
  const written = new Set<string>()
  const absolute = (sha256: string) => path.join(folder, VolumeStore.transcriptPath(task, sha256))
  const failure = (operation: string, at: string) => (error: { readonly message: string }) =>
    new TranscriptError({ operation, path: at, detail: error.message })

  const redact: Option.Option<Redact> = Option.map(
    redactor,
    (service) => (body: string) =>
      service
        .redact(body)
        .pipe(
          Effect.mapError((error) => new TranscriptError({ operation: "redact", path: folder, detail: error.message }))
        )
  )

  const publish = (sha256: string, bytes: Uint8Array): Effect.Effect<void, TranscriptError> => {
    const finalPath = absolute(sha256)
    const temp = path.join(path.dirname(finalPath), DurableFiles.temporaryName(path.basename(finalPath)))
    return files.writeNewFile(temp, bytes, { within: folder, createFolders: true, syncFolder: false }).pipe(
      Effect.andThen(
        files.publishOnce(temp, finalPath).pipe(
          // A publish that lost (`AlreadyExists`) leaves its temporary file to the caller: removed before the
          // loss is forgiven, or every later store writing a record already there would leave one behind.
          Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : fs.remove(temp).pipe(Effect.ignore))),
          // Named by its digest: a file already there holds these bytes (a read checks it).
          Effect.catchTag("AlreadyExists", () => Effect.void)
        )
      ),
      Effect.mapError(failure("write", finalPath))
    )
  }

  const writeRecord = (given: TranscriptRecord) =>
    Effect.gen(function* () {
      let record = given
      let changed = false
      if (Option.isSome(redact)) {
        const scrubbed = yield* scrubRecord(redact.value, given)
        const plain = yield* encodeRecord(given).pipe(Effect.mapError(failure("encode", folder)))
        const clean = yield* encodeRecord(scrubbed).pipe(Effect.mapError(failure("encode", folder)))
        changed = plain !== clean
        record = { ...scrubbed, redacted: given.redacted || changed }
      }
      const json = yield* encodeRecord(record).pipe(Effect.mapError(failure("encode", folder)))
      const bytes = encoder.encode(json)
      const sha256 = yield* sha256Bytes(bytes)
      if (!written.has(sha256)) {
        yield* publish(sha256, bytes)
        written.add(sha256)
      }
      return { sha256, json, changed }
    })

  const write = (given: TranscriptRecord): Effect.Effect<string, TranscriptError> =>
    Effect.map(writeRecord(given), ({ sha256 }) => sha256)

  const writeBody = (given: TranscriptRecord): Effect.Effect<WrittenBody, TranscriptError> =>
    Effect.gen(function* () {
      const { changed, json, sha256 } = yield* writeRecord(given)
      if (!changed) return { transcript: sha256 }
      if (given._tag !== "Responded" && given._tag !== "Resulted") return { transcript: sha256, storedSha256: sha256 }
      // Measured on the record as a reader decodes it from these bytes, so a rebuild measures the same value.
      const stored = yield* decodeRecord(json).pipe(Effect.mapError(failure("decode", absolute(sha256))))
      if (stored._tag !== "Responded" && stored._tag !== "Resulted") {
        return yield* new TranscriptError({
          operation: "write",
          path: absolute(sha256),
          detail: `a ${given._tag} record decoded as a ${stored._tag} record`
        })
      }
      return { transcript: sha256, storedSha256: yield* storedBodySha256(stored) }
    })

  const readBytes = (file: string, operation: string) =>
    files.readFile(file, { within: folder }).pipe(
      Effect.map((read) => read.bytes),
      Effect.mapError(failure(operation, file))
    )

  const read = (sha256: string): Effect.Effect<TranscriptRecord, TranscriptError> =>
    Effect.gen(function* () {
      const file = absolute(sha256)
      const bytes = yield* readBytes(file, "read")
      const actual = yield* sha256Bytes(Uint8Array.from(bytes))
      if (actual !== sha256) {
        return yield* new TranscriptError({
          operation: "read",
          path: file,
          detail: `its bytes have digest ${actual}, not the ${sha256} it is named by`
        })
      }
      const json = yield* Effect.try({
        try: () => decoder.decode(bytes),
        catch: () => new TranscriptError({ operation: "read", path: file, detail: "not UTF-8" })
      })
      return yield* decodeRecord(json).pipe(Effect.mapError(failure("decode", file)))
    })

  const storeSummary = (summary: History.HistorySummary): Effect.Effect<StoredSummary> =>
    Effect.gen(function* () {
      const reference = summary.parts[0]
      if (
        reference !== undefined &&
        reference._tag === "FileReference" &&
        reference.volume.store === volume.store &&
        reference.volume.volume === volume.volume &&
        samePartsJson(summary.parts, summaryParts(reference, summary.text))
      ) {
        const bytes = encoder.encode(summary.text)
        return {
          _tag: "SummaryRef",
          volume: reference.volume,
          path: reference.path,
          size: bytes.length,
          sha256: yield* sha256Bytes(bytes)
        } as const
      }
      return { _tag: "SummaryInline", parts: summary.parts, text: summary.text } as const
    })

  const restoreSummary = (stored: StoredSummary): Effect.Effect<History.HistorySummary, TranscriptError> =>
    Effect.gen(function* () {
      if (stored._tag === "SummaryInline") return { parts: stored.parts, text: stored.text }
      const file = path.join(folder, stored.path)
      if (DurableFiles.relativeWithin(folder, path.resolve(file), path) === undefined) {
        return yield* new TranscriptError({
          operation: "read summary",
          path: file,
          detail: "outside the private volume"
        })
      }
      const bytes = yield* readBytes(file, "read summary")
      const actual = yield* sha256Bytes(Uint8Array.from(bytes))
      if (actual !== stored.sha256) {
        return yield* new TranscriptError({
          operation: "read summary",
          path: file,
          detail: `the staged summary has digest ${actual}, not the ${stored.sha256} the transcript recorded`
        })
      }
      const summaryText = decoder.decode(bytes)
      return {
        parts: summaryParts({ volume: stored.volume, path: stored.path }, summaryText),
        text: summaryText
      }
    })

  const store = (history: History.History): Effect.Effect<StoredHistory> =>
    history.summary === undefined
      ? Effect.succeed({ task: history.task, parts: history.parts })
      : Effect.map(storeSummary(history.summary), (summary) => ({
          task: history.task,
          parts: history.parts,
          summary
        }))

  const restore = (stored: StoredHistory): Effect.Effect<History.History, TranscriptError> =>
    stored.summary === undefined
      ? Effect.succeed({ task: stored.task, parts: stored.parts })
      : Effect.map(restoreSummary(stored.summary), (summary) => ({
          task: stored.task,
          parts: stored.parts,
          summary
        }))

  const transcript: TranscriptStore = {
    task,
    volume,
    write,
    writeBody,
    read,
    restore,
    store,
    storeSummary,
    restoreSummary
  }
  return transcript
})

const samePartsJson = (a: ReadonlyArray<Part>, b: ReadonlyArray<Part>): boolean =>
  a.length === b.length && JSON.stringify(a) === JSON.stringify(b)

/**
 * The record of a rewrite from `before` to `after` (a history hooks
 * returned): leading parts dropped and maybe a new summary, or the whole
 * history when it is not of that shape.
 *
 * @since 0.1.0
 * @category records
 */
export const rewriteRecord = (
  transcript: TranscriptStore,
  before: History.History,
  after: History.History
): Effect.Effect<TranscriptRecord> => {
  const drop = before.parts.length - after.parts.length
  const suffix =
    after.task === before.task &&
    drop >= 0 &&
    after.parts.every((part, index) => part === before.parts[drop + index]) &&
    (after.summary !== undefined || before.summary === undefined)
  if (!suffix) {
    return Effect.map(transcript.store(after), (history) => ({ _tag: "Replaced", history, redacted: false }) as const)
  }
  if (after.summary === before.summary || after.summary === undefined) {
    return Effect.succeed({ _tag: "Rewritten", drop, redacted: false } as const)
  }
  return Effect.map(
    transcript.storeSummary(after.summary),
    (summary) => ({ _tag: "Rewritten", drop, summary, redacted: false }) as const
  )
}

/**
 * One request of a rebuilt turn: its step, the parts rebuilt for it, and
 * the digest the journal recorded.
 *
 * @since 0.1.0
 * @category rebuilding
 */
export interface RebuiltRequest {
  readonly step: number
  readonly parts: ReadonlyArray<Part>
  readonly sha256: string
  readonly answered: boolean
}

/**
 * A turn rebuilt from its journal entries and transcript records: the
 * history as it stands after the last recorded content, the history the
 * last request was built from when that request got no response (lost to
 * a crash, or failed), every request with its journal digest (for
 * {@link verify}), and whether a record was changed by redaction (an
 * `Opened` or rewrite record so marked, or a response or result record whose
 * entry journaled `storedSha256`).
 *
 * @since 0.1.0
 * @category rebuilding
 */
export interface RebuiltTurn {
  readonly turn: number
  readonly history: History.History
  readonly lostRequest: Option.Option<{ readonly step: number; readonly history: History.History }>
  readonly requests: ReadonlyArray<RebuiltRequest>
  readonly redacted: boolean
}

type ResponseEntry = Extract<Entry, { readonly _tag: "ResponseReceived" }>
type ResultEntry = Extract<Entry, { readonly _tag: "ToolResulted" }>

/** The key of a call's input digests: calls are named by id within their step. */
const callKey = (step: number, callId: string) => `${step}\u0000${callId}`

/**
 * The input digests the journal recorded for the calls of `turn`
 * (`ToolCalled` when a call ran, `ApprovalRequested` when it waited), by
 * step and call id: what a `Responded` record's inputs must measure.
 */
const journaledInputs = (entries: ReadonlyArray<Entry>, turn: number): ReadonlyMap<string, ReadonlyArray<string>> => {
  const inputs = new Map<string, Array<string>>()
  for (const entry of entries) {
    if ((entry._tag !== "ToolCalled" && entry._tag !== "ApprovalRequested") || entry.turn !== turn) continue
    const key = callKey(entry.step, entry.callId)
    const known = inputs.get(key)
    if (known === undefined) inputs.set(key, [entry.inputSha256])
    else known.push(entry.inputSha256)
  }
  return inputs
}

/** Where a record mismatch was found; each check names the field and both values. */
type MismatchAt = Omit<ConstructorParameters<typeof TranscriptRecordMismatch>[0], "field" | "journal" | "stored">

const mismatchAt =
  (at: MismatchAt) =>
  (field: string, journal: string, stored: string, callId?: string): TranscriptRecordMismatch =>
    new TranscriptRecordMismatch({ ...at, ...(callId === undefined ? {} : { callId }), field, journal, stored })

/**
 * Checks a `Resulted` record against the `ToolResulted` entry naming it:
 * the call, the tool and the error flag, and its content against what the
 * journal measured (`size` and `sha256` of the content that was sent, as the
 * executor measured it), or, when the redactor changed the record, against
 * `storedSha256` (the stored content's digest: the secret is gone, so the
 * sent digest cannot match, and the size is not checked either).
 */
const checkResulted = Effect.fnUntraced(function* (
  task: string,
  entry: ResultEntry,
  pointer: string,
  record: ResultedRecord
): Effect.fn.Return<void, TranscriptRecordMismatch> {
  const mismatch = mismatchAt({
    task,
    turn: entry.turn,
    step: entry.step,
    entry: "ToolResulted",
    kind: "Resulted",
    record: pointer,
    callId: entry.callId
  })
  const result = record.result
  if (result.callId !== entry.callId) return yield* mismatch("call id", entry.callId, result.callId)
  if (result.name !== entry.name) return yield* mismatch("tool name", entry.name, result.name)
  if (result.isError !== entry.isError) return yield* mismatch("error flag", `${entry.isError}`, `${result.isError}`)
  if (entry.storedSha256 !== undefined) {
    const stored = yield* storedBodySha256(record)
    if (stored !== entry.storedSha256) return yield* mismatch("stored content digest", entry.storedSha256, stored)
    return
  }
  const measured = yield* measureText(result.content)
  if (measured.sha256 !== entry.sha256) return yield* mismatch("content digest", entry.sha256, measured.sha256)
  if (measured.size !== entry.size) return yield* mismatch("content size", `${entry.size}`, `${measured.size}`)
})

/**
 * Checks a `Responded` record against the `ResponseReceived` entry naming
 * it: its calls' ids and tool names, in order, against the entry's
 * `toolCalls` (the redactor never changes them); then its text against
 * `textSize`/`textSha256` and every call's input against each digest the
 * journal recorded for that call (`inputs`), or, when the redactor changed
 * the record, its text and calls together against `storedSha256`.
 */
const checkResponded = Effect.fnUntraced(function* (
  task: string,
  entry: ResponseEntry,
  pointer: string,
  record: RespondedRecord,
  inputs: ReadonlyMap<string, ReadonlyArray<string>>
): Effect.fn.Return<void, TranscriptRecordMismatch> {
  const mismatch = mismatchAt({
    task,
    turn: entry.turn,
    step: entry.step,
    entry: "ResponseReceived",
    kind: "Responded",
    record: pointer
  })
  const journalCalls = entry.toolCalls.map((call) => `${call.callId}:${call.name}`).join(", ")
  const storedCalls = record.toolCalls.map((call) => `${call.id}:${call.name}`).join(", ")
  if (
    record.toolCalls.length !== entry.toolCalls.length ||
    record.toolCalls.some(
      (call, index) => call.id !== entry.toolCalls[index]?.callId || call.name !== entry.toolCalls[index]?.name
    )
  ) {
    return yield* mismatch("tool calls", `[${journalCalls}]`, `[${storedCalls}]`)
  }
  if (entry.storedSha256 !== undefined) {
    const stored = yield* storedBodySha256(record)
    if (stored !== entry.storedSha256) return yield* mismatch("stored body digest", entry.storedSha256, stored)
    return
  }
  const text = yield* measureText(record.text)
  if (text.sha256 !== entry.textSha256) return yield* mismatch("text digest", entry.textSha256, text.sha256)
  if (text.size !== entry.textSize) return yield* mismatch("text size", `${entry.textSize}`, `${text.size}`)
  for (const call of record.toolCalls) {
    const journaled = inputs.get(callKey(entry.step, call.id))
    if (journaled === undefined) continue
    const input = yield* measureJson(call.input)
    const differing = journaled.find((sha256) => sha256 !== input.sha256)
    if (differing !== undefined) return yield* mismatch("input digest", differing, input.sha256, call.id)
  }
})

/**
 * A history record (the turn's start, a rewrite) is redacted exactly when
 * the journal says so (`storedSha256`, the record's own digest): a record
 * that calls itself redacted where the journal does not would make a resume
 * skip the check of its requests, and a pointer that differs from the
 * journaled digest names another record than the one written.
 */
const checkHistoryRecord = (
  task: string,
  turn: number,
  step: number,
  entry: { readonly _tag: "TurnOpened" | "RequestDispatched"; readonly storedSha256?: string },
  pointer: string,
  record: Extract<TranscriptRecord, { readonly _tag: "Opened" | "Replaced" | "Rewritten" }>
): Effect.Effect<void, TranscriptRecordMismatch> => {
  const mismatch = (field: string, journal: string, stored: string) =>
    Effect.fail(
      mismatchAt({ task, turn, step, entry: entry._tag, kind: record._tag, record: pointer })(field, journal, stored)
    )
  if (entry.storedSha256 !== undefined && entry.storedSha256 !== pointer) {
    return mismatch("digest", entry.storedSha256, pointer)
  }
  if (entry.storedSha256 === undefined && record.redacted) return mismatch("redacted", "false", "true")
  return Effect.void
}

/**
 * Rebuilds turn `turn` from the journal's `entries` and the transcript:
 * the `Opened` record of its `TurnOpened`, then every rewrite, response and
 * result in journal order. Fails {@link TranscriptMissing} when an entry
 * that introduced content names no record, {@link TranscriptError} when a
 * record cannot be read or is not what its name says.
 *
 * Every `Responded` and `Resulted` record is checked against the journal's
 * own digests before the history takes it in, whatever its `redacted` mark
 * says, and fails {@link TranscriptRecordMismatch} naming the step, the
 * entry and the record: a result's call, tool, error flag and content
 * (`ToolResulted.size`/`sha256`), a response's calls (`toolCalls`), text
 * (`textSize`/`textSha256`) and inputs (each `ToolCalled` and
 * `ApprovalRequested` digest of the call). For a record the redactor
 * changed, what was sent cannot be checked (the secret is gone): its
 * stored body is checked against the entry's `storedSha256` instead (new in
 * 0.5.0), and only a record so journaled counts as redacted for
 * {@link verify}. A changed result or response record of a journal written
 * before 0.5.0 has no `storedSha256` and is refused: nothing in the
 * journal vouches for it.
 *
 * @since 0.1.0
 * @category rebuilding
 */
export const rebuild = Effect.fnUntraced(function* (
  transcript: TranscriptReader,
  entries: ReadonlyArray<Entry>,
  turn: number
): Effect.fn.Return<RebuiltTurn, TranscriptError | TranscriptMissing | TranscriptRecordMismatch> {
  let history: History.History | undefined
  let redacted = false
  let lost: { step: number; history: History.History } | undefined
  const requests: Array<RebuiltRequest> = []
  const inputs = journaledInputs(entries, turn)
  const missing = (entry: string) => new TranscriptMissing({ task: transcript.task, turn, entry })
  const readAs = <T extends TranscriptRecord["_tag"]>(sha256: string, tag: T) =>
    Effect.flatMap(transcript.read(sha256), (record) => {
      if (record._tag !== tag) {
        return Effect.fail(
          new TranscriptError({
            operation: "rebuild",
            path: sha256,
            detail: `the journal names a ${record._tag} record where a ${tag} record belongs`
          })
        )
      }
      return Effect.succeed(record as Extract<TranscriptRecord, { readonly _tag: T }>)
    })
  for (const entry of entries) {
    if (!("turn" in entry) || entry.turn !== turn) continue
    switch (entry._tag) {
      case "TurnOpened": {
        if (entry.transcript === undefined) return yield* missing("TurnOpened")
        const record = yield* readAs(entry.transcript, "Opened")
        yield* checkHistoryRecord(transcript.task, turn, 0, entry, entry.transcript, record)
        redacted = redacted || entry.storedSha256 !== undefined
        history = yield* transcript.restore(record.history)
        break
      }
      case "RequestDispatched": {
        if (history === undefined) return yield* missing("TurnOpened")
        if (entry.transcript !== undefined) {
          const record = yield* transcript.read(entry.transcript)
          if (record._tag !== "Rewritten" && record._tag !== "Replaced") {
            return yield* new TranscriptError({
              operation: "rebuild",
              path: entry.transcript,
              detail: `the journal names a ${record._tag} record where a rewrite belongs`
            })
          }
          yield* checkHistoryRecord(transcript.task, turn, entry.step, entry, entry.transcript, record)
          redacted = redacted || entry.storedSha256 !== undefined
          if (record._tag === "Replaced") {
            history = yield* transcript.restore(record.history)
          } else {
            const dropped = { ...history, parts: history.parts.slice(record.drop) }
            history =
              record.summary === undefined
                ? dropped
                : {
                    task: history.task,
                    parts: dropped.parts,
                    summary: yield* transcript.restoreSummary(record.summary)
                  }
          }
        }
        requests.push({ step: entry.step, parts: History.toParts(history), sha256: entry.sha256, answered: false })
        lost = { step: entry.step, history }
        break
      }
      case "ModelFailed":
        // The failed request stays the one to send again: its history is `lost.history`.
        break
      case "ResponseReceived": {
        if (history === undefined) return yield* missing("TurnOpened")
        if (entry.transcript === undefined) return yield* missing("ResponseReceived")
        const record = yield* readAs(entry.transcript, "Responded")
        yield* checkResponded(transcript.task, entry, entry.transcript, record, inputs)
        // Checked against what was sent, a record is byte for byte what was sent, whatever its mark says.
        redacted = redacted || entry.storedSha256 !== undefined
        history = History.append(history, History.responseParts(record))
        const last = requests.at(-1)
        if (last !== undefined) requests[requests.length - 1] = { ...last, answered: true }
        lost = undefined
        break
      }
      case "ToolResulted": {
        if (history === undefined) return yield* missing("TurnOpened")
        if (entry.transcript === undefined) return yield* missing("ToolResulted")
        const record = yield* readAs(entry.transcript, "Resulted")
        yield* checkResulted(transcript.task, entry, entry.transcript, record)
        redacted = redacted || entry.storedSha256 !== undefined
        history = History.append(history, [record.result])
        break
      }
      default:
        break
    }
  }
  if (history === undefined) return yield* missing("TurnOpened")
  return {
    turn,
    history,
    lostRequest: lost === undefined ? Option.none() : Option.some(lost),
    requests,
    redacted
  }
})

/**
 * Checks that every request of a rebuilt turn, sent with `tools`, has the
 * digest the journal recorded for it: the rebuilt history is byte for byte
 * the one the uninterrupted run built its requests from. Fails
 * {@link TranscriptMismatch} naming the first step that differs. A turn
 * whose records redaction changed is not checked (its requests differ where
 * the secrets were); the result says how many requests were checked. For
 * such a turn what holds is what {@link rebuild} checked record by record:
 * each response and result record against the journal's digests of what
 * was sent, or of what was stored where the redactor changed it.
 *
 * @since 0.1.0
 * @category rebuilding
 */
export const verify = Effect.fnUntraced(function* (
  task: Ids.TaskId,
  rebuilt: RebuiltTurn,
  tools: ReadonlyArray<ToolSpec>
): Effect.fn.Return<number, TranscriptMismatch> {
  if (rebuilt.redacted) return 0
  const chain = makeRequestChain()
  for (const request of rebuilt.requests) {
    const rebuiltRequest = { parts: request.parts, tools }
    const measured = yield* measureRequest(rebuiltRequest, chain)
    // A journal written before bodies were measured on their own records the earlier digest.
    if (measured.sha256 !== request.sha256 && (yield* legacyRequestSha256(rebuiltRequest)) !== request.sha256) {
      return yield* new TranscriptMismatch({
        task,
        turn: rebuilt.turn,
        step: request.step,
        journalSha256: request.sha256,
        rebuiltSha256: measured.sha256
      })
    }
  }
  return rebuilt.requests.length
})
