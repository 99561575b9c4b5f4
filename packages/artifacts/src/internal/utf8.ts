/** UTF-8 lengths of strings, shared by pointers and abstracts. */

/** Any UTF-16 unit outside ASCII. */
export const nonAscii = /[\u0080-\uffff]/

/** UTF-8 length of a string, without encoding it. */
export const utf8Length = (text: string): number => {
  // Up to the first non-ASCII unit every unit is one byte; the engine finds
  // that unit far faster than a loop over every character would.
  const first = text.search(nonAscii)
  if (first === -1) return text.length
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
