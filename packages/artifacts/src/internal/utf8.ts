/** UTF-8 lengths of strings, shared by pointers and abstracts. */

/** Any UTF-16 unit outside ASCII. */
export const nonAscii = /[\u0080-\uffff]/

// The platform's own count where it has one (Node's `Buffer.byteLength`: about twice the speed of the loop below on
// text that is mostly not ASCII); it counts exactly as the loop does, a lone surrogate as the 3 bytes of U+FFFD.
const platformByteLength = (globalThis as { readonly Buffer?: { readonly byteLength?: unknown } }).Buffer?.byteLength
const nativeLength =
  typeof platformByteLength === "function"
    ? (platformByteLength as (text: string, encoding: "utf8") => number)
    : undefined

/** UTF-8 length of a string, without encoding it. */
export const utf8Length = (text: string): number => {
  // Up to the first non-ASCII unit every unit is one byte; the engine finds
  // that unit far faster than a loop over every character would.
  const first = text.search(nonAscii)
  if (first === -1) return text.length
  if (nativeLength !== undefined && text.length - first > 256) return nativeLength(text, "utf8")
  let bytes = first
  for (let i = first; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else {
        bytes += 3
      }
    } else bytes += 3
  }
  return bytes
}

/**
 * Whether `text` takes more than `limit` UTF-8 bytes. Every UTF-16 unit is
 * one to three bytes, so the length alone decides most texts; only a text
 * whose length leaves it open is counted.
 */
export const exceedsUtf8 = (text: string, limit: number): boolean =>
  text.length > limit ? true : text.length * 3 <= limit ? false : utf8Length(text) > limit
