/**
 * Running a bound task: the stock executor behind the entry gate, with
 * compaction when the policy arms it, and the public summary entries; and
 * the foreign loop, through which another framework's agent loop drives a
 * bound task (every adapter runs on it).
 *
 * Every entry here runs `EntryGate.verify` (or resolves the private
 * writer, for summaries) before it sends a model request or writes a
 * journal entry, so a task that needs a writer and has none fails
 * `Unauthorized` having cost nothing. A turn's hooks (compaction, offload
 * of large results with the read tool its pointers name, the inline limit)
 * are assembled in one place for every door: the executor's entries and
 * every {@link ForeignLoop} get them from the same assembly, so what holds
 * for one holds for all.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import * as Scrub from "./internal/scrub.ts"

/**
 * Approvals: the host's decision on a call awaiting it ({@link Decision},
 * recorded by {@link decide}), refused with {@link NotAwaitingApproval}
 * for a call that is not waiting. Declared in the package's internals.
 *
 * @since 0.1.0
 * @category entries
 */
export { type Decision, decide, NotAwaitingApproval } from "./internal/approvals.ts"
/**
 * The compaction hooks a `Threshold` policy arms ({@link compactionHooks},
 * with {@link CompactionHooksOptions}), what they can fail with
 * ({@link CompactionError}) and need ({@link CompactionRequirements}).
 * Declared in the package's internals.
 *
 * @since 0.1.0
 * @category hooks
 */
export {
  type CompactionError,
  type CompactionHooksOptions,
  type CompactionRequirements,
  compactionHooks
} from "./internal/compactionHooks.ts"
/**
 * Durable turns from disk alone: {@link resume} continues the open turn
 * from the journal and the transcript (reporting {@link Resumed}, failing
 * with {@link ResumeError}), and {@link restoreHistory} gives the
 * conversation a next turn starts from. Declared in the package's
 * internals.
 *
 * @since 0.1.0
 * @category entries
 */
export { type Resumed, type ResumeError, restoreHistory, resume } from "./internal/durableTurns.ts"
/**
 * The foreign loop: a bound task driven by another framework's agent loop.
 * {@link foreignLoop} makes one ({@link ForeignLoop}) from a binding and
 * {@link ForeignLoopOptions}, needing {@link ForeignLoopRequirements} and
 * refused with {@link ForeignLoopOpenError}; its
 * steps fail with {@link ForeignLoopError} (the journal's part is
 * {@link JournalError}; a loop wired in part is {@link LoopOutOfOrder}); it
 * offers the library's read tool as a {@link ForeignReadTool} and counts
 * summary requests as {@link SummaryUsage}. Declared in the package's
 * internals.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export {
  type ForeignLoop,
  type ForeignLoopError,
  type ForeignLoopOpenError,
  type ForeignLoopOptions,
  type ForeignLoopRequirements,
  type ForeignReadTool,
  foreignLoop,
  type JournalError,
  LoopOutOfOrder
} from "./internal/foreignLoop.ts"
/**
 * The front door over a host's task harness ({@link frontDoor}): a task's
 * next turn as one call (`run`: the conversation restored from its
 * transcript, the question appended, one durable turn with offload and
 * compaction; a task whose last turn a crash left open fails
 * `TurnAlreadyOpen`), `resume` (the open turn finished from disk, `None`
 * when there is none: a crash-safe program resumes first), `decide` (a
 * person's decision on a call the open turn awaits, as {@link decide}) and
 * `entries`, all under the host's
 * redaction decision, which it requires ({@link FrontDoorOptions}: a
 * missing `redactor` is `InvalidInput` naming both decisions). It runs on
 * any harness with `withTask` ({@link TaskHarness}); `NodeTessera.open` is
 * the Node one. Its defaults: {@link defaultFrontDoorOffload} (8 KiB, the
 * private volume, the library's read tool) and {@link defaultFrontDoorSteps}
 * (16); a run takes {@link FrontDoorRunOptions}; {@link checkFrontDoor}
 * checks the decisions before a platform opens its harness. Declared in
 * the package's internals.
 *
 * @since 0.1.0
 * @category front door
 */
export {
  check as checkFrontDoor,
  defaultMaxSteps as defaultFrontDoorSteps,
  defaultOffload as defaultFrontDoorOffload,
  type FrontDoorOptions,
  make as frontDoor,
  type RunOptions as FrontDoorRunOptions,
  type TaskHarness
} from "./internal/frontDoor.ts"
/**
 * A turn's configuration ({@link ExecutionConfig}), what the gate's own
 * hooks add to a turn's errors ({@link GatedError}), and what every turn
 * entry fails with ({@link TurnError}) and needs ({@link TurnRequirements}).
 * Declared in the package's internals.
 *
 * @since 0.1.0
 * @category models
 */
