/**
 * Compaction: replacing old history by a summary the model writes, staged
 * as a private file.
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
 *   call (id, name and input), the model's own text and a result's header
 *   (see {@link summaryPieces}), so its cost in summary requests is bounded
 *   by the policy, not by the payload. Only the summary request's rendering
 *   is cut: the history, the tool's input and the journal keep the call
 *   whole, and {@link plan} measures it as sent, so a huge call makes the
 *   request cross the limit and its round is summarized, cheaply, as soon as
 *   its results have reached the model;
 * - whole rounds are replaced, so a tool call and its result are never
 *   separated;
 * - text without line breaks is cut like any other (at grapheme
 *   boundaries), so it compacts too;
 * - the newest tool results reach the model before any summary replaces
 *   them, whatever `keepRecent` says (see {@link plan});
 * - the summarized history's images and files (its `Media` parts) reach the
 *   summary request that covers them as those very parts, beside the text
 *   placeholder that marks where each was (see {@link summaryHistoryPieces});
 * - a summary is at most the policy's summary limit long: a longer answer is
 *   cut, with a note, never kept whole;
 * - a task that alone measures over the limit is reported once, as a
 *   `CompactionWarning` journal entry (see {@link warnTaskOverLimit}).
 *
 * Compaction needs the {@link PrivateSummaries.PrivateSummaries}
 * capability in its type, and admits it (`PrivateSummaries.admit`: minted,
 * bound to the journal's task, its volume unchanged) before the first
 * summary request goes out: a refused writer costs no request.
 *
 * @since 0.1.0
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as CompactionPolicy from "./CompactionPolicy.ts"
import * as History from "./History.ts"
import * as InlineLimit from "./InlineLimit.ts"
import { cutPieces, cutWithNote, type SizedPiece } from "./internal/boundedText.ts"
import { measureRequest, rememberedBodySize } from "./internal/digest.ts"
import { scrubFailures } from "./internal/scrub.ts"
import { type Journal, type JournalIOError, type JournalSequenceError, summaryKey } from "./Journal.ts"
import type { MediaPart, ModelError, ModelRequest, ModelResponse, Part } from "./Model.ts"
import { fileReference, Model, text } from "./Model.ts"
import * as Observability from "./Observability.ts"
import * as PrivateStaging from "./PrivateStaging.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"

/**
 * The text a part contributes to a request's size, and to a summary
 * request's history. Media data is not rendered (only its type), and the
 * size of media is that rendering's: providers meter media separately. In a
 * summary request that rendering is a placeholder: the part itself travels
 * beside the piece of history holding it ({@link summaryHistoryPieces}).
 *
 * @since 0.1.0
 * @category measuring
 */
export const renderPart = (part: Part): string => {
  const [frame, body] = renderedPieces(part)
  return frame + body
}

/**
 * A part's rendering as a short frame followed by its body (the text, the
 * tool result's content), so that the size can be counted on the two as
 * they are: concatenating them first would copy a large body only to be
 * counted.
 */
const renderedPieces = (part: Part): readonly [frame: string, body: string] => {
  switch (part._tag) {
    case "Text":
      return [`[${part.role}] `, part.text]
    case "ToolCall":
      return [`[tool call ${part.id} ${part.name}] `, JSON.stringify(part.input)]
    case "ToolResult":
      return [`[tool result ${part.callId} ${part.name}${part.isError ? " (error)" : ""}] `, part.content]
    case "FileReference":
      return [`[file ${part.volume.store}/${part.volume.volume}:${part.path} ${part.mediaType}]`, ""]
    case "Media":
      return [`[media ${part.mediaType}]`, ""]
  }
}

/**
 * The size of some parts in the policy's unit.
 *
 * @since 0.1.0
 * @category measuring
 */
export const measureParts = (measure: CompactionPolicy.SizeMeasure, parts: ReadonlyArray<Part>): number =>
  parts.reduce((total, part) => total + CompactionPolicy.fromBytes(measure, renderedBytes(part)), 0)

/**
 * The provider's input-token count for one request: the request's parts
 * (the very objects sent) and the count it reported for them.
 *
 * @since 0.1.0
 * @category measuring
 */
export interface ReportedInput {
  readonly parts: ReadonlyArray<Part>
  readonly inputTokens: number
}

/**
 * The size of the request `parts` make, in the policy's unit. Under
 * `reportedTokens`, when `reported` was measured on a prefix of `parts`
 * (the same part objects, in order), that prefix counts as the provider
 * reported it and only the rest is estimated; otherwise every part is
 * estimated ({@link measureParts}).
 *
 * @since 0.1.0
 * @category measuring
 */
