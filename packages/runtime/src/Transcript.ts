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
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as History from "./History.ts"
import { legacyRequestSha256, makeRequestChain, measureRequest } from "./internal/digest.ts"
import { type RebuiltTurn, rebuildTurn } from "./internal/transcriptRebuild.ts"
import type {
  TranscriptError,
  TranscriptMissing,
  TranscriptReader,
  TranscriptRecord,
  TranscriptRecordMismatch,
  TranscriptStore
} from "./internal/transcriptRecords.ts"
import { storeAt } from "./internal/transcriptStore.ts"
import type { JournalService } from "./Journal.ts"
import type { Entry } from "./JournalEntry.ts"
import type { ToolSpec } from "./Model.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"

/**
 * A turn rebuilt by {@link rebuild} ({@link RebuiltTurn}) and each of its
 * requests with the digest the journal recorded ({@link RebuiltRequest}).
 * Declared in the package's internals, with the rebuild.
 *
 * @since 0.1.0
 * @category rebuilding
 */
export type { RebuiltRequest, RebuiltTurn } from "./internal/transcriptRebuild.ts"

/**
 * The store of one task's records ({@link TranscriptStore}: reads, scrubs
 * with the redactor in context, writes write-once), its read-only view
 * ({@link TranscriptReader}), and what writing a response or result gave
 * ({@link WrittenBody}). Declared in the package's internals.
 *
 * @since 0.1.0
 * @category models
 */
export type { TranscriptReader, TranscriptStore, WrittenBody } from "./internal/transcriptRecords.ts"

/**
 * The records a transcript holds ({@link TranscriptRecord}: {@link Opened},
 * {@link Rewritten}, {@link Replaced}, {@link Responded}, {@link Resulted}),
 * the stored form of a history and its summary ({@link StoredHistory},
 * {@link StoredSummary}), the JSON a record's file holds and is named by the
 * digest of ({@link TranscriptRecordJson}), and the digest of a response's
 * or result's stored body that the entry naming a redacted record journals
 * ({@link storedBodySha256}).
 *
 * And how reading or rebuilding a transcript fails: a record that cannot be
 * read or written, or is not what its name says ({@link TranscriptError});
 * a turn whose journal names no record where one is needed, because it was
 * not run durably ({@link TranscriptMissing}); a response, result or history
 * record that does not hold what the journal entry naming it recorded
 * ({@link TranscriptRecordMismatch}). A resume fails with the last two before
 * it sends anything or writes a journal entry.
 *
 * Declared in the package's internals, below the store, the checks and the
 * rebuild that use them.
 *
 * @since 0.1.0
 * @category records
 */
export {
  Opened,
  Replaced,
  Responded,
  type RespondedRecord,
  Resulted,
  type ResultedRecord,
  Rewritten,
  StoredHistory,
  StoredSummary,
  storedBodySha256,
  TranscriptError,
  TranscriptMissing,
  TranscriptRecord,
  TranscriptRecordJson,
  TranscriptRecordMismatch
} from "./internal/transcriptRecords.ts"

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
  return yield* storeAt({ folder: capability.folder, task: capability.task, volume: capability.volume })
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
  Effect.map(storeAt(location), ({ read, restore, restoreSummary, task, volume }) => ({
    task,
    volume,
    read,
    restore,
    restoreSummary
  }))

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
 * stored body is checked against the entry's `storedSha256` instead, and
 * only a record so journaled counts as redacted for {@link verify}. A
 * changed result or response record whose entry has no `storedSha256` is
 * refused: nothing in the journal vouches for it.
 *
 * @since 0.1.0
 * @category rebuilding
 */
export const rebuild: (
  transcript: TranscriptReader,
  entries: ReadonlyArray<Entry>,
  turn: number
) => Effect.Effect<RebuiltTurn, TranscriptError | TranscriptMissing | TranscriptRecordMismatch> = rebuildTurn

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
