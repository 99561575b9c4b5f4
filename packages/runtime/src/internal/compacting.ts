/**
 * Compacting a history: the summary's inputs digest, a leftover summary's
 * adoption or supersession, publication on the private volume, and the
 * task-over-limit warning. `Compaction` states the contract of `compact` and
 * `publish`.
 */
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as History from "../History.ts"
import { type Journal, type JournalIoError, type JournalSequenceError, summaryKey } from "../Journal.ts"
import type { Part } from "../Model.ts"
import { fileReference, type Model, text } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import { type CompactionPlan, measureParts, plan, type ReportedInput, type SentRequest } from "./compactionPlan.ts"
import { pieceBytes, summaryBytes, type Threshold } from "./compactionPolicy.ts"
import { measureRequest } from "./digest.ts"
import { writeOnce } from "./privateFiles.ts"
import * as Summarizer from "./summarizer.ts"
import { defaultInstruction } from "./summarizer.ts"
import { journaledSummaryRequests, summarizeWith } from "./summaryRequests.ts"
import { required as requiredTokenizer, type TokenizerShape } from "./tokenizer.ts"

/** See `Compaction.PublishedSummary`. */
export interface PublishedSummary {
  readonly staged: PrivateSummaries.StagedFile
  readonly text: string
  readonly parts: ReadonlyArray<Part>
}

/** See `Compaction.publish`. */
export const publish = Effect.fnUntraced(function* (options: {
  readonly key: PrivateSummaries.StagingKey
  readonly summary: string
  readonly journal: Option.Option<Journal["Service"]>
  readonly turn?: number
  readonly requests?: number
  /** The longest summary stored, in UTF-8 bytes: checked after the scrub, which may lengthen it ({@link boundSummary}). */
  readonly maxBytes?: number
}) {
  // The one write: admitted once (bound to this journal), scrubbed by the host's redactor, bounded, published.
  const { file: staged, stored: scrubbed } = yield* writeOnce("Compaction.publish", options.key, options.summary, {
    ...(Option.isSome(options.journal) ? { journal: options.journal.value } : {}),
    ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes })
  })
  yield* Observability.annotate({ "tessera.summary.size": staged.size, "tessera.staging.outcome": staged.outcome })
  if (Option.isSome(options.journal)) {
    yield* options.journal.value.append({
      _tag: "SummaryStaged",
      ...(options.turn === undefined ? {} : { turn: options.turn }),
      step: options.key.step,
      operation: options.key.operation,
      ...(options.requests === undefined ? {} : { requests: options.requests }),
      volume: staged.volume,
      path: staged.path,
      size: staged.size,
      sha256: staged.sha256
    })
  }
  return publishedSummary(staged, scrubbed)
}, Observability.withSpan("Compaction.publish"))

/** See `Compaction.CompactServices`. */
export type CompactServices =
  | Model
  | PrivateSummaries.PrivateSummaries
  | DurableFiles.DurableFiles
  | FileSystem.FileSystem
  | Path.Path

/** See `Compaction.CompactOptions`. */
export interface CompactOptions {
  readonly history: History.History
  readonly policy: Threshold
  readonly operation: Ids.OperationId
  readonly step: number
  readonly journal: Option.Option<Journal["Service"]>
  readonly turn?: number
  /** The provider's count for the previous request, used under `reportedTokens` (see {@link plan}). */
  readonly reported?: ReportedInput
  /** The last request the model was sent: no tool result it did not carry is summarized (see {@link plan}). */
  readonly sent?: SentRequest
}

/** See `Compaction.compact`. */
export const compact = (options: CompactOptions) => {
  const planned = (tokenizer?: TokenizerShape) => {
    const chosen = plan(options.history, options.policy, options.reported, options.sent, tokenizer)
    return Option.isNone(chosen) ? Effect.succeed(options.history) : compactPlanned(options, chosen.value)
  }
  // The host's tokenizer is asked for only by the measure that counts with it.
  return options.policy.measure === "tokenizer"
    ? Effect.flatMap(requiredTokenizer("Compaction.compact"), planned)
    : planned()
}

