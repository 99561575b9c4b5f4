/**
 * The read tool that offload pointers name: a ready {@link Tool.Tool} that
 * reads an offloaded artifact back by the path its pointer carries, whole,
 * by byte range, by line range, or as the lines containing a text, and never
 * returns more than a fixed number of bytes, all of its output counted: the
 * header, the echoes of the request's path and pattern, the content, the
 * notes, and a refusal's text (the output says when, and where, it was cut).
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
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as DurableFiles from "@tessera/core/DurableFiles"
import * as Grant from "@tessera/core/Grant"
import * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Executor from "./Executor.ts"
import { clipWithin, quotedWithin } from "./internal/boundedText.ts"
import { dataFolder } from "./internal/storeFolders.ts"
import * as Observability from "./Observability.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"
import type { TaskContext } from "./TaskContext.ts"
import * as Tool from "./Tool.ts"
import { artifactFolder } from "./ToolResultOffload.ts"

/**
 * The tool's name when none is given; the same as the offload examples'
 * `readTool`, so a pointer's `read_with` names a tool the model has.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultName = "read_artifact"

/**
 * The most UTF-8 bytes one call returns, by default: the whole text the
 * model reads, header and notes included.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultMaxOutputBytes = 16 * 1024

/**
 * The least output cap: a smaller `maxOutputBytes` is raised to it. The
 * header and the notes of a read take a little over 700 bytes at most (the echoes
 * of the path and the pattern are cut to {@link echoBytes} each, every
 * number has at most 16 digits), so this leaves every read room for content
 * and so progress.
 *
 * @since 0.1.0
 * @category defaults
 */
export const minOutputBytes = 1024

/**
 * The longest pattern a read takes, in UTF-8 bytes; a longer one is refused
 * (`InvalidRequest`). A line containing it would be longer still, and
 * scanning for it costs its length at every line.
 *
 * @since 0.1.0
 * @category defaults
 */
export const maxPatternBytes = 1024

/**
 * How much of the request's path or pattern the output echoes, in UTF-8
 * bytes of the JSON literal; a longer one is echoed by its start and its
 * full size.
 *
 * @since 0.1.0
 * @category defaults
 */
export const echoBytes = 128

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
export const defaultMaxScanBytes = 16 * 1024 * 1024

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
 *   longer than {@link maxPatternBytes}.
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
 * to {@link echoBytes} and the detail cut to 512 bytes, so it stays within
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
    return `cannot read artifact ${quotedWithin(this.path, echoBytes)} (${this.problem}): ${clipWithin(this.detail, detailBytes)}`
  }
}

const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/**
 * The tool's input: the pointer's path and at most one selection.
 *
 * - `bytes`: `start` (inclusive) to `end` (exclusive), 0-based.
 * - `lines`: `first` to `last`, inclusive, 1-based.
 * - `pattern`: the lines containing this text, as written (not a regular
 *   expression: a model-written expression could backtrack for minutes over
 *   a large artifact).
 *
 * None of them reads the whole artifact.
 *
 * @since 0.1.0
 * @category models
 */
export const ReadRequest = Schema.Struct({
  path: Schema.String.annotate({ description: "the path from the artifact pointer, exactly as written there" }),
  bytes: Schema.optionalKey(
    Schema.Struct({ start: NonNegativeInt, end: NonNegativeInt }).annotate({
      description: "read bytes start (inclusive) to end (exclusive), 0-based"
    })
  ),
  lines: Schema.optionalKey(
    Schema.Struct({ first: PositiveInt, last: PositiveInt }).annotate({
      description: "read lines first to last, inclusive, 1-based"
    })
  ),
  pattern: Schema.optionalKey(
    Schema.String.annotate({ description: "return only the lines containing this text (plain text, not a regex)" })
  )
})
/**
 * @since 0.1.0
 * @category models
 */
export type ReadRequest = typeof ReadRequest.Type

