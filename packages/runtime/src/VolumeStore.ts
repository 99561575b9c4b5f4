/**
 * A volume store on a folder: the facts (kind, owner) about every volume it
 * holds, the folder each volume's data lives in, and the one statement of
 * where everything lives on disk. The store, the task journal, summary
 * staging, tool-result offload, the hosts and the inspector all take their
 * paths from the layout names here.
 *
 * ```
 * <store root>/
 *   store.json                       the store's id and format version
 *   meta/volumes/<volume>.json       kind and owner of each volume
 *   volumes/<volume>/                a volume's data
 *     summaries/<op>/<step>.txt      staged summaries (agent-private volumes)
 *     artifacts/tool-results/...     offloaded tool results
 *     transcripts/<task>/<sha256>.json   a task's transcript records (agent-private volumes)
 *   volumes/<journal volume>/<task>.jsonl   a task's journal
 * ```
 *
 * A local host's namespace folder is a store root that also holds its
 * `namespace.lock` and `task-locks/<task>.lock` (stated in the node
 * package's `StateNamespace`). Any file of the store may briefly exist
 * under a temporary name (`DurableFiles.isTemporaryName`), which is never
 * content. Every name that comes from an id is built from a decoded
 * identifier (`[A-Za-z0-9][A-Za-z0-9_-]*`), so it is always one plain path
 * segment.
 *
 * A volume's descriptor lives outside its data folder, so a task that may
 * write a volume cannot rewrite the volume's owner or kind.
 *
 * The metadata file is the commit point of a volume: a volume is in custody
 * exactly when its descriptor is published here. Every fact is re-read from
 * disk when asked, so a new process (a new store on the same folder) sees the
 * same facts.
 *
 * @since 0.1.0
 */

import * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import * as IdSchemas from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Unauthorized from "@tessera/core/Unauthorized"
import * as Volume from "@tessera/core/Volume"
import * as SecureRandom from "effect/crypto/SecureRandom"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type { PlatformError } from "effect/PlatformError"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaParser from "effect/SchemaParser"
import { readPublished } from "./internal/durableRead.ts"
import { stores } from "./internal/issuedScopes.ts"
import { registerFolders } from "./internal/storeFolders.ts"
import { decodeJsonText, describePlatformError, publishExclusive, readTextIfExists } from "./internal/storeJson.ts"
import {
  type CreateVolume,
  StoreIoError,
  VolumeAlreadyExists,
  VolumeMetadataInvalid,
  type VolumeStore
} from "./internal/storeModel.ts"
import * as Observability from "./Observability.ts"

// ---------------------------------------------------------------------------
// Layout
// ---------------------------------------------------------------------------

/**
 * The store manifest's file name, at the store root.
 *
 * @since 0.1.0
 * @category layout
 */
export const manifestFile = "store.json"

/**
 * The folder at the store root that holds the store's metadata.
 *
 * @since 0.1.0
 * @category layout
 */
export const metaRoot = "meta"

/**
 * The folder of volume metadata, relative to the store root (segments).
 *
 * @since 0.1.0
 * @category layout
 */
export const metaFolder: ReadonlyArray<string> = [metaRoot, "volumes"]

/**
 * The folder that holds every volume's data folder, relative to the store root.
 *
 * @since 0.1.0
 * @category layout
 */
export const volumesFolder = "volumes"

/**
 * Where a volume's data folder is under a store root. This is layout
 * arithmetic and grants nothing: writing private content still needs the
 * private-summaries capability, and `VolumeStore.folderOf` refuses
 * agent-private volumes. Hosts use it to describe their own state (path
 * policies) and the inspector to read.
 *
 * @since 0.1.0
 * @category layout
 */
export const dataFolder = (path: Path.Path, root: string, volume: Ids.VolumeId): string =>
  path.join(root, volumesFolder, volume)

// Also how `list` tells a metadata file from anything else in the folder, and takes the volume id back out.
const metaExtension = ".json"

/**
 * A volume's metadata file name inside {@link metaFolder}.
 *
 * @since 0.1.0
 * @category layout
 */
export const metaFileName = (volume: Ids.VolumeId): string => `${volume}${metaExtension}`

