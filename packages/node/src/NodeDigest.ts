/**
 * The `Digest` on `node:crypto`: synchronous SHA-256, so that
 * measuring a request, a response or a tool result costs no round trip
 * through a worker thread (the WebCrypto default needs one per digest).
 *
 * The digests are the standard SHA-256, byte for byte the same as the
 * default's; providing this layer changes speed only.
 *
 * @since 0.1.0
 */
import { hash } from "node:crypto"
import * as Digest from "@tessera/core/Digest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const measureTextSync = (text: string): Digest.Measure => ({
  size: Buffer.byteLength(text, "utf8"),
  sha256: hash("sha256", text, "hex")
})

/**
 * The `node:crypto` implementation. Texts are hashed and sized without
 * first copying them into a byte array: hashed with the one-shot `hash` (on
 * the short texts a step measures, parts and chain links, it costs about
 * half of `createHash().update().digest()`), sized with `Buffer.byteLength`.
 * The measure is the UTF-8 one, a lone surrogate counted as U+FFFD.
 *
 * @since 0.1.0
 * @category implementations
 */
export const nodeCrypto: Digest.DigestShape = {
  sha256: (bytes) => Effect.sync(() => hash("sha256", bytes, "hex")),
  measureText: (text) => Effect.sync(() => measureTextSync(text)),
  measureTextSync
}

/**
 * Provides {@link nodeCrypto} as the runtime's `Digest`. Adds no
 * requirement and satisfies none: without it the WebCrypto default is used.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.succeed(Digest.Digest)(nodeCrypto)
