/**
 * The abstract of a window of a body (see `ArtifactPointer.buildAbstract`):
 * the window's text with whitespace runs collapsed to one space, cut between
 * grapheme clusters to a UTF-8 budget, a cut marked with `…`.
 *
 * Two implementations give the same result: one over grapheme clusters
 * (`Intl.Segmenter`) for any text, and one over characters for ASCII text,
 * where every character is a cluster of one byte (the only longer ASCII
 * cluster, CR LF, is whitespace and collapses either way). The ASCII one
 * allocates a single string instead of one object per cluster; offloaded
 * results are mostly ASCII (logs, JSON, code).
 */
import { nonAscii, utf8Length } from "./utf8.ts"

const ellipsis = "…"
const ellipsisBytes = 3

const whitespace = /^\s+$/u
const whitespaceRuns = /\s+/g

// Building a segmenter costs more than segmenting an abstract's window; one serves every call. It is built on
// the first non-ASCII window, not when the module loads: the first one in a process initializes ICU's grapheme
// rules (about 6 ms), which a process that never abstracts such a window should not pay at its start.
let graphemes: Intl.Segmenter | undefined
const graphemeSegmenter = (): Intl.Segmenter => {
  graphemes ??= new Intl.Segmenter(undefined, { granularity: "grapheme" })
  return graphemes
}

/**
 * The abstract of `window` within `maxBytes`, or `undefined` when the window
 * ran out before the budget did and more of the body exists (`complete`
 * false). The last cluster of an incomplete window may have been cut by the
 * window's end, so it is never used.
 */
export const abstractOfWindow = (window: string, maxBytes: number, complete: boolean): string | undefined =>
  nonAscii.test(window) ? segmentedAbstract(window, maxBytes, complete) : asciiAbstract(window, maxBytes, complete)

/** Any text: one piece per grapheme cluster, so no cluster is ever split. */
export const segmentedAbstract = (window: string, maxBytes: number, complete: boolean): string | undefined => {
  const pieces: Array<{ readonly text: string; readonly bytes: number }> = []
  let used = 0
  let spacePending = false
  let truncated = false
  const segments = graphemeSegmenter().segment(window)[Symbol.iterator]()
  let current = segments.next()
  while (!current.done) {
    const next = segments.next()
    if (next.done && !complete) return undefined
    const segment = current.value.segment
    current = next
    if (whitespace.test(segment)) {
      spacePending = pieces.length > 0
      continue
    }
    const text = spacePending ? ` ${segment}` : segment
    spacePending = false
    const bytes = utf8Length(text)
    if (used + bytes > maxBytes) {
      truncated = true
      break
    }
    pieces.push({ text, bytes })
    used += bytes
  }
  if (!truncated) return complete ? pieces.map((piece) => piece.text).join("") : undefined
  while (used + ellipsisBytes > maxBytes) {
    const dropped = pieces.pop()
    if (dropped === undefined) break
    used -= dropped.bytes
  }
  if (used + ellipsisBytes > maxBytes) return ""
  return pieces.map((piece) => piece.text).join("") + ellipsis
}

/** Whether an ASCII code unit is whitespace as `\s` defines it: tab, line feed, vertical tab, form feed, carriage return, space. */
const isAsciiSpace = (code: number): boolean => code === 32 || (code >= 9 && code <= 13)

/**
 * ASCII text: the collapsed text is one string in which every character is
 * one byte and every non-space character ends a piece, so the pieces that
 * fit are a prefix of it that does not end in the space opening the next
 * piece. Only the part of the window that reaches one byte past the budget
 * is collapsed.
 */
export const asciiAbstract = (window: string, maxBytes: number, complete: boolean): string | undefined => {
  const end = complete ? window.length : window.length - 1
  let cut = end
  let collapsedLength = 0
  let afterSpace = false
  for (let index = 0; index < end; index++) {
    if (isAsciiSpace(window.charCodeAt(index))) {
      afterSpace = collapsedLength > 0
      continue
    }
    collapsedLength += afterSpace ? 2 : 1
    afterSpace = false
    if (collapsedLength > maxBytes) {
      cut = index + 1
      break
    }
  }
  const collapsed = window.slice(0, cut).replace(whitespaceRuns, " ").trim()
  if (collapsed.length <= maxBytes) return complete ? collapsed : undefined
  if (maxBytes < ellipsisBytes) return ""
  const kept = collapsed.slice(0, maxBytes - ellipsisBytes)
  return (kept.endsWith(" ") ? kept.slice(0, -1) : kept) + ellipsis
}
