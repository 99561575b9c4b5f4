/**
 * The compaction policies' schemas and measures, below every module that
 * reads a policy (compaction, the inline limit, the entry gate, the turn
 * entries); `Compaction` re-exports the public ones and states their
 * contract.
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as InvalidInput from "@tessera/core/InvalidInput"
import type * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

const PositiveInt = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }))
const NonNegativeInt = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }))

/**
 * How history size is measured: UTF-8 bytes, an estimated token count
 * (bytes / 4, rounded up; a provider-neutral estimate), or
 * `reportedTokens`: the input tokens the provider reported for the turn's
 * previous request, plus the estimate for what was added since, when that
 * request is a prefix of the next one; the estimate alone otherwise (no
 * report yet, a provider that reports none, a history just compacted).
 * `tokenizer`: the tokens the host's tokenizer (`Compaction.Tokenizer`,
 * required in scope: its absence fails the compaction `InvalidInput` before
 * any request) counts in the request's rendered parts. Every other size
 * (`keepRecent`, pieces, summaries) is estimated under `reportedTokens` and
 * `tokenizer` as under `estimatedTokens`.
 *
 * @since 0.1.0
 * @category models
 */
export const SizeMeasure = Schema.Literals(["bytes", "estimatedTokens", "reportedTokens", "tokenizer"])
/**
 * @since 0.1.0
 * @category models
 */
export type SizeMeasure = typeof SizeMeasure.Type

/**
 * Compact when the next request measures more than `limit`.
 *
 * - `keepRecent`: the most recent whole rounds are kept verbatim as long as
 *   together they measure at most this much; everything older is summarized.
 * - `pieceLimit`: the most history one summary request carries. Longer
 *   history is summarized in several requests, each building on the
 *   previous summary.
 * - `summaryLimit`: the longest summary kept; a longer answer is cut (with
 *   a note), never kept whole. Optional: {@link summaryLimitOf} gives the
 *   default, a quarter of `limit`.
 *
 * All the numbers are in the unit of `measure`. The newest tool results are
 * kept whatever `keepRecent` says until a request has carried them (see
 * `plan` in internal/compactionPlan.ts).
 *
 * @since 0.1.0
 * @category models
 */