export const measureRequestParts = (
  measure: CompactionPolicy.SizeMeasure,
  parts: ReadonlyArray<Part>,
  reported?: ReportedInput
): number => {
  if (measure !== "reportedTokens" || reported === undefined || !isPrefix(reported.parts, parts)) {
    return measureParts(measure, parts)
  }
  return reported.inputTokens + measureParts(measure, parts.slice(reported.parts.length))
}

const isPrefix = (prefix: ReadonlyArray<Part>, parts: ReadonlyArray<Part>): boolean => {
  if (prefix.length > parts.length) return false
  for (let index = 0; index < prefix.length; index++) if (prefix[index] !== parts[index]) return false
  return true
}

// Parts are immutable values that a history keeps reusing, so each one is
// rendered and counted once, not once per model step.
const renderedSizes = new WeakMap<Part, number>()

const renderedBytes = (part: Part): number => {
  const known = renderedSizes.get(part)
  if (known !== undefined) return known
  const [frame, body] = renderedPieces(part)
  // A text's or a result's body is rendered as it is: its size is its UTF-8 size, measured already when remembered.
  const bodyBytes = part._tag === "Text" || part._tag === "ToolResult" ? rememberedBodySize(part) : undefined
  const bytes = ArtifactPointer.utf8Length(frame) + (bodyBytes ?? ArtifactPointer.utf8Length(body))
  renderedSizes.set(part, bytes)
  return bytes
}

/**
 * What to compact: the leading rounds to summarize, and how many there are.
 * The recent rounds (those after them) stay verbatim.
 *
 * @since 0.1.0
 * @category planning
 */
export interface CompactionPlan {
  readonly summarized: ReadonlyArray<ReadonlyArray<Part>>
  readonly keptRounds: number
}

/**
 * Whether the newest of `rounds` ends with tool results: the round-position
 * reading of "not seen by the model", which misses results followed by a
 * queued message (a steering message lands in a round of its own). Kept
 * for callers that test it; {@link plan} decides by {@link unseenFrom}.
 *
 * @since 0.1.0
 * @category planning
 */
export const endsWithUnseenResults = (rounds: ReadonlyArray<ReadonlyArray<Part>>): boolean =>
  rounds.at(-1)?.at(-1)?._tag === "ToolResult"

/**
 * The parts of the last request the model was sent (and answered), for
 * {@link plan}'s rule that no tool result is summarized before the model
 * saw it.
 *
 * @since 0.1.0
 * @category planning
 */
export interface SentRequest {
  readonly parts: ReadonlyArray<Part>
}

/**
 * The index of the first of `rounds` holding a tool result the model has
 * not seen (`rounds.length` when there is none). With `sent`, a result is
 * seen when that request carried it (the same part, or a result of the same
 * call with the same content: adapters rebuild their parts for every
 * request); whatever was queued after it (a user's steering message) does
 * not change that. Without `sent` (no request answered yet where these
 * hooks can tell), every result after the model's latest output (its text
 * or a tool call) is unseen: that output answered the last request it
 * received, and the results came after it. A request that failed may have
 * carried a result counted unseen here; carrying it again costs nothing.
 *
 * @since 0.1.0
 * @category planning
 */
export const unseenFrom = (rounds: ReadonlyArray<ReadonlyArray<Part>>, sent?: SentRequest): number => {
  const seen = sent === undefined ? undefined : sentResults(sent.parts)
  let afterOutput = true
  let first = rounds.length
  for (let index = rounds.length - 1; index >= 0; index--) {
    const round = rounds[index] ?? []
    for (let at = round.length - 1; at >= 0; at--) {
      const part = round[at] as Part
      if (part._tag === "ToolCall" || (part._tag === "Text" && part.role === "assistant")) afterOutput = false
      if (part._tag !== "ToolResult") continue
      const unseen = seen === undefined ? afterOutput : !carried(seen, part)
      if (unseen) first = index
    }
  }
  return first
}

/** The tool results a request carried: the parts themselves, and each call's contents. */
interface SentResults {
  readonly parts: ReadonlySet<Part>
  readonly contents: ReadonlyMap<string, ReadonlySet<string>>
}

const sentResults = (parts: ReadonlyArray<Part>): SentResults => {
  const own = new Set<Part>()
  const contents = new Map<string, Set<string>>()
  for (const part of parts) {
    if (part._tag !== "ToolResult") continue
    own.add(part)
    const known = contents.get(part.callId)
    if (known === undefined) contents.set(part.callId, new Set([part.content]))
    else known.add(part.content)
  }
  return { parts: own, contents }
}

const carried = (sent: SentResults, part: Extract<Part, { readonly _tag: "ToolResult" }>): boolean =>
  sent.parts.has(part) || sent.contents.get(part.callId)?.has(part.content) === true

