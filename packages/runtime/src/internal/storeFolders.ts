/**
 * The data folder of any volume of a store, private ones included. The
 * public `VolumeStore.folderOf` refuses agent-private volumes; only the
 * library reaches their folders, and only to mint a capability.
 */
import type * as Volume from "@tessera/core/Volume"
import type { VolumeStore } from "../VolumeStore.ts"

const folders = new WeakMap<VolumeStore, (ref: Volume.VolumeRef) => string>()

export const registerFolders = (store: VolumeStore, folderOf: (ref: Volume.VolumeRef) => string): void => {
  folders.set(store, folderOf)
}

/** `undefined` for a store the library did not open. */
export const dataFolder = (store: VolumeStore, ref: Volume.VolumeRef): string | undefined => folders.get(store)?.(ref)