/**
 * How a tool is built.
 *
 * - `name`: the tool's name; defaults to {@link defaultName}. Give the
 *   offload configuration's `readTool` here, so pointers name this tool.
 * - `maxOutputBytes`: the cap on the whole output of a read (header,
 *   content and notes); defaults to {@link defaultMaxOutputBytes}, and is
 *   at least {@link minOutputBytes}.
 * - `maxScanBytes`: how far line and pattern reads scan; defaults to
 *   {@link defaultMaxScanBytes}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly name?: string
  readonly maxOutputBytes?: number
  readonly maxScanBytes?: number
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
  yield* PrivateSummaries.requireContext(context, "ArtifactReadTool")
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
}, Observability.withSpan("ArtifactReadTool.readableVolumes"))

/** The path's segments when it is canonical, relative and free of `..`; the refusal otherwise. */
const checkPath = (path: string): Result.Result<ReadonlyArray<string>, ArtifactReadRefused> => {
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
      `not in the canonical form pointers use; did you mean ${quotedWithin(resolved.success.relative, echoBytes)}?`
    )
  }
  return Result.succeed(resolved.success.segments)
}

type Selection =
  | { readonly _tag: "Bytes"; readonly start: number; readonly end: number }
  | { readonly _tag: "Lines"; readonly first: number; readonly last: number }
  | { readonly _tag: "Pattern"; readonly text: string }

const checkSelection = (request: ReadRequest): Result.Result<Selection, ArtifactReadRefused> => {
  const refuse = (detail: string) =>
    Result.fail(new ArtifactReadRefused({ path: request.path, problem: "InvalidRequest", detail }))
  const given = [request.bytes, request.lines, request.pattern].filter((field) => field !== undefined).length
  if (given > 1) return refuse("give at most one of bytes, lines and pattern")
  if (request.bytes !== undefined) {
    if (request.bytes.end < request.bytes.start) return refuse("bytes.end is before bytes.start")
    return Result.succeed({ _tag: "Bytes", start: request.bytes.start, end: request.bytes.end })
  }
  if (request.lines !== undefined) {
    if (request.lines.last < request.lines.first) return refuse("lines.last is before lines.first")
    return Result.succeed({ _tag: "Lines", first: request.lines.first, last: request.lines.last })
  }
  if (request.pattern !== undefined) {
    if (request.pattern === "") return refuse("pattern is empty")
    const patternBytes = utf8Length(request.pattern)
    if (patternBytes > maxPatternBytes) {
      return refuse(
        `pattern is ${patternBytes} bytes, over the ${maxPatternBytes}-byte limit; search for a shorter part`
      )
    }
    return Result.succeed({ _tag: "Pattern", text: request.pattern })
  }
  return Result.succeed({ _tag: "Bytes", start: 0, end: Number.MAX_SAFE_INTEGER })
}

/**
 * The length of the longest prefix of `bytes` whose decoded text takes at
 * most `most` UTF-8 bytes and that ends between two characters. Measured as the decoder decodes (WHATWG): a valid sequence
 * keeps its bytes, and each maximal invalid subpart becomes U+FFFD, three
 * bytes however short it was, so an artifact that is not UTF-8 cannot make
 * the output larger than `most`. A sequence cut short by the end of `bytes`
 * counts as U+FFFD too, as the decoder shows it; given one byte past `most`,
 * such a tail never fits (every byte before it decodes to at least one), so
 * a cut never falls inside a character the artifact goes on with.
 */
const decodablePrefix = (bytes: Uint8Array, most: number): number => {
  let at = 0
  let decoded = 0
  while (at < bytes.byteLength) {
    const lead = bytes[at] ?? 0
    // The continuation bytes a lead byte needs, and the range its first continuation byte must fall in.
    const needed = lead < 0x80 ? 0 : lead < 0xc2 ? -1 : lead < 0xe0 ? 1 : lead < 0xf0 ? 2 : lead < 0xf5 ? 3 : -1
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf
    let end = at + 1
    let seen = 0
    while (seen < needed) {
      const next = bytes[end]
      if (next === undefined || (seen === 0 ? next < low || next > high : (next & 0xc0) !== 0x80)) break
      seen++
      end++
    }
    const size = seen === needed ? end - at : 3
    if (decoded + size > most) break
    decoded += size
    at = end
  }
  return at
}

const decoder = new TextDecoder("utf-8", { fatal: false })
const utf8Length = ArtifactPointer.utf8Length

