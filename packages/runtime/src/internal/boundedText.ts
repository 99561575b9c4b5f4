/**
 * Cutting a text to a byte budget with a note saying so, for the two places
 * that bound what enters a request: tool results over the inline limit and
 * summaries over the policy's summary limit.
 *
 * Only the kept prefix (and a little past it) is walked and segmented, so
 * cutting a 100 MB text costs the prefix, not the text (its total size is
 * counted once, without copying it).
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"

// Built on the first cut, not when the module loads: the first segmenter of a process initializes ICU's grapheme
// rules (milliseconds), which a process that never cuts a text should not pay at its start.
let graphemes: Intl.Segmenter | undefined
const segmenter = (): Intl.Segmenter => {
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" })
  return graphemes
}

// How far past the cut the segmenter looks: a boundary there depends on what follows (combining marks).
const lookahead = 64

/** UTF-8 length of the unit at `index` (4 for a whole surrogate pair, then `index + 2` is next). */
const unitBytes = (text: string, index: number): number => {
  const code = text.charCodeAt(index)
  if (code < 0x80) return 1
  if (code < 0x800) return 2
  if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
    const next = text.charCodeAt(index + 1)
    if (next >= 0xdc00 && next <= 0xdfff) return 4
  }
  return 3
}

/**
 * The longest run of whole code points from `start`, ending at or before
 * `until`, within `maxBytes` UTF-8 bytes: where it ends, and its bytes.
 */
