/**
 * What a transcript record is: the record schemas and their file form, the
 * error of reading or writing one, the digest a redacted record's entry
 * journals of its stored body, and the shapes of the store and the reader
 * that hold a task's records. Declared below the store, the checks and the
 * rebuild that use them; `Transcript` re-exports every one.
 */
import type * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as History from "../History.ts"
import { Part as PartSchema, ToolCallPart, ToolResultPart as ToolResultSchema } from "../Model.ts"
import { measureJson, measureText } from "./digest.ts"

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
 * A {@link Responded} record: the model's response as the history holds it.
 *
 * @since 0.1.0
 * @category records
 */
export type RespondedRecord = typeof Responded.Type

/**
 * A {@link Resulted} record: a tool result as the history holds it.
 *
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
 * `storedSha256` field of the journal entry naming it records it (journaled
 * only for a record the redactor changed, whose body then differs from what
 * was sent):
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
   * must record for `Transcript.rebuild` to accept the record: for a response or
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
 * `Transcript.rebuild` needs); writes nothing.
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
