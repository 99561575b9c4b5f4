/**
 * Artifact offload: a result above a size threshold is written under an
 * artifact root and the caller gets a one-line pointer to put in the model's
 * context instead.
 *
 * The order of the steps is the guarantee:
 *
 * 1. Lexical resolution of the target below the root (the target does not
 *    exist yet, so nothing else can be asked): no absolute path in POSIX or
 *    Windows form, no `..` escape, no NUL. This runs with or without a policy.
 * 2. The host's `ArtifactPathPolicy`, when one is provided: the specific
 *    internal-state check first, then the internal-root check.
 * 3. Redaction by the host's `ArtifactRedactor`, when one is provided (none
 *    means verbatim, see `ArtifactRedactor`). Everything after this step (the
 *    file, the size, the digest, the abstract) comes from the redacted body.
 * 4. The folders are created, each one only inside a folder already checked to
 *    be within the real root, and then the real parent is re-checked against
 *    the real root: a symlink leading out of the root is refused before
 *    anything is written through it. The policy is asked again with the real
 *    path.
 * 5. The body is written to a temporary name in the target's folder,
 *    created exclusively (no replacing, no final symlink), the opened file
 *    itself checked to live under the real root, and synced
 *    (`DurableFiles.writeNewFile`). Only then is it linked under its final
 *    name and the folder synced: a file under a final name is always
 *    complete, and a crash leaves at most a temporary name
 *    (`DurableFiles.isTemporaryName`). A final name already present (an
 *    interrupted attempt at the same target) is reused when it holds the same
 *    bytes and atomically replaced otherwise.
 *
 * A refused or failed offload is soft: the caller gets its own content back
 * inline with the typed reason, so the content is never lost. No error carries
 * any of the content, only paths and codes.
 *
 * The root and the file primitives are inputs (the root a parameter, the
 * primitives the `DurableFiles` service), so a runtime can point the same
 * function at an agent's private volume.
 *
 * @since 0.1.0
 */
import * as Digest from "@tessera/core/Digest"
import type { AlreadyExists, DurableFileFailure, OutsideWithin } from "@tessera/core/DurableFiles"
import { DurableFiles, relativeWithin, temporaryName } from "@tessera/core/DurableFiles"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type { ArtifactPathRejected } from "./ArtifactPath.ts"
import { resolveRelative } from "./ArtifactPath.ts"
import type { ArtifactInternalRoot, ArtifactInternalState } from "./ArtifactPathPolicy.ts"
import { ArtifactPathPolicy, check } from "./ArtifactPathPolicy.ts"
import { buildAbstract, defaultAbstractBytes, exceedsUtf8, render, utf8Length } from "./ArtifactPointer.ts"
import type { ArtifactRedactionFailed } from "./ArtifactRedactor.ts"
import { redactIfProvided } from "./ArtifactRedactor.ts"

/**
 * The target's real location is outside the real artifact root (a folder on
 * the way is, or was swapped for, a symlink leading out). Nothing was written
 * through it.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArtifactEscapedRoot extends Schema.TaggedError<ArtifactEscapedRoot>()("ArtifactEscapedRoot", {
  path: Schema.String,
  root: Schema.String,
  actual: Schema.String
}) {
  override get message(): string {
    return `artifact ${this.path} would land at ${this.actual}, outside the artifact root ${this.root}`
  }
}

/**
 * The file system refused a step. `code` is the errno code or the platform's
 * error kind.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArtifactWriteFailed extends Schema.TaggedError<ArtifactWriteFailed>()("ArtifactWriteFailed", {
  path: Schema.String,
  operation: Schema.String,
  code: Schema.String
}) {
  override get message(): string {
    return `artifact ${this.path} not written: ${this.operation} failed with ${this.code}`
  }
}

/**
 * Every reason an offload can be refused or fail.
 *
 * @since 0.1.0
 * @category errors
 */
export type OffloadRefusal =
  | ArtifactPathRejected
  | ArtifactInternalState
  | ArtifactInternalRoot
  | ArtifactRedactionFailed
  | ArtifactEscapedRoot
  | ArtifactWriteFailed

/**
 * The outcome: either the body went to disk and the caller shows `pointer`,
 * or the caller keeps `content` inline (because it was small enough, then
 * `reason` is `None`, or because the offload was refused or failed).
 *
 * @since 0.1.0
 * @category models
 */
export type OffloadResult = Data.TaggedEnum<{
  Offloaded: {
    readonly pointer: string
    /** Relative to the artifact root, `/`-separated. */
    readonly path: string
    /** Bytes stored (of the redacted body). */
    readonly size: number
    /** `sha256:<hex>` of the stored bytes. */
    readonly digest: string
    /**
     * How the file got its final name: `Written` (the name was free),
     * `Reused` (a file with exactly these bytes was already there, left by
     * an interrupted attempt) or `Replaced` (a file with other bytes was
     * there and was atomically replaced).
     */
    readonly disposition: "Written" | "Reused" | "Replaced"
  }
  Inline: {
    readonly content: string
    readonly reason: Option.Option<OffloadRefusal>
  }
}>