/**
 * Decides whether the request `history` would produce crosses the policy's
 * limit and, if so, which rounds to summarize: all but the longest run of
 * most recent whole rounds that measures at most `keepRecent`, and never a
 * round holding a tool result the model has not seen ({@link unseenFrom}:
 * by `sent`, the last request the model was sent, when given), nor any
 * round after it: those are kept whatever their size, so every tool result
 * is in at least one request (whole, as an offload pointer, or cut to the
 * inline limit) before a summary replaces it, even when a queued message
 * followed it. Their size counts against `keepRecent`. `None` when under
 * the limit or when there is nothing older than the kept rounds. The
 * request is measured by {@link measureRequestParts} (with `reported`, the
 * provider's count of the previous request, under `reportedTokens`).
 *
 * @since 0.1.0
 * @category planning
 */
export const plan = (
  history: History.History,
  policy: CompactionPolicy.Threshold,
  reported?: ReportedInput,
  sent?: SentRequest
): Option.Option<CompactionPlan> => {
  if (measureRequestParts(policy.measure, History.toParts(history), reported) <= policy.limit) return Option.none()
  const all = History.rounds(history)
  const firstUnseen = unseenFrom(all, sent)
  let kept = all.length - firstUnseen
  let keptSize = measureParts(policy.measure, all.slice(firstUnseen).flat())
  for (let index = firstUnseen - 1; index >= 0; index--) {
    const size = measureParts(policy.measure, all[index] ?? [])
    if (keptSize + size > policy.keepRecent) break
    keptSize += size
    kept++
  }
  const summarized = all.slice(0, all.length - kept)
  return summarized.length === 0 ? Option.none() : Option.some({ summarized, keptRounds: kept })
}

/**
 * Cuts `body` into pieces of at most `maxBytes` UTF-8 bytes that join back
 * to `body` exactly. Pieces end at grapheme boundaries, so a grapheme
 * cluster that fits in a piece is never split; a cluster longer than
 * `maxBytes` (a base with a thousand combining marks, say) gets pieces of
 * its own, cut between code points: the bound wins over the cluster, and no
 * surrogate pair is ever split. The one case the bound cannot hold: with
 * `maxBytes` below 4, a single code point wider than it is a piece alone.
 * Line breaks play no part, so a body without any is cut like any other.
 * Linear in the body: graphemes are told apart only around each cut.
 *
 * @since 0.1.0
 * @category planning
 */
export const cutText = (body: string, maxBytes: number): ReadonlyArray<string> =>
  cutPieces(body, maxBytes).map((piece) => piece.text)

/**
 * Groups the rendered rounds into pieces of at most `maxBytes` each: whole
 * rounds where they fit, a round too large for one piece cut across several.
 * Every byte of history, rendered verbatim ({@link renderPart}), lands in
 * exactly one piece, in order. Summary requests carry
 * {@link summaryPieces}, which hold what the model wrote to the limit.
 *
 * @since 0.1.0
 * @category planning
 */
export const pieces = (rounds: ReadonlyArray<ReadonlyArray<Part>>, maxBytes: number): ReadonlyArray<string> =>
  sizedPieces(rounds, maxBytes, verbatim).map((piece) => piece.text)

/**
 * The pieces of history the summary requests for `rounds` carry, one request
 * each: grouped as {@link pieces} groups them, of at most `maxBytes` each,
 * but with every part the model wrote held to `maxBytes - 1` bytes (so that
 * with its line break it fits one piece) by `InlineLimit.limitRendered`: a
 * tool call (id, name and input rendered together), the model's own text,
 * and a tool result's header (the call's id and name, echoed; its content
 * was held to the inline limit before it entered the history). The host's
 * texts (user, system), file references and media are rendered whole. A part
 * cut this way ends with a note giving its full size.
 *
 * So a round costs at most a few pieces per part, whatever the model put in
 * it: a 50 MB argument no more than a result cut to the inline limit.
 *
 * These are the texts of {@link summaryHistoryPieces}, which also says which
 * media each piece's request carries.
 *
 * @since 0.1.0
 * @category planning
 */
export const summaryPieces = (rounds: ReadonlyArray<ReadonlyArray<Part>>, maxBytes: number): ReadonlyArray<string> =>
  sizedPieces(rounds, maxBytes, summaryRendering(maxBytes)).map((piece) => piece.text)

/**
 * One summary request's share of the history: its piece of text, the
 * piece's UTF-8 size, and the history's `Media` parts whose placeholders
 * (`[media <type>]`, {@link renderPart}) the piece holds.
 *
 * @since 0.1.0
 * @category planning
 */
export interface SummaryHistoryPiece {
  readonly text: string
  readonly bytes: number
  /** The very part objects of the history, in the order of their placeholders. */
  readonly media: ReadonlyArray<MediaPart>
}