/**
 * A task's journal file name at the top of a journal volume.
 *
 * @since 0.1.0
 * @category layout
 */
export const journalFileName = (task: Ids.TaskId): string => `${task}.jsonl`

/**
 * The extension of journal files.
 *
 * @since 0.1.0
 * @category layout
 */
export const journalExtension = ".jsonl"

/**
 * The folder of staged summaries inside an agent-private volume.
 *
 * @since 0.1.0
 * @category layout
 */
export const summariesFolder = "summaries"

/**
 * A staged summary's path relative to its volume.
 *
 * @since 0.1.0
 * @category layout
 */
export const summaryPath = (operation: Ids.OperationId, step: number): string =>
  `${summariesFolder}/${operation}/${step}.txt`

/**
 * The folder below a volume's data folder that holds artifacts.
 *
 * @since 0.1.0
 * @category layout
 */
export const artifactFolder = "artifacts"

/**
 * The folder of offloaded tool results inside {@link artifactFolder}: a
 * tool result's artifact path (what its pointer names, relative to the
 * artifacts folder) starts with it.
 *
 * @since 0.1.0
 * @category layout
 */
export const toolResultsFolder = "tool-results"

/**
 * The folder of transcripts inside an agent-private volume: one folder per
 * task, holding that task's transcript records (see `Transcript`).
 *
 * @since 0.1.0
 * @category layout
 */
export const transcriptsFolder = "transcripts"

/**
 * A transcript record's path relative to its volume: named by the SHA-256
 * of its bytes, so a name says what the file holds and is written once.
 *
 * @since 0.1.0
 * @category layout
 */
export const transcriptPath = (task: Ids.TaskId, sha256: string): string =>
  `${transcriptsFolder}/${task}/${sha256}.json`

// ---------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------

/**
 * The store format this version of the library reads and writes.
 *
 * @since 0.1.0
 * @category models
 */
export const formatVersion = 1

/**
 * The contents of `store.json`.
 *
 * @since 0.1.0
 * @category models
 */
export const StoreManifest = Schema.Struct({
  format: Schema.Literal(formatVersion),
  store: IdSchemas.StoreId
})
/**
 * @since 0.1.0
 * @category models
 */
export type StoreManifest = typeof StoreManifest.Type

/**
 * What the operations of an opened store fail with: creating a volume that exists
 * ({@link VolumeAlreadyExists}), metadata that does not decode ({@link VolumeMetadataInvalid}),
 * the file system refusing ({@link StoreIoError}). Declared with the store's interface, in the
 * package's internals.
 *
 * @since 0.1.0
 * @category errors
 */
export { StoreIoError, VolumeAlreadyExists, VolumeMetadataInvalid }

/**
 * The store's `store.json` does not decode. `file` and `field` name the file
 * and the offending field. Nothing was deleted or rewritten.
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreManifestInvalid extends Schema.TaggedError<StoreManifestInvalid>()("StoreManifestInvalid", {
  file: Schema.String,
  field: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `invalid store manifest ${this.file} at ${this.field}: ${this.problem}`
  }
}

/**
 * The folder already holds a store with another id than the one asked for.
 *
 * @since 0.1.0
 * @category errors
 */
export class StoreIdMismatch extends Schema.TaggedError<StoreIdMismatch>()("StoreIdMismatch", {
  file: Schema.String,
  expected: IdSchemas.StoreId,
  found: IdSchemas.StoreId
}) {
  override get message(): string {
    return `${this.file} holds store ${this.found}, not the requested store ${this.expected}`
  }
}

