/**
 * The SHA-256 the runtime measures with: sizes and digests of what the
 * journal describes but never stores (requests, responses, tool inputs and
 * results, a cut journal tail, a staged summary).
 *
 * {@link Digest} is a `Context.Reference`: it needs no layer and adds no
 * requirement to any type. Its default is WebCrypto (`crypto.subtle`), which
 * exists in browsers and in Node alike but is asynchronous: every digest is a
 * round trip through a worker. A host with a synchronous SHA-256 provides its
 * own implementation (the Node host's `NodeDigest.layer` uses `node:crypto`),
 * and every measure then costs no asynchronous hop. Implementations differ in
 * speed only: SHA-256 is SHA-256, so the journal reads the same either way.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/**
 * A measured payload: its UTF-8 byte length and the SHA-256 of those bytes
 * as 64 lowercase hex digits.
 *
 * @since 0.1.0
 * @category models
 */
export interface Measure {
  readonly size: number
  readonly sha256: string
}

/**
 * What a digest implementation provides. Both functions must return the
 * standard SHA-256 as 64 lowercase hex digits; `measureText` measures the
 * text's UTF-8 encoding (an implementation may skip materialising the bytes).
 *
 * @since 0.1.0
 * @category models
 */
export interface DigestShape {
  readonly sha256: (bytes: Uint8Array) => Effect.Effect<string>
  readonly measureText: (text: string) => Effect.Effect<Measure>
  /**
   * The same measure as `measureText`, returned directly, for a host whose
   * SHA-256 is synchronous. Optional: a measure that takes several digests
   * (a request's hash chain) then runs as one synchronous computation
   * instead of one effect per digest.
   */
  readonly measureTextSync?: ((text: string) => Measure) | undefined
}

const encoder = new TextEncoder()

const toHex = (digest: ArrayBuffer): string => {
  const bytes = new Uint8Array(digest)
  let hex = ""
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0")
  return hex
}

const subtleSha256 = (bytes: Uint8Array): Effect.Effect<string> =>
  Effect.map(
    Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)),
    toHex
  )

/**
 * The portable implementation: WebCrypto's `crypto.subtle.digest`, one
 * asynchronous call per digest.
 *
 * @since 0.1.0
 * @category implementations
 */
export const webCrypto: DigestShape = {
  sha256: subtleSha256,
  measureText: (text) => {
    const bytes = encoder.encode(text)
    return Effect.map(subtleSha256(bytes), (sha256) => ({ size: bytes.length, sha256 }))
  }
}

/**
 * The digest the runtime uses; WebCrypto ({@link webCrypto}) unless a host
 * provides another implementation (`Layer.succeed(Digest)(implementation)`).
 *
 * @since 0.1.0
 * @category services
 */
export const Digest: Context.Reference<DigestShape> = Context.Reference<DigestShape>("@tessera/core/Digest", {
  defaultValue: () => webCrypto
})

/**
 * The SHA-256 of `bytes` with the {@link Digest} in the context, as 64
 * lowercase hex digits.
 *
 * @since 0.1.0
 * @category measuring
 */
export const sha256 = (bytes: Uint8Array): Effect.Effect<string> => Digest.use((digest) => digest.sha256(bytes))

/**
 * The UTF-8 byte length and SHA-256 of `text`, with the {@link Digest} in the
 * context.
 *
 * @since 0.1.0
 * @category measuring
 */
export const measureText = (text: string): Effect.Effect<Measure> => Digest.use((digest) => digest.measureText(text))
