/**
 * Type tests for the local hosts' options: every `@ts-expect-error` line
 * must fail to compile.
 */
import { HostAuthority, Ids } from "@tessera/core"
import { JournalForbiddingHost, LocalHarness } from "@tessera/node"
import { Schema } from "effect"

const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")

// The agent is a decoded AgentId, never a plain string.
// @ts-expect-error
LocalHarness.open({ namespace: "a", agent: "researcher" })

// The namespace is required: there is no implicit default namespace.
// @ts-expect-error
LocalHarness.open({ agent })

// The journal-forbidding host's authority is fixed; it cannot be swapped for a permissive one.
// @ts-expect-error
JournalForbiddingHost.open({ namespace: "a", agent, authority: HostAuthority.permissive })

// The local harness does take an authority.
LocalHarness.open({ namespace: "a", agent, authority: HostAuthority.forbidJournalGrants })