/** An opened artifact: which volume, the bytes read, and the whole size. */
interface Found {
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

const open = Effect.fnUntraced(function* (
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
    const file = rules.join(volume.folder, artifactFolder, segments.join("/"))
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
    const artifactRoot = rules.join(root, artifactFolder)
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
      ...(passedOver.length === 0 ? [] : [`not searched: ${passedOver.join("; ")}`])
    ].join("; ")
  })
})

/**
 * What a read returned: the text for the model, and the facts behind it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadResult {
  /**
   * One header line, then the selected content, then a line saying where it
   * was cut, if it was; at most the output cap in UTF-8 bytes, all of it.
   */
  readonly text: string
  /** The volume the artifact was read from. */
  readonly volume: Volume.VolumeRef
  /** The artifact's size in bytes. */
  readonly size: number
  /** Whether the output cap (or the scan limit) cut the selection short. */
  readonly truncated: boolean
}

const header = (pathEcho: string, size: number, selection: string): string =>
  `[artifact-read] path=${pathEcho} size=${size} ${selection}`

// Every number the output shows (sizes, offsets, line numbers, counts) is at most this: rendered with it, the
// header and the notes take the most room they ever can, and the content gets the rest of the cap.
const widest = Number.MAX_SAFE_INTEGER

/** The cap less the room the header and the notes may take: what is left for content. */
const contentRoom = (cap: number, header: string, notes: ReadonlyArray<string>): number =>
  // A line break after the header, and one before each note.
  cap - utf8Length(header) - 1 - notes.reduce((total, note) => total + 1 + utf8Length(note), 0)

const byteRange = (whole: boolean, first: number, shown: number): string =>
  `${whole ? "whole " : ""}${shown === 0 ? "bytes=none" : `bytes=${first}-${first + shown - 1}`}`

const bytesCutNote = (cap: number, next: number, end: number): string =>
  `[cut] the output cap of ${cap} bytes was reached; the rest continues at byte ${next} (ask for bytes {"start":${next},"end":${end}})`

const readBytes = Effect.fnUntraced(function* (
  context: TaskContext,
  path: string,
  segments: ReadonlyArray<string>,
  selection: { readonly start: number; readonly end: number },
  whole: boolean,
  cap: number
) {
  const pathEcho = quotedWithin(path, echoBytes)
  const room = contentRoom(cap, header(pathEcho, widest, byteRange(whole, widest, 1)), [
    bytesCutNote(cap, widest, widest)
  ])
  // One byte past the room tells whether the cut falls inside a character, so the cut can step back to its start.
  const wanted = Math.max(0, selection.end - selection.start)
  const found = yield* open(context, path, segments, {
    offset: selection.start,
    maxBytes: Math.min(wanted, room + 1)
  })
  const end = Math.min(selection.end, found.size)
  const available = Math.max(0, end - selection.start)
  const window = found.bytes.subarray(0, Math.min(found.bytes.byteLength, available))
  const shown = decodablePrefix(window, room)
  const content = decoder.decode(found.bytes.subarray(0, shown))
  const truncated = shown < available
  const first = Math.min(selection.start, found.size)
  const lines = [header(pathEcho, found.size, byteRange(whole, first, shown)), content]
  if (truncated) lines.push(bytesCutNote(cap, first + shown, end))
  const result: ReadResult = { text: lines.join("\n"), volume: found.volume.ref, size: found.size, truncated }
  return result
})

/** Appends `line` while the content stays within `room` bytes; says whether it fit. */
const appendWithin = (out: { parts: Array<string>; bytes: number }, line: string, room: number): boolean => {
  const size = utf8Length(line) + (out.parts.length === 0 ? 0 : 1)
  if (out.bytes + size > room) return false
  out.parts.push(line)
  out.bytes += size
  return true
}

const linesSelection = (first: number, shownLast: number, total: string): string =>
  shownLast < first ? `lines=none of ${total}` : `lines=${first}-${shownLast} of ${total}`

const lineAloneNote = (line: number, cap: number): string =>
  `[cut] line ${line} alone does not fit in the output cap of ${cap} bytes; read it by bytes instead`

