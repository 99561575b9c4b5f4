/**
 * The stock executor, and the pieces it is made of.
 *
 * A turn is: model step, then (if the model asked for tools) tool dispatch,
 * then the next model step, until the model answers without tool calls or
 * the step limit is hit. {@link runTurn} is exactly that loop over the
 * exported pieces {@link modelStep} and {@link dispatchTools}; a harness that
 * needs a different loop composes its own from the same pieces and hooks,
 * and keeps the same journal records and spans.
 *
 * Hooks are where later behaviour plugs in without changing the loop:
 *
 * - `beforeTurn` is the entry gate: it runs before anything is journaled
 *   or dispatched, so failing it costs no model request and no journal write.
 * - `beforeModelStep` may rewrite the history the next request is built
 *   from (compaction replaces old rounds by a summary reference) and may
 *   fail the step before anything is dispatched. The rewritten history is
 *   the one the turn carries on with.
 * - `afterModelStep` sees each request and response.
 * - `onToolResult` may replace a tool result (artifact offload puts a
 *   pointer in place of a large body) before it is journaled and before it
 *   enters the next request.
 *
 * Every turn, model step and tool call runs in its own span (see
 * `Observability` and docs/tracing.md for their attributes and metrics).
 *
 * A turn can be watched as it runs: with `onEvent` in its configuration
 * the executor streams each model response ({@link Model.stream}) and hands
 * every {@link TurnEvent} (deltas included) to `onEvent` before it goes on,
 * so a slow observer slows the turn instead of piling events up. Without
 * it, model steps call {@link Model.generate} and pay nothing for
 * streaming.
 *
 * An interrupted turn (`Effect.timeout`, `Fiber.interrupt`, a consumer
 * that stops listening) is closed in the journal: `TurnAbandoned` with
 * reason {@link interruptedReason} is written as the turn's fiber unwinds,
 * after the model or tool call in flight was itself interrupted, so the
 * next turn can open.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as History from "./History.ts"
import type {
  EntryContext,
  Hooks,
  ModelStepOutcome,
  RecordedBody,
  StepContext,
  ToolContext,
  TurnConfig,
  TurnRecorder
} from "./internal/executorConfig.ts"
import {
  ApprovalInputMismatch,
  type ExecutorError,
  ResumeMismatch,
  StepLimitExceeded
} from "./internal/executorErrors.ts"
import type { JournalEntryEvent, TurnEvent } from "./internal/executorEvents.ts"
import * as loop from "./internal/executorLoop.ts"
import { interruptedReason, type TurnEntry } from "./internal/executorLoop.ts"
import type {
  InFlightCall,
  PendingApproval,
  Resumed,
  StepDispatch,
  TurnAnswered,
  TurnAwaitingApproval,
  TurnOutcome
} from "./internal/executorOutcomes.ts"
import * as resume from "./internal/executorResume.ts"
import * as step from "./internal/executorStep.ts"
import * as tools from "./internal/executorTools.ts"
import type { Journal, JournalIoError, JournalSequenceError } from "./Journal.ts"
import type { Model, ModelError } from "./Model.ts"

/**
 * The executor's vocabulary, declared with the turn's pieces in the
 * package's internals: what a turn runs with ({@link TurnConfig}: its
 * tools, step limit, {@link Hooks}, time limits, observer and
 * {@link TurnRecorder} with its {@link RecordedBody}), where each hook runs
 * ({@link EntryContext}, {@link StepContext}, {@link ToolContext}), what a
 * model step did ({@link ModelStepOutcome}), what `onEvent` hears
 * ({@link TurnEvent}, the journal entries among them
 * {@link JournalEntryEvent}), how a turn ends ({@link TurnOutcome}:
 * {@link TurnAnswered} or {@link TurnAwaitingApproval} with its
 * {@link PendingApproval}s), what an approval-aware dispatch gave
 * ({@link StepDispatch}), what a resume from disk did ({@link Resumed},
 * with its {@link InFlightCall}s), and the shape both turn entries share
 * ({@link TurnEntry}: a configuration and a history, to the outcome).
 *
 * @since 0.1.0
 * @category models
 */
export type {
  EntryContext,
  Hooks,
  InFlightCall,
  JournalEntryEvent,
  ModelStepOutcome,
  PendingApproval,
  RecordedBody,
  Resumed,
  StepContext,
  StepDispatch,
  ToolContext,
  TurnAnswered,
  TurnAwaitingApproval,
  TurnConfig,
  TurnEntry,
  TurnEvent,
  TurnOutcome,
  TurnRecorder
}

/**
 * The executor's errors ({@link StepLimitExceeded}, {@link ResumeMismatch},
 * {@link ApprovalInputMismatch}; {@link ExecutorError} is every way a step
 * or a turn can fail besides the hooks' own errors), and
 * {@link interruptedReason}, the reason `TurnAbandoned` records for a turn
 * whose fiber was interrupted.
 *
 * @since 0.1.0
 * @category errors
 */
export { ApprovalInputMismatch, type ExecutorError, interruptedReason, ResumeMismatch, StepLimitExceeded }

