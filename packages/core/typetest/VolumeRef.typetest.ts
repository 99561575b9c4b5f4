/**
 * Type tests: each `@ts-expect-error` line must fail to compile. If a change
 * makes one compile, tsc reports the directive as unused and `npm test` fails.
 */
import type { Ids, Volume } from "@tessera/core"

declare const agent: Ids.AgentId
declare const volume: Ids.VolumeId

// A plain string is not an identifier: it has to be decoded first.
// @ts-expect-error
export const fromString: Ids.AgentId = "researcher"

// Identifiers of different kinds do not mix.
// @ts-expect-error
export const agentAsVolume: Ids.VolumeId = agent

// A reference names a store and a volume; kind and owner are the store's facts.
export const ref: Volume.VolumeRef = {
  store: undefined as unknown as Ids.StoreId,
  volume,
  // @ts-expect-error
  kind: "AgentPrivate"
}
