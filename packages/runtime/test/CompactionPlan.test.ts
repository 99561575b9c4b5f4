import { assert, describe, it } from "@effect/vitest"
import { Compaction, History, Model } from "@tessera/runtime"
import { Option } from "effect"
import * as fc from "fast-check"
import * as Planning from "../src/internal/compactionPlan.js"
import * as Policies from "../src/internal/compactionPolicy.js"

const encoder = new TextEncoder()
const bytes = (text: string) => encoder.encode(text).length
const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" })
const graphemes = (text: string) => Array.from(segmenter.segment(text), (s) => s.segment)

/** Named text pieces, so a shrunk counterexample reads as words. */
const textPiece = fc.constantFrom("plain words ", "line\n", "x".repeat(50), "👨‍👩‍👧", "e\u0301", "🇫🇷", "한국어", "\n\n")
const body = fc.array(textPiece, { maxLength: 40 }).map((parts) => parts.join(""))

/**
 * Texts that stress grapheme boundaries: clusters of every kind (combining
 * marks, ZWJ sequences, skin tones, flags in odd runs, Hangul jamo, an Indic
 * conjunct, CR LF), lone surrogates, CJK, and runs without two plain units
 * in a row longer than the cutter's look-back.
 */
const hardPiece = fc.constantFrom(
  "ab",
  "x",
  " ",
  "\r\n",
  "\r",
  "\n",
  "e\u0301",
  "\u0301",
  "👨‍👩‍👧",
  "👍🏽",
  "\u200d",
  "🇫🇷",
  "🇩",
  "\u1100\u1161\u11a8",
  "\u1161",
  "क्षि",
  "漢字",
  "日",
  "\ud800",
  "\udc00",
  "é".repeat(300),
  "🙂".repeat(70)
)
const hardText = fc.array(hardPiece, { maxLength: 30 }).map((parts) => parts.join(""))

/**
 * The reference: one grapheme at a time over the whole text, a new piece when the next would not fit; a grapheme
 * longer than a piece gets pieces of its own, as many whole code points in each as fit (a code point wider than the
 * limit, below 4 bytes, alone).
 */
const walkGraphemes = (text: string, maxBytes: number): ReadonlyArray<string> => {
  const out: Array<string> = []
  let current = ""
  let currentBytes = 0
  const flush = () => {
    if (current.length > 0) out.push(current)
    current = ""
    currentBytes = 0
  }
  for (const grapheme of graphemes(text)) {
    // A lone surrogate encodes as U+FFFD: 3 bytes, as the runtime counts it.
    const size = bytes(grapheme)
    if (size > maxBytes) {
      flush()
      for (const point of grapheme) {
        if (currentBytes + bytes(point) > maxBytes) flush()
        current += point
        currentBytes += bytes(point)
      }
      flush()
      continue
    }
    if (currentBytes + size > maxBytes) flush()
    current += grapheme
    currentBytes += size
  }
  flush()
  return out
}

const cutsLikeTheWalk =
  (cut: (text: string, maxBytes: number) => ReadonlyArray<string>) =>
  (text: string, maxBytes: number): boolean => {
    const made = cut(text, maxBytes)
    const expected = walkGraphemes(text, maxBytes)
    return made.length === expected.length && made.every((piece, index) => piece === expected[index])
  }

/**
 * Texts for the bound: ASCII, CJK, combining marks, emoji ZWJ sequences, skin tones, flags, surrogate pairs (lone
 * halves too), and clusters longer than any small limit (a base with up to 300 combining marks, ZWJ chains of up to 40
 * emoji), named so a shrunk counterexample reads as its parts.
 */