const compactPlanned = Effect.fnUntraced(function* (options: CompactOptions, planned: CompactionPlan) {
  yield* Observability.annotate({
    ...(Option.isSome(options.journal) ? { "tessera.task": options.journal.value.task } : {}),
    ...(options.turn === undefined ? {} : { "tessera.turn": options.turn }),
    "tessera.step": options.step,
    "tessera.operation": options.operation,
    "tessera.compaction.rounds": planned.summarized.length
  })
  const summary = yield* summarizeRounds({
    entry: "Compaction.compact",
    key: { operation: options.operation, step: options.step },
    history: options.history,
    rounds: planned.summarized,
    journal: options.journal,
    ...(options.turn === undefined ? {} : { turn: options.turn }),
    pieceBytes: pieceBytes(options.policy),
    summaryBytes: summaryBytes(options.policy)
  })
  if (summary.recovered) yield* Observability.annotate("tessera.compaction.recovered", true)
  const { volume, path, size, sha256 } = summary.staged
  return History.summarizeLeadingRounds(options.history, planned.summarized.length, {
    parts: summary.parts,
    text: summary.text,
    file: { volume, path, size, sha256 }
  })
}, Observability.withSpan("Compaction.compact"))

/** One summary: what it replaces, where it goes, and how large its requests and its text may be. */
export interface SummaryRun {
  /** Names the caller in a refusal. */
  readonly entry: string
  readonly key: PrivateSummaries.StagingKey
  /** The history whose task and previous summary the summary builds on. */
  readonly history: History.History
  /** The rounds it replaces, oldest first. */
  readonly rounds: ReadonlyArray<ReadonlyArray<Part>>
  readonly journal: Option.Option<Journal["Service"]>
  readonly turn?: number
  readonly pieceBytes: number
  readonly summaryBytes?: number
}

/**
 * The one path of a summary, for compaction and the public summary entries
 * alike: the writer admitted before anything is written, journaled or sent;
 * with a journal, a summary a crash left staged for these very inputs is
 * adopted (`recovered`, no request sent) and any other leftover superseded;
 * then `SummaryStarted`, the summary requests (journaled), and the one
 * write ({@link publish}).
 */
export const summarizeRounds = Effect.fnUntraced(function* (run: SummaryRun) {
  const key = run.key
  const previousSummary = History.summaryText(run.history)
  const turn = run.turn === undefined ? {} : { turn: run.turn }
  const summarizer = yield* Summarizer.current
  // The writer is admitted before the first summary request: a refusal costs no request.
  if (Option.isNone(run.journal)) yield* PrivateSummaries.admit(run.entry, run.journal)
  else {
    const journal = run.journal.value
    // The volume's registration (a file read) is checked while the inputs are hashed and a leftover summary is
    // looked for (a read that checks only the capability's binding); neither outcome is used unless admission
    // passes, and a failed look is reported only then, so admission's refusal still comes first.
    const [, inputsSha256, found] = yield* Effect.all(
      [
        PrivateSummaries.admit(run.entry, run.journal),
        summaryInputsDigest(run.history.task, previousSummary, run.rounds, run.pieceBytes, summarizer.instruction),
        Effect.result(PrivateSummaries.readStaged(key, run.journal))
      ],
      { concurrency: "unbounded" }
    )
    const leftover = yield* recoverLeftover(
      journal,
      Result.isFailure(found) ? yield* Effect.fail(found.failure) : found.success,
      key,
      inputsSha256,
      turn
    )
    if (Option.isSome(leftover)) return { ...leftover.value, recovered: true }
    yield* journal.append({ _tag: "SummaryStarted", ...turn, step: key.step, operation: key.operation, inputsSha256 })
  }
  const model = summarizer.model
  const generate = Option.isSome(run.journal)
    ? journaledSummaryRequests(model.generate, run.journal.value, { operation: key.operation, step: key.step, ...turn })
    : model.generate
  const summary = yield* summarizeWith(generate, {
    instruction: summarizer.instruction,
    task: run.history.task,
    previousSummary,
    rounds: run.rounds,
    pieceBytes: run.pieceBytes,
    ...(run.summaryBytes === undefined ? {} : { summaryBytes: run.summaryBytes })
  })
  const published = yield* publish({
    key,
    summary: summary.text,
    ...(run.summaryBytes === undefined ? {} : { maxBytes: run.summaryBytes }),
    requests: summary.requests,
    journal: run.journal,
    ...turn
  })
  return { ...published, recovered: false }
})

