/**
 * What an opened volume store is: its interface and the errors its
 * operations fail with. `VolumeStore` re-exports every name here; the
 * library's own store modules (`issuedScopes`, `storeFolders`) name the
 * store from here, so none of them imports the public module that imports
 * them.
 */
import type * as Ids from "@tessera/core/Ids"
import type * as InvalidInput from "@tessera/core/InvalidInput"
import type * as Unauthorized from "@tessera/core/Unauthorized"
import * as Volume from "@tessera/core/Volume"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * Creating a volume whose id this store already holds. The existing
 * metadata was left untouched.
 *
 * @since 0.1.0
 * @category errors
 */
export class VolumeAlreadyExists extends Schema.TaggedError<VolumeAlreadyExists>()("VolumeAlreadyExists", {
  ref: Volume.VolumeRef
}) {
  override get message(): string {
    return `volume ${Volume.formatVolumeRef(this.ref)} already exists; its metadata was not changed`
  }
}

/**
 * A volume's metadata file does not decode (bad JSON, a wrong field type, an
 * unknown kind, a bad owner, or a descriptor that names another volume).
 * `file` is the file's path and `field` the path of the offending field
 * inside it (`(root)` for the document itself). Nothing was deleted or
 * rewritten: the file is left for a person to inspect.
 *
 * @since 0.1.0
 * @category errors
 */
export class VolumeMetadataInvalid extends Schema.TaggedError<VolumeMetadataInvalid>()("VolumeMetadataInvalid", {
  file: Schema.String,
  field: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `invalid volume metadata in ${this.file} at ${this.field}: ${this.problem}`
  }
}

/**
 * The file system refused an operation of the store. `operation` says what
 * the store was doing, `path` where.
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreIoError extends Schema.TaggedError<StoreIoError>()("StoreIoError", {
  operation: Schema.String,
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `volume store could not ${this.operation} ${this.path}: ${this.detail}`
  }
}

/**
 * What to create: the volume's id within this store, its kind and its owner.
 *
 * @since 0.1.0
 * @category models
 */
export interface CreateVolume {
  readonly id: Ids.VolumeId
  readonly kind: Volume.VolumeKind
  readonly owner: Volume.Owner
}

/**
 * A store opened on a folder.
 *
 * @since 0.1.0
 * @category models
 */
export interface VolumeStore {
  /** The store's identity, as recorded in `store.json`. */
  readonly id: Ids.StoreId
  /** The store's root folder, absolute. */
  readonly root: string
  /**
   * Registers a volume and creates its data folder. An id that is already
   * registered fails with {@link VolumeAlreadyExists}; its metadata is never
   * overwritten, even by a concurrent creator in another process.
   */
  readonly create: (
    volume: CreateVolume
  ) => Effect.Effect<Volume.VolumeRef, VolumeAlreadyExists | InvalidInput.InvalidInput | StoreIoError>
  /**
   * The store's facts about a volume: `None` when the reference names
   * another store or a volume this store never registered (a data folder
   * without metadata is not custody), or does not decode as a reference at
   * all (such a reference names no volume, and no path is built from it).
   */
  readonly custody: (
    ref: Volume.VolumeRef
  ) => Effect.Effect<Option.Option<Volume.VolumeDescriptor>, VolumeMetadataInvalid | StoreIoError>
  /**
   * The data folder of a volume in custody. A volume outside custody fails
   * `Unauthorized` with reason `OutOfCustody`: no path is ever handed out
   * for it. An `AgentPrivate` volume fails `Unauthorized`
   * `CapabilityRequired`: its folder is reached only through the
   * private-summaries capability (`PrivateSummaries.resolve`), so this is no
   * way around an agent's grants.
   */
  readonly folderOf: (
    ref: Volume.VolumeRef
  ) => Effect.Effect<string, Unauthorized.Unauthorized | VolumeMetadataInvalid | StoreIoError>
  /** Every registered volume, ordered by id. */
  readonly list: () => Effect.Effect<ReadonlyArray<Volume.VolumeDescriptor>, VolumeMetadataInvalid | StoreIoError>
}
