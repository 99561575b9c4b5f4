/**
 * Texts of about 8,192 units, of every kind UTF-8 treats apart, for the
 * properties of the Node digest. A text is built from four generated
 * values, `longText(head, filler, length, tail)`, so that a counterexample
 * shows those values, not thousands of characters.
 */
import * as fc from "fast-check"

/** Pieces of every kind of text the conversion treats apart: ASCII, Latin-1, beyond Latin-1, lone surrogates. */
export const textPiece: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0x80, max: 0xff }).map((code) => String.fromCharCode(code)), maxLength: 40 }),
  fc.string({
    unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)),
    maxLength: 3
  })
)

/** Lengths for the filler, on both sides of the 8,192-unit threshold. */
export const aroundThreshold: fc.Arbitrary<number> = fc.integer({ min: 8_000, max: 9_000 })

/** `head`, then `filler` repeated to about `length` units, then `tail`: every part can hold any kind of text. */
export const longText = (head: string, filler: string, length: number, tail: string): string => {
  const middle = (filler.length === 0 ? "x" : filler).repeat(Math.ceil(length / Math.max(1, filler.length)))
  return `${head}${middle}${tail}`
}

/** The ways the conversion treats texts, as the properties count them. */
export type ConversionPath = "short" | "latin1" | "beyondLatin1" | "loneSurrogate"

/**
 * Which kind `text` is: short (below 8,192 units), Latin-1 only, with a
 * character beyond Latin-1, or with a lone surrogate.
 */
export const conversionPath = (text: string): ConversionPath =>
  text.length < 8_192
    ? "short"
    : !/[\u0100-\uffff]/.test(text)
      ? "latin1"
      : text.isWellFormed()
        ? "beyondLatin1"
        : "loneSurrogate"

/** A count of the texts a property met on each path, to assert that every path was taken. */
export const pathCounts = (): Record<ConversionPath, number> => ({
  short: 0,
  latin1: 0,
  beyondLatin1: 0,
  loneSurrogate: 0
})
