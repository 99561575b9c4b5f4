/**
 * The public summary entries' way into the one summary path
 * (`summarizeRounds`, which compaction uses too): the private writer is
 * resolved before admission and carried into publication, so nothing
 * resolves a writer after a model request was dispatched, and a summary a
 * crash left staged for the same inputs is adopted rather than requested
 * again.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { TaskBinding } from "../EntryGate.ts"
import * as History from "../History.ts"
import { Journal } from "../Journal.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import { summarizeRounds } from "./compacting.ts"
import { defaultThreshold, type Policy, pieceBytes, summaryBytes } from "./compactionPolicy.ts"

export interface SummaryOptions {
  readonly key: PrivateSummaries.StagingKey
  readonly policy: Policy
  readonly entry: string
}

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
  const { staged, text, parts } = yield* summarizeRounds({
    entry: options.entry,
    key: options.key,
    history,
    rounds: History.rounds(history),
    journal: Option.some(journal),
    // Without a policy of its own, a summary is cut into the default policy's pieces and kept whole.
    ...(options.policy._tag === "Threshold"
      ? { pieceBytes: pieceBytes(options.policy), summaryBytes: summaryBytes(options.policy) }
      : { pieceBytes: pieceBytes(defaultThreshold) })
  }).pipe(PrivateSummaries.provide(capability))
  return { staged, text, parts }
})