/**
 * The pieces summary requests carry ({@link summaryPieces}: the same texts,
 * in the same order), each with the media of the history it covers, so that
 * the summarizer sees an image or a file the conversation held rather than
 * only its placeholder. Every `Media` part of `rounds` is in exactly one
 * piece's `media`, as the same object: the piece holding its placeholder,
 * or, for a round cut across pieces, the piece where its placeholder starts.
 * Media are not counted in `bytes` (only their placeholders are, as
 * {@link measureParts} counts them): providers meter media apart from text,
 * so a piece's media are bounded by what the history held, not by
 * `maxBytes`. File references (`FileReference`) stay text: what they point
 * to is not read. The same rounds and `maxBytes` give the same pieces and
 * the same media, so a resumed summary sends the requests the uninterrupted
 * one would have.
 *
 * @since 0.1.0
 * @category planning
 */
export const summaryHistoryPieces = (
  rounds: ReadonlyArray<ReadonlyArray<Part>>,
  maxBytes: number
): ReadonlyArray<SummaryHistoryPiece> => sizedPieces(rounds, maxBytes, summaryRendering(maxBytes))

/** How the grouping renders a part, with the rendering's UTF-8 size. */
type PartRendering = (part: Part) => SizedPiece

const verbatim: PartRendering = (part) => ({ text: renderPart(part), bytes: renderedBytes(part) })

/** A part as summary requests of `pieceBytes` render it: with its line break, it fits one piece. */
const summaryRendering = (pieceBytes: number): PartRendering => heldTo(Math.max(0, pieceBytes - 1))

/** A part with what the model wrote held to `maxBytes`: see {@link summaryPieces}. */
const heldTo =
  (maxBytes: number): PartRendering =>
  (part) => {
    // The size as sent is measured (and remembered) already: a part within the limit is rendered as it is.
    const bytes = renderedBytes(part)
    if (bytes <= maxBytes) return { text: renderPart(part), bytes }
    switch (part._tag) {
      case "ToolCall":
        return InlineLimit.limitRendered(maxBytes, "tool call", renderPart(part)) ?? verbatim(part)
      case "Text":
        return part.role === "assistant"
          ? (InlineLimit.limitRendered(maxBytes, "assistant text", renderPart(part)) ?? verbatim(part))
          : verbatim(part)
      case "ToolResult": {
        const [frame, body] = renderedPieces(part)
        const header = InlineLimit.limitRendered(maxBytes, "tool result header", frame)
        if (header === undefined) return verbatim(part)
        return { text: header.text + body, bytes: header.bytes + bytes - ArtifactPointer.utf8Length(frame) }
      }
      case "FileReference":
      case "Media":
        return verbatim(part)
    }
  }

/** A media part of a round, and where its placeholder starts in the round's rendering (a UTF-16 index). */
interface PlacedMedia {
  readonly part: MediaPart
  readonly at: number
}

/**
 * The pieces a round too large for one piece was cut into, each with the
 * media whose placeholder starts in it: the pieces join back to the round's
 * rendering, so a placeholder's index falls in exactly one of them.
 */
const withPlacedMedia = (
  cut: ReadonlyArray<SizedPiece>,
  media: ReadonlyArray<PlacedMedia>
): Array<SummaryHistoryPiece> => {
  const out: Array<SummaryHistoryPiece> = []
  let start = 0
  let next = 0
  for (const piece of cut) {
    const end = start + piece.text.length
    const own: Array<MediaPart> = []
    while (next < media.length && (media[next] as PlacedMedia).at < end) own.push((media[next++] as PlacedMedia).part)
    out.push({ text: piece.text, bytes: piece.bytes, media: own })
    start = end
  }
  return out
}

// {@link pieces} with each piece's UTF-8 length, which the grouping counts anyway: a summary request's span reports
// it without walking the piece again (hundreds of kilobytes of text per request). And with each piece's media
// (see {@link summaryHistoryPieces}), found while rendering: the parts are walked once either way.
const sizedPieces = (
  rounds: ReadonlyArray<ReadonlyArray<Part>>,
  maxBytes: number,
  render: PartRendering
): Array<SummaryHistoryPiece> => {
  const out: Array<SummaryHistoryPiece> = []
  let current = ""
  let currentBytes = 0
  let currentMedia: Array<MediaPart> = []
  for (const round of rounds) {
    // Concatenated, not joined: a join copies every result into a new string, which for history that a
    // tool built as a tree of concatenations means walking that tree; the request's reader flattens it once.
    let rendered = ""
    // The parts' sizes come with their renderings, plus one newline after each: no need to count them again.
    let bytes = 0
    const media: Array<PlacedMedia> = []
    for (const part of round) {
      const rendering = render(part)
      // A string's length is known without flattening it: placing a placeholder costs nothing.
      if (part._tag === "Media") media.push({ part, at: rendered.length })
      rendered += `${rendering.text}\n`
      bytes += rendering.bytes + 1
    }
    if (currentBytes + bytes <= maxBytes) {
      current += rendered
      currentBytes += bytes
      for (const placed of media) currentMedia.push(placed.part)
      continue
    }
    if (current.length > 0) out.push({ text: current, bytes: currentBytes, media: currentMedia })
    current = ""
    currentBytes = 0
    currentMedia = []
    if (bytes <= maxBytes) {
      current = rendered
      currentBytes = bytes
      currentMedia = media.map((placed) => placed.part)
    } else out.push(...withPlacedMedia(cutPieces(rendered, maxBytes), media))
  }
  if (current.length > 0) out.push({ text: current, bytes: currentBytes, media: currentMedia })
  return out
}