const boundPiece = fc.oneof(
  hardPiece,
  fc.constantFrom("ascii text ", "中文字符", "😀", "𝒳", "👍🏽", "👩‍💻", "e\u0301\u0302"),
  fc.integer({ min: 1, max: 300 }).map((marks) => `a${"\u0301".repeat(marks)}`),
  fc.integer({ min: 1, max: 40 }).map((links) => `👩${"\u200d👩".repeat(links)}`)
)
const boundText = fc.array(boundPiece, { maxLength: 12 }).map((parts) => parts.join(""))

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff

/** Why `pieces` are not a good cut of `text` at `maxBytes`, or undefined when they are. */
const cutFault = (text: string, maxBytes: number, pieces: ReadonlyArray<string>): string | undefined => {
  if (pieces.join("") !== text) return "the pieces do not join back to the text"
  const oversized = pieces.findIndex((piece) => bytes(piece) > maxBytes)
  if (oversized !== -1) return `piece ${oversized} is ${bytes(pieces[oversized] ?? "")} bytes, over ${maxBytes}`
  if (pieces.some((piece) => piece.length === 0)) return "an empty piece"
  const cuts = new Set<number>()
  let offset = 0
  for (const [index, piece] of pieces.entries()) {
    if (index > 0 && isHigh(text.charCodeAt(offset - 1)) && isLow(text.charCodeAt(offset))) {
      return `piece ${index} starts inside a surrogate pair`
    }
    cuts.add(offset)
    offset += piece.length
  }
  let start = 0
  for (const grapheme of graphemes(text)) {
    if (bytes(grapheme) <= maxBytes) {
      for (let at = start + 1; at < start + grapheme.length; at++) {
        if (cuts.has(at)) return `the ${bytes(grapheme)}-byte cluster at ${start} is split though it fits a piece`
      }
    }
    start += grapheme.length
  }
  return undefined
}

/** `cutFault` over random texts and limits from 4 bytes (any code point fits) up. */
const cutsWithinTheBound = (cut: (text: string, maxBytes: number) => ReadonlyArray<string>) =>
  fc.property(boundText, fc.integer({ min: 4, max: 48 }), (text, maxBytes) => {
    const fault = cutFault(text, maxBytes, cut(text, maxBytes))
    if (fault !== undefined) throw new Error(fault)
  })

/**
 * The cut before issue 35, rebuilt here: segment up to 64 units past the budget and, when no boundary lies within
 * it, cut at the next boundary the window shows, which for a cluster longer than the window is the window's end.
 */
const cutAtLimitPlus64 = (text: string, maxBytes: number): ReadonlyArray<string> => {
  const out: Array<string> = []
  let start = 0
  while (start < text.length) {
    let end = start
    let used = 0
    for (const point of text.slice(start)) {
      if (used + bytes(point) > maxBytes) break
      used += bytes(point)
      end += point.length
    }
    if (end === text.length) {
      out.push(text.slice(start))
      break
    }
    const window = text.slice(start, Math.min(text.length, end + 64))
    const boundaries = [...Array.from(segmenter.segment(window), (s) => start + s.index), start + window.length]
    const last = Math.max(...boundaries.filter((boundary) => boundary <= end))
    const cut = last > start ? last : (boundaries.find((boundary) => boundary > end) ?? text.length)
    out.push(text.slice(start, cut))
    start = cut
  }
  return out
}

type RoundSpec = { readonly kind: "say" | "ask" | "tools"; readonly text: string; readonly calls: number }
const roundSpec: fc.Arbitrary<RoundSpec> = fc.record({
  kind: fc.constantFrom("say" as const, "ask" as const, "tools" as const),
  text: body,
  calls: fc.integer({ min: 1, max: 3 })
})

const historyOf = (specs: ReadonlyArray<RoundSpec>): History.History =>
  specs.reduce(
    (history, spec, index) => {
      if (spec.kind === "say") return History.append(history, [Model.text("assistant", spec.text)])
      if (spec.kind === "ask") return History.append(history, [Model.text("user", spec.text)])
      const ids = Array.from({ length: spec.calls }, (_, call) => `r${index}c${call}`)
      return History.append(history, [
        ...ids.map((id) => Model.toolCall(id, "look", { at: id })),
        ...ids.map((id) => Model.toolResult({ callId: id, name: "look", content: spec.text, isError: false }))
      ])
    },
    History.make([Model.text("user", "the task")])
  )

