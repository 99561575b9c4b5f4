/**
 * The checks of a transcript record against the journal entry naming it,
 * before a rebuild takes the record in: a record's name only proves its
 * bytes are the ones named, so each response, result and history record is
 * held to the digests (ids, names, flags) the journal recorded.
 */
import * as Effect from "effect/Effect"
import type { Entry } from "../JournalEntry.ts"
import { measureJson, measureText } from "./digest.ts"
import {
  type RespondedRecord,
  type ResultedRecord,
  storedBodySha256,
  type TranscriptRecord,
  TranscriptRecordMismatch
} from "./transcriptRecords.ts"

type ResponseEntry = Extract<Entry, { readonly _tag: "ResponseReceived" }>
type ResultEntry = Extract<Entry, { readonly _tag: "ToolResulted" }>

/** The key of a call's input digests: calls are named by id within their step. */
const callKey = (step: number, callId: string) => `${step}\u0000${callId}`

/**
 * The input digests the journal recorded for the calls of `turn`
 * (`ToolCalled` when a call ran, `ApprovalRequested` when it waited), by
 * step and call id: what a `Responded` record's inputs must measure.
 */
export const journaledInputs = (
  entries: ReadonlyArray<Entry>,
  turn: number
): ReadonlyMap<string, ReadonlyArray<string>> => {
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
 * Checks a record's body against the entry naming it: when the redactor
 * changed the record (the entry journaled `storedSha256`), its stored body
 * against that digest, since what was sent held the secret and cannot
 * match; otherwise the `sent` text against the digest and size the journal
 * measured of it. Says which was checked, so that only a body checked as
 * sent goes on to the checks of the rest of what was sent. The fields a
 * mismatch names: `stored <stored> digest`, `<sent> digest`, `<sent> size`.
 */
const checkBody = Effect.fnUntraced(function* (
  mismatch: ReturnType<typeof mismatchAt>,
  record: RespondedRecord | ResultedRecord,
  journaled: { readonly storedSha256?: string | undefined; readonly sha256: string; readonly size: number },
  sent: string,
  field: { readonly stored: string; readonly sent: string }
): Effect.fn.Return<"stored" | "sent", TranscriptRecordMismatch> {
  if (journaled.storedSha256 !== undefined) {
    const stored = yield* storedBodySha256(record)
    if (stored !== journaled.storedSha256) {
      return yield* mismatch(`stored ${field.stored} digest`, journaled.storedSha256, stored)
    }
    return "stored"
  }
  const measured = yield* measureText(sent)
  if (measured.sha256 !== journaled.sha256) {
    return yield* mismatch(`${field.sent} digest`, journaled.sha256, measured.sha256)
  }
  if (measured.size !== journaled.size) {
    return yield* mismatch(`${field.sent} size`, `${journaled.size}`, `${measured.size}`)
  }
  return "sent"
})

/**
 * Checks a `Resulted` record against the `ToolResulted` entry naming it:
 * the call, the tool and the error flag, and its content against what the
 * journal measured (`size` and `sha256` of the content that was sent, as the
 * executor measured it), or, when the redactor changed the record, against
 * `storedSha256` (the stored content's digest: the secret is gone, so the
 * sent digest cannot match, and the size is not checked either).
 */
export const checkResulted = Effect.fnUntraced(function* (
  task: string,
  entry: ResultEntry,
  pointer: string,
  record: ResultedRecord
): Effect.fn.Return<void, TranscriptRecordMismatch> {
  const { callId, step, turn } = entry
  const mismatch = mismatchAt({ task, turn, step, entry: "ToolResulted", kind: "Resulted", record: pointer, callId })
  const result = record.result
  if (result.callId !== entry.callId) return yield* mismatch("call id", entry.callId, result.callId)
  if (result.name !== entry.name) return yield* mismatch("tool name", entry.name, result.name)
  if (result.isError !== entry.isError) return yield* mismatch("error flag", `${entry.isError}`, `${result.isError}`)
  yield* checkBody(mismatch, record, entry, result.content, { stored: "content", sent: "content" })
})

/**
 * Checks a `Responded` record against the `ResponseReceived` entry naming
 * it: its calls' ids and tool names, in order, against the entry's
 * `toolCalls` (the redactor never changes them); then its text against
 * `textSize`/`textSha256` and every call's input against each digest the
 * journal recorded for that call (`inputs`), or, when the redactor changed
 * the record, its text and calls together against `storedSha256`.
 */
export const checkResponded = Effect.fnUntraced(function* (
  task: string,
  entry: ResponseEntry,
  pointer: string,
  record: RespondedRecord,
  inputs: ReadonlyMap<string, ReadonlyArray<string>>
): Effect.fn.Return<void, TranscriptRecordMismatch> {
  const { step, turn } = entry
  const mismatch = mismatchAt({ task, turn, step, entry: "ResponseReceived", kind: "Responded", record: pointer })
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
  const journaled = { storedSha256: entry.storedSha256, sha256: entry.textSha256, size: entry.textSize }
  const body = yield* checkBody(mismatch, record, journaled, record.text, { stored: "body", sent: "text" })
  if (body === "stored") return
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
export const checkHistoryRecord = (
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
