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

/** The longest run of whole code points from `start` within `maxBytes` UTF-8 bytes: where it ends, and its bytes. */
const runWithin = (text: string, start: number, maxBytes: number): { readonly end: number; readonly bytes: number } => {
  let end = start
  let bytes = 0
  while (end < text.length) {
    const size = unitBytes(text, end)
    if (bytes + size > maxBytes) break
    bytes += size
    end += size === 4 ? 2 : 1
  }
  return { end, bytes }
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends between two graphemes. */
const prefixWithin = (text: string, maxBytes: number): string => {
  const { end } = runWithin(text, 0, maxBytes)
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
  // Every UTF-16 unit is at least one byte and at most three: most texts are decided without counting.
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
 * The grapheme boundaries of `text` from `from` (itself a boundary) to just
 * past `until`: segmenting from a boundary gives the boundaries the whole
 * text has there, since no cluster reaches back across one.
 */
const boundariesNear = (text: string, from: number, until: number): Array<number> => {
  const window = text.slice(from, Math.min(text.length, until + lookahead))
  const found: Array<number> = []
  for (const { index } of segmenter().segment(window)) found.push(from + index)
  found.push(from + window.length)
  return found
}

/**
 * Cuts `text` into pieces of at most `maxBytes` UTF-8 bytes at grapheme
 * boundaries (a single grapheme longer than `maxBytes` is its own piece),
 * in time linear in the text: each piece is measured unit by unit, and only
 * the neighbourhood of its cut is segmented (from the nearest two plain
 * units before it, else from the piece's start). The pieces are the ones a
 * walk over every grapheme of the text would make.
 */
export const cutPieces = (text: string, maxBytes: number): Array<SizedPiece> => {
  const pieces: Array<SizedPiece> = []
  let start = 0
  while (start < text.length) {
    const { end, bytes } = runWithin(text, start, maxBytes)
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
      const boundaries = boundariesNear(text, from, end)
      let last = -1
      let next = -1
      for (const boundary of boundaries) {
        if (boundary <= end) last = boundary
        else if (next === -1) next = boundary
      }
      // No boundary after the start within the budget: the grapheme there is longer than the budget, alone.
      cut = last > start ? last : next
    }
    const piece = text.slice(start, cut)
    pieces.push({ text: piece, bytes: cut === end ? bytes : ArtifactPointer.utf8Length(piece) })
    start = cut
  }
  return pieces
}