/**
 * Runs several sets of hooks in order: gates and observers one after the
 * other, history rewrites and result replacements each fed the previous
 * one's output.
 *
 * @since 0.1.0
 * @category combinators
 */
export const composeHooks = <E, R>(...all: ReadonlyArray<Hooks<E, R>>): Hooks<E, R> => {
  // An observer runs every set's hook on the same value; a rewrite feeds each set's hook the previous one's output.
  const observe =
    <C, A>(pick: (hooks: Hooks<E, R>) => ((context: C, value: A) => Effect.Effect<void, E, R>) | undefined) =>
    (context: C, value: A) =>
      Effect.forEach(all, (hooks) => pick(hooks)?.(context, value) ?? Effect.void, { discard: true })
  const rewrite =
    <C, A>(pick: (hooks: Hooks<E, R>) => ((context: C, value: A) => Effect.Effect<A, E, R>) | undefined) =>
    (context: C, value: A) =>
      Effect.reduce(
        all,
        () => value,
        (current, hooks) => pick(hooks)?.(context, current) ?? Effect.succeed(current)
      )
  return {
    beforeTurn: observe((hooks) => hooks.beforeTurn),
    beforeModelStep: rewrite((hooks) => hooks.beforeModelStep),
    afterModelStep: observe((hooks) => hooks.afterModelStep),
    onToolResult: rewrite((hooks) => hooks.onToolResult)
  }
}

/**
 * One model step: runs `beforeModelStep`, builds the request from the
 * (possibly rewritten) history, journals `RequestDispatched`, calls the
 * model, journals `ResponseReceived` (or `ModelFailed`, then fails), and runs
 * `afterModelStep`. The request's parts are the history's own objects.
 *
 * The response is checked before anything acts on it: two calls sharing an
 * id fail `InvalidResponse`, a call whose input is not JSON (see
 * `Tool.findNotJson`) fails `NonJsonToolInput`, naming the call and where the
 * input stops being JSON. With `config.timeouts.model`, the call (and any
 * summary request `beforeModelStep` sends) fails `Timeout` past the limit.
 *
 * If the adapter dies or the step is interrupted while the request is in
 * flight, no `ModelFailed` is written: the journal shows the request as
 * unanswered, which {@link resumeTurn} counts as lost.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Executor, History, Journal, Model, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("one-step")
 * const noop = Tool.make({ name: "noop", description: "Does nothing", input: Schema.Struct({}), handler: () => Effect.succeed("") })
 * const config: Executor.TurnConfig = { tools: Tool.registry(noop), maxSteps: 1 }
 *
 * // One step of your own loop: the request and response are journaled exactly as the stock executor journals them.
 * const program = Effect.gen(function* () {
 *   const journal = yield* Journal.Journal
 *   const { turn } = yield* journal.openTurn
 *   const outcome = yield* Executor.modelStep(config, { task, turn, step: 1 }, History.make([Model.text("user", "Hi.")]))
 *   yield* journal.closeTurn
 *   return outcome.response.text // "Hello."
 * }).pipe(
 *   Effect.provide(
 *     Layer.merge(
 *       ScriptedModel.layer([Model.response({ text: "Hello." })]),
 *       Journal.layer({ folder: "/tmp/tessera-journals", task })
 *     )
 *   )
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category pieces
 */
export const modelStep = <E = never, R = never>(
  config: TurnConfig<E, R>,
  context: StepContext,
  history: History.History
): Effect.Effect<ModelStepOutcome, ModelError | JournalIoError | JournalSequenceError | E, Model | Journal | R> =>
  step.modelStep(config, context, history, false, undefined)

/**
 * Runs the calls of one step, one after the other in the model's order:
 * journals `ToolCalled`, runs the tool (a failure, or outliving its limit
 * in `config.timeouts`, becomes a tool-error result), runs `onToolResult`,
 * journals `ToolResulted`. Returns the results
 * in call order, ready to append to the history. This raw piece does not
 * ask for approvals: a harness driving its own loop with tools that declare
 * `needsApproval` dispatches through {@link dispatchStep}, as the turn does.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Executor, History, Journal, Model, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("custom-loop")
 * const readFile = Tool.make({
 *   name: "read_file",
 *   description: "Reads a file",
 *   input: Schema.Struct({ path: Schema.String }),
 *   handler: ({ path }) => Effect.succeed(`// ${path}`)
 * })
 * const config: Executor.TurnConfig = { tools: Tool.registry(readFile), maxSteps: 4 }
 *
 * // A loop of your own from the stock pieces: each call is journaled (`ToolCalled`, `ToolResulted`), an unknown
 * // tool or a failing handler becomes an error result the model sees.
 * const program = Effect.gen(function* () {
 *   const journal = yield* Journal.Journal
 *   const { turn } = yield* journal.openTurn
 *   let history = History.make([Model.text("user", "What is in src/turn.ts?")])
 *   for (let step = 1; step <= config.maxSteps; step++) {
 *     const outcome = yield* Executor.modelStep(config, { task, turn, step }, history)
 *     history = outcome.history
 *     if (outcome.response.toolCalls.length === 0) {
 *       yield* journal.closeTurn
 *       return outcome.response.text
 *     }
 *     const results = yield* Executor.dispatchTools(config, { task, turn, step }, outcome.response.toolCalls)
 *     history = History.append(history, results)
 *   }
 *   yield* journal.abandonTurn(`no answer within ${config.maxSteps} steps`)
 *   return "(abandoned)"
 * }).pipe(
 *   Effect.provide(
 *     Layer.merge(
 *       ScriptedModel.layer([
 *         Model.response({ toolCalls: [Model.toolCall("c1", "read_file", { path: "src/turn.ts" })] }),
 *         Model.response({ text: "It holds the turn loop." })
 *       ]),
 *       Journal.layer({ folder: "/tmp/tessera-journals", task })
 *     )
 *   )
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category pieces
 */
