/**
 * The one write of private content, and reading back and withdrawing what it
 * wrote: the bytes go to a temporary name, are flushed, and are published by
 * hard link, which never replaces an existing file. `PrivateSummaries`
 * states the contract.
 */
import * as ArtifactOffload from "@tessera/artifacts/ArtifactOffload"
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
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
import * as Observability from "../Observability.ts"
import * as VolumeStore from "../VolumeStore.ts"
import { sha256Bytes } from "./digest.ts"
import { readPublished } from "./durableRead.ts"
import {
  admit,
  type Capability,
  type JournalRecord,
  mintedFor,
  type PrivateSummaries,
  type ResolveError
} from "./privateSummaries.ts"
import { boundSummary } from "./summaryRequests.ts"

/** See `PrivateSummaries.StagingKey`. */
export const StagingKey = Schema.Struct({
  operation: Ids.OperationId,
  step: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }))
})
/** See `PrivateSummaries.StagingKey`. */
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
  | ArtifactRedactor.ArtifactRedactionFailed
  | StagingConflict
  | StagingReadFailed
  | DurableFiles.AlreadyExists
  | DurableFiles.OutsideWithin
  | DurableFiles.DurableFileFailure

/** See `PrivateSummaries.stagedPath`. */
export const stagedPath = (key: StagingKey): string => VolumeStore.summaryPath(key.operation, key.step)

const encoder = new TextEncoder()

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.length === b.length && a.every((byte, i) => byte === b[i])

/** See `PrivateSummaries.StageOptions`. */
export interface StageOptions {
  readonly journal?: JournalRecord
  readonly maxBytes?: number
}

/** See `PrivateSummaries.StagingServices`. */
export type StagingServices = PrivateSummaries | DurableFiles.DurableFiles | FileSystem.FileSystem | Path.Path

/** What a write stored: the file, and the content after the scrub and the bound. */
export interface Written<Content extends string | Uint8Array> {
  readonly file: StagedFile
  readonly stored: Content
}

// Decoders are made once per entry (a handful: the public staging entries and compaction's publish).
const keyDecoders = new Map<string, ReturnType<typeof InvalidInput.decode<typeof StagingKey>>>()
const decodeKey = (entry: string) => {
  const known = keyDecoders.get(entry)
  if (known !== undefined) return known
  const made = InvalidInput.decode(StagingKey, entry, "key")
  keyDecoders.set(entry, made)
  return made
}

/**
 * The one write of private content (see `PrivateSummaries.stageOnce`), its
 * refusals naming `entry`: the key decoded, the capability admitted once, the
 * content scrubbed and bounded, then published and hashed.
 */
export const writeOnce = <Content extends string | Uint8Array>(
  entry: string,
  givenKey: StagingKey,
  content: Content,
  options: StageOptions = {}
): Effect.Effect<Written<Content>, StagingError, StagingServices> =>
  Effect.gen(function* () {
    const key = yield* decodeKey(entry)(givenKey)
    const capability = yield* admit(entry, Option.fromUndefinedOr(options.journal))
    yield* Observability.annotate({
      "tessera.operation": key.operation,
      "tessera.step": key.step,
      "tessera.volume": capability.volume.volume
    })
    // A text scrubs to a text and bytes stay bytes, so the stored content has the given content's type.
    const stored = (yield* scrubbed(entry, content, options.maxBytes)) as Content
    return { file: yield* publish(capability, key, stored), stored }
  }).pipe(Observability.withSpan("PrivateSummaries.stageOnce"))

// Bytes cannot be scrubbed as text: with a redactor provided they are refused rather than stored unscrubbed.
const scrubbed = (entry: string, content: string | Uint8Array, maxBytes: number | undefined) =>
  Effect.flatMap(ArtifactRedactor.provided, (redactor): Effect.Effect<string | Uint8Array, StagingError> => {
    if (typeof content !== "string") {
      return Option.isNone(redactor)
        ? Effect.succeed(Uint8Array.from(content))
        : Effect.fail(
            new InvalidInput.InvalidInput({
              entry,
              field: "content",
              value: `${content.length} bytes`,
              detail: "bytes cannot be scrubbed by the host's redactor; stage text"
            })
          )
    }
    const text = Option.isNone(redactor) ? Effect.succeed(content) : redactor.value.redact(content)
    // No bound is an unbounded one: every text fits.
    return Effect.map(text, (redacted) => boundSummary(redacted, maxBytes ?? Number.POSITIVE_INFINITY))
  })

