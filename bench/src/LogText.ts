/**
 * The synthetic tool output every benchmark uses: log-like ASCII text, and
 * result bodies that differ per call. Free of the runtime's code, so the bare
 * loop's process loads none of it.
 */

const logLine = (i: number): string =>
  `2026-11-29T12:${String(i % 60).padStart(2, "0")}:00Z INFO worker-${i % 7} processed batch ${i} ok items=${(i * 37) % 1000}\n`

/** `size` characters of log-like ASCII text (so UTF-8 bytes equal characters). */
export const logText = (size: number, seed = 0): string => {
  let out = ""
  for (let i = seed; out.length < size; i++) out += logLine(i)
  return out.slice(0, size)
}

/** A result body for call `n`: a shared body with a per-call header, so no two results are equal. */
export const resultBody =
  (base: string) =>
  (call: number, size: number): string => {
    const header = `result of call ${call}\n`
    return header + base.slice(header.length, size)
  }