const runWithin = (
  text: string,
  start: number,
  until: number,
  maxBytes: number
): { readonly end: number; readonly bytes: number } => {
  let end = start
  let bytes = 0
  while (end < until) {
    const size = unitBytes(text, end)
    if (bytes + size > maxBytes) break
    bytes += size
    end += size === 4 ? 2 : 1
  }
  return { end, bytes }
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends between two graphemes. */
const prefixWithin = (text: string, maxBytes: number): string => {
  const { end } = runWithin(text, 0, text.length, maxBytes)
  if (end === text.length) return text
  // Segmented from the start (boundaries depend on everything before them, flags for one), but only up
  // to just past the cut: the cost is the kept prefix's, never the whole text's.
  let boundary = 0
  for (const { index } of segmenter().segment(text.slice(0, Math.min(text.length, end + lookahead)))) {
    if (index > end) break
    boundary = index
  }
  return text.slice(0, boundary)
}

/** What a cut kept, and how large the whole was. */
export interface Cut {
  readonly text: string
  readonly keptBytes: number
  readonly totalBytes: number
}

/**
 * `text` itself when it measures at most `maxBytes`; otherwise its longest
 * prefix (between graphemes) that leaves room for `note(kept, total)`,
 * followed by that note. The result measures at most `maxBytes` unless the
 * note alone is longer, in which case it is the note alone.
 */
export const cutWithNote = (
  text: string,
  maxBytes: number,
  note: (keptBytes: number, totalBytes: number) => string
): Cut | undefined => {
  // Every UTF-16 unit is at least one byte and at most three: most texts are decided without counting, and a
  // text left open is counted once, since the note needs its size.
  if (text.length * 3 <= maxBytes) return undefined
  const totalBytes = ArtifactPointer.utf8Length(text)
  if (totalBytes <= maxBytes) return undefined
  // The note's length depends on the kept size; sized for the largest kept size, it fits every smaller one.
  const budget = Math.max(0, maxBytes - ArtifactPointer.utf8Length(note(maxBytes, totalBytes)))
  const prefix = prefixWithin(text, budget)
  const keptBytes = ArtifactPointer.utf8Length(prefix)
  // A slice of a large string can keep the whole string alive (engines share its storage); a copy lets
  // the original be collected once the caller drops it. JSON keeps lone surrogates, unlike UTF-8 coding.
  const kept = JSON.parse(JSON.stringify(prefix)) as string
  return { text: kept + note(keptBytes, totalBytes), keptBytes, totalBytes }
}

// `…` in UTF-8.
const ellipsisBytes = 3

/**
 * `text` itself when it measures at most `maxBytes`; otherwise its longest
 * prefix of whole code points (a surrogate pair is never split) followed by
 * `…`, together at most `maxBytes` (for `maxBytes` of at least 3). Costs
 * the kept prefix, however long the text.
 */
export const clipWithin = (text: string, maxBytes: number): string => {
  const { end } = runWithin(text, 0, text.length, maxBytes)
  if (end === text.length) return text
  return `${text.slice(0, runWithin(text, 0, end, maxBytes - ellipsisBytes).end)}…`
}

/**
 * `text` as a JSON string literal of at most `maxBytes` UTF-8 bytes, for
 * echoing a caller's text: the literal of the whole text when it fits;
 * otherwise the literal of its longest prefix of whole code points that
 * leaves room for a note of the text's full size, followed by that note
 * (`"abc"… (1048576 bytes in all)`). `maxBytes` must leave room for the note
 * (64 bytes always do). Costs the kept prefix and one count of the text.
 */
export const quotedWithin = (text: string, maxBytes: number): string => {
  // JSON escapes a unit to at most six bytes: most texts are decided without walking them.
  if (text.length * 6 + 2 <= maxBytes) return JSON.stringify(text)
  const note = `… (${ArtifactPointer.utf8Length(text)} bytes in all)`
  const room = maxBytes - 2 - ArtifactPointer.utf8Length(note)
  let used = 0
  let end = 0
  let fits = 0
  // Code point by code point (a string's iterator never splits a pair), each measured as JSON writes it.
  for (const point of text) {
    used += ArtifactPointer.utf8Length(JSON.stringify(point)) - 2
    if (used > maxBytes - 2) return `${JSON.stringify(text.slice(0, fits))}${note}`
    end += point.length
    if (used <= room) fits = end
  }
  return JSON.stringify(text)
}

/** A piece of a cut text and its UTF-8 length. */
export interface SizedPiece {
  readonly text: string
  readonly bytes: number
}

/**
 * Printable ASCII and CJK ideographs: between two such units there is always
 * a grapheme boundary (neither extends, joins, prepends or pairs), whatever
 * comes before or after them.
 */
const isPlainUnit = (code: number): boolean => (code >= 0x20 && code <= 0x7e) || (code >= 0x4e00 && code <= 0x9fff)

// How far back from a cut to look for two plain units to segment from; past that, from the piece's start.
const anchorWindow = 256

/**
 * The grapheme boundaries of `text` from `from` (itself a boundary) through
 * `until`: segmenting from a boundary gives the boundaries the whole text
 * has there, since no cluster reaches back across one. The window reaches
 * past `until` so the boundary at `until` itself is decided; the window's own
 * end is not a boundary of the text and is not reported.
 */
const boundariesNear = (text: string, from: number, until: number): Array<number> => {
  const window = text.slice(from, Math.min(text.length, until + lookahead))
  const found: Array<number> = []
  for (const { index } of segmenter().segment(window)) found.push(from + index)
  return found
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff

/**
 * Where the grapheme cluster that starts at `start` (a boundary) ends: the
 * next boundary of the whole text after `start`. A boundary strictly inside
 * a window segmented from a boundary is one the whole text has (the rules
 * decide it from what precedes it and the one code point after it); the
 * window's own end is not, so a cluster reaching it is looked at again in a
 * window twice as long. The windows grow geometrically, so finding the end
 * costs the cluster's length, however long the cluster.
 */
const clusterEnd = (text: string, start: number, beyond: number): number => {
  let size = beyond - start + lookahead
  for (;;) {
    let until = Math.min(text.length, start + size)
    // Never end a window between the halves of a pair: the high half would read as a lone surrogate.
    if (until < text.length && isHighSurrogate(text.charCodeAt(until - 1)) && isLowSurrogate(text.charCodeAt(until)))
      until++
    for (const { index } of segmenter().segment(text.slice(start, until))) {
      if (index > 0) return start + index
    }
    if (until === text.length) return text.length
    size *= 2
  }
}

/**
 * Appends the pieces of the cluster `text[start, end)`, longer than
 * `maxBytes`, cut at code points: as many whole code points as fit in each
 * piece. A code point wider than `maxBytes` (a limit below 4 bytes) is a
 * piece alone, since no string holds part of one.
 */
const pushCodePointPieces = (
  pieces: Array<SizedPiece>,
  text: string,
  start: number,
  end: number,
  maxBytes: number
): void => {
  let at = start
  while (at < end) {
    const run = runWithin(text, at, end, maxBytes)
    const wide = run.end === at ? unitBytes(text, at) : 0
    const stop = wide === 0 ? run.end : at + (wide === 4 ? 2 : 1)
    pieces.push({ text: text.slice(at, stop), bytes: wide === 0 ? run.bytes : wide })
    at = stop
  }
}

/**
 * Cuts `text` into pieces of at most `maxBytes` UTF-8 bytes, in order, that
 * join back to `text` exactly:
 *
 * - a piece ends at a grapheme boundary, so every cluster that fits in a
 *   piece is kept whole, with as many whole clusters as fit;
 * - a cluster longer than `maxBytes` gets pieces of its own, cut at code
 *   points (as many as fit in each), so the bound holds for it too; a
 *   surrogate pair is never split;
 * - the one exception to the bound: with `maxBytes` below 4, a code point
 *   wider than `maxBytes` is a piece alone (a string cannot hold part of a
 *   code point).
 *
 * Linear in the text: each piece is measured unit by unit, and only the
 * neighbourhood of its cut is segmented (from the nearest two plain units
 * before it, else from the piece's start); a long cluster is segmented once,
 * in windows that double. The pieces are the ones a walk over every grapheme
 * of the text would make.
 */
export const cutPieces = (text: string, maxBytes: number): Array<SizedPiece> => {
  const pieces: Array<SizedPiece> = []
  // Every piece starts at a grapheme boundary of the whole text, so segmenting from it is segmenting the text.
  let start = 0
  while (start < text.length) {
    const { end, bytes } = runWithin(text, start, text.length, maxBytes)
    if (end === text.length) {
      pieces.push({ text: text.slice(start), bytes })
      break
    }
    let cut: number
    if (end > start && isPlainUnit(text.charCodeAt(end - 1)) && isPlainUnit(text.charCodeAt(end))) cut = end
    else {
      let anchor = end - 1
      const lowest = Math.max(start + 1, end - anchorWindow)
      while (anchor >= lowest && !(isPlainUnit(text.charCodeAt(anchor - 1)) && isPlainUnit(text.charCodeAt(anchor))))
        anchor--
      const from = anchor >= lowest ? anchor : start
      let last = -1
      for (const boundary of boundariesNear(text, from, end)) if (boundary <= end) last = boundary
      if (last <= start) {
        // No boundary after the start within the budget: the cluster there is longer than a piece.
        const after = clusterEnd(text, start, end)
        pushCodePointPieces(pieces, text, start, after, maxBytes)
        start = after
        continue
      }
      cut = last
    }
    const piece = text.slice(start, cut)
    pieces.push({ text: piece, bytes: cut === end ? bytes : ArtifactPointer.utf8Length(piece) })
    start = cut
  }
  return pieces
}
