/**
 * What a foreign loop's summary requests cost, counted as their answers
 * arrive, for the adapter to report to its host with the step they
 * preceded.
 */
import * as Effect from "effect/Effect"
import * as Model from "../Model.ts"

/**
 * What summary requests cost: how many were sent, and the input and output
 * tokens their responses reported (0 when a response reported none).
 *
 * @since 0.1.0
 * @category foreign loop
 */
export interface SummaryUsage {
  readonly requests: number
  readonly inputTokens: number
  readonly outputTokens: number
}

/**
 * No summary request.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export const noSummaryUsage: SummaryUsage = { requests: 0, inputTokens: 0, outputTokens: 0 }

const addUsage = (usage: SummaryUsage, response: Model.ModelResponse): SummaryUsage => ({
  requests: usage.requests + 1,
  inputTokens: usage.inputTokens + (response.usage?.inputTokens ?? 0),
  outputTokens: usage.outputTokens + (response.usage?.outputTokens ?? 0)
})

/**
 * A count of summary requests: `counted(model)` is `model` counting every
 * answer it gives; `take` is the usage since the last take (counted from
 * zero again after it), `total` every request's so far.
 */
export interface SummaryUsageCount {
  readonly counted: (model: Model.Model["Service"]) => Model.Model["Service"]
  readonly take: () => SummaryUsage
  readonly total: () => SummaryUsage
}

/** A new count, at zero. */
export const makeSummaryUsageCount = (): SummaryUsageCount => {
  let pending = noSummaryUsage
  let total = noSummaryUsage
  return {
    counted: (model) =>
      Model.fromGenerate((request) =>
        Effect.tap(model.generate(request), (response) =>
          Effect.sync(() => {
            pending = addUsage(pending, response)
            total = addUsage(total, response)
          })
        )
      ),
    take: () => {
      const usage = pending
      pending = noSummaryUsage
      return usage
    },
    total: () => total
  }
}
