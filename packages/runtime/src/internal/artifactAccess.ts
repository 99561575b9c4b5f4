/**
 * Where the read tool may look, and how it opens what it finds: the volumes a
 * task context may read artifacts from, the checks a path must pass, and the
 * opening of the file, which follows no link and re-checks where the file
 * really lives.
 *
 * What it may read is decided per call, from the task context, never from the
 * model's input: the artifact folder of the task's private writer (when the
 * `PrivateSummaries` capability resolves) and of each volume the task's own
 * scope grants read or write on, in that order. A granted volume counts only
 * while it is in the runtime's custody, is not a journal, and, when it is
 * `AgentPrivate`, is owned by the task's own agent: a grant never opens
 * another agent's private content.
 *
 * A pointer's path is only text (`ArtifactPointer.parse` checks its form, not
 * the disk), so every read makes the checks the offload's write makes, and
 * stricter ones: the path must be relative, canonical and free of `..`; it is
 * joined lexically below the volume's `artifacts/` folder; the file is opened
 * with `DurableFiles.readFile` from the volume's data folder, which follows
 * no symlink at any step (a planted link is refused, not followed, whether it
 * points inside or outside) and checks through the descriptor where the file
 * really lives; and that real location is checked once more to lie below the
 * volume's real artifact folder. Every refusal is an
 * {@link ArtifactReadRefused} naming the problem, which the tool turns into
 * a tool-error result the model reads; it is never a defect.
 *
 * @since 0.1.0
 */
import * as ArtifactPath from "@tessera/artifacts/ArtifactPath"
import * as DurableFiles from "@tessera/core/DurableFiles"
import * as Grant from "@tessera/core/Grant"
import * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Observability from "../Observability.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import * as VolumeStore from "../VolumeStore.ts"
import { clipWithin, quotedWithin } from "./boundedText.ts"
import { dataFolder } from "./storeFolders.ts"
import type { TaskContext } from "./storeRuntime.ts"

/**
 * How much of the request's path or pattern the output echoes, in UTF-8
 * bytes of the JSON literal; a longer one is echoed by its start and its
 * full size.
 *
 * @since 0.1.0
 * @category defaults
 */
export const readEchoBytes = 128

// The most of a refusal's detail its message carries: with the path's echo and the fixed words, a message stays
// within about 680 bytes.
const detailBytes = 512

/**
 * The most bytes a line or pattern read scans from the start of the
 * artifact, by default; beyond, the output says the scan stopped and byte
 * ranges reach the rest.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultReadScanBytes = 16 * 1024 * 1024

/**
 * Why a read was refused:
 *
 * - `InvalidPath`: the path is empty, contains NUL, is absolute (POSIX,
 *   UNC or drive form), has a `..` segment, is longer than
 *   `ArtifactPath.maxTargetBytes` (refused before it is split, so a path of
 *   any length or segment count gets this refusal), or is not in the
 *   canonical `/`-separated form pointers carry.
 * - `InvalidRequest`: more than one selection (`bytes`, `lines`, `pattern`)
 *   was given, a range ends before it starts, or the pattern is empty or
 *   longer than `maxReadPatternBytes`.
 * - `NotFound`: no volume the task may read holds the artifact.
 * - `SymlinkRefused`: a folder or the file on the way is a symbolic link.
 * - `OutsideRoot`: the opened file does not really live below the volume's
 *   artifact folder.
 * - `NotPlainFile`: the path names a folder, a special file, or a file with
 *   more than one hard link.
 * - `ReadFailed`: the operating system or the volume store failed.
 *
 * @since 0.1.0
 * @category models
 */
export const ArtifactReadProblem = Schema.Literals([
  "InvalidPath",
  "InvalidRequest",
  "NotFound",
  "SymlinkRefused",
  "OutsideRoot",
  "NotPlainFile",
  "ReadFailed"
])
/**
 * @since 0.1.0
 * @category models
 */
export type ArtifactReadProblem = typeof ArtifactReadProblem.Type

