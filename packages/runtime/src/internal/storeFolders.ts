/**
 * The data folder of any volume of a store, private ones included. The
 * public `VolumeStore.folderOf` refuses agent-private volumes; only the
 * library reaches their folders, and only to mint a capability.
 */
import type * as Volume from "@tessera/core/Volume"
import type { VolumeStore } from "./storeModel.ts"

const folders = new WeakMap<VolumeStore, (ref: Volume.VolumeRef) => string>()

export const registerFolders = (store: VolumeStore, folderOf: (ref: Volume.VolumeRef) => string): void => {
  folders.set(store, folderOf)
}

/**
 * Callers reach `store` only through a minted context's host, whose store
 * `VolumeStore.open` registered here before handing it out; a store missing
 * from the table is a library bug, so it is a defect, not a refusal.
 */
export const dataFolder = (store: VolumeStore, ref: Volume.VolumeRef): string => {
  const folderOf = folders.get(store)
  if (folderOf === undefined) throw new Error("library invariant broken: a minted store has no registered folders")
  return folderOf(ref)
}
