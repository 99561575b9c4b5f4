import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
// Splitting a journal into lines is internal (the package blocks `./internal/*`); the test reaches it by path.
import { eachLine } from "../src/internal/journalLines.js"

const encoder = new TextEncoder()
/** The reference: one line decoded on its own, strictly, a byte order mark kept as a character. */
const reference = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const decodedAlone = (line: Uint8Array): string | undefined => {
  try {
    return reference.decode(line)
  } catch {
    return undefined
  }
}
const newline = 0x0a

/**
 * A line's bytes, never a newline: mostly UTF-8 text (multibyte characters and
 * byte order marks included, so chunk cuts fall inside characters), sometimes
 * bytes that are not UTF-8.
 */
const lineBytes = fc
  .oneof(
    { weight: 4, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }).map((text) => encoder.encode(text)) },
    { weight: 1, arbitrary: fc.constantFrom("\ufeff{}", "é€𝄞", "").map((text) => encoder.encode(text)) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 8 }) }
  )
  .map((bytes) => bytes.map((byte) => (byte === newline ? 0x20 : byte)))

const fileOf = (lines: ReadonlyArray<Uint8Array>): Uint8Array => {
  const file = new Uint8Array(lines.reduce((size, line) => size + line.length + 1, 0))
  let at = 0
  for (const line of lines) {
    file.set(line, at)
    at += line.length
    file[at++] = newline
  }
  return file
}

const readAll = (file: Uint8Array, chunkBytes: number): Array<string | undefined> => {
  const seen: Array<string | undefined> = []
  eachLine(
    file,
    file.length,
    (text) => {
      seen.push(text)
      return undefined
    },
    chunkBytes
  )
  return seen
}

describe("journal lines", () => {
  it("with any chunk size, hand over each line as decoding it alone would (undefined when it is not UTF-8)", () => {
    fc.assert(
      fc.property(fc.array(lineBytes, { maxLength: 12 }), fc.integer({ min: 1, max: 48 }), (lines, chunkBytes) => {
        assert.deepStrictEqual(readAll(fileOf(lines), chunkBytes), lines.map(decodedAlone))
      }),
      { numRuns: 3_000 }
    )
  })

  it("keep a byte order mark as a character, at the start of the file and anywhere else", () => {
    const file = fileOf([encoder.encode("\ufeff1"), encoder.encode("\ufeff2")])
    for (const chunkBytes of [1, 4, 1024]) assert.deepStrictEqual(readAll(file, chunkBytes), ["\ufeff1", "\ufeff2"])
  })

  it("stop at the first line for which the taker answers, and return that answer", () => {
    fc.assert(
      fc.property(
        fc.array(lineBytes, { minLength: 1, maxLength: 12 }),
        fc.nat(),
        fc.integer({ min: 1, max: 48 }),
        (lines, pick, chunkBytes) => {
          const stopAt = pick % lines.length
          let taken = 0
          const answer = eachLine(
            fileOf(lines),
            fileOf(lines).length,
            () => (taken++ === stopAt ? `stopped at ${stopAt}` : undefined),
            chunkBytes
          )
          assert.strictEqual(answer, `stopped at ${stopAt}`)
          assert.strictEqual(taken, stopAt + 1)
        }
      ),
      { numRuns: 1_000 }
    )
  })
})
