/**
 * Sizes and SHA-256 digests of what the journal describes but never stores,
 * computed with the {@link Digest} in the context (WebCrypto by default).
 */

import type { Measure } from "@tessera/core/Digest"
import { Digest } from "@tessera/core/Digest"
import { Effect } from "effect"
import type { ModelRequest } from "../Model.ts"

export type { Measure } from "@tessera/core/Digest"

/** SHA-256 of raw bytes, as 64 lowercase hex digits. */
export const sha256Bytes = (bytes: Uint8Array): Effect.Effect<string> => Digest.use((digest) => digest.sha256(bytes))

/** Size and digest of a text, measured on its UTF-8 encoding. */
export const measureText = (text: string): Effect.Effect<Measure> => Digest.use((digest) => digest.measureText(text))

/**
 * Canonical text of a JSON-like value for measuring. Provider options are
 * opaque and may hold values JSON cannot express (a bigint, a cycle); those
 * are measured through a stand-in rather than failing the step, because the
 * measure only feeds the journal's size and digest.
 */
export const canonicalJson = (value: unknown): string => {
  // Plain JSON.stringify is several times faster than with a replacer, and
  // gives the same text whenever it succeeds (it throws on a bigint).
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    try {
      return (
        JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? `${inner}n` : inner)) ?? "null"
      )
    } catch {
      return String(value)
    }
  }
}

/** Size and digest of a JSON-like value. */
export const measureJson = (value: unknown): Effect.Effect<Measure> => measureText(canonicalJson(value))

/**
 * Measures of request parts (and tool spec lists), by object. A history
 * hands the same part objects to every later request, so each part is
 * stringified and hashed once, when it is first sent, instead of once per
 * step. Parts are immutable values (every field is readonly); a part changed
 * in place after it was sent keeps its first measure.
 */
const measured = new WeakMap<object, Measure>()

const measureOnce = (value: object): Effect.Effect<void> =>
  Effect.map(measureJson(value), (measure) => {
    measured.set(value, measure)
  })

/** `{"parts":[` and `],"tools":` and `}`: the bytes the request's JSON adds around its parts and tools. */
const requestFrameBytes = 21

/**
 * The measure of a request, composed from the measures of its parts and of
 * its tool specs (see `RequestDispatched` in `Journal.ts` for the
 * definition):
 *
 * - size: the UTF-8 length of `{"parts":[p1,p2,...],"tools":t}`, where each
 *   `pi` and `t` is the canonical JSON of that part and of the tool specs;
 *   for a plain JSON request that is exactly `JSON.stringify(request)`.
 * - sha256: SHA-256 of the ASCII text made of the hex SHA-256 of each part's
 *   canonical JSON in request order, followed by the hex SHA-256 of the tool
 *   specs' canonical JSON.
 *
 * A step therefore costs work in proportion to its new parts, not to the
 * whole history.
 */
export const measureRequest = (request: ModelRequest): Effect.Effect<Measure> => {
  const items: ReadonlyArray<object> = [...request.parts, request.tools]
  const unmeasured = items.filter((item) => !measured.has(item))
  const compose = Effect.suspend(() => {
    let size = requestFrameBytes + Math.max(request.parts.length - 1, 0)
    let digests = ""
    for (const item of items) {
      const measure = measured.get(item) as Measure
      size += measure.size
      digests += measure.sha256
    }
    return Effect.map(measureText(digests), (combined) => ({ size, sha256: combined.sha256 }))
  })
  return unmeasured.length === 0
    ? compose
    : Effect.andThen(Effect.forEach(unmeasured, measureOnce, { discard: true }), compose)
}
