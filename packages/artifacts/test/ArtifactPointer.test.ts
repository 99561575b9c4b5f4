import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer } from "@tessera/artifacts"
import { Option } from "effect"
import * as fc from "fast-check"
// The two abstract implementations are internal (the package blocks `./internal/*`); the test reaches them by path.
import { asciiAbstract, segmentedAbstract } from "../src/internal/abstract.js"

const graphemes = (text: string): Array<string> =>
  Array.from(new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text), (s) => s.segment)

/** Pieces whose clusters are easy to split by accident, each named for readable shrinking. */
const pieces = {
  word: "word",
  accented: "café",
  combining: "e\u0301\u0302",
  family: "👩\u200d👩\u200d👧\u200d👦",
  flag: "🇫🇷",
  skinTone: "👍🏽",
  keycap: "1\ufe0f\u20e3",
  cjk: "漢字",
  devanagari: "नमस्ते",
  hangulJamo: "\u1100\u1161\u11a8",
  space: " ",
  newline: "\n",
  tab: "\t"
} as const
type PieceName = keyof typeof pieces
const pieceNames = Object.keys(pieces) as Array<PieceName>

const normalised = (text: string) => text.replace(/\s+/gu, " ").trim()

describe("ArtifactPointer.buildAbstract", () => {
  it("the abstract never splits a multibyte character or a grapheme cluster (emoji ZWJ sequences, combining marks, flags)", () => {
    fc.assert(
      fc.property(
        fc.record({ body: fc.array(fc.constantFrom(...pieceNames), { maxLength: 30 }), budget: fc.nat({ max: 80 }) }),
        ({ body, budget }) => {
          const text = body.map((name) => pieces[name]).join("")
          const abstract = ArtifactPointer.buildAbstract(text, budget)
          assert.isAtMost(Buffer.byteLength(abstract), budget)
          const shown = abstract.endsWith("…") ? abstract.slice(0, -1) : abstract
          const source = graphemes(normalised(text))
          const kept = graphemes(shown)
          // Every cluster shown is a whole cluster of the source, in order from the start.
          assert.deepStrictEqual(kept, source.slice(0, kept.length))
          // Only a cut is marked, and nothing is cut when the whole text fits.
          if (Buffer.byteLength(normalised(text)) <= budget) assert.strictEqual(abstract, normalised(text))
          else assert.isTrue(abstract === "" || abstract.endsWith("…"))
          assert.isFalse(/[\n\r\t]/.test(abstract))
        }
      ),
      { numRuns: 300 }
    )
  })

  it("on ASCII text the character-wise abstract equals the grapheme-wise one, for complete and cut windows", () => {
    // Named pieces shrink to readable counterexamples; CR LF is the one ASCII cluster of two characters.
    const ascii = {
      word: "word",
      x: "x",
      punctuation: ".,;",
      space: " ",
      spaces: "   ",
      newline: "\n",
      crlf: "\r\n",
      cr: "\r",
      tab: "\t",
      formFeed: "\f",
      escape: "\u001b",
      nul: "\u0000"
    } as const
    const names = Object.keys(ascii) as Array<keyof typeof ascii>
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...names), { maxLength: 40 }),
        fc.integer({ min: 0, max: 60 }),
        fc.boolean(),
        (body, budget, complete) => {
          const window = body.map((name) => ascii[name]).join("")
          assert.strictEqual(asciiAbstract(window, budget, complete), segmentedAbstract(window, budget, complete))
        }
      ),
      { numRuns: 2_000 }
    )
  })

  it("a budget that ends inside a cluster drops the whole cluster", () => {
    const family = pieces.family
    const familyBytes = Buffer.byteLength(family)
    for (let budget = 0; budget < familyBytes + 6; budget++) {
      const abstract = ArtifactPointer.buildAbstract(`ab${family}cdef`, budget)
      assert.isFalse(abstract.includes("\u200d") && !abstract.includes(family), `budget ${budget}: ${abstract}`)
    }
    assert.strictEqual(ArtifactPointer.buildAbstract(`ab${family}cdef`, 2 + familyBytes + 3), `ab${family}…`)
    assert.strictEqual(ArtifactPointer.buildAbstract(`ab${family}cdef`, 2 + familyBytes + 2), "ab…")
  })

  it("utf8Length agrees with the encoder, lone surrogates included", () => {
    fc.assert(
      // An ASCII run first, then anything: the count starts at the first non-ASCII unit.
      fc.property(fc.string({ maxLength: 20 }), fc.string({ unit: "binary", maxLength: 40 }), (ascii, rest) => {
        const text = ascii + rest
        assert.strictEqual(ArtifactPointer.utf8Length(text), new TextEncoder().encode(text).byteLength)
      })
    )
  })

  it("utf8Length agrees with the encoder on long texts too (counted by the platform on Node), lone surrogates included", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 20 }),
        fc.string({ unit: "binary", minLength: 300, maxLength: 3000 }),
        fc.constantFrom("", "\ud800", "\udc00", "😀", "\ud83d"),
        (ascii, rest, edge) => {
          const text = ascii + rest + edge
          assert.strictEqual(ArtifactPointer.utf8Length(text), new TextEncoder().encode(text).byteLength)
        }
      ),
      { numRuns: 300 }
    )
  })
})