const linesCutNote = (cap: number, shownLast: number, last: number): string =>
  `[cut] the output cap of ${cap} bytes was reached after line ${shownLast}; continue with lines {"first":${shownLast + 1},"last":${last}}`

const patternSelection = (patternEcho: string, matches: number, shown: number, total: string): string =>
  `pattern=${patternEcho} matching_lines=${matches} shown=${shown} of ${total} lines`

const patternCutNote = (cap: number, shown: number, matches: number, lastShown: number): string =>
  `[cut] the output cap of ${cap} bytes was reached after ${shown} of ${matches} matching lines (the last shown is line ${lastShown}); narrow the pattern or read lines from ${lastShown + 1}`

const scanNote = (scanned: number, size: number): string =>
  `[cut] only the first ${scanned} of ${size} bytes were scanned; read the rest by bytes`

const readLines = Effect.fnUntraced(function* (
  context: TaskContext,
  path: string,
  segments: ReadonlyArray<string>,
  selection: Exclude<Selection, { readonly _tag: "Bytes" }>,
  cap: number,
  scan: number
) {
  const pathEcho = quotedWithin(path, echoBytes)
  const widestTotal = `at least ${widest}`
  // The room is what the largest header and notes this selection can have leave of the cap. Of a lines read's
  // two cut notes the continuation is the longer for any cap: it names the widest line number twice.
  const room =
    selection._tag === "Lines"
      ? contentRoom(cap, header(pathEcho, widest, linesSelection(widest, widest, widestTotal)), [
          linesCutNote(cap, widest, widest),
          scanNote(widest, widest)
        ])
      : contentRoom(
          cap,
          header(
            pathEcho,
            widest,
            patternSelection(quotedWithin(selection.text, echoBytes), widest, widest, widestTotal)
          ),
          [patternCutNote(cap, widest, widest, widest), scanNote(widest, widest)]
        )
  const found = yield* open(context, path, segments, { offset: 0, maxBytes: scan })
  const scannedAll = found.bytes.byteLength >= found.size
  const all = decoder.decode(found.bytes).split("\n")
  // A final line break ends the last line; it does not start an empty one. A scan that stopped early
  // ends inside a line (perhaps inside a character): that line is left to the next read.
  if (!scannedAll || all[all.length - 1] === "") all.pop()
  const total = scannedAll ? `${all.length}` : `at least ${all.length}`
  const out = { parts: [] as Array<string>, bytes: 0 }
  const notes: Array<string> = []
  let truncated = !scannedAll
  let selectionText: string
  if (selection._tag === "Lines") {
    const last = Math.min(selection.last, all.length)
    let shownLast = selection.first - 1
    for (let number = selection.first; number <= last; number++) {
      if (!appendWithin(out, all[number - 1] ?? "", room)) break
      shownLast = number
    }
    if (shownLast < last) {
      truncated = true
      notes.push(shownLast < selection.first ? lineAloneNote(selection.first, cap) : linesCutNote(cap, shownLast, last))
    }
    selectionText = linesSelection(selection.first, shownLast, total)
  } else {
    let matches = 0
    let shown = 0
    let lastShown = 0
    all.forEach((line, index) => {
      if (!line.includes(selection.text)) return
      matches++
      if (shown === matches - 1 && appendWithin(out, `${index + 1}: ${line}`, room)) {
        shown++
        lastShown = index + 1
      }
    })
    if (shown < matches) {
      truncated = true
      notes.push(patternCutNote(cap, shown, matches, lastShown))
    }
    selectionText = patternSelection(quotedWithin(selection.text, echoBytes), matches, shown, total)
  }
  if (!scannedAll) notes.push(scanNote(found.bytes.byteLength, found.size))
  const result: ReadResult = {
    text: [header(pathEcho, found.size, selectionText), out.parts.join("\n"), ...notes].join("\n"),
    volume: found.volume.ref,
    size: found.size,
    truncated
  }
  return result
})

const limit = (value: number | undefined, fallback: number, least: number): number => {
  const whole = Math.floor(value ?? fallback)
  return Number.isFinite(whole) ? Math.max(least, whole) : fallback
}

