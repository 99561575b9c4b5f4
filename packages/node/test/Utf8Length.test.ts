import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { utf8Length } from "../src/internal/utf8.js"
import { aroundThreshold, conversionPath, longText, pathCounts, textPiece } from "./support/longTexts.ts"

// The durable writes count a text's bytes this way to tell a complete write from a cut one: a count that differs
// from Node's would report a complete write as cut, or a cut one as complete.
describe("utf8Length", () => {
  it("counts every text exactly as Buffer.byteLength does, on every path, lone surrogates included", () => {
    const reached = pathCounts()
    fc.assert(
      fc.property(textPiece, textPiece, aroundThreshold, textPiece, (head, filler, length, tail) => {
        const text = longText(head, filler, length, tail)
        reached[conversionPath(text)]++
        assert.strictEqual(utf8Length(text), Buffer.byteLength(text, "utf8"))
      }),
      { numRuns: 400 }
    )
    assert.isAbove(reached.short, 0)
    assert.isAbove(reached.beyondLatin1, 0)
    assert.isAbove(reached.loneSurrogate, 0)
    assert.isAbove(reached.latin1, 0)
  })

  it("counts texts past the kept buffer, and shorter ones after them, exactly", () => {
    const ascii = "log line ok\n".repeat(Math.ceil(1_500_000 / 12))
    const latin1 = "caf\u00e9 ".repeat(Math.ceil(4_500_000 / 5))
    for (const text of [latin1, ascii, `${ascii}日本語`, latin1.slice(0, 9_000), `${ascii.slice(0, 20_000)}\ud800`]) {
      assert.strictEqual(utf8Length(text), Buffer.byteLength(text, "utf8"))
    }
  })
})
