import { assert, describe, it } from "@effect/vitest"
import { run } from "../src/HostileSize.ts"

// The benchmark job itself, at 5 MB instead of 100 MB: what it prints must show the cut and the bounded cost.
describe("hostile-size job", () => {
  for (const mode of ["inline", "offload-refused"] as const) {
    it(`${mode}: a 5 MB result is kept at the inline limit and costs at most two summary requests`, async () => {
      const result = await run({ payloadBytes: 5_000_000, mode, medium: "memory" })
      assert.strictEqual(result.keptResultBytes, 200_000)
      assert.isAtLeast(result.summaryRequests, 1)
      assert.isAtMost(result.summaryRequests, 2)
      assert.isBelow(result.largestTurnRequest, 250_000)
    })
  }
})
