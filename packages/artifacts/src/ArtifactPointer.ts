/**
 * The one-line pointer a model sees in place of an offloaded result, and the
 * parser that finds pointers in text again.
 *
 * Format (one line, fields in this order, string fields as JSON strings so a
 * quote, backslash or line break inside a value cannot end the field or the
 * line):
 *
 * ```text
 * [artifact] path="tool-results/c1.txt" bytes=123456 read_with="read_file" abstract="first words of the body…"
 * ```
 *
 * The read tool is whatever the host names: a hard-coded tool name would put a
 * tool the host may not have into its prompts.
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { resolveRelative } from "./ArtifactPath.ts"
import { abstractOfWindow } from "./internal/abstract.ts"
import * as internalUtf8 from "./internal/utf8.ts"

/**
 * The fields of a pointer.
 *
 * @since 0.1.0
 * @category models
 */
export interface ArtifactPointer {
  /** Relative to the artifact root, `/`-separated. */
  readonly path: string
  /** Size of the stored (redacted) body in bytes. */
  readonly bytes: number
  /** The host's tool for reading the artifact. */
  readonly readWith: string
  /** A prefix of the stored body, see {@link buildAbstract}. */
  readonly abstract: string
}

/**
 * The marker that starts every pointer line.
 *
 * @since 0.1.0
 * @category format
 */
export const marker = "[artifact]"

/**
 * The default abstract budget in UTF-8 bytes.
 *
 * @since 0.1.0
 * @category format
 */
export const defaultAbstractBytes = 240

/**
 * UTF-8 length of a string, without encoding it (a lone surrogate counts as
 * the three bytes of the replacement character it is encoded as).
 *
 * @since 0.1.0
 * @category format
 */
export const utf8Length: (text: string) => number = internalUtf8.utf8Length

/**
 * Whether `text` takes more than `limit` UTF-8 bytes. The length alone
 * decides most texts (every UTF-16 unit is one to three bytes); only a text
 * whose length leaves it open is counted ({@link utf8Length}).
 *
 * @example
 * ```ts
 * import { ArtifactPointer } from "@tessera/artifacts"
 *
 * ArtifactPointer.exceedsUtf8("héllo", 5) // true: "é" takes two bytes
 * ```
 *
 * @since 0.1.0
 * @category format
 */
export const exceedsUtf8: (text: string, limit: number) => boolean = internalUtf8.exceedsUtf8

/**
 * The first words of `body` as one line of at most `maxBytes` UTF-8 bytes.
 *
 * Runs of whitespace (line breaks included) become one space. The text is cut
 * between grapheme clusters (`Intl.Segmenter`), so no character, combining
 * sequence, emoji sequence or flag is ever split; a cut is marked with `…`,
 * which counts against the budget. Only as much of the body is segmented as
 * the budget needs. Callers pass the redacted body: the abstract shows
 * whatever it is given.
 *
 * @since 0.1.0
 * @category format
 */
export const buildAbstract = (body: string, maxBytes: number = defaultAbstractBytes): string => {
  // Segmenting costs time in the length of what is segmented, and bodies can
  // be megabytes; a window a few times the budget almost always suffices and
  // grows when whitespace runs eat it.
  let window = Math.min(body.length, maxBytes * 4 + 64)
  for (;;) {
    const abstract = abstractOfWindow(body.slice(0, window), maxBytes, window >= body.length)
    if (abstract !== undefined) return abstract
    window = Math.min(body.length, window * 4)
  }
}

/** JSON string syntax, plus the two Unicode line separators some readers break lines on. */
const quote = (value: string): string =>
  JSON.stringify(value)
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029")

/**
 * Renders a pointer as one line.
 *
 * @since 0.1.0
 * @category format
 */
export const render = (pointer: ArtifactPointer): string =>
  `${marker} path=${quote(pointer.path)} bytes=${pointer.bytes} read_with=${quote(pointer.readWith)} abstract=${quote(pointer.abstract)}`

const quoted = String.raw`"(?:[^"\\\n\r]|\\.)*"`
const pointerLine = new RegExp(
  String.raw`^\s*\[artifact\] path=(${quoted}) bytes=(0|[1-9][0-9]*) read_with=(${quoted}) abstract=(${quoted})\s*$`
)

const decodeQuoted = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.String))

/**
 * Parses one line. Returns `None` for anything that is not a well-formed
 * pointer: a missing or reordered field, an unterminated or invalid string,
 * an empty path, or a path that is absolute or climbs out of the root.
 *
 * The check is of the text only: a well-formed path can still lead through
 * a symlink planted in the artifact folder. Reading an artifact back is the
 * runtime's read tool (`ToolResults.readTool`), which checks the disk and follows no link.
 *
 * @since 0.1.0
 * @category parsing
 */
export const parse = (line: string): Option.Option<ArtifactPointer> => {
  const match = pointerLine.exec(line)
  if (match === null) return Option.none()
  const [, rawPath = "", rawBytes = "", rawReadWith = "", rawAbstract = ""] = match
  const bytes = Number(rawBytes)
  if (!Number.isSafeInteger(bytes)) return Option.none()
  return Option.gen(function* () {
    const path = yield* decodeQuoted(rawPath)
    const readWith = yield* decodeQuoted(rawReadWith)
    const abstract = yield* decodeQuoted(rawAbstract)
    const resolved = resolveRelative(path)
    if (path === "" || Result.isFailure(resolved) || resolved.success.relative !== path) {
      return yield* Option.none()
    }
    return { path, bytes, readWith, abstract }
  })
}

/**
 * The artifact paths of every well-formed pointer line in `text`, in order.
 * Lines that are not pointers, or are malformed, are ignored.
 *
 * @since 0.1.0
 * @category parsing
 */
export const extractPaths = (text: string): ReadonlyArray<string> =>
  text.split(/\r\n|\n|\r/).flatMap((line) => Option.match(parse(line), { onNone: () => [], onSome: (p) => [p.path] }))