/**
 * A read was refused; nothing of the artifact was returned. The detail names
 * paths relative to the artifact folder only, since the message goes to the
 * model. `path` and `detail` are kept whole; the message echoes the path cut
 * to {@link readEchoBytes} and the detail cut to 512 bytes, so it stays within
 * 700 bytes however long the path.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArtifactReadRefused extends Schema.TaggedError<ArtifactReadRefused>()("ArtifactReadRefused", {
  path: Schema.String,
  problem: ArtifactReadProblem,
  detail: Schema.String,
  volume: Schema.optionalKey(Volume.VolumeRef)
}) {
  override get message(): string {
    return `cannot read artifact ${quotedWithin(this.path, readEchoBytes)} (${this.problem}): ${clipWithin(this.detail, detailBytes)}`
  }
}

/**
 * A volume a read may look in, and why.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadableVolume {
  readonly ref: Volume.VolumeRef
  /** The volume's data folder; artifacts are in its `artifacts/` folder. */
  readonly folder: string
  readonly source: "PrivateWriter" | "Grant"
}

// The store's errors name host folders; the model gets only which failure it was.
const storeFailed = (path: string) => (error: { readonly _tag: string; readonly message: string }) =>
  new ArtifactReadRefused({
    path,
    problem: "ReadFailed",
    // A refused context is named as such (its message names the reason); a store failure only by its tag.
    detail: error._tag === "Unauthorized" ? error.message : `the volume store failed (${error._tag})`
  })

/**
 * The volumes `context` may read artifacts from, in the order a read tries
 * them (see the module comment), with each granted volume that was passed
 * over and why.
 *
 * @since 0.1.0
 * @category access
 */
export const readableVolumes = Effect.fnUntraced(function* (context: TaskContext) {
  // The grants below are the context's own: a hand-built or copied context is refused first.
  yield* PrivateSummaries.requireContext(context, "ToolResults.readableVolumes")
  const store = context.runtime.host.store
  const volumes: Array<ReadableVolume> = []
  const passedOver: Array<string> = []
  const listed = (ref: Volume.VolumeRef) => volumes.some((volume) => Grant.sameVolumeRef(volume.ref, ref))
  const capability = yield* PrivateSummaries.resolveOption(context)
  if (Option.isSome(capability)) {
    volumes.push({ ref: capability.value.volume, folder: capability.value.folder, source: "PrivateWriter" })
  }
  // An issued scope holds only its own task's grants, each with read or write access (TaskHost.issueScope):
  // every grant lets the task read what it names.
  for (const grant of context.scope.grants) {
    if (listed(grant.volume)) continue
    const name = Volume.formatVolumeRef(grant.volume)
    const custody = yield* store.custody(grant.volume)
    if (Option.isNone(custody)) {
      passedOver.push(`${name}: not in the runtime's custody`)
      continue
    }
    const descriptor = custody.value
    if (descriptor.kind === "Journal") {
      passedOver.push(`${name}: a journal volume holds no artifacts`)
      continue
    }
    if (descriptor.kind === "AgentPrivate" && !Volume.sameOwner(descriptor.owner, Volume.agentOwner(context.agent))) {
      passedOver.push(
        `${name}: private to ${Volume.formatOwner(descriptor.owner)}, not to the task's agent ${context.agent}`
      )
      continue
    }
    // Located here, not by `folderOf`: custody was read just above, and `folderOf` hands out no agent-private
    // folder, where the task's own agent's volume, read-granted, is readable.
    volumes.push({ ref: grant.volume, folder: dataFolder(store, grant.volume), source: "Grant" })
  }
  return { volumes: volumes as ReadonlyArray<ReadableVolume>, passedOver: passedOver as ReadonlyArray<string> }
}, Observability.withSpan("ToolResults.readableVolumes"))

/** The path's segments when it is canonical, relative and free of `..`; the refusal otherwise. */
export const checkPath = (path: string): Result.Result<ReadonlyArray<string>, ArtifactReadRefused> => {
  const refuse = (detail: string) => Result.fail(new ArtifactReadRefused({ path, problem: "InvalidPath", detail }))
  const resolved = ArtifactPath.resolveRelative(path)
  if (Result.isFailure(resolved)) {
    return refuse(
      resolved.failure.problem === "TooLong"
        ? `TooLong: the path is over ${ArtifactPath.maxTargetBytes} bytes; no artifact pointer names one that long`
        : `${resolved.failure.problem}: give the relative path exactly as the artifact pointer shows it`
    )
  }
  if (path.split(/[\\/]/).includes("..")) return refuse("Traversal: `..` segments are never accepted")
  if (resolved.success.relative !== path) {
    return refuse(
      `not in the canonical form pointers use; did you mean ${quotedWithin(resolved.success.relative, readEchoBytes)}?`
    )
  }
  return Result.succeed(resolved.success.segments)
}

