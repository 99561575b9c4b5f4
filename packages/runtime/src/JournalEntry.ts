/**
 * The journal's vocabulary: every entry a task journal records, as Schemas.
 * One line of a journal file is one {@link Entry}, encoded as JSON
 * ({@link EntryLine}). Readers that only interpret journals (the inspector,
 * a host's own tooling) need this module and nothing of the writer's.
 *
 * Entries record *that* something happened and how big it was (sizes and
 * SHA-256 digests), never the bodies.
 *
 * @since 0.1.0
 */
import * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as Schema from "effect/Schema"
import { ApprovalDecided, ApprovalRequested, ChildAnswered, ChildDelegated } from "./internal/callEntries.ts"
import { callInput } from "./internal/callFields.ts"
import { Count, header, Ordinal, Sha256 } from "./internal/entryFields.ts"
import { sumUsage, type UsageTotal } from "./internal/usageTotal.ts"
import { FinishReason, Usage } from "./Model.ts"
import { ToolFailure } from "./Tool.ts"

/**
 * A turn began. Only one turn is open at a time.
 *
 * @since 0.1.0
 * @category entries
 */
export const TurnOpened = Schema.TaggedStruct("TurnOpened", {
  ...header,
  turn: Ordinal,
  task: Ids.TaskId,
  /**
   * The agent the task runs for, from the binding the turn was admitted
   * with (gated entries). The first one recorded is the journal's agent;
   * a turn for another agent cannot follow. A reader that does not know
   * the field ignores it.
   */
  agent: Schema.optionalKey(Ids.AgentId),
  /** Durable turns: the transcript record of the history the turn starts from (see `Transcript`). */
  transcript: Schema.optionalKey(Sha256),
  /**
   * Durable turns whose history record the redactor changed: that record's
   * digest again, so the journal (not the record) says the history was
   * redacted, and a resume does not skip the request check on a record's
   * word. A reader that does not know the field ignores it.
   */
  storedSha256: Schema.optionalKey(Sha256),
  /**
   * The host's redaction decision for the turn: `Scrubbed` when an
   * `ArtifactRedactor` was provided to it (bodies are scrubbed before they
   * are stored), `Verbatim` when none was (stored as written: a legitimate,
   * visible decision). Absent in journals from before the field.
   */
  redaction: Schema.optionalKey(Schema.Literals(["Scrubbed", "Verbatim"]))
})

/**
 * An unfinished turn is being continued (after a failure or a crash). A
 * request that was dispatched before it and never answered counts as lost,
 * unless `retryStep` says it is sent again.
 *
 * @since 0.1.0
 * @category entries
 */
export const TurnResumed = Schema.TaggedStruct("TurnResumed", {
  ...header,
  turn: Ordinal,
  /**
   * Present when the resumed turn sends its lost request again under the
   * same step number (a durable resume rebuilt the exact history it was
   * built from): the next `RequestDispatched` is this step, not the one
   * after. A reader that does not know the field ignores it and so refuses
   * that `RequestDispatched` as out of sequence, loudly.
   */
  retryStep: Schema.optionalKey(Ordinal)
})

/**
 * A model request left: how many parts, how many bytes, and a digest. Not
 * the body.
 *
 * Both are composed from per-part measures, so that a step costs work in
 * proportion to its new parts rather than to the whole history (a part is
 * measured once, when first sent), and a part's body (a text's `text`, a
 * tool result's `content`) is hashed once, as the text it is, not again
 * inside the part's JSON. With `c(x)` the canonical JSON of `x`
 * (`JSON.stringify`, a bigint written as `<digits>n`), `h(x)` the lowercase
 * hex SHA-256 of `x`'s UTF-8 bytes, `u(x)` their count, and `s(p)` the part
 * `p` with its body (when it has one) replaced by the text
 * `sha256:` + `h(body)`:
 *
 * - a part's digest is `d(p) = h(c(s(p)))`, and its size is the UTF-8
 *   length of `c(p)` with the body counted as `u(body)` between its quotes
 *   (escapes inside the body not expanded); a part without a body measures
 *   as `h(c(p))` and the UTF-8 length of `c(p)`.
 * - `size` is the byte length of `{"parts":[p1,p2,...],"tools":c(tools)}`
 *   with each part counted at its size: for a plain JSON request whose
 *   bodies need no escapes, exactly the length of `JSON.stringify(request)`.
 * - `sha256` is a hash chain: with `k0` the empty text and
 *   `ki = h(k(i-1) + d(pi))` for each part in request order, it is
 *   `h(kn + h(c(tools)))`. Two requests have the same digest exactly when
 *   they have the same parts in the same order and the same tools, and a
 *   step hashes only the parts that are new since the previous request.
 *
 * A journal may record a request under the earlier definition, before
 * bodies were measured on their own, `d(p) = h(c(p))`: a resume accepts a
 * request that matches either.
 *
 * @since 0.1.0
 * @category entries
 */
