/**
 * Volumes: named storage roots with a kind and an owner.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { AgentId, StoreId, VolumeId } from "./Ids.ts"

/**
 * What a volume is for. Only `AgentPrivate` volumes may receive an agent's
 * private content (summaries and private artifacts).
 *
 * @since 0.1.0
 * @category models
 */
export const VolumeKind = Schema.Literals(["AgentPrivate", "Journal", "Scratch", "Output"])
/**
 * @since 0.1.0
 * @category models
 */
export type VolumeKind = typeof VolumeKind.Type

/**
 * Every volume kind, in declaration order (useful for exhaustive tests).
 *
 * @since 0.1.0
 * @category models
 */
export const volumeKinds: ReadonlyArray<VolumeKind> = VolumeKind.literals

/**
 * A volume owned by an agent.
 *
 * @since 0.1.0
 * @category models
 */
export const AgentOwner = Schema.TaggedStruct("Agent", { agent: AgentId })
/**
 * @since 0.1.0
 * @category models
 */
export type AgentOwner = typeof AgentOwner.Type

/**
 * A volume owned by the host itself (its journal, its scratch space).
 *
 * @since 0.1.0
 * @category models
 */
export const HostOwner = Schema.TaggedStruct("Host", {})
/**
 * @since 0.1.0
 * @category models
 */
export type HostOwner = typeof HostOwner.Type

/**
 * Who owns a volume: one agent, or the host.
 *
 * @since 0.1.0
 * @category models
 */
export const Owner = Schema.Union([AgentOwner, HostOwner])
/**
 * @since 0.1.0
 * @category models
 */
export type Owner = typeof Owner.Type

/**
 * An agent as a volume's owner. Only an `AgentPrivate` volume owned by the
 * task's own agent receives the task's private content
 * (`PrivateWriter.checkPrivateWriter` refuses any other owner with
 * `NotAgentOwned` or `NotOwnerBound`).
 *
 * @example
 * ```ts
 * import { Ids, Volume } from "@tessera/core"
 * import { Schema } from "effect"
 *
 * const researcher = Volume.agentOwner(Schema.decodeUnknownSync(Ids.AgentId)("researcher"))
 * const reviewer = Volume.agentOwner(Schema.decodeUnknownSync(Ids.AgentId)("reviewer"))
 *
 * console.log(Volume.formatOwner(researcher)) // "agent researcher"
 * console.log(Volume.sameOwner(researcher, reviewer)) // false
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const agentOwner = (agent: AgentId): Owner => AgentOwner.make({ agent })

/**
 * The host as a volume's owner: for the volumes no agent owns (the journal,
 * the output, the host's scratch space). A host-owned volume never receives
 * an agent's private content.
 *
 * @example
 * ```ts
 * import { Ids, Volume } from "@tessera/core"
 * import { TaskHost } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * export const createOutput = Effect.gen(function* () {
 *   const host = yield* TaskHost.open({ root: "/srv/tessera/store" })
 *   return yield* host.store.create({
 *     id: Schema.decodeUnknownSync(Ids.VolumeId)("output"),
 *     kind: "Output",
 *     owner: Volume.hostOwner
 *   })
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const hostOwner: Owner = HostOwner.make({})

/**
 * Whether two owners are the same owner: the same agent, or both the host.
 * Derived from {@link Owner}'s schema, so a field added to an owner is
 * compared without this function changing.
 *
 * @since 0.1.0
 * @category equivalence
 */
export const sameOwner: (self: Owner, that: Owner) => boolean = Schema.toEquivalence(Owner)

/**
 * Names one volume of one store. A reference says nothing about the volume's
 * kind or owner: those are facts the store holds, so a caller cannot forge
 * them by building a reference by hand.
 *
 * @since 0.1.0
 * @category models
 */
export const VolumeRef = Schema.Struct({ store: StoreId, volume: VolumeId })
/**
 * @since 0.1.0
 * @category models
 */
export type VolumeRef = typeof VolumeRef.Type

/**
 * The persisted facts about a volume: its identity, kind and owner.
 *
 * @since 0.1.0
 * @category models
 */
export const VolumeDescriptor = Schema.Struct({
  id: VolumeId,
  kind: VolumeKind,
  owner: Owner
})
/**
 * @since 0.1.0
 * @category models
 */
export type VolumeDescriptor = typeof VolumeDescriptor.Type

/**
 * Renders an owner for messages and logs.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatOwner = (owner: Owner): string => (owner._tag === "Agent" ? `agent ${owner.agent}` : "the host")

/**
 * Renders a volume reference for messages and logs.
 *
 * @since 0.1.0
 * @category formatting
 */
export const formatVolumeRef = (ref: VolumeRef): string => `${ref.store}/${ref.volume}`
