/**
 * The one summary path every public summary entry runs through: the private
 * writer is resolved before admission and carried into publication, so
 * nothing resolves a writer after a model request was dispatched.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Compaction from "../Compaction.ts"
import * as CompactionPolicy from "../CompactionPolicy.ts"
import type { TaskBinding } from "../EntryGate.ts"
import * as History from "../History.ts"
import { Journal } from "../Journal.ts"
import { Model } from "../Model.ts"
import type { StagingKey } from "../PrivateStaging.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"

export interface SummaryOptions {
  readonly key: StagingKey
  readonly policy: CompactionPolicy.CompactionPolicy
  readonly entry: string
}

const pieceBytesOf = (policy: CompactionPolicy.CompactionPolicy): number =>
  policy._tag === "Threshold"
    ? CompactionPolicy.bytesFor(policy.measure, policy.pieceLimit)
    : CompactionPolicy.bytesFor(CompactionPolicy.defaultThreshold.measure, CompactionPolicy.defaultThreshold.pieceLimit)

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
  const generate = Compaction.journaledSummaryRequests(model.generate, journal, {
    operation: options.key.operation,
    step: options.key.step
  })
  const summary = yield* Compaction.summarizeWith(generate, {
    task: history.task,
    previousSummary: History.summaryText(history),
    rounds: History.rounds(history),
    pieceBytes: pieceBytesOf(options.policy),
    ...(options.policy._tag === "Threshold"
      ? {
          summaryBytes: CompactionPolicy.bytesFor(
            options.policy.measure,
            CompactionPolicy.summaryLimitOf(options.policy)
          )
        }
      : {})
  })
  return yield* Compaction.publish({
    key: options.key,
    summary: summary.text,
    requests: summary.requests,
    journal: Option.some(journal)
  }).pipe(PrivateSummaries.provide(capability))
})