/**
 * The size of `history`'s task in the policy's unit, when it alone is over
 * the policy's limit: every request carries the task and compaction never
 * replaces it, so no summary can bring a request under the limit.
 *
 * @since 0.1.0
 * @category planning
 */
export const taskOverLimit = (history: History.History, policy: Threshold): Option.Option<number> => {
  const size = measureParts(policy.measure, history.task)
  return size > policy.limit ? Option.some(size) : Option.none()
}

// The journals that already carry the warning. Keyed by the journal's service value, which lives as long
// as the journal is open, so harnesses that bind a fresh set of hooks for every step still warn once.
const warnedJournals = new WeakSet<object>()

/**
 * A warning that is journaled at most once per open journal: the first time
 * it is run with a history whose task is over the limit
 * ({@link taskOverLimit}) it appends a `CompactionWarning` entry; afterwards
 * it does nothing, whichever hooks run it (compaction's turn hooks do,
 * before every model step). Reopening the journal (a new process) reports
 * it again, once.
 *
 * @since 0.1.0
 * @category warnings
 */
export const warnTaskOverLimit =
  (journal: Journal["Service"], policy: Threshold) =>
  (
    history: History.History,
    at: { readonly turn?: number; readonly step?: number }
  ): Effect.Effect<void, JournalIoError | JournalSequenceError> =>
    Effect.suspend(() => {
      if (warnedJournals.has(journal)) return Effect.void
      const over = taskOverLimit(history, policy)
      if (Option.isNone(over)) return Effect.void
      return Effect.asVoid(
        Effect.tap(
          journal.append({
            _tag: "CompactionWarning",
            ...(at.turn === undefined ? {} : { turn: at.turn }),
            ...(at.step === undefined ? {} : { step: at.step }),
            reason: "TaskOverLimit",
            measure: policy.measure,
            size: over.value,
            limit: policy.limit
          }),
          // Marked only once the entry is durable: a failed append is retried by the next step.
          () => Effect.sync(() => warnedJournals.add(journal))
        )
      )
    })

/**
 * The digest of what a summary is made from: the piece size, the task, the
 * previous summary and the rounds, as one request's hash chain (parts are
 * measured once and cached, so this costs little beyond the rounds' first
 * measure).
 */
const summaryInputsDigest = (
  task: ReadonlyArray<Part>,
  previousSummary: Option.Option<string>,
  rounds: ReadonlyArray<ReadonlyArray<Part>>,
  pieceBytes: number,
  instruction: string
): Effect.Effect<string> =>
  Effect.map(
    measureRequest({
      parts: [
        // A host's own instruction is an input of its summaries; the library's keeps the digests it always had.
        text(
          "system",
          instruction === defaultInstruction
            ? `summary inputs, pieces of ${pieceBytes} bytes`
            : `summary inputs, pieces of ${pieceBytes} bytes, instruction: ${instruction}`
        ),
        ...task,
        text(
          "user",
          Option.getOrElse(previousSummary, () => "")
        ),
        ...rounds.flat()
      ],
      tools: []
    }),
    (measure) => measure.sha256
  )

/**
 * A summary file already staged under `key` (an attempt that a crash or a
 * failure interrupted after staging it) is adopted when the journal's
 * `SummaryStarted` for the key recorded exactly these inputs (and, when the
 * journal recorded the staging, the file still has the recorded digest): the
 * journal then records it (`SummaryStaged` with `adopted`) if it had not, and
 * no summary request is sent. Otherwise it is superseded: the journal
 * records `SummarySuperseded` with the file's size and digest, and the file
 * is removed so the key can be staged again.
 */