const pointerLine = (fields: { path: string; bytes?: string; readWith?: string; abstract?: string }) =>
  `[artifact] path=${fields.path} bytes=${fields.bytes ?? "12"} read_with=${fields.readWith ?? '"read_file"'} abstract=${fields.abstract ?? '"x"'}`

describe("ArtifactPointer.extractPaths", () => {
  it("pointer extraction ignores non-pointer and malformed lines; an empty path= does not yield the next field", () => {
    const valid = ArtifactPointer.render({
      path: "tool-results/c1.txt",
      bytes: 5,
      readWith: "read_file",
      abstract: "hi"
    })
    const text = [
      "The tool answered:",
      valid,
      "[artifact] but this is prose",
      pointerLine({ path: "" }),
      pointerLine({ path: '""' }),
      `[artifact] path= bytes="tool-results/stolen.txt" read_with="read_file" abstract="x"`,
      `[artifact] path=bytes=12 read_with="read_file" abstract="x"`,
      pointerLine({ path: '"unterminated' }),
      pointerLine({ path: "unquoted.txt" }),
      pointerLine({ path: '"/etc/passwd"' }),
      pointerLine({ path: '"../escape.txt"' }),
      pointerLine({ path: '"a/./b.txt"' }),
      pointerLine({ path: '"ok.txt"', bytes: "-1" }),
      pointerLine({ path: '"ok.txt"', bytes: "99999999999999999999" }),
      pointerLine({ path: '"ok.txt"', abstract: '"x" trailing' }),
      pointerLine({ path: '"bad\\q.txt"' }),
      `[artifact] bytes=12 path="reordered.txt" read_with="read_file" abstract="x"`,
      `prefix [artifact] path="embedded.txt" bytes=1 read_with="r" abstract=""`,
      `   ${ArtifactPointer.render({ path: "scratch/é 👩‍👩‍👧.txt", bytes: 0, readWith: "cat", abstract: 'say "hi"\n' })}`
    ].join("\n")
    assert.deepStrictEqual(ArtifactPointer.extractPaths(text), ["tool-results/c1.txt", "scratch/é 👩‍👩‍👧.txt"])
  })

  it("a rendered pointer is one line and parses back to the same fields, whatever the abstract and tool contain", () => {
    const segment = fc.constantFrom("tool-results", "scratch", "c1.txt", "é", "a b", 'q"uote', "back\\slash", "👩‍👩‍👧")
    fc.assert(
      fc.property(
        fc.record({
          segments: fc.array(segment, { minLength: 1, maxLength: 4 }),
          bytes: fc.nat(),
          readWith: fc.string({ maxLength: 12 }),
          abstract: fc.string({ unit: "grapheme", maxLength: 30 })
        }),
        ({ abstract, bytes, readWith, segments }) => {
          // Backslashes are separators in targets, so a segment holding one becomes two segments.
          const path = segments.join("/").split("\\").join("/")
          const pointer = { path, bytes, readWith, abstract: `${abstract}\u2028\r\n` }
          const line = ArtifactPointer.render(pointer)
          assert.isFalse(/[\n\r\u2028\u2029]/.test(line))
          assert.deepStrictEqual(ArtifactPointer.parse(line), Option.some(pointer))
        }
      ),
      { numRuns: 200 }
    )
  })
})
