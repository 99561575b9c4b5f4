/**
 * The one summary path every public summary entry runs through, with the
 * moment the private writer is resolved as a parameter. Public entries only
 * ever pass `BeforeAdmission`; `AfterFirstDispatch` exists so a test can
 * recreate the former, broken ordering through this same path and show that
 * it dispatches a request before failing.
 */
import { Effect, Option } from "effect"
import * as Compaction from "../Compaction.ts"
import * as CompactionPolicy from "../CompactionPolicy.ts"
import type { TaskBinding } from "../EntryGate.ts"
import * as History from "../History.ts"
import { Journal } from "../Journal.ts"
import type { ModelRequest } from "../Model.ts"
import { Model } from "../Model.ts"
import type { StagingKey } from "../PrivateStaging.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"

export type WriterTiming = "BeforeAdmission" | "AfterFirstDispatch"

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
  options: SummaryOptions,
  timing: WriterTiming
) {
  const resolveWriter = PrivateSummaries.resolve(binding.context)
  const early = timing === "BeforeAdmission" ? Option.some(yield* resolveWriter) : Option.none()
  const journal = yield* Journal
  yield* journal.append({
    _tag: "Admission",
    operation: options.key.operation,
    detail: `${options.entry}: summary of ${History.rounds(history).length} rounds admitted`
  })
  const model = yield* Model
  let late = Option.none<PrivateSummaries.PrivateWriterCapability>()
  // The former ordering: the writer is looked up only once a request is out.
  const resolveAfterDispatch = (request: ModelRequest) =>
    Effect.tap(model.generate(request), () =>
      Option.isSome(late)
        ? Effect.void
        : Effect.asVoid(Effect.map(resolveWriter, (capability) => (late = Option.some(capability))))
    )
  const summary = yield* Compaction.summarizeWith(
    timing === "BeforeAdmission" ? model.generate : resolveAfterDispatch,
    {
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
    }
  )
  const capability = Option.isSome(early) ? early.value : Option.isSome(late) ? late.value : yield* resolveWriter
  return yield* Compaction.publish({
    key: options.key,
    summary: summary.text,
    requests: summary.requests,
    journal: Option.some(journal)
  }).pipe(PrivateSummaries.provide(capability))
})