export const RequestDispatched = Schema.TaggedStruct("RequestDispatched", {
  ...header,
  turn: Ordinal,
  step: Ordinal,
  parts: Count,
  size: Count,
  sha256: Sha256,
  /** Durable turns: the transcript record of how hooks rewrote the history before this request, when they did. */
  transcript: Schema.optionalKey(Sha256),
  /**
   * Durable turns whose history record the redactor changed: that record's
   * digest again, so the journal (not the record) says the history was
   * redacted, and a resume does not skip the request check on a record's
   * word. A reader that does not know the field ignores it.
   */
  storedSha256: Schema.optionalKey(Sha256)
})

/**
 * A call the model asked for, by id and tool name.
 *
 * @since 0.1.0
 * @category entries
 */
export const CallRef = Schema.Struct({ callId: Schema.String, name: Schema.String })
/**
 * @since 0.1.0
 * @category entries
 */
export type CallRef = typeof CallRef.Type

/**
 * The model answered a request: size and digest of its text, and the calls
 * it asked for (no calls: the turn is answered). `usage` and `finishReason`
 * are the provider's, when it reported them; a task's token total is the sum
 * of the usage of these entries and of {@link SummaryRequestAnswered}.
 *
 * @since 0.1.0
 * @category entries
 */
export const ResponseReceived = Schema.TaggedStruct("ResponseReceived", {
  ...header,
  turn: Ordinal,
  step: Ordinal,
  textSize: Count,
  textSha256: Sha256,
  toolCalls: Schema.Array(CallRef),
  usage: Schema.optionalKey(Usage),
  finishReason: Schema.optionalKey(FinishReason),
  /** Durable turns: the transcript record of the response (text and calls with their inputs). */
  transcript: Schema.optionalKey(Sha256),
  /**
   * Durable turns whose response record the redactor changed: the digest of
   * the stored body (`Transcript.storedBodySha256`: text and calls as
   * stored), which a resume checks the record against in place of
   * `textSha256` and the calls' input digests (of what was sent, which the
   * scrubbed record no longer holds). A reader that does not know the
   * field ignores it (and does not check the record).
   */
  storedSha256: Schema.optionalKey(Sha256)
})

/**
 * The model answered one summary request (compaction or a summary entry):
 * which piece of how many, the size of the answer, and the provider's usage
 * and finish reason when it reported them. Never the text, which is private.
 *
 * @since 0.1.0
 * @category entries
 */
export const SummaryRequestAnswered = Schema.TaggedStruct("SummaryRequestAnswered", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  step: Schema.optionalKey(Ordinal),
  operation: Schema.String,
  piece: Ordinal,
  pieces: Ordinal,
  textSize: Count,
  usage: Schema.optionalKey(Usage),
  finishReason: Schema.optionalKey(FinishReason)
})

/**
 * A request got no usable response. The turn stays open.
 *
 * @since 0.1.0
 * @category entries
 */
export const ModelFailed = Schema.TaggedStruct("ModelFailed", {
  ...header,
  turn: Ordinal,
  step: Ordinal,
  reason: Schema.String,
  detail: Schema.String
})

