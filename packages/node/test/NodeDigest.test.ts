import { assert, describe, it } from "@effect/vitest"
import { Digest } from "@tessera/core"
import * as NodeDigest from "@tessera/node/NodeDigest"
import { Effect } from "effect"
import * as fc from "fast-check"

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