/** An opened artifact: which volume, the bytes read, and the whole size. */
export interface Found {
  readonly volume: ReadableVolume
  readonly bytes: Uint8Array
  readonly size: number
}

const refusalOf = (
  path: string,
  volume: Volume.VolumeRef,
  root: string,
  error: DurableFiles.OutsideWithin | DurableFiles.SymlinkRefused | DurableFiles.NotPlainFile,
  rules: Path.Path
): ArtifactReadRefused => {
  // The model sees the message: name places relative to the volume, never the host's folders.
  const shown = (absolute: string) => DurableFiles.relativeWithin(root, absolute, rules) ?? "a place outside the volume"
  switch (error._tag) {
    case "SymlinkRefused":
      return new ArtifactReadRefused({
        path,
        problem: "SymlinkRefused",
        detail: `${shown(error.link)} is a symbolic link, and links are never followed`,
        volume
      })
    case "NotPlainFile":
      return new ArtifactReadRefused({ path, problem: "NotPlainFile", detail: `it is ${error.found}`, volume })
    case "OutsideWithin":
      return new ArtifactReadRefused({
        path,
        problem: "OutsideRoot",
        detail: "the file opened does not live below the volume's artifact folder",
        volume
      })
  }
}

export const open = Effect.fnUntraced(function* (
  context: TaskContext,
  path: string,
  segments: ReadonlyArray<string>,
  range: { readonly offset: number; readonly maxBytes: number }
) {
  const durable = yield* DurableFiles.DurableFiles
  const rules = yield* Path.Path
  const { passedOver, volumes } = yield* readableVolumes(context).pipe(Effect.mapError(storeFailed(path)))
  for (const volume of volumes) {
    const root = yield* durable.realPath(volume.folder).pipe(
      Effect.mapError(
        (error) =>
          new ArtifactReadRefused({
            path,
            problem: "ReadFailed",
            detail: `the volume's folder is unavailable (${error.code})`,
            volume: volume.ref
          })
      )
    )
    // One joined argument, not one per segment: spread arguments are bounded by the engine's stack.
    const file = rules.join(volume.folder, VolumeStore.artifactFolder, segments.join("/"))
    const read = yield* durable.readFile(file, { within: volume.folder, ...range }).pipe(
      Effect.map(Option.some),
      Effect.catchTag("DurableFileFailure", (error) =>
        error.code === "ENOENT" || error.code === "ENOTDIR"
          ? Effect.succeed(Option.none())
          : Effect.fail(
              new ArtifactReadRefused({
                path,
                problem: "ReadFailed",
                detail: `reading failed with ${error.code}`,
                volume: volume.ref
              })
            )
      ),
      Effect.mapError((error) =>
        error._tag === "ArtifactReadRefused" ? error : refusalOf(path, volume.ref, root, error, rules)
      )
    )
    if (Option.isNone(read)) continue
    // The walk followed no link, so the file is where its name says; this re-checks the real location
    // against the artifact folder itself, not only the volume, so no read trusts the walk alone.
    const artifactRoot = rules.join(root, VolumeStore.artifactFolder)
    const below = DurableFiles.relativeWithin(artifactRoot, read.value.location, rules)
    if (below === undefined || below === "") {
      return yield* new ArtifactReadRefused({
        path,
        problem: "OutsideRoot",
        detail: "the file opened does not live below the volume's artifact folder",
        volume: volume.ref
      })
    }
    const found: Found = { volume, bytes: read.value.bytes, size: read.value.size }
    return found
  }
  const searched = volumes.map((volume) => Volume.formatVolumeRef(volume.ref))
  return yield* new ArtifactReadRefused({
    path,
    problem: "NotFound",
    detail: [
      searched.length === 0
        ? "the task may read no volume"
        : `no volume the task may read holds it (searched ${searched.join(", ")})`,
      ...(passedOver.length === 0 ? [] : [`not searched: ${passedOver.join("; ")}`]),
      // The journal and the inspector name a file by its place in the volume, which starts with the artifact folder.
      ...(segments.length > 1 && segments[0] === VolumeStore.artifactFolder
        ? [`paths are relative to the artifact folder: did you mean ${segments.slice(1).join("/")}?`]
        : [])
    ].join("; ")
  })
})
