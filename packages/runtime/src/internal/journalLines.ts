/**
 * The lines of a journal file's bytes as texts, for reopening.
 *
 * Bytes are decoded a chunk at a time (about 1 MiB, ending at a newline)
 * and each chunk's text split at its newlines: one decoder call per chunk,
 * not one per line, which costs more (bench/NOTES.md has the measurement),
 * and chunks keep each text small whatever the file's size. A chunk that is
 * not valid UTF-8 is decoded line by line, so that the line at fault is the
 * one reported. The byte order mark is kept as a character wherever it
 * appears, so no line's reading depends on where a chunk starts.
 */

const newline = 0x0a
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** The default chunk size, in bytes. */
export const defaultChunkBytes = 1024 * 1024

/** The text of UTF-8 `bytes`, or `undefined` when they are not valid UTF-8. */
const utf8Text = (bytes: Uint8Array): string | undefined => {
  try {
    return decoder.decode(bytes)
  } catch {
    return undefined
  }
}

/**
 * Hands every line of `bytes` up to `completeBytes` (which must end with a
 * newline, or be 0) to `take`, in order and without its newline: its text,
 * or `undefined` when the line is not valid UTF-8. Stops at the first line
 * for which `take` returns a value, and returns that value.
 */
export const eachLine = <A>(
  bytes: Uint8Array,
  completeBytes: number,
  take: (text: string | undefined) => A | undefined,
  chunkBytes: number = defaultChunkBytes
): A | undefined => {
  let chunkStart = 0
  while (chunkStart < completeBytes) {
    let chunkEnd =
      chunkStart + chunkBytes >= completeBytes
        ? completeBytes
        : bytes.lastIndexOf(newline, chunkStart + chunkBytes - 1) + 1
    // A line longer than a chunk is a chunk of its own.
    if (chunkEnd <= chunkStart) chunkEnd = bytes.indexOf(newline, chunkStart + chunkBytes) + 1
    const text = utf8Text(bytes.subarray(chunkStart, chunkEnd))
    if (text !== undefined) {
      for (let start = 0; start < text.length; ) {
        const end = text.indexOf("\n", start)
        const stop = take(text.slice(start, end))
        if (stop !== undefined) return stop
        start = end + 1
      }
    } else {
      for (let start = chunkStart; start < chunkEnd; ) {
        const end = bytes.indexOf(newline, start)
        const stop = take(utf8Text(bytes.subarray(start, end)))
        if (stop !== undefined) return stop
        start = end + 1
      }
    }
    chunkStart = chunkEnd
  }
  return undefined
}