/**
 * The instruction that opens every summary request.
 *
 * @since 0.1.0
 * @category requests
 */
export const summaryInstruction =
  "Summarize the work so far for your own later use: decisions, facts found, open questions and next steps. " +
  "Build on the previous summary when one is given; do not drop what it established."

/**
 * Whether a request is a summary request (it opens with
 * {@link summaryInstruction}), for harnesses and scripted models that answer
 * summary requests differently from the turn's own.
 *
 * @since 0.1.0
 * @category requests
 */
export const isSummaryRequest = (request: ModelRequest): boolean => {
  const first = request.parts[0]
  return first?._tag === "Text" && first.role === "system" && first.text === summaryInstruction
}

/**
 * One summary request: the instruction, the user's original task, the
 * previous summary (if any) and one piece of history, last. With `media`
 * (the piece's own, {@link summaryHistoryPieces}), those parts, as given,
 * come just before the piece, whose opening line then says how many there
 * are and that they follow its `[media <type>]` placeholders in order;
 * without (or with none), the request is the one it always was.
 *
 * @since 0.1.0
 * @category requests
 */
export const summaryRequest = (options: {
  readonly task: ReadonlyArray<Part>
  readonly previousSummary: Option.Option<string>
  readonly piece: string
  readonly index: number
  readonly count: number
  /** The media the piece's placeholders stand for, sent as native parts (since 0.5.0). */
  readonly media?: ReadonlyArray<MediaPart>
}): ModelRequest => {
  const media = options.media ?? []
  return {
    parts: [
      text("system", summaryInstruction),
      ...options.task,
      ...Option.match(options.previousSummary, {
        onNone: () => [],
        onSome: (summary) => [text("user", `Previous summary:\n${summary}`)]
      }),
      ...media,
      text(
        "user",
        `History to summarize (part ${options.index + 1} of ${options.count}${attachedNote(media.length)}):\n${options.piece}`
      )
    ],
    tools: []
  }
}

// The task's own media may come just before the piece's (when there is no previous summary): the count tells
// the summarizer which of them the placeholders stand for.
const attachedNote = (count: number): string =>
  count === 0
    ? ""
    : count === 1
      ? ", with the 1 media item its [media ...] placeholder stands for attached just before this text"
      : `, with its ${count} media items attached just before this text, in the order of its [media ...] placeholders`

/**
 * What a summary is made of: the task, the summary so far, the rounds to
 * summarize and the most bytes of history one request may carry.
 *
 * @since 0.1.0
 * @category summarizing
 */
export interface SummaryInput {
  readonly task: ReadonlyArray<Part>
  readonly previousSummary: Option.Option<string>
  readonly rounds: ReadonlyArray<ReadonlyArray<Part>>
  readonly pieceBytes: number
  /** The longest summary kept, in UTF-8 bytes; a longer answer is cut ({@link boundSummary}). No bound when absent. */
  readonly summaryBytes?: number
}

/**
 * The note that ends a summary cut to its limit.
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summaryCutNote = (keptBytes: number, totalBytes: number, limit: number): string =>
  `\n[summary cut: the model wrote ${totalBytes} bytes; the summary limit is ${limit} bytes, so only the first ${keptBytes} are kept]`

/**
 * A summary answer bounded to `maxBytes` UTF-8 bytes: unchanged when it
 * fits, else its longest prefix (between graphemes) followed by
 * {@link summaryCutNote}, together at most `maxBytes` (or the note alone,
 * when the limit is shorter than the note).
 *
 * @since 0.1.0
 * @category summarizing
 */
export const boundSummary = (answer: string, maxBytes: number): string =>
  cutWithNote(answer, maxBytes, (kept, total) => summaryCutNote(kept, total, maxBytes))?.text ?? answer

/**
 * A written summary and the number of summary requests it took.
 *
 * @since 0.1.0
 * @category summarizing
 */
export interface SummaryOutcome {
  readonly text: string
  readonly requests: number
}

/**
 * Which summary request of a summary this is: zero-based `index` of `count`.
 *
 * @since 0.1.0
 * @category summarizing
 */
export interface SummaryPiece {
  readonly index: number
  readonly count: number
}

