/**
 * The turn loop: model steps and their tools until an answer, calls
 * awaiting approval or the step limit (`Executor.continueTurn`), the stock
 * turn that opens a turn and runs it (`Executor.runTurn`, in its span), and
 * what every turn entry shares: the checks and the entry gate before
 * anything is written, and the `TurnAbandoned` an interruption leaves.
 */
import type * as Ids from "@tessera/core/Ids"
import type { InvalidInput } from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as History from "../History.ts"
import type { JournalService } from "../Journal.ts"
import { Journal, openTurn, TurnAlreadyOpen } from "../Journal.ts"
import type { Model } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as Tool from "../Tool.ts"
import { makeRequestChain } from "./digest.ts"
import { recordedFields, type StepContext, type TurnConfig, type TurnRecorder } from "./executorConfig.ts"
import { type ExecutorError, StepLimitExceeded } from "./executorErrors.ts"
import type { StepDispatch, TurnAnswered, TurnAwaitingApproval, TurnOutcome } from "./executorOutcomes.ts"
import { modelStep } from "./executorStep.ts"
import { dispatchStep, dispatchTools } from "./executorTools.ts"
import { checkTurn } from "./turnConfig.ts"

/**
 * The reason `TurnAbandoned` records for a turn whose fiber was interrupted.
 *
 * @since 0.1.0
 * @category turns
 */
export const interruptedReason = "interrupted"

/**
 * Closes `turn` as abandoned (reason {@link interruptedReason}) when the
 * effect is interrupted while the turn is still open. Finalizers run
 * uninterruptibly, so the entry is written even though the fiber is being
 * interrupted; a failure to write it is left for the next turn to report
 * (`TurnAlreadyOpen`), never raised over the interruption.
 */
export const abandonOnInterrupt =
  (journal: JournalService, turn: number) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.onInterrupt(self, () =>
      Effect.flatMap(journal.state, (state) => {
        const open = openTurn(state)
        return Option.isSome(open) && open.value.turn === turn
          ? Effect.ignore(journal.abandonTurn(interruptedReason))
          : Effect.void
      })
    )

/**
 * What every turn entry does first, before anything is journaled or sent:
 * checks the configuration and the histories it was handed (once per turn:
 * the loop reads the configuration at every step), annotates its span with
 * the task, and runs the entry gate (`beforeTurn`) on `gated`. Returns the
 * journal the entry goes on with.
 */
export const enterTurn = <E, R>(
  config: TurnConfig<E, R>,
  entry: string,
  histories: ReadonlyArray<readonly [field: string, history: History.History]>,
  gated: History.History,
  resuming: boolean
): Effect.Effect<JournalService, InvalidInput | E, Journal | R> =>
  Effect.gen(function* () {
    yield* Effect.fromResult(checkTurn(entry, config, histories))
    const journal = yield* Journal
    const task = journal.task
    yield* Observability.annotate({ ...Observability.operation("invoke_agent", task), "tessera.task": task })
    if (config.hooks?.beforeTurn !== undefined) yield* config.hooks.beforeTurn({ task, resuming }, gated)
    return journal
  })

/** Closes the turn the model answered, and hands the outcome to `onEvent`. */
export const closeAnswered = <E, R>(
  config: TurnConfig<E, R>,
  journal: JournalService,
  fields: Omit<TurnAnswered, "_tag">
) =>
  Effect.gen(function* () {
    yield* journal.closeTurn
    const closed: TurnAnswered = { _tag: "Answered", ...fields }
    if (config.onEvent !== undefined) yield* config.onEvent({ _tag: "TurnClosed", outcome: closed })
    return closed
  })

/** The turn stays open with calls awaiting the host's decision; `onEvent` hears it. */
export const awaitingOutcome = <E, R>(
  config: TurnConfig<E, R>,
  fields: Omit<TurnAwaitingApproval, "_tag">
): Effect.Effect<TurnAwaitingApproval> => {
  const outcome: TurnAwaitingApproval = { _tag: "AwaitingApproval", ...fields }
  return config.onEvent === undefined
    ? Effect.succeed(outcome)
    : Effect.as(config.onEvent({ _tag: "AwaitingApproval", outcome }), outcome)
}

