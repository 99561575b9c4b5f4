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
import { transcode } from "node:buffer"
import { hash } from "node:crypto"
import * as Digest from "@tessera/core/Digest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

// V8 encodes a string that holds a character beyond Latin-1 (stored as UTF-16) to UTF-8 one character at a time,
// for `hash` and again for `Buffer.byteLength`; copying its UTF-16 out and converting that with ICU is two to three
// times faster on long texts, and gives the size for free. A string whose first units are all Latin-1 keeps the
// direct path, which is the faster one for Latin-1 text (V8 stores it one byte a unit); below 8 KiB of units the
// saving is smaller than looking.
const transcodeFrom = 8_192
const probedUnits = 1_024
const beyondLatin1 = /[\u0100-\uffff]/

// The UTF-16 copy goes through one buffer kept for the purpose (allocating it per text cost about a quarter of the
// measure); a text too long for the kept size gets a buffer of its own, so at most this much stays allocated.
const keptUtf16Bytes = 1 << 20
let utf16Scratch: Buffer | undefined

const utf16Of = (text: string): Buffer => {
  const bytes = text.length * 2
  if (bytes > keptUtf16Bytes) return Buffer.from(text, "utf16le")
  if (utf16Scratch === undefined || utf16Scratch.length < bytes) {
    utf16Scratch = Buffer.allocUnsafeSlow(Math.min(keptUtf16Bytes, Math.max(bytes, 2 * (utf16Scratch?.length ?? 0))))
  }
  return utf16Scratch.subarray(0, utf16Scratch.write(text, 0, bytes, "utf16le"))
}

// The text's UTF-8, or `undefined` where ICU refuses it: a lone surrogate, which the direct path encodes as U+FFFD.
const utf8Of = (text: string): Buffer | undefined => {
  try {
    return transcode(utf16Of(text), "utf16le", "utf8")
  } catch {
    return undefined
  }
}

const measureTextSync = (text: string): Digest.Measure => {
  if (text.length >= transcodeFrom && beyondLatin1.test(text.slice(0, probedUnits))) {
    const bytes = utf8Of(text)
    if (bytes !== undefined) return { size: bytes.length, sha256: hash("sha256", bytes, "hex") }
  }
  return { size: Buffer.byteLength(text, "utf8"), sha256: hash("sha256", text, "hex") }
}

/**
 * The `node:crypto` implementation. Texts are hashed and sized without
 * first copying them into a byte array, with the one-shot `hash` (on the
 * short texts a step measures, parts and chain links, it costs about half of
 * `createHash().update().digest()`); a long text with characters beyond
 * Latin-1 near its start is converted to UTF-8 once, through `transcode`, and
 * that is hashed and sized. Either way the measure is the UTF-8 one, a lone
 * surrogate counted as U+FFFD.
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
