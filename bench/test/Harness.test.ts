import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { interleave, roundOrder } from "../src/Harness.ts"

const count = fc.integer({ min: 1, max: 9 })
const round = fc.nat({ max: 10_000 })

describe("roundOrder", () => {
  it("orders every variant exactly once in every round", () => {
    fc.assert(
      fc.property(count, round, (n, r) => {
        const order = roundOrder(n, r)
        return order.length === n && [...order].sort((a, b) => a - b).every((variant, index) => variant === index)
      }),
      { numRuns: 2_000 }
    )
  })

  it("runs each variant before each other one exactly once in every pair of rounds", () => {
    fc.assert(
      fc.property(count, fc.nat({ max: 5_000 }), (n, pair) => {
        const even = roundOrder(n, 2 * pair)
        const odd = roundOrder(n, 2 * pair + 1)
        for (let a = 0; a < n; a++) {
          for (let b = 0; b < n; b++) {
            if (a === b) continue
            const before = (order: ReadonlyArray<number>) => order.indexOf(a) < order.indexOf(b)
            if (Number(before(even)) + Number(before(odd)) !== 1) return false
          }
        }
        return true
      }),
      { numRuns: 1_000 }
    )
  })

  it("does not keep one cycle: over twenty rounds of five variants, each follows every other one", () => {
    const follows = new Set<string>()
    for (let r = 0; r < 20; r++) {
      const order = roundOrder(5, r)
      for (let index = 1; index < order.length; index++) follows.add(`${order[index - 1]}>${order[index]}`)
    }
    assert.strictEqual(follows.size, 5 * 4)
  })

  it("gives the same orders in every run (they depend on the round alone)", () => {
    assert.deepStrictEqual(roundOrder(5, 0), [3, 4, 2, 0, 1])
    assert.deepStrictEqual(roundOrder(5, 1), [1, 0, 2, 4, 3])
  })
})

describe("interleave", () => {
  it("runs every variant once per round in that round's order and records only the measured rounds", async () => {
    const calls: Array<{ readonly name: string; readonly rep: number }> = []
    const variant = (name: string) => (rep: number) => {
      calls.push({ name, rep })
    }
    const names = ["a", "b", "c"]
    const samples = await interleave({ warmup: 2, reps: 3 }, { a: variant("a"), b: variant("b"), c: variant("c") })
    assert.deepStrictEqual(Object.fromEntries(Object.entries(samples).map(([name, ms]) => [name, ms.length])), {
      a: 3,
      b: 3,
      c: 3
    })
    for (const rep of [-2, -1, 0, 1, 2]) {
      const expected = roundOrder(3, rep + 2).map((index) => names[index])
      assert.deepStrictEqual(
        calls.filter((call) => call.rep === rep).map((call) => call.name),
        expected
      )
    }
    assert.strictEqual(calls.length, 15)
  })
})
