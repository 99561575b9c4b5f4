/**
 * The side-by-side scenario's pieces that both sides share, kept free of
 * either side's code so that each side's process loads only its own: the
 * tool result's size and body, the result shape, and the step clock.
 */
import type { GcTime, Stats } from "./Harness.ts"

export const toolResultChars = 51_200

export interface SideResult {
  readonly side: string
  readonly steps: number
  readonly step: Stats
  readonly summarizationStep: Stats
  /** History replacements (compactions). */
  readonly summaries: number
  /** Summary requests the model received. */
  readonly summaryRequests: number
  readonly peakRss: number
  readonly retainedHeap: number
  readonly wallMs: number
  /**
   * Process CPU time (user + system) of the measured run, in milliseconds:
   * what a step costs the machine, less sensitive than wall time to other
   * load on it. Reported by our side only.
   */
  readonly cpuMs?: number
  /** The collector's pauses during the measured run. Reported by our side only. */
  readonly gc?: GcTime
}

/** Splits the intervals between agent model calls by whether a summary request fell inside them. */
export class StepClock {
  private last: number | undefined
  private summarized = false
  readonly plain: Array<number> = []
  readonly summarizing: Array<number> = []
  summary(): void {
    this.summarized = true
  }
  agentCall(): void {
    const now = performance.now()
    if (this.last !== undefined) (this.summarized ? this.summarizing : this.plain).push(now - this.last)
    this.last = now
    this.summarized = false
  }
}

export const body = (call: number): string => {
  const header = `result of call ${call}: `
  return header + "r".repeat(toolResultChars - header.length)
}

/** A summary of roughly `size` characters that names the request it answers (every side's scripted model gives it). */
export const summaryText = (index: number, size: number): string =>
  `Summary ${index}: batches processed so far are all ok; continue with the next batch. `.padEnd(size, ".")
