/**
 * Compaction: replacing old history by a summary the model writes, staged
 * as a private file, and the policies that say when.
 *
 * A policy is `Threshold` (compact once the next request measures more
 * than its limit) or `Disabled`. A `Threshold` policy needs a private writer
 * (summaries are private content): the entry gate refuses to arm one where
 * the task's private-summaries capability does not resolve, and the default
 * policy is `Threshold` only where it does.
 *
 * What a summary keeps is part of the contract:
 *
 * - the user's original task is in every request, summary requests included;
 * - each summary request carries the previous summary, so summaries build
 *   on each other instead of starting over;
 * - history larger than one summary request may carry is summarized in
 *   bounded pieces, one request each, every piece building on the summary so
 *   far; nothing is dropped to keep only the tail;
 * - what the model wrote is held to the piece limit (the default inline
 *   limit) in summary requests, like a tool result is in the history: a tool
 *   call (id, name and input), the model's own text and a result's header,
 *   so its cost in summary requests is bounded by the policy, not by the
 *   payload. Only the summary request's rendering is cut: the history, the
 *   tool's input and the journal keep the call whole, and {@link compact}
 *   measures it as sent, so a huge call makes the request cross the limit and
 *   its round is summarized, cheaply, as soon as its results have reached the
 *   model;
 * - whole rounds are replaced, so a tool call and its result are never
 *   separated;
 * - text without line breaks is cut like any other (at grapheme
 *   boundaries), so it compacts too;
 * - the newest tool results reach the model before any summary replaces
 *   them, whatever `keepRecent` says: no round holding a result the last
 *   request did not carry ({@link SentRequest}), nor any round after it, is
 *   summarized;
 * - the summarized history's images and files (its `Media` parts) reach the
 *   summary request that covers them as those very parts, beside the text
 *   placeholder that marks where each was ({@link renderPart});
 * - a summary is at most the policy's summary limit long: a longer answer is
 *   cut, with a note, never kept whole;
 * - a task that alone measures over the limit is reported once per open
 *   journal, as a `CompactionWarning` journal entry.
 *
 * Compaction needs the `PrivateSummaries.PrivateSummaries` capability in
 * its type, and admits it (`PrivateSummaries.admit`: minted,
 * bound to the journal's task, its volume unchanged) before the first
 * summary request goes out: a refused writer costs no request.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as Compacting from "./internal/compacting.ts"
import * as Planning from "./internal/compactionPlan.ts"
import * as Policies from "./internal/compactionPolicy.ts"
import * as Summarizing from "./internal/summarizer.ts"
import * as SummaryRequests from "./internal/summaryRequests.ts"
import * as Tokenizing from "./internal/tokenizer.ts"
import type { Model, ModelError, ModelRequest, Part } from "./Model.ts"

// ---------------------------------------------------------------------------
// Policies
// ---------------------------------------------------------------------------

/**
 * How history size is measured: UTF-8 bytes, an estimated token count
 * (bytes / 4, rounded up; a provider-neutral estimate), or
 * `reportedTokens`: the input tokens the provider reported for the turn's
 * previous request, plus the estimate for what was added since, when that
 * request is a prefix of the next one; the estimate alone otherwise (no
 * report yet, a provider that reports none, a history just compacted).
 * Every other size (`keepRecent`, pieces, summaries) is estimated under
 * `reportedTokens` as under `estimatedTokens`.
 *
 * @since 0.1.0
 * @category policies
 */
export const SizeMeasure: typeof Policies.SizeMeasure = Policies.SizeMeasure
/**
 * @since 0.1.0
 * @category policies
 */
export type SizeMeasure = typeof SizeMeasure.Type

/**
 * Compact when the next request measures more than `limit`.
 *
 * - `keepRecent`: the most recent whole rounds are kept verbatim as long as
 *   together they measure at most this much; everything older is summarized.
 * - `pieceLimit`: the most history one summary request carries. Longer
 *   history is summarized in several requests, each building on the
 *   previous summary.
 * - `summaryLimit`: the longest summary kept; a longer answer is cut (with
 *   a note), never kept whole. Optional: the default is a quarter of
 *   `limit` (at least 1), which leaves most of a request for the task and
 *   the recent history.
 *
 * All the numbers are in the unit of `measure`. The newest tool results are
 * kept whatever `keepRecent` says until a request has carried them (see
 * {@link compact}).
 *
 * @since 0.1.0
 * @category policies
 */