export const Threshold = Schema.TaggedStruct("Threshold", {
  measure: SizeMeasure,
  limit: PositiveInt,
  keepRecent: NonNegativeInt,
  pieceLimit: PositiveInt,
  summaryLimit: Schema.optionalKey(PositiveInt)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Threshold = typeof Threshold.Type

/**
 * The longest summary `policy` keeps, in its unit: its `summaryLimit`, or a
 * quarter of its `limit` (at least 1), which leaves most of a request for
 * the task and the recent history.
 *
 * @since 0.1.0
 * @category getters
 */
export const summaryLimitOf = (policy: Threshold): number =>
  policy.summaryLimit ?? Math.max(1, Math.floor(policy.limit / 4))

/**
 * Never compact.
 *
 * @since 0.1.0
 * @category models
 */
export const Disabled = Schema.TaggedStruct("Disabled", {})
/**
 * @since 0.1.0
 * @category models
 */
export type Disabled = typeof Disabled.Type

/**
 * A compaction policy, decodable from configuration.
 *
 * @since 0.1.0
 * @category models
 */
export const Policy = Schema.Union([Threshold, Disabled])
/**
 * @since 0.1.0
 * @category models
 */
export type Policy = typeof Policy.Type

/**
 * The defaults of {@link threshold}: compact past 100,000 estimated tokens,
 * keep up to 8,000 of recent history verbatim, summarize at most 50,000 per
 * summary request.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultThreshold: Threshold = Threshold.make({
  measure: "estimatedTokens",
  limit: 100_000,
  keepRecent: 8_000,
  pieceLimit: 50_000
})

const thresholdEntry = "Compaction.threshold"

// One decoder per option, made once: each names its own field.
const thresholdOptions: Record<
  "measure" | "limit" | "keepRecent" | "pieceLimit" | "summaryLimit",
  (value: unknown) => Result.Result<unknown, InvalidInput.InvalidInput>
> = {
  measure: InvalidInput.decodeResult(SizeMeasure, thresholdEntry, "measure"),
  limit: InvalidInput.decodeResult(PositiveInt, thresholdEntry, "limit"),
  keepRecent: InvalidInput.decodeResult(NonNegativeInt, thresholdEntry, "keepRecent"),
  pieceLimit: InvalidInput.decodeResult(PositiveInt, thresholdEntry, "pieceLimit"),
  summaryLimit: InvalidInput.decodeResult(PositiveInt, thresholdEntry, "summaryLimit")
}

const isThresholdOption = (key: string): key is keyof typeof thresholdOptions => Object.hasOwn(thresholdOptions, key)

const refuseOptions = (field: string, value: unknown, detail: string) =>
  new InvalidInput.InvalidInput({ entry: thresholdEntry, field, value: InvalidInput.renderValue(value), detail })

/**
 * A threshold policy; omitted fields (or fields given as `undefined`) take
 * {@link defaultThreshold}'s values.
 *
 * @throws InvalidInput (entry `Compaction.threshold`) naming the
 * field, here, at construction, not mid-turn: for options that are not an
 * object, a number out of range or not an integer, an unknown `measure`,
 * and a key that is not one of the options (a misspelt `limt` would
 * otherwise leave the default limit in force without a word).
 * @since 0.1.0
 * @category constructors
 */
export const threshold = (options: Partial<Omit<Threshold, "_tag">> = {}): Threshold => {
  const given: unknown = options
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw refuseOptions("options", given, "expected an object of threshold options")
  }
  const chosen: Record<string, unknown> = { ...defaultThreshold }
  for (const [key, value] of Object.entries(given)) {
    // A policy spread into the options brings its tag along; that is not a mistake.
    if (key === "_tag" && value === "Threshold") continue
    if (!isThresholdOption(key)) {
      throw refuseOptions(
        key,
        value,
        `not an option of a threshold policy (${Object.keys(thresholdOptions).join(", ")})`
      )
    }
    if (value === undefined) continue
    const decoded = thresholdOptions[key](value)
    if (Result.isFailure(decoded)) throw decoded.failure
    chosen[key] = decoded.success
  }
  return Threshold.make(chosen as Omit<Threshold, "_tag">)
}

/**
 * The policy that never compacts. A task bound with it needs no private writer at the gate.
 *
 * @since 0.1.0
 * @category constructors
 */
export const disabled: Disabled = Disabled.make({})

/**
 * A size in UTF-8 bytes, in the policy's unit.
 *
 * @since 0.1.0
 * @category measuring
 */
export const fromBytes = (measure: SizeMeasure, bytes: number): number =>
  measure === "bytes" ? bytes : Math.ceil(bytes / 4)

/**
 * The size of a text in the policy's unit.
 *
 * @since 0.1.0
 * @category measuring
 */
export const measureText = (measure: SizeMeasure, text: string): number =>
  fromBytes(measure, ArtifactPointer.utf8Length(text))

/**
 * How many UTF-8 bytes a size in the policy's unit allows.
 *
 * @since 0.1.0
 * @category measuring
 */
export const bytesFor = (measure: SizeMeasure, size: number): number => (measure === "bytes" ? size : size * 4)

/**
 * The most history one summary request carries, in UTF-8 bytes: the piece
 * size every summary of a policy is cut into (a result the inline limit
 * keeps fits one piece).
 *
 * @since 0.1.0
 * @category measuring
 */
export const pieceBytes = (policy: Threshold): number => bytesFor(policy.measure, policy.pieceLimit)

/**
 * The longest summary a policy stores, in UTF-8 bytes.
 *
 * @since 0.1.0
 * @category measuring
 */
export const summaryBytes = (policy: Threshold): number => bytesFor(policy.measure, summaryLimitOf(policy))

/**
 * Decodes a policy given to a public entry: `InvalidInput` (field `policy`)
 * for a value that is not a `Threshold` of positive integers or `Disabled`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodePolicy = (policy: unknown, entry: string): Effect.Effect<Policy, InvalidInput.InvalidInput> =>
  InvalidInput.decode(Policy, entry, "policy")(policy)
