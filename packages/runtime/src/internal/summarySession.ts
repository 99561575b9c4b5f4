/**
 * The one summary path every public summary entry runs through: the private
 * writer is resolved before admission and carried into publication, so
 * nothing resolves a writer after a model request was dispatched.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { TaskBinding } from "../EntryGate.ts"
import * as History from "../History.ts"
import { Journal } from "../Journal.ts"
import { Model } from "../Model.ts"
import type { StagingKey } from "../PrivateStaging.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import { publish } from "./compacting.ts"
import { bytesFor, defaultThreshold, type Policy, summaryLimitOf } from "./compactionPolicy.ts"
import { journaledSummaryRequests, summarizeWith } from "./summaryRequests.ts"

export interface SummaryOptions {
  readonly key: StagingKey
  readonly policy: Policy
  readonly entry: string
}

const pieceBytesOf = (policy: Policy): number =>
  policy._tag === "Threshold"
    ? bytesFor(policy.measure, policy.pieceLimit)
    : bytesFor(defaultThreshold.measure, defaultThreshold.pieceLimit)

export const summarySession = Effect.fnUntraced(function* (
  binding: TaskBinding,
  history: History.History,
  options: SummaryOptions
) {
  const capability = yield* PrivateSummaries.resolve(binding.context)
  const journal = yield* Journal
  yield* journal.append({
    _tag: "Admission",
    operation: options.key.operation,
    detail: `${options.entry}: summary of ${History.rounds(history).length} rounds admitted`
  })
  const model = yield* Model
  const generate = journaledSummaryRequests(model.generate, journal, {
    operation: options.key.operation,
    step: options.key.step
  })
  const summary = yield* summarizeWith(generate, {
    task: history.task,
    previousSummary: History.summaryText(history),
    rounds: History.rounds(history),
    pieceBytes: pieceBytesOf(options.policy),
    ...(options.policy._tag === "Threshold"
      ? {
          summaryBytes: bytesFor(options.policy.measure, summaryLimitOf(options.policy))
        }
      : {})
  })
  return yield* publish({
    key: options.key,
    summary: summary.text,
    requests: summary.requests,
    journal: Option.some(journal)
  }).pipe(PrivateSummaries.provide(capability))
})
