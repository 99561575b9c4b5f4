import { assert, describe, it } from "@effect/vitest"
import { Compaction, CompactionPolicy, History, Model } from "@tessera/runtime"
import { Option } from "effect"
import * as fc from "fast-check"

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

/** The reference: one grapheme at a time over the whole text, a new piece when the next would not fit. */
const walkGraphemes = (text: string, maxBytes: number): ReadonlyArray<string> => {
  const out: Array<string> = []
  let current = ""
  let currentBytes = 0
  for (const grapheme of graphemes(text)) {
    // A lone surrogate encodes as U+FFFD: 3 bytes, as the runtime counts it.
    const size = bytes(grapheme)
    if (currentBytes + size > maxBytes && current.length > 0) {
      out.push(current)
      current = ""
      currentBytes = 0
    }
    current += grapheme
    currentBytes += size
  }
  if (current.length > 0) out.push(current)
  return out
}

const cutsLikeTheWalk =
  (cut: (text: string, maxBytes: number) => ReadonlyArray<string>) =>
  (text: string, maxBytes: number): boolean => {
    const made = cut(text, maxBytes)
    const expected = walkGraphemes(text, maxBytes)
    return made.length === expected.length && made.every((piece, index) => piece === expected[index])
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
      fc.property(body, fc.integer({ min: 1, max: 64 }), (text, maxBytes) => {
        const pieces = Compaction.cutText(text, maxBytes)
        if (pieces.join("") !== text) return false
        return pieces.every(
          (piece) => (bytes(piece) <= maxBytes || graphemes(piece).length === 1) && graphemes(piece).join("") === piece
        )
      }),
      { numRuns: 300 }
    )
  })

  it("cut_text_as_grapheme_walk: cutText makes exactly the pieces a walk over every grapheme of the text makes", () => {
    fc.assert(fc.property(hardText, fc.integer({ min: 1, max: 48 }), cutsLikeTheWalk(Compaction.cutText)), {
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
        const pieces = Compaction.pieces(rounds, maxBytes)
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
          const policy = CompactionPolicy.threshold({ measure: "bytes", limit, keepRecent })
          const planned = Compaction.plan(history, policy)
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
    const planned = Compaction.plan(
      history,
      CompactionPolicy.threshold({ measure: "bytes", limit: 100, keepRecent: 100 })
    )
    assert.isTrue(Option.isSome(planned))
    if (Option.isSome(planned)) {
      assert.strictEqual(planned.value.summarized.length, 2)
      assert.strictEqual(planned.value.keptRounds, 1)
    }
    assert.isTrue(
      Option.isNone(Compaction.plan(history, CompactionPolicy.threshold({ measure: "bytes", limit: 10_000 })))
    )
  })

  it("estimated tokens are bytes / 4, rounded up", () => {
    assert.strictEqual(CompactionPolicy.measureText("estimatedTokens", "abcde"), 2)
    assert.strictEqual(CompactionPolicy.measureText("bytes", "é"), 2)
  })
})
