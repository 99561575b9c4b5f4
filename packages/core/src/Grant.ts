/**
 * Grants and scopes: the capabilities a host issues to a task.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { AgentId, TaskId } from "./Ids.ts"
import { VolumeRef } from "./Volume.ts"

/**
 * One kind of access to a volume.
 *
 * @since 0.1.0
 * @category models
 */
export const Access = Schema.Literals(["read", "write"])
/**
 * @since 0.1.0
 * @category models
 */
export type Access = typeof Access.Type

/**
 * What a host asks to grant: access to one volume.
 *
 * @since 0.1.0
 * @category models
 */
export const Capability = Schema.Struct({
  volume: VolumeRef,
  access: Schema.Array(Access)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Capability = typeof Capability.Type

/**
 * Access to one volume, held by one task. Grants are issued by a host
 * (through its authority), never minted by the task itself.
 *
 * @since 0.1.0
 * @category models
 */
export const Grant = Schema.Struct({
  task: TaskId,
  volume: VolumeRef,
  access: Schema.Array(Access)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Grant = typeof Grant.Type

/**
 * Everything a task may touch: its identity, the agent it runs for, and the
 * grants the host issued to it.
 *
 * @since 0.1.0
 * @category models
 */
export const Scope = Schema.Struct({
  task: TaskId,
  agent: AgentId,
  grants: Schema.Array(Grant)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Scope = typeof Scope.Type

const sameVolume = (a: VolumeRef, b: VolumeRef): boolean => a.store === b.store && a.volume === b.volume

/**
 * Whether `scope` holds `access` on `volume` through a grant issued to its own
 * task. A grant naming another task never counts.
 *
 * @since 0.1.0
 * @category predicates
 */
export const holds = (scope: Scope, volume: VolumeRef, access: Access): boolean =>
  scope.grants.some(
    (grant) => grant.task === scope.task && sameVolume(grant.volume, volume) && grant.access.includes(access)
  )

/**
 * Whether two references name the same volume of the same store.
 *
 * @since 0.1.0
 * @category predicates
 */
export const sameVolumeRef: (a: VolumeRef, b: VolumeRef) => boolean = sameVolume