/**
 * Constructors and matchers for {@link OffloadResult}.
 *
 * @since 0.1.0
 * @category models
 */
export const OffloadResult = Data.taggedEnum<OffloadResult>()

/**
 * What to offload and where.
 *
 * @since 0.1.0
 * @category models
 */
export interface OffloadRequest {
  /** The body, whole or in chunks (joined before redaction, so a secret split across chunks is still caught). */
  readonly content: string | ReadonlyArray<string>
  /** Bodies of at most this many UTF-8 bytes stay inline. */
  readonly threshold: number
  /** The artifact root folder (created when missing). */
  readonly root: string
  /** Relative target below the root, e.g. `tool-results/<call-id>.txt`. */
  readonly target: string
  /** The host's read tool, named in the pointer. */
  readonly readTool: string
  /** The abstract's budget in UTF-8 bytes; defaults to 240. */
  readonly abstractBytes?: number
}

/**
 * Resolves `target` lexically below `root` and applies the host policy when
 * one is provided. Returns the absolute (lexical) path and the normalised
 * relative path. Containment holds without a policy too.
 *
 * @since 0.1.0
 * @category resolution
 */
export const resolveTarget = Effect.fnUntraced(function* (root: string, target: string) {
  const path = yield* Path.Path
  const relative = yield* Effect.fromResult(resolveRelative(target))
  const absolute = path.join(path.resolve(root), ...relative.segments)
  const policy = yield* Effect.serviceOption(ArtifactPathPolicy)
  if (Option.isSome(policy)) yield* Effect.fromResult(check(policy.value, absolute))
  return { absolute, relative: relative.relative }
})

/**
 * Whether `text` takes more than `limit` UTF-8 bytes. A UTF-16 code unit
 * takes one to three UTF-8 bytes (a surrogate pair, two units, takes four),
 * so only a text whose length lies between a third of the limit and the
 * limit needs counting.
 */
const write = Effect.fnUntraced(function* (request: OffloadRequest, body: string) {
  const path = yield* Path.Path
  const fs = yield* FileSystem.FileSystem
  const files = yield* DurableFiles
  const { absolute, relative } = yield* resolveTarget(request.root, request.target)

  const stored = yield* redactIfProvided(body)

  const writeFailed = (operation: string, code: string) => new ArtifactWriteFailed({ path: relative, operation, code })
  // The root is created only when it is missing (usually it exists after the first offload).
  const realRoot = yield* files.realPath(request.root).pipe(
    Effect.catchTag("DurableFileFailure", (missing) =>
      missing.code === "ENOENT"
        ? fs.makeDirectory(request.root, { recursive: true }).pipe(
            Effect.mapError((error) => writeFailed("makeDirectory", error.reason._tag)),
            Effect.andThen(files.realPath(request.root))
          )
        : Effect.fail(missing)
    ),
    Effect.mapError((error) => (error._tag === "DurableFileFailure" ? writeFailed(error.operation, error.code) : error))
  )
  const parent = path.dirname(absolute)
  yield* files
    .makeDirectories(parent, { within: realRoot })
    .pipe(
      Effect.mapError((error) =>
        error._tag === "OutsideWithin"
          ? new ArtifactEscapedRoot({ path: relative, root: realRoot, actual: error.actual })
          : writeFailed(error.operation, error.code)
      )
    )
  const realParent = yield* files.realPath(parent).pipe(Effect.mapError((e) => writeFailed(e.operation, e.code)))
  const realTarget = path.join(realParent, path.basename(absolute))
  if (relativeWithin(realRoot, realParent, path) === undefined) {
    return yield* new ArtifactEscapedRoot({ path: relative, root: realRoot, actual: realTarget })
  }
  const policy = yield* Effect.serviceOption(ArtifactPathPolicy)
  if (Option.isSome(policy)) yield* Effect.fromResult(check(policy.value, realTarget))

  const writeError = (error: WriteError) => {
    switch (error._tag) {
      case "OutsideWithin":
        return new ArtifactEscapedRoot({ path: relative, root: realRoot, actual: error.actual })
      case "AlreadyExists":
        return writeFailed(error.operation, "EEXIST")
      case "DurableFileFailure":
        return writeFailed(error.operation, error.code)
    }
  }
  // The bytes go to a temporary name in the final folder first; only a complete, synced file is ever
  // linked under the final name, so a crash leaves at most a recognisable temporary name behind.
  const tempTarget = path.join(realParent, temporaryName(path.basename(realTarget)))
  const written = files
    .writeNewFile(tempTarget, stored, { within: realRoot, syncFolder: false })
    .pipe(Effect.mapError(writeError))
  // The measure and the abstract do not depend on the write: they are taken while the file is written and
  // synced (which wait on the device, not on this thread).
  const described = Effect.map(Digest.measureText(stored), (measure) => ({
    measure,
    abstract: buildAbstract(stored, request.abstractBytes ?? defaultAbstractBytes)
  }))
  const [, { measure, abstract }] = yield* Effect.all([written, described], { concurrency: 2 })
  const disposition = yield* place(realTarget, tempTarget, measure.sha256).pipe(
    Effect.mapError(writeError),
    Effect.onError(() => fs.remove(tempTarget).pipe(Effect.ignore))
  )
  const pointer = render({ path: relative, bytes: measure.size, readWith: request.readTool, abstract })
  return OffloadResult.Offloaded({
    pointer,
    path: relative,
    size: measure.size,
    digest: `sha256:${measure.sha256}`,
    disposition
  })
})

