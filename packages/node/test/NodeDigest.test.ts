import { assert, describe, it } from "@effect/vitest"
import { Digest } from "@tessera/core"
import * as NodeDigest from "@tessera/node/NodeDigest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { aroundThreshold, conversionPath, longText, pathCounts, textPiece } from "./support/longTexts.ts"

const encoder = new TextEncoder()

describe("NodeDigest", () => {
  it("measures every text exactly as the portable WebCrypto digest does, synchronously too, lone surrogates included", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 300 })),
        async (text) => {
          const node = Effect.runSync(NodeDigest.nodeCrypto.measureText(text))
          const portable = await Effect.runPromise(Digest.webCrypto.measureText(text))
          assert.deepStrictEqual(node, portable)
          assert.deepStrictEqual(NodeDigest.nodeCrypto.measureTextSync?.(text), portable)
          assert.strictEqual(node.size, encoder.encode(text).byteLength)
          assert.match(node.sha256, /^[0-9a-f]{64}$/)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("long texts (past the conversion threshold) measure exactly as the portable digest does, lone surrogates and Latin-1 included", async () => {
    const reached = pathCounts()
    await fc.assert(
      fc.asyncProperty(textPiece, textPiece, aroundThreshold, textPiece, async (head, filler, length, tail) => {
        const text = longText(head, filler, length, tail)
        reached[conversionPath(text)]++
        const portable = await Effect.runPromise(Digest.webCrypto.measureText(text))
        assert.deepStrictEqual(NodeDigest.nodeCrypto.measureTextSync?.(text), portable)
        assert.strictEqual(portable.size, encoder.encode(text).byteLength)
      }),
      { numRuns: 300 }
    )
    assert.isAbove(reached.beyondLatin1, 0)
    assert.isAbove(reached.loneSurrogate, 0)
    assert.isAbove(reached.latin1, 0)
    assert.isAbove(reached.short, 0)
  })

  it("texts past the kept conversion buffer, and shorter ones after them, measure as the portable digest does", async () => {
    const unit = "log line 日本語 🙂 ok\n"
    const huge = unit.repeat(Math.ceil(2_200_000 / unit.length))
    // Latin-1 only: encoded in the kept buffer while it fits (up to 4 MiB), measured directly past it; a character
    // beyond Latin-1 far from the start: converted.
    const ascii = `${"log line ok\n".repeat(Math.ceil(1_500_000 / 12))}日本語`
    const latin1 = "caf\u00e9 ".repeat(Math.ceil(4_500_000 / 5))
    const texts = [
      huge,
      huge.slice(0, 20_000),
      `${huge.slice(0, 9_000)}\ud800`,
      huge.slice(0, 10_000),
      latin1,
      ascii,
      ascii.slice(0, 30_000),
      `${ascii.slice(0, 9_000)}\udc00 tail`,
      latin1.slice(0, 12_000),
      ascii.slice(0, 8_192)
    ]
    for (const text of texts) {
      assert.deepStrictEqual(
        NodeDigest.nodeCrypto.measureTextSync?.(text),
        await Effect.runPromise(Digest.webCrypto.measureText(text))
      )
    }
  })

  it("digests bytes exactly as the portable WebCrypto digest does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2_000 }), async (bytes) => {
        assert.strictEqual(
          Effect.runSync(NodeDigest.nodeCrypto.sha256(bytes)),
          await Effect.runPromise(Digest.webCrypto.sha256(bytes))
        )
      }),
      { numRuns: 200 }
    )
  })
})