// The header and the notes fit in the least cap with room for content, so every read makes progress.
const capOf = (options: Options): number => limit(options.maxOutputBytes, defaultMaxOutputBytes, minOutputBytes)

/**
 * Reads an artifact for `context`: checks the path and the selection, finds
 * the artifact in the first volume the task may read that holds it (see the
 * module comment), and renders as much of the selection as fits, with its
 * header and notes, in `maxOutputBytes` (at least {@link minOutputBytes}):
 * the returned text never takes more, whatever the path, the pattern or the
 * artifact's bytes. Fails only with {@link ArtifactReadRefused}, whose
 * message is bounded too.
 *
 * @since 0.1.0
 * @category reading
 */
export const read = Effect.fnUntraced(function* (
  context: TaskContext,
  request: ReadRequest,
  options: Options = {}
): Effect.fn.Return<ReadResult, ArtifactReadRefused, DurableFiles.DurableFiles | Path.Path> {
  const cap = capOf(options)
  const scan = limit(options.maxScanBytes, defaultMaxScanBytes, 1)
  const segments = yield* Effect.fromResult(checkPath(request.path))
  const selection = yield* Effect.fromResult(checkSelection(request))
  if (selection._tag === "Bytes") {
    const whole = request.bytes === undefined
    return yield* readBytes(context, request.path, segments, selection, whole, cap)
  }
  return yield* readLines(context, request.path, segments, selection, cap, scan)
}, Observability.withSpan("ArtifactReadTool.read"))

/**
 * The ready tool for `context`. Its description tells the model what a
 * pointer is and how to select; a refusal becomes a tool-error result whose
 * text is the {@link ArtifactReadRefused} message. Either result is at most
 * the output cap: a read's text by {@link read}, and a refusal's message
 * (at most 700 bytes) with the tool's prefix, for a name of up to 256
 * bytes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (context: TaskContext, options: Options = {}): Tool.Tool<DurableFiles.DurableFiles | Path.Path> =>
  Tool.make({
    name: options.name ?? defaultName,
    description:
      "Reads back a tool result that was stored as an artifact: pass the path of its [artifact] pointer line. " +
      `Without a selection it returns the artifact from its start; select with bytes {start,end}, lines {first,last} or pattern (plain text). At most ${capOf(options)} bytes come back per call, and the output says where it was cut.`,
    input: ReadRequest,
    handler: (request) => Effect.map(read(context, request, options), (result) => result.text)
  })

/**
 * Adds `tool` to `tools` unless a tool of the same name is registered: the
 * host's own tool of that name is kept, exactly as it was, and offered in
 * the same place.
 *
 * @since 0.1.0
 * @category registry
 */
export const registerUnlessNamed = <R, R2>(tools: Tool.Registry<R>, tool: Tool.Tool<R2>): Tool.Registry<R | R2> => {
  if (tools.tools.has(tool.name)) return tools
  const byName = new Map<string, Tool.Tool<R | R2>>(tools.tools)
  byName.set(tool.name, tool)
  return { tools: byName, specs: [...tools.specs, tool.spec] }
}

/**
 * `hooks` with their `onToolResult` skipped for the calls this module's tool
 * answered: calls of the tool `name` (for a registry where that name is the
 * library's read tool), or the calls `spared` picks (a foreign loop, which
 * knows which calls it ran through the library's tool). What a read returns
 * is already bounded by its output cap, so offloading it again would hand
 * the model a pointer to a copy of what it asked to see. Only for this
 * module's tool, whose output is bounded; a host's own tool of the same name
 * gets no such exemption.
 *
 * @since 0.1.0
 * @category hooks
 */
export const sparing = <E, R>(
  hooks: Executor.Hooks<E, R>,
  spared: string | ((context: Executor.ToolContext) => boolean)
): Executor.Hooks<E, R> => {
  const onToolResult = hooks.onToolResult
  if (onToolResult === undefined) return hooks
  const isSpared = typeof spared === "string" ? (context: Executor.ToolContext) => context.call.name === spared : spared
  return {
    ...hooks,
    onToolResult: (context, result) => (isSpared(context) ? Effect.succeed(result) : onToolResult(context, result))
  }
}
