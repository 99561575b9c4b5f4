/**
 * The trusted objects of a host's side: every volume store the library
 * opened, every host it made (bound at mint time to its store), and which
 * host issued which scope. A runtime honours only the scopes its own host
 * issued: a second host over the same store, with a more permissive
 * authority, issues scopes no runtime of the first host accepts.
 */
import type * as Grant from "@tessera/core/Grant"
import type { HostAuthority } from "@tessera/core/HostAuthority"
import type * as Ids from "@tessera/core/Ids"
import type { InvalidInput } from "@tessera/core/InvalidInput"
import type { Unauthorized } from "@tessera/core/Unauthorized"
import type * as Effect from "effect/Effect"
import type { StoreIoError, VolumeMetadataInvalid, VolumeStore } from "./storeModel.ts"
import { makeRegistry } from "./trusted.ts"

// Declared here and re-exported by `TaskHost` under the same name: the public module imports its internals, never
// the reverse.
/**
 * A store and its authority, able to issue scopes.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskHost {
  readonly store: VolumeStore
  readonly authority: HostAuthority["Service"]
  /**
   * Issues `task`, running for `agent`, one grant per requested capability.
   *
   * Every requested volume must be in the store's custody (else
   * `Unauthorized` `OutOfCustody`), and the authority must allow every
   * requested access (else `Unauthorized` `GrantForbidden`, with the
   * authority's reason as detail). Nothing is issued unless everything is.
   * A capability that asks for no access grants nothing, though its volume
   * is still checked. The task, agent and capabilities are decoded first
   * (`InvalidInput` naming the field).
   */
  readonly issueScope: (
    task: Ids.TaskId,
    capabilities: ReadonlyArray<Grant.Capability>,
    agent: Ids.AgentId
  ) => Effect.Effect<Grant.Scope, Unauthorized | InvalidInput | VolumeMetadataInvalid | StoreIoError>
  /**
   * Whether this host issued `scope` (the very value its `issueScope`
   * returned). Its runtimes accept no other scope: not one built by hand,
   * and not one issued by another host over the same store, whose
   * authority may allow what this one forbids.
   */
  readonly issued: (scope: Grant.Scope) => boolean
}

/** Every volume store the library opened; a host is made over no other. */
export const stores = makeRegistry<VolumeStore>("volume store")

/** Every host the library made; a runtime binds to no other. */
export const hosts = makeRegistry<TaskHost>("task host")

const issuers = new WeakMap<Grant.Scope, TaskHost>()

export const recordIssued = (scope: Grant.Scope, host: TaskHost): void => {
  issuers.set(scope, host)
}

/** The host that issued `scope`, by identity; `undefined` for anything else (a cast, a copy, a non-object). */
export const issuerOf = (scope: unknown): TaskHost | undefined => issuers.get(scope as Grant.Scope)
