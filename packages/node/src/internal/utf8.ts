/**
 * The UTF-8 of long texts, through one buffer kept for the purpose, shared
 * by the Node digest (which hashes the bytes) and the durable writes (which
 * only need the count). Everything here is synchronous, so no two callers
 * ever hold the kept buffer at once.
 *
 * V8 encodes a string that holds a character beyond Latin-1 (stored as
 * UTF-16) to UTF-8 one character at a time, and counts its bytes
 * (`Buffer.byteLength`) almost as slowly; copying the UTF-16 out and
 * converting that with ICU (`transcode`) is two to three times faster on
 * long texts. A long text with no character beyond Latin-1 (V8 stores it
 * one byte a unit, and log text is mostly ASCII) is encoded with
 * `encodeInto`, which copies ASCII at memory speed: counting its bytes that
 * way takes about 0.1 ms a MiB where `Buffer.byteLength` takes 0.25. Below
 * 8 KiB of units neither saves what looking costs. A lone surrogate is
 * U+FFFD everywhere, as Node writes it.
 */
import { transcode } from "node:buffer"

/** Texts of at least this many units are converted through the kept buffer. */
export const convertFrom = 8_192
const beyondLatin1 = /[\u0100-\uffff]/

// Allocating the buffer per text cost about a quarter of a measure; a text too long for the kept size is handled
// without it, so at most this much stays allocated.
const keptBytes = 4 << 20
let scratch: Buffer | undefined

const scratchFor = (bytes: number): Buffer => {
  const wanted = Math.min(keptBytes, bytes)
  if (scratch === undefined || scratch.length < wanted) {
    scratch = Buffer.allocUnsafeSlow(Math.min(keptBytes, Math.max(wanted, 2 * (scratch?.length ?? 0))))
  }
  return scratch
}

/**
 * Whether the text holds a character beyond Latin-1: it is then converted with ICU. Asked of the whole text: V8
 * answers at once for a text it stores one byte a unit (no such character can be in it), and otherwise stops at the
 * first one, which in text that has any is usually near the start.
 */
export const holdsBeyondLatin1 = (text: string): boolean => beyondLatin1.test(text)

const utf16Of = (text: string): Buffer => {
  const bytes = text.length * 2
  if (bytes > keptBytes) return Buffer.from(text, "utf16le")
  const kept = scratchFor(bytes)
  return kept.subarray(0, kept.write(text, 0, bytes, "utf16le"))
}

/** The text's UTF-8 in a new buffer, through ICU; `undefined` where ICU refuses it (a lone surrogate). */
export const transcoded = (text: string): Buffer | undefined => {
  try {
    return transcode(utf16Of(text), "utf16le", "utf8")
  } catch {
    return undefined
  }
}

const encoder = new TextEncoder()

/**
 * The text's UTF-8 in the kept buffer, or `undefined` when it does not fit
 * there. The bytes are valid only until the next call into this module.
 */
export const encodedInScratch = (text: string): Buffer | undefined => {
  const kept = scratchFor(text.length * 3)
  const { read, written } = encoder.encodeInto(text, kept)
  return read === text.length ? kept.subarray(0, written) : undefined
}

/** The text's size in UTF-8, exactly `Buffer.byteLength(text, "utf8")`. */
export const utf8Length = (text: string): number => {
  if (text.length >= convertFrom && !holdsBeyondLatin1(text)) {
    const encoded = encodedInScratch(text)
    if (encoded !== undefined) return encoded.length
  }
  return Buffer.byteLength(text, "utf8")
}