export type { ExecutionConfig, GatedError, TurnError, TurnRequirements } from "./internal/gatedTurn.ts"
/**
 * The summary entries: {@link summarize} (a direct summary) and
 * {@link runSummaryFileTurn} (a turn whose answer is staged as the summary,
 * refused with {@link SummaryFileTurnAwaitingApproval} while it waits for
 * approvals), shaped by {@link SummaryOptions}; what they hand back
 * ({@link Summarized}, {@link SummaryFileTurn}), fail with
 * ({@link SummaryError}, {@link SummaryFileTurnError}) and need
 * ({@link SummaryRequirements}). Declared in the package's internals.
 *
 * @since 0.1.0
 * @category entries
 */
export {
  runSummaryFileTurn,
  type Summarized,
  type SummaryError,
  type SummaryFileTurn,
  SummaryFileTurnAwaitingApproval,
  type SummaryFileTurnError,
  type SummaryOptions,
  type SummaryRequirements,
  summarize
} from "./internal/summaryEntries.ts"
/**
 * What a foreign loop's summary requests cost ({@link SummaryUsage}; none:
 * {@link noSummaryUsage}). Declared in the package's internals.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export { noSummaryUsage, type SummaryUsage } from "./internal/summaryUsage.ts"
/**
 * What the gate's own hooks add to a turn's requirements
 * ({@link GatedRequirements}). Declared in the package's internals.
 *
 * @since 0.1.0
 * @category models
 */
export type { GatedRequirements } from "./internal/taskHooks.ts"
/**
 * The turn entries: {@link runTurn}, {@link streamTurn} (with
 * {@link StreamOptions} and {@link defaultStreamBuffer}),
 * {@link resumeTurn} and {@link abandonTurn}; and the step entries for
 * harnesses that drive steps themselves: {@link modelStep},
 * {@link dispatchTools}, {@link dispatchStep}. Declared in the package's
 * internals.
 *
 * @since 0.1.0
 * @category entries
 */
export {
  abandonTurn,
  defaultStreamBuffer,
  dispatchStep,
  dispatchTools,
  modelStep,
  resumeTurn,
  runTurn,
  type StreamOptions,
  streamTurn
} from "./internal/turnEntries.ts"
/**
 * The operation a turn's summaries are staged under ({@link turnOperation}).
 * Declared in the package's internals.
 *
 * @since 0.1.0
 * @category naming
 */
export { turnOperation } from "./internal/turnOperation.ts"

/**
 * How much of a thrown value {@link scrubThrown} reads (see its bounds).
 *
 * @since 0.1.0
 * @category redaction
 */
export type ScrubBounds = Scrub.ScrubBounds

/**
 * A copy of a thrown value with every text in it passed through `scrub`,
 * deeply: `message`, `stack`, `cause` chains, `AggregateError.errors`,
 * nested objects, arrays, maps and sets, and own accessors (each called
 * once on the original; the copy holds what it returned, scrubbed, as a
 * data property; one that throws becomes withheld text). The keys of plain
 * objects (provider data, such as a parsed body) are scrubbed too, and a
 * key the redactor failed on (`scrub` gave the withheld text, as
 * {@link ForeignLoop.scrub} does then) drops its property; an instance's
 * own field names, a string `_tag` and a `Model.ModelError`'s `reason` (a
 * literal) are kept verbatim. Every object keeps its
 * prototype, so `instanceof`, marker symbols and tagged errors still hold;
 * numbers, booleans and other non-text values are kept; binary data is
 * withheld. Cycles and shared objects are read once (the copy has the same
 * shape). A value deeper or larger than `bounds` (by default 32 levels,
 * 20,000 objects and members, 8 million characters of distinct text) has
 * the part past the bound withheld, so a hostile value cannot make the
 * scrub unbounded. The original is never changed.
 *
 * It is the one scrub of what leaves Tessera: the stock executor's
 * `ModelFailed` detail, summary requests' failures (compaction,
 * `Compaction.summarize`, the adapters' summary models) and what adapters
 * rethrow to their caller all go through it.
 *
 * @since 0.1.0
 * @category redaction
 */
export const scrubThrown = (
  error: unknown,
  scrub: (text: string) => Effect.Effect<string>,
  bounds: Partial<ScrubBounds> = {}
): Effect.Effect<unknown> => Scrub.scrubValue(error, scrub, bounds)
