/**
 * The public summary entries: a direct summary of a history, and a
 * summary-file turn whose answer is staged as the summary. Both resolve the
 * private writer first.
 */
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Compaction from "../Compaction.ts"
import * as EntryGate from "../EntryGate.ts"
import * as Executor from "../Executor.ts"
import type * as History from "../History.ts"
import { Journal } from "../Journal.ts"
import * as Observability from "../Observability.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import { supersedeUnrecorded } from "./compacting.ts"
import { decodePolicy } from "./compactionPolicy.ts"
import { type ExecutionConfig, withGate, withJournalEvents } from "./gatedTurn.ts"
import { summarySession } from "./summarySession.ts"
import { turnOperation } from "./turnOperation.ts"

/**
 * Options of the summary entries. `policy` only shapes the summary requests
 * (piece size); whatever it is, the private writer is resolved first.
 *
 * @since 0.1.0
 * @category models
 */
export interface SummaryOptions {
  readonly operation?: Ids.OperationId
  readonly step?: number
  readonly policy?: Compaction.Policy
}

const decodeSummaryKey = InvalidInput.decode(
  Schema.Struct({
    operation: Schema.optionalKey(Ids.OperationId),
    step: Schema.optionalKey(PrivateSummaries.StagingKey.fields.step)
  }),
  "TaskExecution summary entry",
  "options"
)

/**
 * A direct summary of `history`: resolves the private writer (independent of
 * any compaction policy), then journals its admission, asks the model (in
 * bounded pieces), and stages the scrubbed summary write-once.
 *
 * @since 0.1.0
 * @category entries
 */
export const summarize = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  history: History.History,
  options: SummaryOptions = {}
) {
  yield* EntryGate.admitBinding(binding, "Summary")
  const key = yield* decodeSummaryKey(options)
  const policy =
    options.policy === undefined ? binding.policy : yield* decodePolicy(options.policy, "TaskExecution.summarize")
  const journal = yield* Journal
  const state = yield* journal.state
  return yield* summarySession(binding, history, {
    key: {
      operation: key.operation ?? (yield* turnOperation(binding.context.task, state.entries, "summary")),
      step: key.step ?? 1
    },
    policy,
    entry: "Summary"
  })
}, Observability.withSpan("TaskExecution.summarize"))

/**
 * A summary-file turn paused for approvals: its answer, which would be the
 * summary, does not exist yet, so nothing was staged. The turn stays open:
 * decide the calls, then resume it.
 *
 * @since 0.1.0
 * @category errors
 */
export class SummaryFileTurnAwaitingApproval extends Schema.TaggedError<SummaryFileTurnAwaitingApproval>()(
  "SummaryFileTurnAwaitingApproval",
  { task: Schema.String, turn: Schema.Int, awaiting: Schema.Array(Schema.String) }
) {
  override get message(): string {
    return `the summary-file turn ${this.turn} of task ${this.task} is awaiting approval for [${this.awaiting.join(", ")}]; no summary was staged`
  }
}

/**
 * A summary-file turn: the gate first, asked for the private writer
 * whatever the policy (`EntryGate.verify` with `writer: "Required"`), then a
 * turn behind it, and the turn's final answer staged as a summary file. A
 * file a crash left under the key unrecorded by the journal is superseded
 * first (`SummarySuperseded`), so a rerun stages its own answer; a summary
 * the journal records under the key stays, and other bytes there are a
 * `StagingConflict`.
 *
 * @since 0.1.0
 * @category entries
 */
export const runSummaryFileTurn = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>,
  options: SummaryOptions = {}
) {
  const admission = yield* EntryGate.verify(binding, "SummaryFileTurn", { writer: "Required" })
  const key = yield* decodeSummaryKey(options)
  const capability = Option.getOrThrow(admission.writer)
  const gated = yield* withGate(binding, "SummaryFileTurn", config, admission)
  const journal = yield* Journal
  const outcome = yield* Executor.runTurn(gated, history).pipe(withJournalEvents(config.onEvent))
  if (outcome._tag === "AwaitingApproval") {
    return yield* new SummaryFileTurnAwaitingApproval({
      task: binding.context.task,
      turn: outcome.turn,
      awaiting: outcome.awaiting.map((pending) => pending.call.id)
    })
  }
  const staging = {
    operation: key.operation ?? (yield* turnOperation(binding.context.task, outcome.turn, "file")),
    step: key.step ?? outcome.steps
  }
  const published = yield* Effect.andThen(
    supersedeUnrecorded(journal, staging, { turn: outcome.turn }),
    Compaction.publish({ key: staging, summary: outcome.text, journal: Option.some(journal), turn: outcome.turn })
  ).pipe(PrivateSummaries.provide(capability))
  return { outcome, published }
}, Observability.withSpan("TaskExecution.runSummaryFileTurn"))