/**
 * A tool call is about to run: size and digest of its JSON input.
 *
 * @since 0.1.0
 * @category entries
 */
export const ToolCalled = Schema.TaggedStruct("ToolCalled", { ...header, ...callInput })

/**
 * A tool call produced the result that enters the history: its size and
 * digest (after any offload replaced a large body by a pointer), whether it
 * is an error and, if so, why.
 *
 * @since 0.1.0
 * @category entries
 */
export const ToolResulted = Schema.TaggedStruct("ToolResulted", {
  ...header,
  turn: Ordinal,
  step: Ordinal,
  callId: Schema.String,
  name: Schema.String,
  isError: Schema.Boolean,
  failure: Schema.optionalKey(ToolFailure),
  size: Count,
  sha256: Sha256,
  /** Durable turns: the transcript record of the result the history holds (after offload and redaction). */
  transcript: Schema.optionalKey(Sha256),
  /**
   * Durable turns whose result record the redactor changed: the digest of
   * the stored content (`Transcript.storedBodySha256`), which a resume
   * checks the record against in place of `size`/`sha256` (of the content
   * that was sent, which the scrubbed record no longer holds). A reader
   * that does not know the field ignores it (and does not check the record).
   */
  storedSha256: Schema.optionalKey(Sha256)
})

/**
 * A turn ended with an answer.
 *
 * @since 0.1.0
 * @category entries
 */
export const TurnClosed = Schema.TaggedStruct("TurnClosed", { ...header, turn: Ordinal, steps: Count })

/**
 * An unfinished turn was given up on purpose.
 *
 * @since 0.1.0
 * @category entries
 */
export const TurnAbandoned = Schema.TaggedStruct("TurnAbandoned", {
  ...header,
  turn: Ordinal,
  steps: Count,
  reason: Schema.String
})

/**
 * Reopening found a last line without its newline (a crash mid-append) and
 * truncated the file back to `keptBytes`. `line` is the 1-based line number
 * the cut line had; `droppedBytes` and `droppedSha256` describe what was cut.
 *
 * @since 0.1.0
 * @category entries
 */
export const TruncationRecovered = Schema.TaggedStruct("TruncationRecovered", {
  ...header,
  line: Ordinal,
  keptBytes: Count,
  droppedBytes: Ordinal,
  droppedSha256: Sha256
})

/**
 * An operation (a turn, a summary, a binding) passed its entry gate.
 *
 * @since 0.1.0
 * @category entries
 */
export const Admission = Schema.TaggedStruct("Admission", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  operation: Schema.String,
  detail: Schema.String
})

/**
 * An operation was refused at its entry gate.
 *
 * @since 0.1.0
 * @category entries
 */
export const Rejection = Schema.TaggedStruct("Rejection", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  operation: Schema.String,
  reason: Schema.String,
  detail: Schema.String
})

/**
 * A summary was staged on a private volume. The summary itself is private
 * content and is never copied here.
 *
 * @since 0.1.0
 * @category entries
 */
export const SummaryStaged = Schema.TaggedStruct("SummaryStaged", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  step: Schema.optionalKey(Ordinal),
  operation: Schema.String,
  /** How many summary requests the model was sent to write it (one per piece of history). */
  requests: Schema.optionalKey(Count),
  volume: Volume.VolumeRef,
  path: Schema.String,
  size: Count,
  sha256: Sha256,
  /** True when the file was found staged (by an attempt a crash interrupted) and adopted, not written now. */
  adopted: Schema.optionalKey(Schema.Boolean)
})

/**
 * A summary is about to be written for a key: `inputsSha256` is the digest of
 * what it summarizes (the task, the previous summary, the rounds and the
 * piece size). A file found under the key after a crash is adopted only when
 * the inputs recorded here are the inputs of the summary being made again.
 *
 * @since 0.1.0
 * @category entries
 */
export const SummaryStarted = Schema.TaggedStruct("SummaryStarted", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  step: Ordinal,
  operation: Schema.String,
  inputsSha256: Sha256
})