/**
 * Everything opening a store can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type OpenError = StoreManifestInvalid | StoreIdMismatch | StoreIoError

/**
 * Where a store lives. `storeId` names a new store; for an existing one it
 * is checked against `store.json` (omit it to accept whatever is there, or
 * to have a fresh random id chosen for a new store).
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions {
  readonly root: string
  readonly storeId?: Ids.StoreId
}

/**
 * A store opened on a folder ({@link VolumeStore}) and what its `create` takes
 * ({@link CreateVolume}). Declared in the package's internals, with the errors its
 * operations fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type { CreateVolume, VolumeStore }

const decodeRef = Schema.decodeUnknownOption(Volume.VolumeRef)
const decodeCreate = InvalidInput.decode(
  Schema.Struct({ id: IdSchemas.VolumeId, kind: Volume.VolumeKind, owner: Volume.Owner }),
  "VolumeStore.create",
  "volume"
)

const ioError = (operation: string, path: string) => (error: PlatformError) =>
  new StoreIoError({ operation, path, detail: describePlatformError(error) })

const utf8Decoder = new TextDecoder()

const renderJson = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`

const encodeDescriptor = SchemaParser.encodeSync(Volume.VolumeDescriptor)
const encodeManifest = SchemaParser.encodeSync(StoreManifest)

const freshStoreId = Effect.sync(() =>
  Schema.decodeUnknownSync(IdSchemas.StoreId)(`store-${SecureRandom.uuidV4Unsafe()}`)
)

const readManifest = (fs: FileSystem.FileSystem, file: string) =>
  readTextIfExists(fs, file).pipe(
    Effect.mapError(ioError("read", file)),
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.succeed(Option.none<StoreManifest>()),
        onSome: (text) =>
          Result.match(decodeJsonText(StoreManifest, text), {
            onSuccess: (manifest) => Effect.succeed(Option.some(manifest)),
            onFailure: ({ field, problem }) => Effect.fail(new StoreManifestInvalid({ file, field, problem }))
          })
      })
    )
  )

/**
 * Opens the store on `options.root`, creating the folder and its
 * `store.json` when there is none. An existing `store.json` is only read:
 * a corrupted one fails with {@link StoreManifestInvalid} and is left as it
 * is. Two stores opened on the same folder share every fact.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function* (options: OpenOptions) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const root = path.resolve(options.root)
  const manifestPath = path.join(root, manifestFile)
  const volumesDir = path.join(root, volumesFolder)
  const metaDir = path.join(root, ...metaFolder)

  let manifest = yield* readManifest(fs, manifestPath)
  if (Option.isNone(manifest)) {
    const id = options.storeId ?? (yield* freshStoreId)
    yield* fs.makeDirectory(root, { recursive: true }).pipe(Effect.mapError(ioError("create the folder", root)))
    yield* publishExclusive(
      fs,
      path,
      manifestPath,
      renderJson(encodeManifest({ format: formatVersion, store: id }))
    ).pipe(Effect.mapError(ioError("write", manifestPath)))
    // Another process may have created the store first; its manifest wins.
    manifest = yield* readManifest(fs, manifestPath)
  }
  if (Option.isNone(manifest)) {
    return yield* new StoreIoError({ operation: "read", path: manifestPath, detail: "the manifest vanished" })
  }
  const id = manifest.value.store
  if (options.storeId !== undefined && options.storeId !== id) {
    return yield* new StoreIdMismatch({ file: manifestPath, expected: options.storeId, found: id })
  }
  for (const dir of [volumesDir, metaDir]) {
    yield* fs.makeDirectory(dir, { recursive: true }).pipe(Effect.mapError(ioError("create the folder", dir)))
  }

  const metaFileOf = (volume: Ids.VolumeId) => path.join(metaDir, metaFileName(volume))
  const dataFolderOf = (volume: Ids.VolumeId) => dataFolder(path, root, volume)

  // A volume's metadata is read at every admission of a private writer (twice per summary). Through the
  // platform's durable files when there are some: on Node they read a small file without a worker-thread round
  // trip per call (open, stat, read, close), and without following a symlink on the way.
  const durable = yield* Effect.serviceOption(DurableFiles.DurableFiles)
  const readMetadata = (file: string): Effect.Effect<Option.Option<string>, StoreIoError> =>
    Option.isNone(durable)
      ? readTextIfExists(fs, file).pipe(Effect.mapError(ioError("read", file)))
      : readPublished(durable.value, fs, file, root).pipe(
          Effect.map(Option.map((bytes) => utf8Decoder.decode(bytes))),
          Effect.mapError((error) => new StoreIoError({ operation: "read", path: file, detail: error.message }))
        )

  // The registration is read at every admission, but decoded only when its text is not the one decoded last
  // time for that volume: decoding is a function of the text, and a changed file is a changed text.
  const lastDecoded = new Map<Ids.VolumeId, { readonly text: string; readonly descriptor: Volume.VolumeDescriptor }>()
  const readDescriptor = (volume: Ids.VolumeId) => {
    const file = metaFileOf(volume)
    return readMetadata(file).pipe(
      Effect.flatMap(
        Option.match({
          onNone: () => Effect.succeed(Option.none<Volume.VolumeDescriptor>()),
          onSome: (text) => {
            const last = lastDecoded.get(volume)
            if (last !== undefined && last.text === text) return Effect.succeed(Option.some(last.descriptor))
            const decoded = decodeJsonText(Volume.VolumeDescriptor, text)
            if (Result.isFailure(decoded)) {
              return Effect.fail(new VolumeMetadataInvalid({ file, ...decoded.failure }))
            }
            if (decoded.success.id !== volume) {
              return Effect.fail(
                new VolumeMetadataInvalid({
                  file,
                  field: "id",
                  problem: `the file belongs to volume ${volume} but records id ${decoded.success.id}`
                })
              )
            }
            // Shared by every later reader of the same text: nobody can change it under another.
            const descriptor = Object.freeze({ ...decoded.success, owner: Object.freeze({ ...decoded.success.owner }) })
            lastDecoded.set(volume, { text, descriptor })
            return Effect.succeed(Option.some(descriptor))
          }
        })
      )
    )
  }

  const create = (requested: CreateVolume) =>
    Effect.gen(function* () {
      const volume = yield* decodeCreate(requested)
      const ref: Volume.VolumeRef = { store: id, volume: volume.id }
      const file = metaFileOf(volume.id)
      const descriptor: Volume.VolumeDescriptor = { id: volume.id, kind: volume.kind, owner: volume.owner }
      const published = yield* publishExclusive(fs, path, file, renderJson(encodeDescriptor(descriptor))).pipe(
        Effect.mapError(ioError("write", file))
      )
      if (!published) return yield* new VolumeAlreadyExists({ ref })
      const folder = dataFolderOf(volume.id)
      yield* fs.makeDirectory(folder, { recursive: true }).pipe(Effect.mapError(ioError("create the folder", folder)))
      return ref
    })

  const custody = (given: Volume.VolumeRef) => {
    const ref = decodeRef(given)
    return Option.isSome(ref) && ref.value.store === id
      ? readDescriptor(ref.value.volume)
      : Effect.succeed(Option.none<Volume.VolumeDescriptor>())
  }

  const folderOf = (ref: Volume.VolumeRef) =>
    custody(ref).pipe(
      Effect.flatMap(
        Option.match({
          onNone: () =>
            Effect.fail(
              new Unauthorized.Unauthorized({
                reason: "OutOfCustody",
                detail: `volume ${Volume.formatVolumeRef(ref)} is not in the custody of store ${id}`,
                volume: ref
              })
            ),
          onSome: (descriptor) =>
            descriptor.kind === "AgentPrivate"
              ? Effect.fail(
                  new Unauthorized.Unauthorized({
                    reason: "CapabilityRequired",
                    detail: `volume ${Volume.formatVolumeRef(ref)} is agent-private: its folder is reached only through the private-summaries capability`,
                    volume: ref
                  })
                )
              : Effect.succeed(dataFolderOf(descriptor.id))
        })
      )
    )

  const list = () =>
    Effect.gen(function* () {
      const names = yield* fs.readDirectory(metaDir).pipe(Effect.mapError(ioError("list", metaDir)))
      const files = names.filter((name) => !name.startsWith(".") && name.endsWith(metaExtension)).sort()
      return yield* Effect.forEach(files, (name) => {
        const volume = Schema.decodeUnknownOption(IdSchemas.VolumeId)(name.slice(0, -metaExtension.length))
        if (Option.isNone(volume)) {
          return Effect.fail(
            new VolumeMetadataInvalid({
              file: path.join(metaDir, name),
              field: "(file name)",
              problem: "a metadata file is named <volume id>.json and this name is not a volume id"
            })
          )
        }
        return readDescriptor(volume.value).pipe(
          Effect.flatMap(
            Option.match({
              // Removed between the listing and the read: no longer registered.
              onNone: () => Effect.succeed([]),
              onSome: (descriptor) => Effect.succeed([descriptor])
            })
          )
        )
      }).pipe(Effect.map((found) => found.flat()))
    })

  const store = stores.mint<VolumeStore>({ id, root, create, custody, folderOf, list })
  registerFolders(store, (ref) => dataFolderOf(ref.volume))
  return store
}, Observability.withSpan("VolumeStore.open"))

/**
 * Registers `volume` unless a volume of its id is registered already, and
 * says which happened: `found` is `None` when this call created it, else
 * the registration that was there (which may have other facts than the ones
 * asked for: the caller decides whether that is a conflict). Of concurrent
 * callers, exactly one creates; the others find its registration.
 *
 * @example
 * ```ts
 * import { Ids, Volume } from "@tessera/core"
 * import { VolumeStore } from "@tessera/runtime"
 * import { Effect, Option, Schema } from "effect"
 *
 * declare const store: VolumeStore.VolumeStore
 *
 * export const scratch = VolumeStore.createOrFind(store, {
 *   id: Schema.decodeUnknownSync(Ids.VolumeId)("scratch"),
 *   kind: "Scratch",
 *   owner: Volume.hostOwner
 * }).pipe(Effect.map(({ ref, found }) => (Option.isNone(found) ? `created ${ref.volume}` : `found ${ref.volume}`)))
 * ```
 *
 * @since 0.1.0
 * @category volumes
 */
