import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { utf8Length } from "../src/internal/utf8.js"

// The durable writes count a text's bytes this way to tell a complete write from a cut one: a count that differs
// from Node's would report a complete write as cut, or a cut one as complete.
describe("utf8Length", () => {
  it("counts every text exactly as Buffer.byteLength does, on every path, lone surrogates included", () => {
    const piece = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: "grapheme", maxLength: 40 }),
      fc.string({ unit: fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code)), maxLength: 40 }),
      fc.string({
        unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)),
        maxLength: 3
      })
    )
    // Which way the generated texts are counted: short (Node's count), long with a character beyond Latin-1 (a lone
    // surrogate included; Node's count), and long with Latin-1 only (encoded into the kept buffer).
    const reached = { short: 0, beyondLatin1: 0, beyondLatin1LoneSurrogate: 0, encoded: 0 }
    fc.assert(
      fc.property(piece, piece, fc.integer({ min: 8_000, max: 9_000 }), piece, (head, filler, length, tail) => {
        const middle = (filler.length === 0 ? "x" : filler).repeat(Math.ceil(length / Math.max(1, filler.length)))
        const text = `${head}${middle}${tail}`
        if (text.length < 8_192) reached.short++
        else if (!/[\u0100-\uffff]/.test(text)) reached.encoded++
        else if (text.isWellFormed()) reached.beyondLatin1++
        else reached.beyondLatin1LoneSurrogate++
        assert.strictEqual(utf8Length(text), Buffer.byteLength(text, "utf8"))
      }),
      { numRuns: 400 }
    )
    assert.isAbove(reached.short, 0)
    assert.isAbove(reached.beyondLatin1, 0)
    assert.isAbove(reached.beyondLatin1LoneSurrogate, 0)
    assert.isAbove(reached.encoded, 0)
  })

  it("counts texts past the kept buffer, and shorter ones after them, exactly", () => {
    const ascii = "log line ok\n".repeat(Math.ceil(1_500_000 / 12))
    const latin1 = "caf\u00e9 ".repeat(Math.ceil(4_500_000 / 5))
    for (const text of [latin1, ascii, `${ascii}日本語`, latin1.slice(0, 9_000), `${ascii.slice(0, 20_000)}\ud800`]) {
      assert.strictEqual(utf8Length(text), Buffer.byteLength(text, "utf8"))
    }
  })
})
