/**
 * Sizes and SHA-256 digests of what the journal describes but never stores.
 *
 * WebCrypto is used (not `node:crypto`) because the same code runs in the
 * browser runtime; Effect has no digest of its own.
 */
import { Effect } from "effect"

const encoder = new TextEncoder()

/** A measured payload: its UTF-8 byte length and the hex SHA-256 of those bytes. */
export interface Measure {
  readonly size: number
  readonly sha256: string
}

const toHex = (buffer: ArrayBuffer): string =>
  Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, "0")).join("")

/** SHA-256 of raw bytes, as 64 lowercase hex digits. */
export const sha256Bytes = (bytes: Uint8Array<ArrayBuffer>): Effect.Effect<string> =>
  Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", bytes)).pipe(Effect.map(toHex))

/** Size and digest of a text, measured on its UTF-8 encoding. */
export const measureText = (text: string): Effect.Effect<Measure> => {
  const bytes = encoder.encode(text)
  return Effect.map(sha256Bytes(bytes), (sha256) => ({ size: bytes.length, sha256 }))
}

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
