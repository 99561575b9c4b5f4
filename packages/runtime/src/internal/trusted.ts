/**
 * Registries of the objects the guards trust. Each object is frozen and
 * recorded here by identity when the library makes it; a guard asks the
 * registry, never the object's shape, so a hand-built value or a spread
 * copy of a genuine one (which a cast can give any type) is refused.
 *
 * Not exported from the package (`./internal/*` is blocked): code outside
 * the library can neither add to a registry nor reach one.
 */
import { Unauthorized } from "@tessera/core/Unauthorized"
import * as Effect from "effect/Effect"

export interface Registry<A extends object> {
  /** Freezes `value`, records it and returns it. */
  readonly mint: <B extends A>(value: B) => B
  readonly has: (value: unknown) => value is A
  /** Succeeds with `value` when it was minted here; else `Unauthorized` `NotMinted` naming `what`. */
  readonly require: (value: unknown, context: { readonly entry: string }) => Effect.Effect<A, Unauthorized>
}

export const makeRegistry = <A extends object>(what: string): Registry<A> => {
  const minted = new WeakSet<object>()
  // A WeakSet answers `false` for a primitive, so no shape test comes first.
  const has = (value: unknown): value is A => minted.has(value as object)
  return {
    mint: (value) => {
      const frozen = Object.freeze(value)
      minted.add(frozen)
      return frozen
    },
    has,
    require: (value, { entry }) =>
      has(value)
        ? Effect.succeed(value)
        : Effect.fail(
            new Unauthorized({
              reason: "NotMinted",
              detail: `${entry}: the ${what} was not made by the library (built by hand or copied); only values the library minted are trusted`
            })
          )
  }
}
