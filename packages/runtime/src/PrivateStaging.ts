/**
 * Write-once staging of private files on the task's private volume.
 *
 * A staged file appears at `summaries/<operation>/<step>.txt` all at once or
 * not at all: its bytes go to a temporary name first, are flushed to disk,
 * and are then published by hard link, which never replaces an existing
 * file. So a reader never sees a torn file (not even after the process is
 * killed mid-write), and of several concurrent stagers of one key exactly one
 * publishes; the others find its file.
 *
 * Staging requires the {@link PrivateSummaries.PrivateSummaries} capability
 * in its type: there is no way to call it before a private writer was
 * resolved and validated.
 *
 * @since 0.1.0
 */

import * as DurableFiles from "@tessera/core/DurableFiles"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import type * as Unauthorized from "@tessera/core/Unauthorized"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type { PlatformError } from "effect/PlatformError"
import * as Schema from "effect/Schema"
import { sha256Bytes } from "./internal/digest.ts"
import { readPublished } from "./internal/durableRead.ts"
import * as Observability from "./Observability.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"
import * as VolumeStore from "./VolumeStore.ts"

/**
 * Which private file to stage: an operation and a step within it.
 *
 * @since 0.1.0
 * @category models
 */
export const StagingKey = Schema.Struct({
  operation: Ids.OperationId,
  step: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }))
})
/**
 * @since 0.1.0
 * @category models
 */
export type StagingKey = typeof StagingKey.Type

/**
 * A staged file: where it is (relative to its volume, and absolute), its size
 * and SHA-256, and whether this call published it or found it already there
 * with identical bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface StagedFile {
  readonly volume: Volume.VolumeRef
  readonly path: string
  readonly absolutePath: string
  readonly size: number
  readonly sha256: string
  readonly outcome: "Published" | "AlreadyStaged"
}

/**
 * The key was already staged with different bytes. The existing file is left
 * exactly as it was.
 *
 * @since 0.1.0
 * @category errors
 */
export class StagingConflict extends Schema.TaggedError<StagingConflict>()("StagingConflict", {
  path: Schema.String,
  existingSize: Schema.Number,
  existingSha256: Schema.String,
  stagedSize: Schema.Number,
  stagedSha256: Schema.String
}) {
  override get message(): string {
    return `${this.path} is already staged with different content (${this.existingSize} bytes, sha256 ${this.existingSha256.slice(0, 12)}); the new ${this.stagedSize} bytes were not written`
  }
}

/**
 * Reading back an already staged file failed.
 *
 * @since 0.1.0
 * @category errors
 */
export class StagingReadFailed extends Schema.TaggedError<StagingReadFailed>()("StagingReadFailed", {
  path: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `could not read the staged file ${this.path}: ${this.detail}`
  }
}

/**
 * Every way staging can fail.
 *
 * @since 0.1.0
 * @category errors
 */
export type StagingError =
  | InvalidInput.InvalidInput
  | Unauthorized.Unauthorized
  | VolumeStore.VolumeMetadataInvalid
  | VolumeStore.StoreIoError
  | StagingConflict
  | StagingReadFailed
  | DurableFiles.AlreadyExists
  | DurableFiles.OutsideWithin
  | DurableFiles.DurableFileFailure

/**
 * The path of a key, relative to the private volume.
 *
 * @since 0.1.0
 * @category paths
 */
export const relativePath = (key: StagingKey): string => VolumeStore.summaryPath(key.operation, key.step)

const decodeKey = InvalidInput.decode(StagingKey, "PrivateStaging.stageOnce", "key")
const decodeReadKey = InvalidInput.decode(StagingKey, "PrivateStaging.readStaged", "key")
const decodeWithdrawKey = InvalidInput.decode(StagingKey, "PrivateStaging.withdraw", "key")

const encoder = new TextEncoder()

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((byte, i) => byte === b[i])

/**
 * Stages `content` under `key` on the resolved private volume, once.
 *
 * The key is decoded first (`InvalidInput` naming the key: a step must be a
 * positive integer, an operation an identifier), the capability is admitted
 * (`PrivateSummaries.admit`: minted, its volume unchanged), and the final
 * path is checked to lie in the volume's folder; a refusal writes nothing.
 *
 * Staging the same key again returns the existing file (`AlreadyStaged`)
 * when the bytes are identical and fails {@link StagingConflict} otherwise.
 * Concurrent stagers of one key: exactly one publishes, the others return
 * `AlreadyStaged` or `StagingConflict`. The caller is responsible for
 * scrubbing: the bytes given are the bytes stored.
 *
 * @since 0.1.0
 * @category staging
 */
