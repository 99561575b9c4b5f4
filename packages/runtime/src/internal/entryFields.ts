/**
 * The field Schemas every journal entry is built from: counts, ordinals,
 * digests, and the header every entry carries.
 */
import * as Schema from "effect/Schema"

// Reopening checks every field of every line, so these checks are plain
// predicates: one integer test per field instead of `Int` plus a bound, and a
// character loop instead of a regular expression (together about a tenth of
// a reopen's decoding).
const integerAtLeast = (minimum: number) =>
  Schema.Number.check(
    Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= minimum, {
      expected: `an integer >= ${minimum}`
    })
  )
export const Count = integerAtLeast(0)
export const Ordinal = integerAtLeast(1)

/** Lowercase hex digits by character code: one table lookup a character, a third of the time of two range tests. */
const hexDigit = new Uint8Array(128)
for (const digit of "0123456789abcdef") hexDigit[digit.charCodeAt(0)] = 1

/** Whether `text` is 64 lowercase hex digits, like `/^[0-9a-f]{64}$/`. */
const isSha256Hex = (text: string): boolean => {
  if (text.length !== 64) return false
  for (let index = 0; index < 64; index++) {
    const code = text.charCodeAt(index)
    if (code >= 128 || hexDigit[code] === 0) return false
  }
  return true
}
export const Sha256 = Schema.String.check(
  Schema.makeFilter(isSha256Hex, { expected: "a lowercase hex SHA-256 digest" })
)

/** Fields every entry carries: its position in the file and when it was written. */
export const header = {
  /** Zero-based index of the entry in the file; the next append uses the entry count. */
  seq: Count,
  /** Epoch milliseconds from Effect's `Clock`. */
  at: Schema.Number
}
