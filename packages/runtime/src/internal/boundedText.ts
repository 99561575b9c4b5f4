/**
 * Cutting a text to a byte budget with a note saying so, for the two places
 * that bound what enters a request: tool results over the inline limit and
 * summaries over the policy's summary limit.
 *
 * Only the kept prefix (and a little past it) is walked and segmented, so
 * cutting a 100 MB text costs the prefix, not the text (its total size is
 * counted once, without copying it).
 */
import { ArtifactPointer } from "@tessera/artifacts"

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" })

// How far past the cut the segmenter looks: a boundary there depends on what follows (combining marks).
const lookahead = 64

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that ends between two graphemes. */
const prefixWithin = (text: string, maxBytes: number): string => {
  let bytes = 0
  let end = 0
  while (end < text.length) {
    const code = text.charCodeAt(end)
    const next = code >= 0xd800 && code <= 0xdbff && end + 1 < text.length ? text.charCodeAt(end + 1) : 0
    const isPair = next >= 0xdc00 && next <= 0xdfff
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : isPair ? 4 : 3
    if (bytes + size > maxBytes) break
    bytes += size
    end += isPair ? 2 : 1
  }
  if (end === text.length) return text
  // Segmented from the start (boundaries depend on everything before them, flags for one), but only up
  // to just past the cut: the cost is the kept prefix's, never the whole text's.
  let boundary = 0
  for (const { index } of segmenter.segment(text.slice(0, Math.min(text.length, end + lookahead)))) {
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
