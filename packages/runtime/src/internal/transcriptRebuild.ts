/**
 * Rebuilding a turn from its journal entries and transcript records (see
 * `Transcript.rebuild`): the history as it stood after each recorded step,
 * every request with its journal digest, and whether redaction changed a
 * record.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as History from "../History.ts"
import type { Entry } from "../JournalEntry.ts"
import type { Part } from "../Model.ts"
import { checkHistoryRecord, checkResponded, checkResulted, journaledInputs } from "./transcriptChecks.ts"
import {
  TranscriptError,
  TranscriptMissing,
  type TranscriptReader,
  type TranscriptRecord,
  type TranscriptRecordMismatch
} from "./transcriptRecords.ts"

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
 * `Transcript.verify`), and whether a record was changed by redaction (an
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

/** Rebuilds turn `turn` from the journal's `entries` and the transcript (the contract is `Transcript.rebuild`'s). */
export const rebuildTurn = Effect.fnUntraced(function* (
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