/**
 * A staged summary was withdrawn on purpose: the file under the key
 * (described by `path`, `size`, `sha256`) was left by an interrupted attempt
 * whose inputs are not the ones being summarized now, and is removed so the
 * key can be staged again. `reason` says why it could not be adopted.
 *
 * @since 0.1.0
 * @category entries
 */
export const SummarySuperseded = Schema.TaggedStruct("SummarySuperseded", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  step: Ordinal,
  operation: Schema.String,
  volume: Volume.VolumeRef,
  path: Schema.String,
  size: Count,
  sha256: Sha256,
  reason: Schema.String
})

/**
 * The journal was cut back on purpose by `Journal.repair` to its longest valid
 * prefix: entries from the 1-based `line` on did not follow (another writer
 * interleaved its lines). `keptBytes` were kept; `droppedBytes` and
 * `droppedSha256` describe what was removed, and `detail` why the first
 * dropped line was refused.
 *
 * @since 0.1.0
 * @category entries
 */
export const JournalRepaired = Schema.TaggedStruct("JournalRepaired", {
  ...header,
  line: Ordinal,
  keptBytes: Count,
  droppedBytes: Ordinal,
  droppedSha256: Sha256,
  detail: Schema.String
})

/**
 * A large tool result was written to disk and replaced by a pointer.
 *
 * @since 0.1.0
 * @category entries
 */
export const ArtifactOffloaded = Schema.TaggedStruct("ArtifactOffloaded", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  step: Schema.optionalKey(Ordinal),
  callId: Schema.optionalKey(Schema.String),
  volume: Schema.optionalKey(Volume.VolumeRef),
  path: Schema.String,
  size: Count,
  sha256: Sha256,
  /**
   * Absent when the file was written under a free name. `Reused`: an
   * interrupted attempt had left exactly these bytes there; `Replaced`: it had
   * left other bytes, which were atomically replaced.
   */
  disposition: Schema.optionalKey(Schema.Literals(["Reused", "Replaced"]))
})

/**
 * Compaction cannot do what its policy asks, and says so once instead of
 * failing silently on every request. `TaskOverLimit`: the task's own parts
 * (system prompt, request, attachments), which every request carries and
 * compaction never replaces, measure `size`, over the policy's `limit`, so
 * every request will be over it whatever is summarized.
 *
 * @since 0.1.0
 * @category entries
 */
export const CompactionWarning = Schema.TaggedStruct("CompactionWarning", {
  ...header,
  turn: Schema.optionalKey(Ordinal),
  step: Schema.optionalKey(Ordinal),
  reason: Schema.Literals(["TaskOverLimit"]),
  measure: Schema.String,
  size: Count,
  limit: Count
})

export {
  /**
   * The host decided on a call awaiting approval: approved (it runs when the
   * turn continues) or rejected (the model receives an error result saying
   * so, with `note`), and who or what decided (`by`).
   *
   * @since 0.1.0
   * @category entries
   */
  ApprovalDecided,
  /**
   * Why a call waits for a person: the tool requires approval for this input
   * (`Tool`), the call was running when the process died and the tool is
   * not declared idempotent, so running it again is the host's decision
   * (`InFlight`), or the call (a delegation) ran and its children wait for
   * approvals of their own (`Delegated`: the decision goes on to them when
   * the call runs again, after either decision).
   *
   * @since 0.1.0
   * @category entries
   */
  ApprovalReason,
  /**
   * A call of the current step waits for the host's decision before it runs
   * (or, `Delegated`, before it goes on): its tool, the size and digest of
   * its input, why, and for a delegation the children's calls the decision
   * is for (`children`). The step ends as awaiting approval; nothing of the step runs until every such call is
   * decided. A reader that does not know this entry (nor `ApprovalDecided`)
   * refuses a journal holding one as corrupt, loudly; journals without
   * approvals stay readable by it.
   *
   * @since 0.1.0
   * @category entries
   */
  ApprovalRequested,
  /**
   * A delegated child task ended its turn (`outcome`: `Answered`,
   * `AwaitingApproval` of its own, `TimedOut`, or `Failed` where a host ran
   * it as a task of its own): the size and digest of the
   * answer the call's result carries, the usage the child's journal records,
   * and each file it published (`published`: name, size, digest, as its
   * journal recorded them and its output volume held them). A call run again
   * on resume records it again; the last one stands.
   *
   * @since 0.1.0
   * @category entries
   */
  ChildAnswered,
  /**
   * A call of the current step (`Delegation`'s `delegate`) runs a sub-task
   * as child task `task` of agent `agent`, whose journal, scope and private
   * volume are its own, with `output` its output binding (the volume it
   * publishes to, when it has one). Recorded each time the call starts or
   * resumes the child, once it is bound and before its first request.
   *
   * @since 0.1.0
   * @category entries
   */
  ChildDelegated
} from "./internal/callEntries.ts"