export const Threshold: typeof Policies.Threshold = Policies.Threshold
/**
 * @since 0.1.0
 * @category policies
 */
export type Threshold = typeof Threshold.Type

/**
 * Never compact.
 *
 * @since 0.1.0
 * @category policies
 */
export const Disabled: typeof Policies.Disabled = Policies.Disabled
/**
 * @since 0.1.0
 * @category policies
 */
export type Disabled = typeof Disabled.Type

/**
 * A compaction policy, decodable from configuration: {@link Threshold} or
 * {@link Disabled}.
 *
 * @since 0.1.0
 * @category policies
 */
export const Policy: typeof Policies.Policy = Policies.Policy
/**
 * @since 0.1.0
 * @category policies
 */
export type Policy = typeof Policy.Type

/**
 * The defaults of {@link threshold}: compact past 100,000 estimated tokens,
 * keep up to 8,000 of recent history verbatim, summarize at most 50,000 per
 * summary request.
 *
 * @since 0.1.0
 * @category policies
 */
export const defaultThreshold: Threshold = Policies.defaultThreshold

/**
 * A threshold policy; omitted fields (or fields given as `undefined`) take
 * {@link defaultThreshold}'s values.
 *
 * @throws InvalidInput (entry `Compaction.threshold`) naming the field,
 * here, at construction, not mid-turn: for options that are not an object,
 * a number out of range or not an integer, an unknown `measure`, and a key
 * that is not one of the options (a misspelt `limt` would otherwise leave
 * the default limit in force without a word).
 * @example
 * ```ts
 * import { Compaction } from "@tessera/runtime"
 *
 * // Compact once the history crosses 20 000 bytes; the other fields keep `defaultThreshold`'s values.
 * export const policy = Compaction.threshold({ limit: 20_000 })
 *
 * // A misspelt or out-of-range option throws `InvalidInput` here, at construction, not mid-turn.
 * try {
 *   Compaction.threshold({ limit: -1 })
 * } catch (error) {
 *   console.log(String(error)) // names the field `limit`
 * }
 * ```
 *
 * @since 0.1.0
 * @category policies
 */
export const threshold: (options?: Partial<Omit<Threshold, "_tag">>) => Threshold = Policies.threshold

/**
 * The policy that never compacts. A task bound with it needs no private
 * writer at the gate.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness } from "@tessera/node"
 * import { Compaction } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * // A task whose history is never compacted: the gate then asks for no private writer.
 * export const bound = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     namespace: "research",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *   })
 *   return yield* harness.withTask(
 *     Schema.decodeUnknownSync(Ids.TaskId)("short-task"),
 *     (binding) => Effect.succeed(binding.policy._tag), // "Disabled"
 *     { policy: Compaction.disabled }
 *   )
 * })
 * ```
 *
 * @since 0.1.0
 * @category policies
 */
export const disabled: Disabled = Policies.disabled

// ---------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------

/**
 * The text a part contributes to a request's size, and to a summary
 * request's history. Media data is not rendered (only its type), and the
 * size of media is that rendering's: providers meter media separately. In a
 * summary request that rendering is a placeholder (`[media <type>]`): the
 * part itself travels beside the piece of history holding it.
 *
 * @since 0.1.0
 * @category measuring
 */
export const renderPart: (part: Part) => string = Planning.renderPart

/**
 * The size of some parts in the policy's unit (the sum of their
 * {@link renderPart} renderings, measured by `measure`).
 *
 * @since 0.1.0
 * @category measuring
 */
export const measureParts: (measure: SizeMeasure, parts: ReadonlyArray<Part>) => number = Planning.measureParts

/**
 * The provider's input-token count for one request: the request's parts
 * (the very objects sent) and the count it reported for them. Under
 * `reportedTokens`, a request whose parts start with these very objects
 * counts them as reported and estimates only the rest.
 *
 * @since 0.1.0
 * @category measuring
 */
