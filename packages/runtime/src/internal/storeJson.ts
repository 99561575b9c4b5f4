/**
 * Reading and publishing the small JSON files a volume store keeps (its
 * manifest and the per-volume metadata).
 *
 * @internal
 */
import * as DurableFiles from "@tessera/core/DurableFiles"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import type { PlatformError } from "effect/PlatformError"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"

/**
 * Where a decoded file went wrong: the field path (`owner.agent`, `(root)`
 * for the document itself) and what was wrong there.
 */
export interface DecodeProblem {
  readonly field: string
  readonly problem: string
}

const issueFormatter = SchemaIssue.makeFormatterStandardSchemaV1()

const formatPath = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string => {
  let out = ""
  for (const segment of path) {
    const key = typeof segment === "object" ? segment.key : segment
    if (typeof key === "number") out += `[${key}]`
    else out += out === "" ? String(key) : `.${String(key)}`
  }
  return out === "" ? "(root)" : out
}

type JsonDecoder<A> = ReturnType<typeof Schema.decodeUnknownResult<Schema.Codec<A, string>>>

// One decoder per schema, built when first used: building `fromJsonString(schema)` and its decoder on every
// read cost more than the decoding (a volume's metadata is read at every admission of a private writer).
const jsonDecoders = new WeakMap<Schema.Top, JsonDecoder<unknown>>()

const jsonDecoder = <A, I>(schema: Schema.Codec<A, I>): JsonDecoder<A> => {
  const known = jsonDecoders.get(schema)
  if (known !== undefined) return known as JsonDecoder<A>
  const made = Schema.decodeUnknownResult(Schema.fromJsonString(schema))
  jsonDecoders.set(schema, made as JsonDecoder<unknown>)
  return made
}

/**
 * Decodes a JSON document strictly: unknown keys are refused too, because a
 * hand-edited file with an extra field is as suspect as one with a wrong
 * field. Only the first problem is reported: it is the one to fix first.
 */
const strict = { onExcessProperty: "error" } as const

export const decodeJsonText = <A, I>(schema: Schema.Codec<A, I>, text: string): Result.Result<A, DecodeProblem> => {
  const decoded = jsonDecoder(schema)(text, strict)
  if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
  const [first] = issueFormatter(decoded.failure.issue).issues
  return Result.fail(
    first === undefined
      ? { field: "(root)", problem: "the document does not decode" }
      : { field: formatPath(first.path ?? []), problem: first.message }
  )
}

/**
 * Reads a file as text; `None` when it does not exist (any other failure,
 * such as a permission problem, is an error and is not mistaken for absence).
 */
export const readTextIfExists = (
  fs: FileSystem.FileSystem,
  file: string
): Effect.Effect<Option.Option<string>, PlatformError> =>
  fs.readFileString(file).pipe(
    Effect.map(Option.some),
    Effect.catchIf(
      (error) => error.reason._tag === "NotFound",
      () => Effect.succeed(Option.none<string>())
    )
  )

/**
 * Publishes `text` at `file` atomically and exclusively.
 *
 * The bytes are written and synced to a temporary file in the same folder,
 * then hard-linked to their final name. The link is atomic and, unlike a
 * rename, fails when the name already exists, so a reader never sees a torn
 * file and an existing file is never replaced (returns `false` in that case).
 * The temporary name is `DurableFiles.temporaryName`'s, so listings skip
 * leftovers of a crash and hosts remove them on open.
 */
export const publishExclusive = (
  fs: FileSystem.FileSystem,
  path: Path.Path,
  file: string,
  text: string
): Effect.Effect<boolean, PlatformError> =>
  Effect.gen(function* () {
    const temp = path.join(path.dirname(file), DurableFiles.temporaryName(path.basename(file)))
    const publish = Effect.gen(function* () {
      yield* Effect.scoped(
        Effect.gen(function* () {
          const handle = yield* fs.open(temp, { flag: "wx" })
          yield* handle.writeAll(new TextEncoder().encode(text))
          yield* handle.sync
        })
      )
      return yield* fs.link(temp, file).pipe(
        Effect.as(true),
        Effect.catchIf(
          (error) => error.reason._tag === "AlreadyExists",
          () => Effect.succeed(false)
        )
      )
    })
    return yield* publish.pipe(Effect.ensuring(fs.remove(temp).pipe(Effect.ignore)))
  })

/**
 * Formats a platform failure for an error's `detail` field.
 */
export const describePlatformError = (error: PlatformError): string => error.message