export const createOrFind = (
  store: VolumeStore,
  volume: CreateVolume
): Effect.Effect<
  { readonly ref: Volume.VolumeRef; readonly found: Option.Option<Volume.VolumeDescriptor> },
  InvalidInput.InvalidInput | VolumeMetadataInvalid | StoreIoError
> =>
  Effect.gen(function* () {
    const ref: Volume.VolumeRef = { store: store.id, volume: volume.id }
    const existing = yield* store.custody(ref)
    if (Option.isSome(existing)) return { ref, found: existing }
    const created = yield* store.create(volume).pipe(
      Effect.as(true),
      Effect.catchTag("VolumeAlreadyExists", () => Effect.succeed(false))
    )
    return { ref, found: created ? Option.none() : yield* store.custody(ref) }
  })

/**
 * A volume a host needs already exists with another kind or owner (made by
 * hand, or by another agent whose id shares a long prefix). Its metadata
 * was left untouched, and nothing was bound to it.
 *
 * @since 0.1.0
 * @category errors
 */
export class VolumeConflict extends Schema.TaggedError<VolumeConflict>()("VolumeConflict", {
  volume: Volume.VolumeRef,
  expected: Volume.VolumeDescriptor,
  found: Volume.VolumeDescriptor
}) {
  override get message(): string {
    return `volume ${Volume.formatVolumeRef(this.volume)} exists as ${this.found.kind} owned by ${Volume.formatOwner(this.found.owner)}, but this host needs ${this.expected.kind} owned by ${Volume.formatOwner(this.expected.owner)}`
  }
}

/**
 * The volume with exactly these facts: created when missing
 * ({@link createOrFind}), found when registered with the same kind and
 * owner, and `VolumeConflict` when registered with others (a volume of
 * another agent is never taken for this one's).
 *
 * @since 0.1.0
 * @category volumes
 */
export const ensure = Effect.fnUntraced(function* (
  store: VolumeStore,
  volume: CreateVolume
): Effect.fn.Return<
  Volume.VolumeRef,
  VolumeConflict | InvalidInput.InvalidInput | VolumeMetadataInvalid | StoreIoError
> {
  const expected: Volume.VolumeDescriptor = { id: volume.id, kind: volume.kind, owner: volume.owner }
  const { found, ref } = yield* createOrFind(store, volume)
  if (
    Option.isSome(found) &&
    !(found.value.kind === expected.kind && Volume.sameOwner(found.value.owner, expected.owner))
  ) {
    return yield* new VolumeConflict({ volume: ref, expected, found: found.value })
  }
  return ref
})