const publish = Effect.fnUntraced(function* (capability: Capability, key: StagingKey, content: string | Uint8Array) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const bytes = typeof content === "string" ? encoder.encode(content) : content
  const sha256 = yield* sha256Bytes(bytes)
  yield* Observability.annotate("tessera.staging.size", bytes.length)
  const relative = stagedPath(key)
  const finalPath = path.join(capability.folder, relative)
  const staged = { volume: capability.volume, path: relative, absolutePath: finalPath, size: bytes.length, sha256 }
  const published = yield* publishNew(capability.folder, finalPath, bytes)
  yield* Observability.annotate("tessera.staging.outcome", published ? "Published" : "Existing")
  if (published) return { ...staged, outcome: "Published" as const } satisfies StagedFile

  const existing = yield* fs
    .readFile(finalPath)
    .pipe(Effect.mapError((error: PlatformError) => new StagingReadFailed({ path: finalPath, detail: error.message })))
  if (sameBytes(existing, bytes)) return { ...staged, outcome: "AlreadyStaged" as const } satisfies StagedFile
  return yield* new StagingConflict({
    path: relative,
    existingSize: existing.length,
    existingSha256: yield* sha256Bytes(Uint8Array.from(existing)),
    stagedSize: bytes.length,
    stagedSha256: sha256
  })
})

/**
 * Publishes `bytes` at `finalPath` inside `within`, write-once: the bytes go
 * to a temporary name in the same folder and are flushed, then linked to the
 * final name, which is never replaced. Whether this call published them
 * (`false`: a file was already there); the temporary name never lingers.
 * The final path is checked to lie in `within` before anything is written.
 * Every write of private content (a summary, a transcript record) ends here.
 */
export const publishNew = Effect.fnUntraced(function* (within: string, finalPath: string, bytes: Uint8Array) {
  const files = yield* DurableFiles.DurableFiles
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const tempPath = path.join(path.dirname(finalPath), DurableFiles.temporaryName(path.basename(finalPath)))
  // The temp file's real folder is checked by `writeNewFile`; the final name shares that folder.
  if (DurableFiles.relativeWithin(within, finalPath, path) === undefined) {
    return yield* new DurableFiles.OutsideWithin({
      operation: "publishOnce",
      path: finalPath,
      within,
      actual: finalPath
    })
  }
  // The temp name need not survive a crash: the publish syncs the folder once the final name exists.
  yield* files.writeNewFile(tempPath, bytes, { within, createFolders: true, syncFolder: false })
  return yield* files.publishOnce(tempPath, finalPath).pipe(
    Effect.as(true),
    Effect.catchTag("AlreadyExists", () => Effect.succeed(false)),
    // The temp name is ours alone and must not linger; a successful publish has already removed it.
    Effect.onExit((exit) =>
      Exit.isSuccess(exit) && exit.value ? Effect.void : fs.remove(tempPath).pipe(Effect.ignore)
    )
  )
})

/** The file staged under `key`, with its text (see `PrivateSummaries.readStaged`); reading checks what reads nothing. */
export const readStaged = Effect.fnUntraced(function* (
  entry: string,
  givenKey: StagingKey,
  journal: Option.Option<JournalRecord>
) {
  const key = yield* decodeKey(entry)(givenKey)
  const capability = yield* mintedFor(entry, journal)
  const files = yield* DurableFiles.DurableFiles
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const relative = stagedPath(key)
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

/** Removes the file staged under `key` and syncs its folder (see `PrivateSummaries.withdraw`), admitted like a write. */
export const withdraw = Effect.fnUntraced(function* (entry: string, givenKey: StagingKey) {
  const key = yield* decodeKey(entry)(givenKey)
  const capability = yield* admit(entry, Option.none())
  const fs = yield* FileSystem.FileSystem
  const files = yield* DurableFiles.DurableFiles
  const path = yield* Path.Path
  const absolutePath = path.join(capability.folder, stagedPath(key))
  yield* fs.remove(absolutePath).pipe(
    Effect.catchIf(
      (error: PlatformError) => error.reason._tag === "NotFound",
      () => Effect.void
    ),
    Effect.mapError((error: PlatformError) => new StagingReadFailed({ path: absolutePath, detail: error.message }))
  )
  yield* files.syncDirectory(path.dirname(absolutePath))
})

/** An offload request as the private writer takes it: its root is the writer's own artifact folder. */
export type PrivateOffloadRequest = Omit<ArtifactOffload.OffloadRequest, "root" | "content"> & {
  readonly content: string
}

/**
 * The one write of an offloaded result onto the private volume (see
 * `PrivateSummaries.offloadOnce`): the capability checked to be minted for
 * `journal`'s task, admitted (the read of the volume's registration) only
 * when the body may be written, then offloaded below the volume's artifact
 * folder: scrubbed, written to a temporary name, published and hashed.
 */
export const offloadOnce = Effect.fnUntraced(function* (
  entry: string,
  request: PrivateOffloadRequest,
  journal: JournalRecord
): Effect.fn.Return<ArtifactOffload.OffloadResult, ResolveError, StagingServices> {
  const bound = Option.some(journal)
  const capability = ArtifactPointer.exceedsUtf8(request.content, request.threshold)
    ? yield* admit(entry, bound)
    : yield* mintedFor(entry, bound)
  const path = yield* Path.Path
  return yield* ArtifactOffload.offload({ ...request, root: path.join(capability.folder, VolumeStore.artifactFolder) })
})