/** The loop shared by the stock turn and its resumes (see `Executor.continueTurn`). */
export const continueTurn = <E = never, R = never>(
  config: TurnConfig<E, R>,
  context: {
    readonly task: Ids.TaskId
    readonly turn: number
    readonly firstStep: number
    readonly prepared?: boolean
  },
  history: History.History
): Effect.Effect<TurnOutcome, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    const journal = yield* Journal
    const chain = makeRequestChain()
    let current = history
    for (let step = context.firstStep; ; step++) {
      if (step > config.maxSteps) {
        return yield* new StepLimitExceeded({ task: context.task, turn: context.turn, maxSteps: config.maxSteps })
      }
      const stepContext: StepContext = { task: context.task, turn: context.turn, step }
      const prepared = context.prepared === true && step === context.firstStep
      const outcome = yield* modelStep(config, stepContext, current, prepared, chain)
      current = outcome.history
      if (outcome.response.toolCalls.length === 0) {
        return yield* closeAnswered(config, journal, {
          turn: context.turn,
          steps: step,
          history: current,
          text: outcome.response.text
        })
      }
      // A fresh step's calls are all owed and uncalled: without tools that declare approval, nothing can wait.
      const dispatched: StepDispatch = Tool.anyNeedsApproval(config.tools)
        ? yield* dispatchStep(config, stepContext, outcome.response.toolCalls)
        : { _tag: "Results", results: yield* dispatchTools(config, stepContext, outcome.response.toolCalls) }
      if (dispatched._tag === "Awaiting") {
        return yield* awaitingOutcome(config, {
          turn: context.turn,
          steps: step,
          history: current,
          text: outcome.response.text,
          awaiting: dispatched.awaiting
        })
      }
      current = History.append(current, dispatched.results)
    }
  })

/** The stock turn (see `Executor.runTurn`), in the `Executor.runTurn` span. */
/** What a turn entry is: a configuration and the history the turn starts (or resumes) from, to its outcome. */
export type TurnEntry = <E = never, R = never>(
  config: TurnConfig<E, R>,
  history: History.History
) => Effect.Effect<TurnOutcome, ExecutorError | E, Model | Journal | R>

export const runTurn: TurnEntry = (config, history) =>
  Effect.gen(function* () {
    const journal = yield* enterTurn(config, "Executor.runTurn", [["history", history]], history, false)
    const opened =
      config.recorder === undefined ? yield* journal.openTurn : yield* openRecorded(journal, config.recorder, history)
    yield* Observability.annotate({ "tessera.turn": opened.turn })
    const outcome = yield* continueTurn(config, { task: journal.task, turn: opened.turn, firstStep: 1 }, history).pipe(
      abandonOnInterrupt(journal, opened.turn)
    )
    yield* Observability.annotate({ "tessera.steps": outcome.steps })
    return outcome
  }).pipe(Observability.withSpan("Executor.runTurn"))

/** Opens a turn whose starting history is recorded first (refused, having written nothing, when one is open). */
const openRecorded = <E, R>(journal: JournalService, recorder: TurnRecorder<E, R>, history: History.History) =>
  Effect.gen(function* () {
    const state = yield* journal.state
    const open = openTurn(state)
    if (Option.isSome(open)) return yield* new TurnAlreadyOpen({ task: journal.task, turn: open.value.turn })
    const transcript = yield* recorder.opened(history)
    const turn = state.turns.length + 1
    yield* journal.append({ _tag: "TurnOpened", turn, task: journal.task, ...recordedFields(transcript) })
    const after = yield* journal.state
    return after.turns.at(-1) as NonNullable<ReturnType<typeof after.turns.at>>
  })