export type ReportedInput = Planning.ReportedInput

/**
 * The parts of the last request the model was sent (and answered), for
 * {@link compact}'s rule that no tool result is summarized before the model
 * saw it: a result is seen when that request carried it (the same part, or
 * a result of the same call with the same content). Without one, every
 * result after the model's latest output is unseen.
 *
 * @since 0.1.0
 * @category measuring
 */
export type SentRequest = Planning.SentRequest

// ---------------------------------------------------------------------------
// Summarizing
// ---------------------------------------------------------------------------

/**
 * The instruction that opens every summary request, unless the host gives
 * its own ({@link summarizer}).
 *
 * @example
 * ```ts
 * import { Compaction } from "@tessera/runtime"
 *
 * // The host's own words, built on the library's.
 * export const terse = Compaction.summarizer({ instruction: `${Compaction.summaryInstruction} Use at most ten lines.` })
 * ```
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summaryInstruction: string = SummaryRequests.summaryInstruction

/**
 * Whether a request is a summary request (it opens with
 * {@link summaryInstruction}), for harnesses and scripted models that answer
 * summary requests differently from the turn's own.
 *
 * @since 0.1.0
 * @category summarizing
 */
export const isSummaryRequest: (request: ModelRequest) => boolean = SummaryRequests.isSummaryRequest

/**
 * {@link isSummaryRequest} for a host that gave its own instruction to
 * {@link summarizer}: whether a request opens with `instruction`.
 *
 * @since 0.1.0
 * @category summarizing
 */
export const isSummaryRequestFor: (instruction: string) => (request: ModelRequest) => boolean =
  SummaryRequests.isSummaryRequestFor

/**
 * Who writes the summaries of compaction and of the summary entries: the
 * system `instruction` that opens every summary request, and the `model`
 * that answers them (none: the turn's own `Model`). Provided by
 * {@link summarizer}; without it, the turn's model answers the library's
 * instruction. A custom instruction is an input of the summaries it writes:
 * a summary a crash left staged under another instruction is not adopted.
 *
 * @since 0.1.0
 * @category summarizing
 */
export { Summarizer, type SummarizerOptions, type SummarizerShape } from "./internal/summarizer.ts"

/**
 * The host's summarizer as a layer: `instruction` (a non-empty text; the
 * library's by default) and `model` (a `Model` layer, built once: a
 * different, cheaper model for summaries is common; the turn's own by
 * default). An empty instruction fails `InvalidInput` naming it when the
 * layer is built.
 *
 * @example
 * ```ts
 * import { Compaction, Model } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 *
 * // Summaries from their own (here scripted) model, asked in the host's words.
 * export const summaries = Compaction.summarizer({
 *   instruction: "Summarize the work so far in five bullet points for your own later use.",
 *   model: ScriptedModel.layer(() => Model.response({ text: "- the reports were fetched" }))
 * })
 * ```
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summarizer = Summarizing.layer

/**
 * The host's tokenizer, for the `tokenizer` measure: `count` gives the
 * tokens of a text (a part as it is rendered for the request), a
 * non-negative whole number (anything else is a defect naming the count).
 * A part is counted once per tokenizer. A policy measured by `tokenizer`
 * with none in scope fails `InvalidInput` (field `policy.measure`) when it
 * would compact, before any request. The runtime ships no tokenizer and
 * imports none: `gpt-tokenizer` (`^4.0.0`, the major Tessera's tests run
 * against) is an optional peer, installed only by a host that counts with
 * it ({@link tokenizer}).
 *
 * @since 0.1.0
 * @category measuring
 */
export { Tokenizer, type TokenizerShape } from "./internal/tokenizer.ts"

