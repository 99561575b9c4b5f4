/**
 * Compaction's planning: how parts are rendered and measured, which rounds a
 * compaction summarizes ({@link plan}), and how the summarized history is cut
 * into the pieces summary requests carry. `Compaction` states the public
 * part of it (rendering, measuring); the rest is here for the library's own
 * modules and the tests.
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as Option from "effect/Option"
import * as History from "../History.ts"
import type { MediaPart, Part } from "../Model.ts"
import { cutPieces, type SizedPiece } from "./boundedText.ts"
import { fromBytes, type SizeMeasure, type Threshold } from "./compactionPolicy.ts"
import { rememberedBodySize } from "./digest.ts"
import { limitRendered } from "./inlineLimit.ts"
import { countWith, type TokenizerShape } from "./tokenizer.ts"

/** See `Compaction.renderPart`. */
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

/** See `Compaction.measureParts`. */
export const measureParts = (measure: SizeMeasure, parts: ReadonlyArray<Part>): number =>
  parts.reduce((total, part) => total + fromBytes(measure, renderedBytes(part)), 0)

/** See `Compaction.ReportedInput`. */
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
  measure: SizeMeasure,
  parts: ReadonlyArray<Part>,
  reported?: ReportedInput,
  tokenizer?: TokenizerShape
): number => {
  if (measure === "tokenizer" && tokenizer !== undefined) return countedParts(tokenizer, parts)
  if (measure !== "reportedTokens" || reported === undefined || !isPrefix(reported.parts, parts)) {
    return measureParts(measure, parts)
  }
  return reported.inputTokens + measureParts(measure, parts.slice(reported.parts.length))
}

// Parts are counted once per tokenizer, like their rendered sizes: a history keeps reusing them.
const countedByTokenizer = new WeakMap<TokenizerShape, WeakMap<Part, number>>()

const countedParts = (tokenizer: TokenizerShape, parts: ReadonlyArray<Part>): number => {
  let counts = countedByTokenizer.get(tokenizer)
  if (counts === undefined) {
    counts = new WeakMap()
    countedByTokenizer.set(tokenizer, counts)
  }
  let total = 0
  for (const part of parts) {
    let counted = counts.get(part)
    if (counted === undefined) {
      counted = countWith(tokenizer, renderedPieces(part).join(""))
      counts.set(part, counted)
    }
    total += counted
  }
  return total
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

/** See `Compaction.SentRequest`. */
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
 * provider's count of the previous request, under `reportedTokens`; with
 * `tokenizer`, the host's count, under `tokenizer`).
 *
 * @since 0.1.0
 * @category planning
 */
export const plan = (
  history: History.History,
  policy: Threshold,
  reported?: ReportedInput,
  sent?: SentRequest,
  tokenizer?: TokenizerShape
): Option.Option<CompactionPlan> => {
  if (measureRequestParts(policy.measure, History.toParts(history), reported, tokenizer) <= policy.limit) {
    return Option.none()
  }
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
 * with its line break it fits one piece) by `limitRendered` (internal/inlineLimit.ts): a
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
export const summaryRendering = (pieceBytes: number): PartRendering => heldTo(Math.max(0, pieceBytes - 1))

/** A part with what the model wrote held to `maxBytes`: see {@link summaryPieces}. */
const heldTo =
  (maxBytes: number): PartRendering =>
  (part) => {
    // The size as sent is measured (and remembered) already: a part within the limit is rendered as it is.
    const bytes = renderedBytes(part)
    if (bytes <= maxBytes) return { text: renderPart(part), bytes }
    switch (part._tag) {
      case "ToolCall":
        return limitRendered(maxBytes, "tool call", renderPart(part)) ?? verbatim(part)
      case "Text":
        return part.role === "assistant"
          ? (limitRendered(maxBytes, "assistant text", renderPart(part)) ?? verbatim(part))
          : verbatim(part)
      case "ToolResult": {
        const [frame, body] = renderedPieces(part)
        const header = limitRendered(maxBytes, "tool result header", frame)
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
export const sizedPieces = (
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
