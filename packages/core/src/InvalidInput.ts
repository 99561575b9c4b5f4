/**
 * The one error for input that does not decode: an id, a key or an option
 * given to a public entry that its Schema refuses. It names the field, so a
 * host can tell its caller what to fix without parsing a message, and it is
 * raised before anything is written or sent.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * A public entry refused its input. `field` names the parameter (for
 * example `task`, `key.step`, `volume.id`), `value` is a bounded rendering of
 * what was given, `detail` is the Schema's explanation.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  entry: Schema.String,
  field: Schema.String,
  value: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.entry}: invalid ${this.field} ${this.value}: ${this.detail}`
  }
}

const maxRendered = 120

/**
 * A short, printable rendering of an unchecked value for error messages:
 * never the whole of a large value, and never throwing (circular objects,
 * BigInts and symbols render too).
 *
 * @since 0.1.0
 * @category formatting
 */
export const renderValue = (value: unknown): string => {
  let text: string
  try {
    text = typeof value === "string" ? JSON.stringify(value) : typeof value === "bigint" ? `${value}n` : String(value)
    if (typeof value === "object" && value !== null) text = JSON.stringify(value) ?? String(value)
  } catch {
    text = Object.prototype.toString.call(value)
  }
  return text.length > maxRendered ? `${text.slice(0, maxRendered)}…` : text
}

/**
 * Decodes `value` with `schema` for the public `entry`, failing
 * {@link InvalidInput} naming `field` when it does not decode.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  entry: string,
  field: string
): ((value: unknown) => Effect.Effect<S["Type"], InvalidInput>) => {
  const decoded = decodeResult(schema, entry, field)
  return (value) => Effect.fromResult(decoded(value))
}

/**
 * {@link decode} as a `Result`, for synchronous entries.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeResult = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  entry: string,
  field: string
) => {
  // Made once per entry: ids and keys are decoded on every call of a public entry.
  const decodeUnknown = Schema.decodeUnknownResult(schema)
  return (value: unknown): Result.Result<S["Type"], InvalidInput> => {
    const decoded = decodeUnknown(value)
    return Result.isSuccess(decoded)
      ? Result.succeed(decoded.success)
      : Result.fail(new InvalidInput({ entry, field, value: renderValue(value), detail: decoded.failure.message }))
  }
}
