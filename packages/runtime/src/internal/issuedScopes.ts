/**
 * Scopes issued by a host, remembered by identity together with the store
 * they were issued for. A runtime over a store accepts only scopes issued for
 * that store, by any host over it (`FilesystemTaskRuntime.open` opens its own
 * host on the store, so the issuing host instance may differ); a scope built
 * by hand was never issued and is refused.
 */
import type * as Grant from "@tessera/core/Grant"
import type * as Ids from "@tessera/core/Ids"
import type { TaskHost } from "../TaskHost.ts"
import { makeRegistry } from "./trusted.ts"

/** Every host the library made; a runtime binds to no other. */
export const hosts = makeRegistry<TaskHost>("task host")

const issued = new WeakMap<Grant.Scope, Ids.StoreId>()

export const recordIssued = (scope: Grant.Scope, store: Ids.StoreId): void => {
  issued.set(scope, store)
}

export const issuedFor = (scope: Grant.Scope, store: Ids.StoreId): boolean => issued.get(scope) === store