/**
 * `generate` with every answered summary request journaled as its own
 * `SummaryRequestAnswered` entry (piece, answer size, the provider's usage
 * and finish reason), so a task's token total counts summary requests too.
 * A request that fails is not journaled (it has no usage to account).
 *
 * @since 0.1.0
 * @category summarizing
 */
export const journaledSummaryRequests =
  <E, R>(
    generate: (request: ModelRequest) => Effect.Effect<ModelResponse, E, R>,
    journal: Journal["Service"],
    at: { readonly operation: string; readonly step?: number; readonly turn?: number }
  ) =>
  (
    request: ModelRequest,
    piece: SummaryPiece
  ): Effect.Effect<ModelResponse, E | JournalIOError | JournalSequenceError, R> =>
    Effect.tap(generate(request), (response) =>
      journal.append({
        _tag: "SummaryRequestAnswered",
        ...(at.turn === undefined ? {} : { turn: at.turn }),
        ...(at.step === undefined ? {} : { step: at.step }),
        operation: at.operation,
        piece: piece.index + 1,
        pieces: piece.count,
        textSize: ArtifactPointer.utf8Length(response.text),
        ...(response.usage === undefined ? {} : { usage: response.usage }),
        ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason })
      })
    )

/**
 * {@link summarize} with an explicit `generate` (a wrapped or instrumented
 * model). Sends exactly one request per piece, in order, each building on
 * the summary so far (starting from `previousSummary`); returns the final
 * summary text and how many requests were sent. The pieces are
 * {@link summaryHistoryPieces} (the texts of {@link summaryPieces}): what
 * the model wrote is held to the piece limit, so it costs a few requests per
 * part at most, whatever its size, and each request carries its piece's
 * media as the history's own parts ({@link summaryRequest}). With
 * `summaryBytes`, every answer is bounded ({@link boundSummary}) before the
 * next request builds on it, so the previous summary a request carries is
 * never longer than that.
 * A request that fails (an error or a defect) fails the summary with its
 * error scrubbed by the host's `ArtifactRedactor`, when one is provided,
 * deeply (see `ForeignLoop.scrubThrown`, the one scrub): the provider's
 * text echoes the history being summarized.
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summarizeWith = <E, R>(
  generate: (request: ModelRequest, piece: SummaryPiece) => Effect.Effect<ModelResponse, E, R>,
  input: SummaryInput
): Effect.Effect<SummaryOutcome, E, R> =>
  summarizing(generate, input).pipe(
    Observability.withSpan("Compaction.summarize", () => ({
      attributes: { "tessera.summary.rounds": input.rounds.length }
    }))
  )

const timeSummaryRequest = Observability.timeModelRequest("summary")

// One span per summary request, beside the model step's own: sizes, never the piece or the answer. The piece's
// size stands for the request's: measuring the whole request would hash it.
const summaryRequestSpan = <E, R>(
  index: number,
  count: number,
  pieceBytes: number,
  generate: Effect.Effect<ModelResponse, E, R>
): Effect.Effect<ModelResponse, E, R> =>
  timeSummaryRequest(generate).pipe(
    Effect.tap((response) =>
      Effect.andThen(
        Observability.annotate("tessera.response.size", ArtifactPointer.utf8Length(response.text)),
        Observability.recordUsage("summary", Observability.usageOf(response))
      )
    ),
    Observability.withSpan("Compaction.summaryRequest", () => ({
      kind: "client",
      attributes: {
        "gen_ai.operation.name": "chat",
        "tessera.summary.piece": index + 1,
        "tessera.summary.pieces": count,
        "tessera.summary.piece.size": pieceBytes
      }
    }))
  )

// Defined once rather than as a generator function created per call (see `modelStep` in `Executor.ts`).
const summarizing = Effect.fnUntraced(function* <E, R>(
  generate: (request: ModelRequest, piece: SummaryPiece) => Effect.Effect<ModelResponse, E, R>,
  input: SummaryInput
): Effect.fn.Return<SummaryOutcome, E, R> {
  const all = sizedPieces(input.rounds, input.pieceBytes, summaryRendering(input.pieceBytes))
  let summary = input.previousSummary
  for (let index = 0; index < all.length; index++) {
    const piece = all[index]?.text ?? ""
    const media = all[index]?.media ?? []
    const response = yield* summaryRequestSpan(
      index,
      all.length,
      all[index]?.bytes ?? 0,
      // A provider's error echoes the request, and so the history being summarized: it is scrubbed before the
      // spans record it and before it reaches the caller (the executor, an adapter's loop, `summarize`'s caller).
      scrubFailures(
        generate(
          summaryRequest({
            task: input.task,
            previousSummary: summary,
            piece,
            index,
            count: all.length,
            media
          }),
          { index, count: all.length }
        )
      )
    )
    summary = Option.some(
      input.summaryBytes === undefined ? response.text : boundSummary(response.text, input.summaryBytes)
    )
  }
  yield* Observability.annotate("tessera.summary.requests", all.length)
  return { text: Option.getOrElse(summary, () => ""), requests: all.length }
})

/**
 * Asks the model for a summary of `rounds`, piece by piece; see
 * {@link summarizeWith} (a failed request's error reaches the caller
 * scrubbed by the host's redactor).
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summarize = (input: SummaryInput): Effect.Effect<SummaryOutcome, ModelError, Model> =>
  Effect.flatMap(Effect.service(Model), (model) => summarizeWith(model.generate, input))

/**
 * A published summary: the staged file, and the parts that stand in for the
 * history it covers (a reference to the file, then its text, rendered from
 * the scrubbed bytes that were stored).
 *
 * @since 0.1.0
 * @category models
 */
