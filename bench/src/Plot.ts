/**
 * A hand-written SVG plot of request size (log scale) against step number:
 * offload + compaction on (measured to 10,000 steps) against both off
 * (measured, then extrapolated along its exact linear growth).
 */
import { formatBytes } from "./Harness.ts"

export interface PlotInput {
  readonly on: ReadonlyArray<readonly [number, number]>
  readonly off: ReadonlyArray<readonly [number, number]>
  readonly offPerStep: number
  readonly offFrom: readonly [number, number]
}

const width = 760
const height = 420
const left = 80
const right = 20
const top = 30
const bottom = 50

export const contextPlot = (input: PlotInput): string => {
  const maxStep = Math.max(10_000, ...input.on.map(([step]) => step))
  const extrapolated = input.offFrom[1] + input.offPerStep * (maxStep - input.offFrom[0])
  const minY = 100
  const maxY = Math.max(extrapolated, ...input.on.map(([, size]) => size)) * 1.5
  const x = (step: number) => left + ((width - left - right) * step) / maxStep
  const y = (size: number) =>
    top +
    (height - top - bottom) *
      (1 - (Math.log10(Math.max(size, minY)) - Math.log10(minY)) / (Math.log10(maxY) - Math.log10(minY)))
  const line = (points: ReadonlyArray<readonly [number, number]>) =>
    points.map(([step, size], i) => `${i === 0 ? "M" : "L"}${x(step).toFixed(1)},${y(size).toFixed(1)}`).join(" ")
  const parts: Array<string> = []
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`
  )
  parts.push("<title>Request size against step number, offload and compaction on and off</title>")
  parts.push(`<rect width="${width}" height="${height}" fill="white"/>`)
  parts.push(
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14">Request size against step number (50 KiB tool result per step)</text>`
  )
  for (let exponent = Math.ceil(Math.log10(minY)); 10 ** exponent <= maxY; exponent++) {
    const value = 10 ** exponent
    parts.push(
      `<line x1="${left}" x2="${width - right}" y1="${y(value).toFixed(1)}" y2="${y(value).toFixed(1)}" stroke="#ddd"/>`
    )
    parts.push(`<text x="${left - 6}" y="${(y(value) + 4).toFixed(1)}" text-anchor="end">${formatBytes(value)}</text>`)
  }
  for (let step = 0; step <= maxStep; step += 2_000) {
    parts.push(
      `<line x1="${x(step).toFixed(1)}" x2="${x(step).toFixed(1)}" y1="${top}" y2="${height - bottom}" stroke="#eee"/>`
    )
    parts.push(
      `<text x="${x(step).toFixed(1)}" y="${height - bottom + 16}" text-anchor="middle">${step.toLocaleString("en")}</text>`
    )
  }
  parts.push(`<text x="${(left + width - right) / 2}" y="${height - 10}" text-anchor="middle">model step</text>`)
  parts.push(
    `<text transform="translate(16 ${(top + height - bottom) / 2}) rotate(-90)" text-anchor="middle">request size (log scale)</text>`
  )
  // Every 10th point of the on run keeps the file small and still shows the saw-tooth.
  const onPoints = input.on.filter(([step], i) => i % 10 === 0 || step === maxStep)
  parts.push(`<path d="${line(onPoints)}" fill="none" stroke="#1a7f37" stroke-width="1"/>`)
  parts.push(`<path d="${line(input.off)}" fill="none" stroke="#cf222e" stroke-width="2"/>`)
  const lastOff = input.off.at(-1) ?? input.offFrom
  parts.push(
    `<path d="${line([lastOff, [maxStep, extrapolated]])}" fill="none" stroke="#cf222e" stroke-width="2" stroke-dasharray="6 4"/>`
  )
  parts.push(`<rect x="${left + 10}" y="${top + 8}" width="330" height="48" fill="white" stroke="#ccc"/>`)
  parts.push(
    `<line x1="${left + 18}" x2="${left + 48}" y1="${top + 24}" y2="${top + 24}" stroke="#cf222e" stroke-width="2"/>`
  )
  parts.push(`<text x="${left + 54}" y="${top + 28}">offload + compaction off (dashed: extrapolated)</text>`)
  parts.push(
    `<line x1="${left + 18}" x2="${left + 48}" y1="${top + 44}" y2="${top + 44}" stroke="#1a7f37" stroke-width="2"/>`
  )
  parts.push(`<text x="${left + 54}" y="${top + 48}">offload + compaction on (measured)</text>`)
  parts.push("</svg>")
  return `${parts.join("\n")}\n`
}
