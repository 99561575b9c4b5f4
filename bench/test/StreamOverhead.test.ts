import { assert, describe, it } from "@effect/vitest"
import { observeGc } from "../src/Harness.ts"
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
    const section = streamOverheadSection(result, { ...result, ratio: 9.876 }).join("\n")
    assert.include(section, "## Streaming overhead per step")
    assert.include(section, `As installed: streamed / plain per step ${result.ratio.toFixed(3)}x`)
    assert.include(section, "With the Channel closure young (for information): streamed / plain per step 9.876x")
    assert.include(section, "Collector's pauses per step")
  }, 120_000)

  it("the collector's observer counts the young collections that allocation forces, with their pauses", async () => {
    const collector = observeGc()
    // Several times any young generation's size, in short-lived objects: young collections must run.
    let kept = 0
    for (let index = 0; index < 400_000; index++) kept += new Array(64).fill(index).length
    const gc = await collector.stop()
    assert.strictEqual(kept, 400_000 * 64)
    assert.isAtLeast(gc.minor, 1)
    assert.isAbove(gc.minorMs, 0)
  })
})