export interface PublishedSummary {
  readonly staged: PrivateStaging.StagedFile
  readonly text: string
  readonly parts: ReadonlyArray<Part>
}

/**
 * Scrubs a summary through the host's redactor (when one is provided; none
 * means stored verbatim, as for artifacts), stages it write-once on the
 * private volume, and records in the journal that it was staged (path, size,
 * digest; never the text).
 *
 * @since 0.1.0
 * @category publishing
 */
export const publish = Effect.fnUntraced(function* (options: {
  readonly key: PrivateStaging.StagingKey
  readonly summary: string
  readonly journal: Option.Option<Journal["Service"]>
  readonly turn?: number
  readonly requests?: number
  /** The longest summary stored, in UTF-8 bytes: checked after the scrub, which may lengthen it ({@link boundSummary}). */
  readonly maxBytes?: number
}) {
  // Minted and bound to this journal, checked here; the volume's registration is checked by `stageOnce`, which
  // admits the capability again right before it writes.
  yield* PrivateSummaries.admitBinding("Compaction.publish", options.journal)
  const redactor = yield* Effect.serviceOption(ArtifactRedactor.ArtifactRedactor)
  const redacted = Option.isSome(redactor) ? yield* redactor.value.redact(options.summary) : options.summary
  const scrubbed = options.maxBytes === undefined ? redacted : boundSummary(redacted, options.maxBytes)
  const staged = yield* PrivateStaging.stageOnce(options.key, scrubbed)
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

/**
 * Requirements of {@link compact}.
 *
 * @since 0.1.0
 * @category models
 */
export type CompactServices =
  | Model
  | PrivateSummaries.PrivateSummaries
  | DurableFiles.DurableFiles
  | FileSystem.FileSystem
  | Path.Path

/**
 * What {@link compact} works from.
 *
 * @since 0.1.0
 * @category compacting
 */
export interface CompactOptions {
  readonly history: History.History
  readonly policy: CompactionPolicy.Threshold
  readonly operation: Ids.OperationId
  readonly step: number
  readonly journal: Option.Option<Journal["Service"]>
  readonly turn?: number
  /** The provider's count for the previous request, used under `reportedTokens` (see {@link plan}). */
  readonly reported?: ReportedInput
  /** The last request the model was sent: no tool result it did not carry is summarized (see {@link plan}). */
  readonly sent?: SentRequest
}

/**
 * Compacts `history` when it crosses the policy's limit: summarizes the
 * planned rounds (building on the history's current summary), publishes the
 * summary, and returns the history with those rounds replaced by the
 * summary's parts. Unchanged when under the limit, and then without a span:
 * it runs before every model step, and a trace shows only the steps that
 * compacted.
 *
 * @since 0.1.0
 * @category compacting
 */
export const compact = (options: CompactOptions) => {
  const planned = plan(options.history, options.policy, options.reported, options.sent)
  return Option.isNone(planned) ? Effect.succeed(options.history) : compactPlanned(options, planned.value)
}

const compactPlanned = Effect.fnUntraced(function* (options: CompactOptions, planned: CompactionPlan) {
  const summaryBytes = CompactionPolicy.bytesFor(
    options.policy.measure,
    CompactionPolicy.summaryLimitOf(options.policy)
  )
  const key: PrivateStaging.StagingKey = { operation: options.operation, step: options.step }
  const previousSummary = History.summaryText(options.history)
  const pieceBytes = CompactionPolicy.bytesFor(options.policy.measure, options.policy.pieceLimit)
  const turn = options.turn === undefined ? {} : { turn: options.turn }
  yield* Observability.annotate({
    ...(Option.isSome(options.journal) ? { "tessera.task": options.journal.value.task } : {}),
    ...(options.turn === undefined ? {} : { "tessera.turn": options.turn }),
    "tessera.step": key.step,
    "tessera.operation": key.operation,
    "tessera.compaction.rounds": planned.summarized.length
  })
  let inputsSha256: string | undefined
  // The writer is admitted before the first summary request: a refusal costs no request.
  if (Option.isNone(options.journal)) yield* PrivateSummaries.admit("Compaction.compact", options.journal)
  else {
    const journal = options.journal.value
    // The writer is admitted before anything is written, journaled or sent. The volume's registration (a file
    // read) is checked while the inputs are hashed and a leftover summary is looked for (another read, in the
    // folder of the capability, whose binding is checked first); neither outcome is used unless admission passes,
    // and a failed look is reported only then, so admission's refusal still comes first.
    const bound = yield* PrivateSummaries.admitBinding("Compaction.compact", options.journal)
    const [, inputs, found] = yield* Effect.all(
      [
        PrivateSummaries.admit("Compaction.compact", options.journal),
        summaryInputsDigest(options.history.task, previousSummary, planned.summarized, pieceBytes),
        Effect.result(PrivateStaging.readStagedAdmitted(bound, key))
      ],
      { concurrency: "unbounded" }
    )
    inputsSha256 = inputs
    const leftover = yield* recoverLeftover(
      journal,
      Result.isFailure(found) ? yield* Effect.fail(found.failure) : found.success,
      key,
      inputsSha256,
      turn
    )
    if (Option.isSome(leftover)) {
      yield* Observability.annotate("tessera.compaction.recovered", true)
      return History.summarizeLeadingRounds(options.history, planned.summarized.length, {
        parts: leftover.value.parts,
        text: leftover.value.text
      })
    }
    yield* journal.append({ _tag: "SummaryStarted", ...turn, step: key.step, operation: key.operation, inputsSha256 })
  }
  const model = yield* Model
  const generate = Option.isSome(options.journal)
    ? journaledSummaryRequests(model.generate, options.journal.value, {
        operation: key.operation,
        step: key.step,
        ...turn
      })
    : model.generate
  const summary = yield* summarizeWith(generate, {
    task: options.history.task,
    previousSummary,
    rounds: planned.summarized,
    pieceBytes,
    summaryBytes
  })
  const published = yield* publish({
    key,
    summary: summary.text,
    maxBytes: summaryBytes,
    requests: summary.requests,
    journal: options.journal,
    ...turn
  })
  return History.summarizeLeadingRounds(options.history, planned.summarized.length, {
    parts: published.parts,
    text: published.text
  })
}, Observability.withSpan("Compaction.compact"))

/**
 * The size of `history`'s task in the policy's unit, when it alone is over
 * the policy's limit: every request carries the task and compaction never
 * replaces it, so no summary can bring a request under the limit.
 *
 * @since 0.1.0
 * @category planning
 */
export const taskOverLimit = (history: History.History, policy: CompactionPolicy.Threshold): Option.Option<number> => {
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
  (journal: Journal["Service"], policy: CompactionPolicy.Threshold) =>
  (
    history: History.History,
    at: { readonly turn?: number; readonly step?: number }
  ): Effect.Effect<void, JournalIOError | JournalSequenceError> =>
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
  pieceBytes: number
): Effect.Effect<string> =>
  Effect.map(
    measureRequest({
      parts: [
        text("system", `summary inputs, pieces of ${pieceBytes} bytes`),
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
  found: Option.Option<{ readonly file: PrivateStaging.StagedFile; readonly text: string }>,
  key: PrivateStaging.StagingKey,
  inputsSha256: string,
  turn: { readonly turn?: number }
) {
  if (Option.isNone(found)) return Option.none<PublishedSummary>()
  const staged = found.value
  const record = (yield* journal.state).summaries.get(summaryKey(key.operation, key.step))
  const sameInputs = record?.inputsSha256 === inputsSha256
  const intact = record?.staged === undefined || record.staged.sha256 === staged.file.sha256
  if (sameInputs && intact) {
    if (record?.staged === undefined) {
      yield* journal.append({
        _tag: "SummaryStaged",
        ...turn,
        step: key.step,
        operation: key.operation,
        volume: staged.file.volume,
        path: staged.file.path,
        size: staged.file.size,
        sha256: staged.file.sha256,
        adopted: true
      })
    }
    return Option.some(publishedSummary(staged.file, staged.text))
  }
  yield* journal.append({
    _tag: "SummarySuperseded",
    ...turn,
    step: key.step,
    operation: key.operation,
    volume: staged.file.volume,
    path: staged.file.path,
    size: staged.file.size,
    sha256: staged.file.sha256,
    reason: !intact
      ? "the file is not the one the journal recorded"
      : record?.inputsSha256 === undefined
        ? "the journal records no inputs for this summary"
        : "it summarizes other inputs"
  })
  yield* PrivateStaging.withdraw(key)
  return Option.none<PublishedSummary>()
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

const publishedSummary = (staged: PrivateStaging.StagedFile, scrubbed: string): PublishedSummary => ({
  staged,
  text: scrubbed,
  parts: summaryParts(staged, scrubbed)
})
