/**
 * The trusted objects of a host's side: every volume store the library
 * opened, every host it made (bound at mint time to its store), and which
 * host issued which scope. A runtime honours only the scopes its own host
 * issued: a second host over the same store, with a more permissive
 * authority, issues scopes no runtime of the first host accepts.
 */
import type * as Grant from "@tessera/core/Grant"
import type { TaskHost } from "../TaskHost.ts"
import type { VolumeStore } from "../VolumeStore.ts"
import { makeRegistry } from "./trusted.ts"

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