export const dispatchTools = tools.dispatchTools

/**
 * The text of the error result a rejected call receives: who rejected it and
 * why, so the model can act on it (ask, choose another way, give up).
 *
 * @since 0.1.0
 * @category approvals
 */
export const rejectionText = tools.rejectionText

/**
 * Runs the calls of the open turn's current step that still owe a result,
 * honouring approvals (see the journal's `ApprovalRequested` and
 * `ApprovalDecided`):
 *
 * - a call whose tool needs approval for its input (`Tool.needsApproval`)
 *   and that has no decision yet is journaled `ApprovalRequested`
 *   (`Tool`);
 * - a call that was called but has no result (it was running when the
 *   process died) runs again only when its tool is declared idempotent;
 *   otherwise it is journaled `ApprovalRequested` (`InFlight`); an approved
 *   call that was called after its approval is such a call too (the
 *   approval covered one run);
 * - an approved call runs only with the input the host approved (the
 *   digest journaled with its `ApprovalRequested`), else
 *   {@link ApprovalInputMismatch} before anything runs;
 * - when any call waits, nothing runs and the calls waiting are returned;
 * - otherwise every call runs in the model's order: an approved or
 *   unrestricted one through the tool ({@link dispatchTools}' steps), a
 *   rejected one as an error result naming who rejected it
 *   ({@link rejectionText}, failure `Rejected`) without running.
 *
 * Calls that already have a result are skipped (their results are in the
 * history).
 *
 * @since 0.1.0
 * @category pieces
 */
export const dispatchStep = tools.dispatchStep

/**
 * The loop shared by {@link runTurn} and {@link resumeTurn}: model steps
 * from `firstStep` on, tools after each (under approvals:
 * {@link dispatchStep}), until an answer (the turn is then closed), calls
 * awaiting approval (the turn stays open), or the step limit. With
 * `prepared`, the first step sends its history as it is (it is the history
 * a lost request was built from; the hooks already ran on it).
 *
 * @since 0.1.0
 * @category pieces
 */
export const continueTurn = loop.continueTurn

/**
 * The stock turn: runs the entry gate (`beforeTurn`), opens a turn in the
 * journal, and loops model step / tool dispatch until the model answers
 * without tool calls (the turn is closed: {@link TurnAnswered}), a call
 * waits for the host's approval ({@link TurnAwaitingApproval}, turn left
 * open), or `maxSteps` model steps were taken ({@link StepLimitExceeded},
 * turn left open). A failure mid-turn leaves the turn open for
 * {@link resumeTurn} or `abandonTurn`. With a `recorder`, the history the
 * turn starts from is recorded before `TurnOpened`.
 *
 * @since 0.1.0
 * @category turns
 */
export const runTurn = loop.runTurn

/**
 * Continues the open turn from the caller's copy of its history (the
 * journal holds no bodies, so the history is the harness's to keep; a
 * durable turn can instead be rebuilt from disk: see {@link resumeRebuilt}).
 *
 * The calls the history leaves unanswered must be exactly the calls the
 * journal still owes ({@link ResumeMismatch} otherwise). The journal records
 * `TurnResumed`; a request that was in flight is counted as lost. Owed calls
 * are dispatched under approvals ({@link dispatchStep}: a call that was
 * running at the crash runs again only if its tool is idempotent, decided
 * calls run or are rejected), then the loop continues with the next step
 * number. If the turn was already answered, it is just closed.
 *
 * @since 0.1.0
 * @category turns
 */
export const resumeTurn = resume.resumeTurn

/**
 * Continues the open turn from a history rebuilt from disk (see
 * `Transcript.rebuild`): `history` is the turn's history after its last
 * recorded content, and `lostRequest`, when the last request was
 * dispatched and never answered, the history that request was built from.
 *
 * A request that got no response (lost to a crash, or failed) is sent
 * again under its own step number (`TurnResumed` with `retryStep`), from
 * that very history, without running
 * `beforeModelStep` again: a resumed turn sends the requests the
 * uninterrupted run would have sent. Otherwise the turn goes on as
 * {@link resumeTurn} does after its check. The calls in flight at the crash
 * (called, no result) are reported in {@link Resumed.inFlight}.
 *
 * @since 0.1.0
 * @category turns
 */
export const resumeRebuilt = resume.resumeRebuilt