/**
 * Any journal entry.
 *
 * @since 0.1.0
 * @category entries
 */
export const Entry = Schema.Union([
  TurnOpened,
  TurnResumed,
  RequestDispatched,
  ResponseReceived,
  ModelFailed,
  ToolCalled,
  ToolResulted,
  TurnClosed,
  TurnAbandoned,
  TruncationRecovered,
  Admission,
  Rejection,
  SummaryStaged,
  ArtifactOffloaded,
  CompactionWarning,
  SummaryStarted,
  SummarySuperseded,
  JournalRepaired,
  SummaryRequestAnswered,
  ApprovalRequested,
  ApprovalDecided,
  ChildDelegated,
  ChildAnswered
])
/**
 * Any journal entry, by this name wherever a signature takes or returns one.
 *
 * @since 0.1.0
 * @category entries
 */
// `Exclude<_, never>` keeps every member and makes TypeScript name the union `Entry` wherever it appears: a bare
// `typeof Entry.Type` is the schema's anonymous union, which signatures (and the API reference) spell out in full.
export type Entry = Exclude<typeof Entry.Type, never>

/**
 * An entry as a caller hands it to `Journal.JournalService.append`: the journal
 * fills in `seq` and `at`.
 *
 * @since 0.1.0
 * @category entries
 */
export type EntryInput = Entry extends infer E ? (E extends Entry ? Omit<E, "seq" | "at"> : never) : never

/**
 * One line of the file: an entry encoded as JSON.
 *
 * @since 0.1.0
 * @category entries
 */
export const EntryLine = Schema.fromJsonString(Entry)

export type {
  /**
   * What a delegated child's journal recorded its requests cost, as the
   * parent's last {@link ChildAnswered} for it says.
   *
   * @since 0.1.0
   * @category usage
   */
  ChildUsage,
  /**
   * What a journal records a task's model requests cost: how many responses
   * it holds (turn steps and summary requests), how many of them reported
   * usage, and the sum of the usage they reported (`usage`: its
   * {@link ResponseReceived} and {@link SummaryRequestAnswered} entries; a
   * count is absent when no entry reported it); its delegated children's,
   * itemized (`children`, from each child's last {@link ChildAnswered}); and
   * the sum of both (`withChildren`).
   *
   * @since 0.1.0
   * @category usage
   */
  UsageTotal
} from "./internal/usageTotal.ts"

/**
 * The {@link UsageTotal} of a journal's entries.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Journal, JournalEntry } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * // A task's tokens, summary requests included: every response the journal recorded, with what its provider reported.
 * const program = Effect.gen(function* () {
 *   const entries = yield* Journal.readEntries({
 *     folder: "/srv/tessera/journals",
 *     task: Schema.decodeUnknownSync(Ids.TaskId)("survey-1")
 *   })
 *   const total = JournalEntry.totalUsage(entries)
 *   console.log(
 *     `${total.usage.inputTokens ?? 0} in, ${total.usage.outputTokens ?? 0} out;` +
 *       ` ${total.reported} of ${total.responses} responses reported usage`
 *   )
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category usage
 */
export const totalUsage = (entries: Iterable<Entry>): UsageTotal => sumUsage(entries)
