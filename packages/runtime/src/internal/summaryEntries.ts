/**
 * The public summary entries: a direct summary of a history, and a
 * summary-file turn whose answer is staged as the summary. Both resolve the
 * private writer first.
 */

import type { ArtifactRedactionFailed } from "@tessera/artifacts/ArtifactRedactor"
import type * as DurableFiles from "@tessera/core/DurableFiles"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Compaction from "../Compaction.ts"
import * as EntryGate from "../EntryGate.ts"
import * as Executor from "../Executor.ts"
import type * as History from "../History.ts"
import { Journal, type JournalIoError, type JournalSequenceError } from "../Journal.ts"
import type { Model, ModelError, Part } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import { supersedeUnrecorded } from "./compacting.ts"
import { decodePolicy } from "./compactionPolicy.ts"
import {
  type ExecutionConfig,
  type TurnError,
  type TurnRequirements,
  withGate,
  withJournalEvents
} from "./gatedTurn.ts"
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
export const summarize = (
  binding: EntryGate.TaskBinding,
  history: History.History,
  options: SummaryOptions = {}
): Effect.Effect<Summarized, SummaryError, SummaryRequirements> => inferred.summarize(binding, history, options)

/**
 * What {@link summarize} stages and hands back: the staged file, the
 * scrubbed summary text, and the parts that stand in for the history it
 * covers (a `Compaction.PublishedSummary`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Summarized {
  staged: PrivateSummaries.StagedFile
  text: string
  parts: ReadonlyArray<Part>
}

/**
 * Every way {@link summarize} can fail: options or a policy it refuses
 * (`InvalidInput`), a writer that does not resolve
 * (`PrivateSummaries.ResolveError`), the model's `ModelError`, the
 * journal's errors, a redactor that failed on the summary
 * (`ArtifactRedactionFailed`), and staging's (other bytes under the key,
 * a staged file that cannot be read back, the durable write's failures).
 *
 * @since 0.1.0
 * @category models
 */
export type SummaryError =
  | InvalidInput.InvalidInput
  | PrivateSummaries.ResolveError
  | ModelError
  | JournalIoError
  | JournalSequenceError
  | ArtifactRedactionFailed
  | PrivateSummaries.StagingConflict
  | PrivateSummaries.StagingReadFailed
  | DurableFiles.AlreadyExists
  | DurableFiles.OutsideWithin
  | DurableFiles.DurableFileFailure

/**
 * Every service {@link summarize} needs: the `Model` it asks, the task's
 * `Journal`, and the file system, paths and durable files it stages with.
 *
 * @since 0.1.0
 * @category models
 */
export type SummaryRequirements = Model | Journal | DurableFiles.DurableFiles | FileSystem.FileSystem | Path.Path

/**
 * What {@link runSummaryFileTurn} hands back: the answered turn and the
 * summary its answer was published as.
 *
 * @since 0.1.0
 * @category models
 */
export interface SummaryFileTurn {
  outcome: Executor.TurnAnswered
  published: Compaction.PublishedSummary
}

/**
 * Every way {@link runSummaryFileTurn} can fail: what a turn fails with
 * ({@link TurnError}), what staging its answer adds ({@link SummaryError}),
 * and {@link SummaryFileTurnAwaitingApproval} while the turn waits for
 * approvals.
 *
 * @since 0.1.0
 * @category models
 */
export type SummaryFileTurnError<E = never> = TurnError<E> | SummaryError | SummaryFileTurnAwaitingApproval

/**
 * The summary entries as their bodies infer them; the public entries state
 * their types with the named aliases and `typetest/EntrySignatures.typetest.ts`
 * pins them to these.
 */
export const inferred = {
  summarize: Effect.fnUntraced(function* (
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
  }, Observability.withSpan("TaskExecution.summarize")),
  runSummaryFileTurn: Effect.fnUntraced(function* <E = never, R = never>(
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
}

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
export const runSummaryFileTurn = <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>,
  options: SummaryOptions = {}
): Effect.Effect<SummaryFileTurn, SummaryFileTurnError<E>, TurnRequirements<R>> =>
  inferred.runSummaryFileTurn(binding, history, config, options)