const recoverLeftover = Effect.fnUntraced(function* (
  journal: Journal["Service"],
  found: Option.Option<{ readonly file: PrivateSummaries.StagedFile; readonly text: string }>,
  key: PrivateSummaries.StagingKey,
  inputsSha256: string,
  turn: { readonly turn?: number }
) {
  if (Option.isNone(found)) return Option.none<PublishedSummary>()
  const staged = found.value
  const record = (yield* journal.state).summaries.get(summaryKey(key.operation, key.step))
  const sameInputs = record?.inputsSha256 === inputsSha256
  const intact = record?.staged === undefined || record.staged.sha256 === staged.file.sha256
  const file = stagedFacts(staged.file, key, turn)
  if (sameInputs && intact) {
    if (record?.staged === undefined) yield* journal.append({ _tag: "SummaryStaged", ...file, adopted: true })
    return Option.some(publishedSummary(staged.file, staged.text))
  }
  yield* supersede(
    journal,
    key,
    file,
    !intact
      ? "the file is not the one the journal recorded"
      : record?.inputsSha256 === undefined
        ? "the journal records no inputs for this summary"
        : "it summarizes other inputs"
  )
  return Option.none<PublishedSummary>()
})

/** What an adopting or superseding entry says about the file staged under `key`. */
const stagedFacts = (
  file: PrivateSummaries.StagedFile,
  key: PrivateSummaries.StagingKey,
  turn: { readonly turn?: number }
) => ({
  ...turn,
  step: key.step,
  operation: key.operation,
  volume: file.volume,
  path: file.path,
  size: file.size,
  sha256: file.sha256
})

/** The one way a staged summary goes: the journal records why (`SummarySuperseded`), then the file is withdrawn. */
const supersede = Effect.fnUntraced(function* (
  journal: Journal["Service"],
  key: PrivateSummaries.StagingKey,
  file: ReturnType<typeof stagedFacts>,
  reason: string
) {
  yield* journal.append({ _tag: "SummarySuperseded", ...file, reason })
  yield* PrivateSummaries.withdraw(key)
})

/**
 * Before a summary-file turn's answer is staged under `key`: a file there
 * that the journal does not record as staged (a crash came between its
 * publication and `SummaryStaged`) is superseded, so the answer is staged
 * instead of refused `StagingConflict`. A staged summary the journal
 * records is left alone: a key holds one summary, and staging other bytes
 * there stays a conflict.
 */
export const supersedeUnrecorded = Effect.fnUntraced(function* (
  journal: Journal["Service"],
  key: PrivateSummaries.StagingKey,
  turn: { readonly turn?: number }
) {
  const found = yield* PrivateSummaries.readStaged(key, Option.some(journal))
  if (Option.isNone(found)) return
  if ((yield* journal.state).summaries.get(summaryKey(key.operation, key.step))?.staged !== undefined) return
  yield* supersede(journal, key, stagedFacts(found.value.file, key, turn), "the journal records no staging of it")
})

/**
 * The parts that stand in for compacted history: a reference to the staged
 * summary file, then its (scrubbed) text. A transcript stores a summary of
 * this shape as its reference and rebuilds the parts with this function.
 *
 * @since 0.1.0
 * @category publishing
 */
export const summaryParts = (
  file: { readonly volume: Volume.VolumeRef; readonly path: string },
  scrubbed: string
): ReadonlyArray<Part> => [
  fileReference({ role: "user", volume: file.volume, path: file.path, mediaType: "text/plain" }),
  text("user", `Summary of the earlier work, from ${file.path}:\n${scrubbed}`)
]

const publishedSummary = (staged: PrivateSummaries.StagedFile, scrubbed: string): PublishedSummary => ({
  staged,
  text: scrubbed,
  parts: summaryParts(staged, scrubbed)
})
