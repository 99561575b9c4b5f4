import { assert, describe, it } from "@effect/vitest"
import { consumedByStreamedRuns, runStreamOverhead, streamOverheadSection } from "../src/SideBySide.ts"

// The benchmark job itself, on a short scenario: every way runs every round, and the ratio is the median of the rounds'.
describe("stream-overhead job", () => {
  it("runs plain, observed and streamed turns each round; the streamed consumer reads every event; the ratio is the median per-round ratio", async () => {
    const before = consumedByStreamedRuns()
    const result = await runStreamOverhead({ warmupSteps: 5, steps: 40, rounds: 3, medium: "memory" })
    assert.strictEqual(result.roundRatios.length, 3)
    assert.isTrue(result.roundRatios.every((value) => Number.isFinite(value) && value > 0))
    const sorted = [...result.roundRatios].sort((a, b) => a - b)
    assert.strictEqual(result.ratio, sorted[1])
    assert.isAbove(consumedByStreamedRuns(), before, "the streamed runs' consumer saw events")
    for (const side of [result.plain, result.observed, result.streamed]) assert.isAbove(side.stepMedian, 0)
    const section = streamOverheadSection(result).join("\n")
    assert.include(section, "## Streaming overhead per step")
    assert.include(section, `${result.ratio.toFixed(3)}x`)
  }, 120_000)
})
