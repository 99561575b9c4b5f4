import { assert, describe, it } from "@effect/vitest"
import { type Ids, Volume } from "@tessera/core"
import * as fc from "fast-check"

const agent = fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/).map((name) => name as Ids.AgentId)
const owner = fc.oneof(
  agent.map((id) => Volume.agentOwner(id)),
  fc.constant(Volume.hostOwner)
)
/** The meaning of "the same owner", written out: the same agent, or the host on both sides. */
const oracle = (a: Volume.Owner, b: Volume.Owner): boolean =>
  a._tag === "Agent" ? b._tag === "Agent" && a.agent === b.agent : b._tag === "Host"

describe("volume owners", () => {
  it("same_owner_is_the_same_agent_or_both_host: sameOwner matches the written-out meaning for any pair", () => {
    fc.assert(
      fc.property(owner, owner, (a, b) => Volume.sameOwner(a, b) === oracle(a, b)),
      { numRuns: 500 }
    )
    assert.isTrue(Volume.sameOwner(Volume.agentOwner("x" as Ids.AgentId), Volume.agentOwner("x" as Ids.AgentId)))
    assert.isFalse(Volume.sameOwner(Volume.agentOwner("x" as Ids.AgentId), Volume.agentOwner("y" as Ids.AgentId)))
    assert.isFalse(Volume.sameOwner(Volume.agentOwner("x" as Ids.AgentId), Volume.hostOwner))
  })

  it("negative control: comparing tags only (agents ignored) fails the same property", () => {
    const tagsOnly = (a: Volume.Owner, b: Volume.Owner): boolean => a._tag === b._tag
    const failed = fc.check(
      fc.property(owner, owner, (a, b) => tagsOnly(a, b) === oracle(a, b)),
      { numRuns: 500 }
    )
    assert.isTrue(failed.failed)
  })
})