export const stageOnce = Effect.fnUntraced(function* (
  givenKey: StagingKey,
  content: string | Uint8Array
): Effect.fn.Return<
  StagedFile,
  StagingError,
  PrivateSummaries.PrivateSummaries | DurableFiles.DurableFiles | FileSystem.FileSystem | Path.Path
> {
  const key = yield* decodeKey(givenKey)
  const capability = yield* PrivateSummaries.admit("PrivateStaging.stageOnce")
  yield* Observability.annotate({
    "tessera.operation": key.operation,
    "tessera.step": key.step,
    "tessera.volume": capability.volume.volume
  })
  const files = yield* DurableFiles.DurableFiles
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const bytes = typeof content === "string" ? encoder.encode(content) : Uint8Array.from(content)
  const sha256 = yield* sha256Bytes(bytes)
  yield* Observability.annotate("tessera.staging.size", bytes.length)
  const relative = relativePath(key)
  const finalPath = path.join(capability.folder, relative)
  const folder = path.dirname(finalPath)
  const tempPath = path.join(folder, DurableFiles.temporaryName(`${key.step}.txt`))
  // The temp file's real folder is checked by `writeNewFile`; the final name shares that folder.
  if (DurableFiles.relativeWithin(capability.folder, finalPath, path) === undefined) {
    return yield* new DurableFiles.OutsideWithin({
      operation: "publishOnce",
      path: finalPath,
      within: capability.folder,
      actual: finalPath
    })
  }
  const staged = { volume: capability.volume, path: relative, absolutePath: finalPath, size: bytes.length, sha256 }

  // The temp name need not survive a crash: the publish syncs the folder once the final name exists.
  yield* files.writeNewFile(tempPath, bytes, { within: capability.folder, createFolders: true, syncFolder: false })
  const published = yield* files.publishOnce(tempPath, finalPath).pipe(
    Effect.as(true),
    Effect.catchTag("AlreadyExists", () => Effect.succeed(false)),
    // The temp name is ours alone and must not linger; a successful publish has already removed it.
    Effect.onExit((exit) =>
      Exit.isSuccess(exit) && exit.value ? Effect.void : fs.remove(tempPath).pipe(Effect.ignore)
    )
  )
  yield* Observability.annotate("tessera.staging.outcome", published ? "Published" : "Existing")
  if (published) return { ...staged, outcome: "Published" as const }

  const existing = yield* fs
    .readFile(finalPath)
    .pipe(Effect.mapError((error: PlatformError) => new StagingReadFailed({ path: finalPath, detail: error.message })))
  if (sameBytes(existing, bytes)) return { ...staged, outcome: "AlreadyStaged" as const }
  return yield* new StagingConflict({
    path: relative,
    existingSize: existing.length,
    existingSha256: yield* sha256Bytes(Uint8Array.from(existing)),
    stagedSize: bytes.length,
    stagedSha256: sha256
  })
}, Observability.withSpan("PrivateStaging.stageOnce"))

/**
 * The file staged under `key`, if there is one, with its text: what
 * compaction adopts when a crash interrupted it after staging.
 *
 * @since 0.1.0
 * @category staging
 */
export const readStaged = Effect.fnUntraced(function* (givenKey: StagingKey) {
  const key = yield* decodeReadKey(givenKey)
  const capability = yield* PrivateSummaries.admit("PrivateStaging.readStaged")
  return yield* readStagedAdmitted(capability, key)
})

/**
 * {@link readStaged} with a capability its caller has just admitted
 * (`PrivateSummaries.admit`); the key is still decoded. Compaction admits its
 * writer before reading a leftover, and a second admission in the same
 * moment would read the volume's metadata again for nothing. Reading writes
 * nothing; every write still admits on its own.
 *
 * @internal
 */
export const readStagedAdmitted = Effect.fnUntraced(function* (
  capability: PrivateSummaries.PrivateWriterCapability,
  givenKey: StagingKey
) {
  const key = yield* decodeReadKey(givenKey)
  const files = yield* DurableFiles.DurableFiles
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const relative = relativePath(key)
  const absolutePath = path.join(capability.folder, relative)
  const readFailed = (error: { readonly message: string }) =>
    new StagingReadFailed({ path: absolutePath, detail: error.message })
  // Looked for before every summary, and almost always absent.
  const bytes = yield* readPublished(files, fs, absolutePath, capability.folder).pipe(Effect.mapError(readFailed))
  if (Option.isNone(bytes)) return Option.none<{ readonly file: StagedFile; readonly text: string }>()
  const file: StagedFile = {
    volume: capability.volume,
    path: relative,
    absolutePath,
    size: bytes.value.length,
    sha256: yield* sha256Bytes(Uint8Array.from(bytes.value)),
    outcome: "AlreadyStaged"
  }
  return Option.some({ file, text: new TextDecoder().decode(bytes.value) })
})

/**
 * Removes the file staged under `key` and syncs its folder: the one way a
 * staged file goes, used only after the journal recorded why
 * (`SummarySuperseded`). Absent already is fine.
 *
 * @since 0.1.0
 * @category staging
 */
export const withdraw = Effect.fnUntraced(function* (givenKey: StagingKey) {
  const key = yield* decodeWithdrawKey(givenKey)
  const capability = yield* PrivateSummaries.admit("PrivateStaging.withdraw")
  const fs = yield* FileSystem.FileSystem
  const files = yield* DurableFiles.DurableFiles
  const path = yield* Path.Path
  const absolutePath = path.join(capability.folder, relativePath(key))
  yield* fs.remove(absolutePath).pipe(
    Effect.catchIf(
      (error: PlatformError) => error.reason._tag === "NotFound",
      () => Effect.void
    ),
    Effect.mapError((error: PlatformError) => new StagingReadFailed({ path: absolutePath, detail: error.message }))
  )
  yield* files.syncDirectory(path.dirname(absolutePath))
})
