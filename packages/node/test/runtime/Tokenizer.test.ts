/**
 * The `tokenizer` measure: compaction measures the request with the host's
 * tokenizer (`Compaction.Tokenizer`), and refuses to guess without one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Compaction, History, Model, PrivateSummaries } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { privateWriter, summaryKey, threeRounds, withJournal } from "./support/compacting.ts"
import { runInWorld, type World } from "./support/world.ts"

/** A tokenizer that counts one token per UTF-16 unit: four times the bytes/4 estimate on ASCII. */
const perCharacter = Compaction.tokenizer((text) => text.length)

/** Between the estimate of threeRounds (about 3,000) and its per-character count (about 12,000). */
const policyOf = (measure: Compaction.SizeMeasure) =>
  Compaction.threshold({ measure, limit: 6_000, keepRecent: 0, pieceLimit: 100_000 })

const compactUnder = (
  world: World,
  measure: Compaction.SizeMeasure,
  tokenizer: Layer.Layer<never> | typeof perCharacter
) =>
  Effect.gen(function* () {
    const requests: Array<Model.ModelRequest> = []
    const { capability, folder } = yield* privateWriter(world)
    const model = ScriptedModel.layer((request) => {
      requests.push(request)
      return Model.response({ text: "the summary" })
    })
    const exit = yield* withJournal(folder, (journal) =>
      Effect.exit(
        Compaction.compact({
          history: threeRounds,
          policy: policyOf(measure),
          operation: summaryKey.operation,
          step: summaryKey.step,
          journal: Option.some(journal),
          turn: 1
        }).pipe(PrivateSummaries.provide(capability), Effect.provide(Layer.merge(model, tokenizer)))
      )
    )
    return { exit, requests }
  })

describe("the tokenizer measure", () => {
  it("tokenizer_measures_the_request: a history the estimate keeps under the limit is over it by the host's count, and compacts", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const counted = yield* compactUnder(world, "tokenizer", perCharacter)
        assert.isTrue(Exit.isSuccess(counted.exit))
        assert.lengthOf(counted.requests, 1)
        if (Exit.isSuccess(counted.exit)) assert.isTrue(Option.isSome(History.summaryText(counted.exit.value)))
      })
    ))

  it("tokenizer_measures_the_request negative control: the same history and limit under the estimate do not compact", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const estimated = yield* compactUnder(world, "estimatedTokens", perCharacter)
        assert.isTrue(Exit.isSuccess(estimated.exit))
        assert.lengthOf(estimated.requests, 0)
        if (Exit.isSuccess(estimated.exit)) assert.strictEqual(estimated.exit.value, threeRounds)
      })
    ))

  it("tokenizer_required: the tokenizer measure without a tokenizer is InvalidInput naming the measure, before any request", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const refused = yield* compactUnder(world, "tokenizer", Layer.empty)
        assert.lengthOf(refused.requests, 0)
        const error = Exit.isFailure(refused.exit) ? Cause.findErrorOption(refused.exit.cause) : Option.none()
        assert.isTrue(Option.isSome(error))
        if (Option.isSome(error) && error.value._tag === "InvalidInput") {
          assert.strictEqual(error.value.field, "policy.measure")
        } else assert.fail(`expected InvalidInput, got ${String(refused.exit)}`)
      })
    ))

  it("tokenizer_counts_are_checked: a count that is no whole number is a defect naming it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const broken = yield* compactUnder(
          world,
          "tokenizer",
          Compaction.tokenizer(() => Number.NaN)
        )
        assert.isTrue(Exit.isFailure(broken.exit) && Cause.hasDies(broken.exit.cause))
        assert.include(String(Exit.isFailure(broken.exit) ? Cause.squash(broken.exit.cause) : ""), "counted NaN tokens")
        assert.lengthOf(broken.requests, 0)
      })
    ))
})
