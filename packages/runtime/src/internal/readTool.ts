/**
 * The read tool that offload pointers name: a ready `Tool.Tool` that
 * reads an offloaded artifact back by the path its pointer carries, whole,
 * by byte range, by line range, or as the lines containing a text, and never
 * returns more than a fixed number of bytes, all of its output counted: the
 * header, the echoes of the request's path and pattern, the content, the
 * notes, and a refusal's text (the output says when, and where, it was cut).
 * Where it may look and how it opens a file: `artifactAccess.ts`.
 *
 * @since 0.1.0
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import type * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Executor from "../Executor.ts"
import * as Observability from "../Observability.ts"
import * as Tool from "../Tool.ts"
import { ArtifactReadRefused, checkPath, open, readEchoBytes } from "./artifactAccess.ts"
import { quotedWithin } from "./boundedText.ts"
import type { TaskContext } from "./storeRuntime.ts"

// Declared with the checks that refuse and the volumes a read looks in; offered here with the tool.
export {
  ArtifactReadProblem,
  ArtifactReadRefused,
  type ReadableVolume,
  readableVolumes,
  readEchoBytes
} from "./artifactAccess.ts"

/**
 * The tool's name when none is given; the same as the offload examples'
 * `readTool`, so a pointer's `read_with` names a tool the model has.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultReadToolName = "read_artifact"

/**
 * The most UTF-8 bytes one call returns, by default: the whole text the
 * model reads, header and notes included.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultReadOutputBytes = 16 * 1024

/**
 * The least output cap: a smaller `maxOutputBytes` is raised to it. The
 * header and the notes of a read take a little over 700 bytes at most (the echoes
 * of the path and the pattern are cut to {@link readEchoBytes} each, every
 * number has at most 16 digits), so this leaves every read room for content
 * and so progress.
 *
 * @since 0.1.0
 * @category defaults
 */
export const minReadOutputBytes = 1024

/**
 * The longest pattern a read takes, in UTF-8 bytes; a longer one is refused
 * (`InvalidRequest`). A line containing it would be longer still, and
 * scanning for it costs its length at every line.
 *
 * @since 0.1.0
 * @category defaults
 */
export const maxReadPatternBytes = 1024

/**
 * The most bytes a line or pattern read scans from the start of the
 * artifact, by default; beyond, the output says the scan stopped and byte
 * ranges reach the rest.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultReadScanBytes = 16 * 1024 * 1024

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
 * - `name`: the tool's name; defaults to {@link defaultReadToolName}. Give the
 *   offload configuration's `readTool` here, so pointers name this tool.
 * - `maxOutputBytes`: the cap on the whole output of a read (header,
 *   content and notes); defaults to {@link defaultReadOutputBytes}, and is
 *   at least {@link minReadOutputBytes}.
 * - `maxScanBytes`: how far line and pattern reads scan; defaults to
 *   {@link defaultReadScanBytes}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadOptions {
  readonly name?: string
  readonly maxOutputBytes?: number
  readonly maxScanBytes?: number
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
    if (patternBytes > maxReadPatternBytes) {
      return refuse(
        `pattern is ${patternBytes} bytes, over the ${maxReadPatternBytes}-byte limit; search for a shorter part`
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
  const pathEcho = quotedWithin(path, readEchoBytes)
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
  const pathEcho = quotedWithin(path, readEchoBytes)
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
            patternSelection(quotedWithin(selection.text, readEchoBytes), widest, widest, widestTotal)
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
    selectionText = patternSelection(quotedWithin(selection.text, readEchoBytes), matches, shown, total)
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
const capOf = (options: ReadOptions): number =>
  limit(options.maxOutputBytes, defaultReadOutputBytes, minReadOutputBytes)

/**
 * Reads an artifact for `context`: checks the path and the selection, finds
 * the artifact in the first volume the task may read that holds it (see the
 * module comment), and renders as much of the selection as fits, with its
 * header and notes, in `maxOutputBytes` (at least {@link minReadOutputBytes}):
 * the returned text never takes more, whatever the path, the pattern or the
 * artifact's bytes. Fails only with {@link ArtifactReadRefused}, whose
 * message is bounded too.
 *
 * @since 0.1.0
 * @category reading
 */
export const readArtifact = Effect.fnUntraced(function* (
  context: TaskContext,
  request: ReadRequest,
  options: ReadOptions = {}
): Effect.fn.Return<ReadResult, ArtifactReadRefused, DurableFiles.DurableFiles | Path.Path> {
  const cap = capOf(options)
  const scan = limit(options.maxScanBytes, defaultReadScanBytes, 1)
  const segments = yield* Effect.fromResult(checkPath(request.path))
  const selection = yield* Effect.fromResult(checkSelection(request))
  if (selection._tag === "Bytes") {
    const whole = request.bytes === undefined
    return yield* readBytes(context, request.path, segments, selection, whole, cap)
  }
  return yield* readLines(context, request.path, segments, selection, cap, scan)
}, Observability.withSpan("ToolResults.readArtifact"))

/**
 * The ready tool for `context`. Its description tells the model what a
 * pointer is and how to select; a refusal becomes a tool-error result whose
 * text is the {@link ArtifactReadRefused} message. Either result is at most
 * the output cap: a read's text by {@link readArtifact}, and a refusal's message
 * (at most 700 bytes) with the tool's prefix, for a name of up to 256
 * bytes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const readTool = (
  context: TaskContext,
  options: ReadOptions = {}
): Tool.Tool<DurableFiles.DurableFiles | Path.Path> =>
  Tool.make({
    name: options.name ?? defaultReadToolName,
    description:
      "Reads back a tool result that was stored as an artifact: pass the path of its [artifact] pointer line. " +
      `Without a selection it returns the artifact from its start; select with bytes {start,end}, lines {first,last} or pattern (plain text). At most ${capOf(options)} bytes come back per call, and the output says where it was cut.`,
    input: ReadRequest,
    handler: (request) => Effect.map(readArtifact(context, request, options), (result) => result.text)
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
