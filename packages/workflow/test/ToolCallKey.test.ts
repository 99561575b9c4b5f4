/**
 * The idempotency key's name is one-to-one over task, turn, step and call
 * id: two different calls never share a key, and a call's key is the same on
 * every attempt.
 */
import { assert, describe, it } from "@effect/vitest"
import { ToolCallKey } from "@tessera/workflow"
import fc from "fast-check"
import * as world from "./support/world.ts"

/** Wide values, and a small domain where parts that run together would collide (turn 1 step 11 vs turn 11 step 1). */
const wide = fc.record({
  task: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,20}$/).map(world.taskId),
  turn: fc.integer({ min: 1, max: 1_000 }),
  step: fc.integer({ min: 1, max: 1_000 }),
  // Provider call ids are free text: separators, digits and the name's own characters included.
  callId: fc.string({ unit: fc.constantFrom("a", "/", "t", "s", "1", "-", ":", ".", "_"), maxLength: 12 })
})
const small = fc.record({
  task: fc.constantFrom("t", "t1", "t-1").map(world.taskId),
  turn: fc.constantFrom(1, 11),
  step: fc.constantFrom(1, 11),
  callId: fc.constantFrom("", "1", "11", "/s1/x", "s1/x")
})
const identity = fc.oneof(small, wide)

const same = (a: ToolCallKey.CallIdentity, b: ToolCallKey.CallIdentity) =>
  a.task === b.task && a.turn === b.turn && a.step === b.step && a.callId === b.callId

describe("ToolCallKey.nameOf", () => {
  it("tool_call_key_is_one_to_one", () => {
    fc.assert(
      fc.property(identity, identity, (a, b) => same(a, b) === (ToolCallKey.nameOf(a) === ToolCallKey.nameOf(b))),
      { numRuns: 2_000 }
    )
  })

  it("tool_call_key_negative_control_a_name_without_separators_collides", () => {
    // The same property against a name that joins the parts without separators: fast-check finds a collision.
    const joined = (a: ToolCallKey.CallIdentity) => `${a.task}${a.turn}${a.step}${a.callId}`
    const found = fc.check(
      fc.property(identity, identity, (a, b) => same(a, b) === (joined(a) === joined(b))),
      { numRuns: 5_000 }
    )
    assert.isTrue(found.failed)
  })
})