/**
 * The host's tokenizer as a layer, from a counting function: one of a
 * tokenizer package (the one the provider's model uses), or the host's own.
 * A count that throws is a defect of the compaction that asked for it.
 *
 * `gpt-tokenizer` (the optional peer; its `countTokens` counts with
 * `o200k_base`, the encoding of GPT-4o and later OpenAI models) is the one
 * Tessera's tests compact with. Its bare `countTokens` throws on a text
 * holding a special token's text (`<|endoftext|>`), as a tool result
 * quoting such a text would: with an empty `disallowedSpecial`, as below,
 * that text is counted as text.
 *
 * @example
 * ```ts
 * import { Compaction } from "@tessera/runtime"
 * import { countTokens } from "gpt-tokenizer"
 *
 * // gpt-tokenizer's count; a special token's text in a tool result counts as text instead of throwing.
 * export const tokens = Compaction.tokenizer((text) => countTokens(text, { disallowedSpecial: new Set() }))
 * export const policy = Compaction.threshold({ measure: "tokenizer", limit: 100_000 })
 * ```
 *
 * @since 0.1.0
 * @category measuring
 */
export const tokenizer = Tokenizing.layer

/**
 * What a summary is made of: the task, the summary so far, the rounds to
 * summarize and the most bytes of history one request may carry
 * (`pieceBytes`); with `summaryBytes`, the longest summary kept.
 *
 * @since 0.1.0
 * @category summarizing
 */
export type SummaryInput = SummaryRequests.SummaryInput

/**
 * A written summary and the number of summary requests it took.
 *
 * @since 0.1.0
 * @category summarizing
 */
export type SummaryOutcome = SummaryRequests.SummaryOutcome

/**
 * Asks the model for a summary of `rounds`, piece by piece. Sends exactly
 * one request per piece of at most `pieceBytes`, in order, each building on
 * the summary so far (starting from `previousSummary`); returns the final
 * summary text and how many requests were sent. What the model wrote is held
 * to the piece limit, so it costs a few requests per part at most, whatever
 * its size, and each request carries its piece's media as the history's own
 * parts. With `summaryBytes`, every answer is bounded (cut between
 * graphemes, with a note) before the next request builds on it. A request
 * that fails (an error or a defect) fails the summary with its error
 * scrubbed by the host's `ArtifactRedactor`, when one is provided, deeply:
 * the provider's text echoes the history being summarized.
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summarize: (input: SummaryInput) => Effect.Effect<SummaryOutcome, ModelError, Model> =
  SummaryRequests.summarize

// ---------------------------------------------------------------------------
// Publishing and compacting
// ---------------------------------------------------------------------------

/**
 * A published summary: the staged file, and the parts that stand in for the
 * history it covers (a reference to the file, then its text, rendered from
 * the scrubbed bytes that were stored).
 *
 * @since 0.1.0
 * @category publishing
 */
export type PublishedSummary = Compacting.PublishedSummary

/**
 * Scrubs a summary through the host's redactor (when one is provided; none
 * means stored verbatim, as for artifacts), stages it write-once on the
 * private volume, and records in the journal that it was staged (path, size,
 * digest; never the text). With `maxBytes`, the scrubbed text is bounded
 * after the scrub, which may lengthen it.
 *
 * @since 0.1.0
 * @category publishing
 */
export const publish: typeof Compacting.publish = Compacting.publish

/**
 * Requirements of {@link compact}.
 *
 * @since 0.1.0
 * @category compacting
 */
export type CompactServices = Compacting.CompactServices

/**
 * What {@link compact} works from: the history, the policy, where the
 * summary is staged (`operation`, `step`), the journal and turn to record
 * it in, and optionally the provider's count of the previous request
 * (`reported`, used under `reportedTokens`) and that request (`sent`).
 *
 * @since 0.1.0
 * @category compacting
 */
export type CompactOptions = Compacting.CompactOptions

/**
 * Compacts `history` when it crosses the policy's limit: summarizes the
 * planned rounds (all but the longest run of most recent whole rounds that
 * measures at most `keepRecent`, and never a round holding a tool result
 * the model has not seen, nor any after it), building on the history's
 * current summary, publishes the summary, and returns the history with those
 * rounds replaced by the summary's parts. Unchanged when under the limit or
 * when nothing is older than the kept rounds, and then without a span: it
 * runs before every model step, and a trace shows only the steps that
 * compacted. A summary a crash left staged is adopted when the journal
 * recorded the same inputs for it, and superseded otherwise.
 *
 * @since 0.1.0
 * @category compacting
 */
export const compact: typeof Compacting.compact = Compacting.compact