type WriteError = AlreadyExists | OutsideWithin | DurableFileFailure

/**
 * Moves the complete temporary file to the final name. A final name that is
 * free gets the file (`Written`). A final name already taken (an attempt that
 * was interrupted after writing it, since the target names one call) is kept
 * when it holds exactly these bytes (`Reused`, the temporary file removed)
 * and replaced by them otherwise (`Replaced`), so the body never stays
 * inline because of a leftover.
 */
const place = Effect.fnUntraced(function* (finalPath: string, tempPath: string, sha256: string) {
  const files = yield* DurableFiles
  const fs = yield* FileSystem.FileSystem
  const linked = yield* files.publishOnce(tempPath, finalPath).pipe(
    Effect.as(true),
    Effect.catchTag("AlreadyExists", () => Effect.succeed(false))
  )
  if (linked) return "Written" as const
  const existing = yield* fs.readFile(finalPath).pipe(Effect.option)
  const same = Option.isSome(existing) && (yield* Digest.sha256(existing.value)) === sha256
  if (same) {
    yield* fs.remove(tempPath).pipe(Effect.ignore)
    return "Reused" as const
  }
  yield* files.publishReplacing(tempPath, finalPath)
  return "Replaced" as const
})

/**
 * Offloads `request.content` when it is larger than the threshold, following
 * the steps in the module documentation. Never fails: a refusal or failure
 * comes back as `Inline` with the caller's content and the reason.
 *
 * @example
 * ```ts
 * import * as NodeServices from "@effect/platform-node/NodeServices"
 * import { ArtifactOffload } from "@tessera/artifacts"
 * import { NodeDurableFiles } from "@tessera/node"
 * import { Effect, Layer } from "effect"
 *
 * const stored = ArtifactOffload.offload({
 *   content: "row\n".repeat(10_000),
 *   threshold: 8_192,
 *   root: "/srv/agent/artifacts",
 *   target: "tool-results/rows.txt",
 *   readTool: "read_artifact"
 * }).pipe(
 *   // The model gets the pointer line; a refusal keeps the whole body inline, with its reason.
 *   Effect.map((result) => (result._tag === "Offloaded" ? result.pointer : result.content)),
 *   Effect.provide(Layer.merge(NodeServices.layer, NodeDurableFiles.layer))
 * )
 *
 * export const forTheModel = stored
 * ```
 *
 * @since 0.1.0
 * @category offload
 */
export const offload = (
  request: OffloadRequest
): Effect.Effect<OffloadResult, never, FileSystem.FileSystem | Path.Path | DurableFiles> => {
  const body = typeof request.content === "string" ? request.content : request.content.join("")
  if (!exceedsUtf8(body, request.threshold)) {
    return Effect.succeed(OffloadResult.Inline({ content: body, reason: Option.none() }))
  }
  return write(request, body).pipe(
    Effect.catch((reason: OffloadRefusal) =>
      Effect.succeed(OffloadResult.Inline({ content: body, reason: Option.some(reason) }))
    )
  )
}

/**
 * What a journal records about an offload: the pointer's facts (path, size,
 * digest) or the inline size and the refusal's tag and message, never the
 * payload.
 *
 * @since 0.1.0
 * @category journal
 */
export const OffloadRecord = Schema.Union([
  Schema.TaggedStruct("Offloaded", { path: Schema.String, size: Schema.Number, digest: Schema.String }),
  Schema.TaggedStruct("Inline", {
    size: Schema.Number,
    reason: Schema.optionalKey(Schema.Struct({ tag: Schema.String, message: Schema.String }))
  })
])
/**
 * @since 0.1.0
 * @category journal
 */
export type OffloadRecord = typeof OffloadRecord.Type

/**
 * The journal record of an offload result.
 *
 * @since 0.1.0
 * @category journal
 */
export const toRecord = (result: OffloadResult): OffloadRecord =>
  OffloadResult.$match(result, {
    Offloaded: ({ digest, path, size }): OffloadRecord => ({ _tag: "Offloaded", path, size, digest }),
    Inline: ({ content, reason }): OffloadRecord =>
      Option.match(reason, {
        onNone: () => ({ _tag: "Inline", size: utf8Length(content) }),
        onSome: (error) => ({
          _tag: "Inline",
          size: utf8Length(content),
          reason: { tag: error._tag, message: error.message }
        })
      })
  })

/**
 * Whether an offload stored the body. A convenience for callers that branch
 * on the outcome without matching.
 *
 * @since 0.1.0
 * @category guards
 */
export const isOffloaded = OffloadResult.$is("Offloaded")