describe("compaction planning", () => {
  it("measureParts counts exactly the UTF-8 bytes of each part's rendering", () => {
    fc.assert(
      fc.property(fc.array(roundSpec, { maxLength: 8 }), (specs) => {
        const parts = History.toParts(historyOf(specs))
        return parts.every((part) => Compaction.measureParts("bytes", [part]) === bytes(Compaction.renderPart(part)))
      }),
      { numRuns: 300 }
    )
  })

  it("cutText: pieces stay within the byte budget, never split a grapheme, and join back to the text", () => {
    fc.assert(
      fc.property(body, fc.integer({ min: 4, max: 64 }), (text, maxBytes) => {
        const fault = cutFault(text, maxBytes, Planning.cutText(text, maxBytes))
        if (fault !== undefined) throw new Error(fault)
      }),
      { numRuns: 300 }
    )
  })

  it("cut_text_bound_wins: every piece is within the limit, no surrogate pair is split, a cluster that fits a piece stays whole, and the pieces join back", () => {
    fc.assert(cutsWithinTheBound(Planning.cutText), { numRuns: 1_000 })
    // The reproduced input: one cluster of 2,001 bytes, cut at 100.
    const long = `a${"\u0301".repeat(1000)}`
    const pieces = Planning.cutText(long, 100)
    assert.isUndefined(cutFault(long, 100, pieces))
    assert.strictEqual(pieces.length, 21)
  })

  it("cut_text_bound_wins, control: the old cut at the limit plus 64 units breaks the bound on the reproduced input and on the property", () => {
    const long = `a${"\u0301".repeat(1000)}`
    const old = cutAtLimitPlus64(long, 100)
    assert.strictEqual(old.join(""), long, "the rebuilt old cut loses nothing: only the bound is broken")
    assert.isAbove(Math.max(...old.map(bytes)), 100)
    assert.match(cutFault(long, 100, old) ?? "", /over 100/)
    const outcome = fc.check(cutsWithinTheBound(cutAtLimitPlus64), { numRuns: 1_000, seed: 35 })
    assert.isTrue(outcome.failed)
    // Shrunk to a small ZWJ sequence at a 4-byte limit: the old cut hands back the whole 11-byte cluster.
    assert.include(fc.defaultReportMessage(outcome) ?? "", "Counterexample")
    assert.match(String(outcome.errorInstance), /over 4$/)
  })

  it("cut_text_below_four_bytes: under a 4-byte limit a code point wider than the limit is the only piece over it, alone", () => {
    fc.assert(
      fc.property(boundText, fc.integer({ min: 1, max: 3 }), (text, maxBytes) => {
        const pieces = Planning.cutText(text, maxBytes)
        assert.strictEqual(pieces.join(""), text)
        for (const piece of pieces) {
          if (bytes(piece) > maxBytes) assert.strictEqual([...piece].length, 1, JSON.stringify(piece))
        }
      }),
      { numRuns: 300 }
    )
  })

  it("cut_text_long_cluster_linear: a single cluster of a million marks is cut in one pass, every piece within the bound", () => {
    const long = `a${"\u0301".repeat(1_000_000)}`
    const started = performance.now()
    const pieces = Planning.cutText(long, 100)
    const elapsed = performance.now() - started
    assert.strictEqual(pieces.join(""), long)
    assert.isTrue(pieces.every((piece) => bytes(piece) <= 100))
    // About 20 ms here; a cut that re-segmented the cluster for each of its 20,001 pieces would take minutes.
    assert.isBelow(elapsed, 5_000)
  })

  it("cut_text_as_grapheme_walk: cutText makes exactly the pieces a walk over every grapheme of the text makes", () => {
    fc.assert(fc.property(hardText, fc.integer({ min: 1, max: 48 }), cutsLikeTheWalk(Planning.cutText)), {
      numRuns: 2_000
    })
  })

  it("negative control: a cutter that ignores graphemes near the cut is caught, with a readable counterexample", () => {
    const byUnits = (text: string, maxBytes: number): ReadonlyArray<string> => {
      const out: Array<string> = []
      let current = ""
      for (const point of text) {
        if (current.length > 0 && bytes(current + point) > maxBytes) {
          out.push(current)
          current = ""
        }
        current += point
      }
      if (current.length > 0) out.push(current)
      return out
    }
    const outcome = fc.check(fc.property(hardText, fc.integer({ min: 1, max: 48 }), cutsLikeTheWalk(byUnits)), {
      numRuns: 2_000,
      seed: 3
    })
    assert.isTrue(outcome.failed)
    assert.include(fc.defaultReportMessage(outcome) ?? "", "Counterexample")
  })

  it("pieces: every rendered byte of history lands in exactly one bounded piece, in order", () => {
    fc.assert(
      fc.property(fc.array(roundSpec, { maxLength: 8 }), fc.integer({ min: 16, max: 400 }), (specs, maxBytes) => {
        const rounds = History.rounds(historyOf(specs))
        const pieces = Planning.pieces(rounds, maxBytes)
        const rendered = rounds.map((round) => `${round.map(Compaction.renderPart).join("\n")}\n`).join("")
        return (
          pieces.join("") === rendered &&
          pieces.every((piece) => bytes(piece) <= maxBytes || graphemes(piece).length === 1)
        )
      }),
      { numRuns: 300 }
    )
  })

  it("compacting never separates a tool call from its result, and keeps the task", () => {
    fc.assert(
      fc.property(
        fc.array(roundSpec, { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 2_000 }),
        fc.integer({ min: 0, max: 2_000 }),
        (specs, limit, keepRecent) => {
          const history = historyOf(specs)
          const policy = Compaction.threshold({ measure: "bytes", limit, keepRecent })
          const planned = Planning.plan(history, policy)
          if (Option.isNone(planned)) return true
          const after = History.summarizeLeadingRounds(history, planned.value.summarized.length, {
            parts: [Model.text("user", "summary")],
            text: "summary"
          })
          const calls = new Set(after.parts.flatMap((part) => (part._tag === "ToolCall" ? [part.id] : [])))
          const results = new Set(after.parts.flatMap((part) => (part._tag === "ToolResult" ? [part.callId] : [])))
          const paired = [...calls].every((id) => results.has(id)) && [...results].every((id) => calls.has(id))
          return paired && after.task === history.task && History.toParts(after)[0]?._tag === "Text"
        }
      ),
      { numRuns: 300 }
    )
  })

  it("plan keeps the most recent rounds within keepRecent and summarizes all older ones", () => {
    const history = historyOf([
      { kind: "tools", text: "a".repeat(500), calls: 1 },
      { kind: "tools", text: "b".repeat(500), calls: 1 },
      { kind: "say", text: "short", calls: 1 }
    ])
    const planned = Planning.plan(history, Compaction.threshold({ measure: "bytes", limit: 100, keepRecent: 100 }))
    assert.isTrue(Option.isSome(planned))
    if (Option.isSome(planned)) {
      assert.strictEqual(planned.value.summarized.length, 2)
      assert.strictEqual(planned.value.keptRounds, 1)
    }
    assert.isTrue(Option.isNone(Planning.plan(history, Compaction.threshold({ measure: "bytes", limit: 10_000 }))))
  })

  it("estimated tokens are bytes / 4, rounded up", () => {
    assert.strictEqual(Policies.measureText("estimatedTokens", "abcde"), 2)
    assert.strictEqual(Policies.measureText("bytes", "é"), 2)
  })
})
