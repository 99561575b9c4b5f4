/**
 * Counting a request's tokens with the host's tokenizer, for the
 * `tokenizer` measure. `Compaction` states the contract
 * (`Compaction.Tokenizer`, `Compaction.tokenizer`).
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** See `Compaction.TokenizerShape`. */
export interface TokenizerShape {
  readonly count: (text: string) => number
}

/** See `Compaction.Tokenizer`. */
export class Tokenizer extends Context.Service<Tokenizer, TokenizerShape>()("@tessera/runtime/Tokenizer") {}

/** See `Compaction.tokenizer`. */
export const layer = (count: (text: string) => number): Layer.Layer<Tokenizer> =>
  Layer.succeed(Tokenizer)(Tokenizer.of({ count }))

/**
 * The tokenizer a `tokenizer` measure counts with; without one in scope the
 * compaction fails `InvalidInput` naming the measure, before any request.
 */
export const required = (entry: string): Effect.Effect<TokenizerShape, InvalidInput.InvalidInput> =>
  Effect.flatMap(Effect.serviceOption(Tokenizer), (found) =>
    Option.isSome(found)
      ? Effect.succeed(found.value)
      : Effect.fail(
          new InvalidInput.InvalidInput({
            entry,
            field: "policy.measure",
            value: '"tokenizer"',
            detail: "the tokenizer measure counts with the host's Compaction.Tokenizer, and none is provided"
          })
        )
  )

/**
 * `tokenizer`'s count of `text`, checked: a count that is not a
 * non-negative whole number is the tokenizer's bug, and loud.
 */
export const countWith = (tokenizer: TokenizerShape, text: string): number => {
  const counted = tokenizer.count(text)
  if (!Number.isSafeInteger(counted) || counted < 0) {
    throw new RangeError(`Compaction.Tokenizer counted ${String(counted)} tokens; a count is a non-negative integer`)
  }
  return counted
}
