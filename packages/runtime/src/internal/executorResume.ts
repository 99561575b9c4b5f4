/**
 * Resuming an open turn: from the caller's copy of its history
 * (`Executor.resumeTurn`) or from a history rebuilt from disk
 * (`Executor.resumeRebuilt`), each in its span. Both check the history
 * against what the journal owes before anything is written, then close an
 * answered turn, dispatch the owed calls, or send a lost request again.
 */
import type * as Ids from "@tessera/core/Ids"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as History from "../History.ts"
import { type Journal, type JournalService, NoOpenTurn, openTurn, type TurnState } from "../Journal.ts"
import type { Model, ToolCallPart } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as Tool from "../Tool.ts"
import type { TurnConfig } from "./executorConfig.ts"
import { type ExecutorError, ResumeMismatch } from "./executorErrors.ts"
import {
  abandonOnInterrupt,
  awaitingOutcome,
  closeAnswered,
  continueTurn,
  enterTurn,
  type TurnEntry
} from "./executorLoop.ts"
import type { Resumed, TurnOutcome } from "./executorOutcomes.ts"
import { checkApprovedInputs, dispatchStep } from "./executorTools.ts"

/** Resumes the open turn from the caller's history (see `Executor.resumeTurn`), in its span. */
export const resumeTurn: TurnEntry = (config, history) =>
  Effect.gen(function* () {
    const journal = yield* enterTurn(config, "Executor.resumeTurn", [["history", history]], history, true)
    const turn = yield* turnToResume(journal, undefined)
    return yield* resumeOwed(config, journal, turn, history)
  }).pipe(Observability.withSpan("Executor.resumeTurn"))

/** Resumes the open turn from a rebuilt history (see `Executor.resumeRebuilt`), in its span. */
export const resumeRebuilt = <E = never, R = never>(
  config: TurnConfig<E, R>,
  rebuilt: {
    readonly turn: number
    readonly history: History.History
    readonly lostRequest: Option.Option<{ readonly step: number; readonly history: History.History }>
  }
): Effect.Effect<Resumed, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    const journal = yield* enterTurn(
      config,
      "Executor.resumeRebuilt",
      Option.isSome(rebuilt.lostRequest)
        ? [
            ["rebuilt.history", rebuilt.history],
            ["rebuilt.lostRequest.history", rebuilt.lostRequest.value.history]
          ]
        : [["rebuilt.history", rebuilt.history]],
      rebuilt.history,
      true
    )
    const turn = yield* turnToResume(journal, rebuilt.turn)
    const inFlight = turn.owedCalls
      .filter((call) => call.called && call.approval?.status !== "Rejected")
      .map((call) => ({ callId: call.callId, name: call.name, rerun: Tool.isIdempotent(config.tools, call.name) }))
    if (Option.isSome(rebuilt.lostRequest)) {
      const lost = rebuilt.lostRequest.value
      // The request got no response (lost to a crash, or failed): `TurnResumed` names the step it retries.
      const unanswered = (turn.awaitingResponse || turn.failedStep === turn.steps) && lost.step === turn.steps
      // An earlier resume journaled the retry and stopped before sending it.
      const retryJournaled =
        lost.step === turn.steps + 1 && !turn.awaitingResponse && !turn.answered && turn.owedCalls.length === 0
      if (unanswered || retryJournaled) {
        if (unanswered) yield* journal.append({ _tag: "TurnResumed", turn: turn.turn, retryStep: lost.step })
        else yield* journal.resumeTurn
        // Sent again under its own step number, from the same history, without `beforeModelStep`.
        const outcome = yield* continueTurn(
          config,
          { task: journal.task, turn: turn.turn, firstStep: lost.step, prepared: true },
          lost.history
        ).pipe(abandonOnInterrupt(journal, turn.turn))
        return { outcome, inFlight }
      }
    }
    const outcome = yield* resumeOwed(config, journal, turn, rebuilt.history)
    return { outcome, inFlight }
  }).pipe(Observability.withSpan("Executor.resumeRebuilt"))

/** The open turn a resume continues (`NoOpenTurn` when none is open, or not the `expected` one). */
const turnToResume = (journal: JournalService, expected: number | undefined) =>
  Effect.gen(function* () {
    const open = openTurn(yield* journal.state)
    if (Option.isNone(open) || (expected !== undefined && open.value.turn !== expected)) {
      return yield* new NoOpenTurn({
        task: journal.task,
        operation: expected === undefined ? "resume" : `resume turn ${expected}`
      })
    }
    yield* Observability.annotate({ "tessera.turn": open.value.turn })
    return open.value
  })

/**
 * Checks the history against the calls the journal owes, journals
 * `TurnResumed`, and goes on: an answered turn is closed, the owed calls
 * are dispatched under approvals and the loop continues with the next step.
 */
const resumeOwed = <E, R>(
  config: TurnConfig<E, R>,
  journal: JournalService,
  turn: TurnState,
  history: History.History
) =>
  Effect.gen(function* () {
    const pending = History.unansweredCalls(history)
    yield* checkOwedCalls(journal.task, turn, pending)
    yield* journal.resumeTurn
    return yield* continueOpen(
      config,
      journal,
      { task: journal.task, turn: turn.turn, steps: turn.steps, answered: turn.answered && !turn.awaitingResponse },
      history,
      pending
    ).pipe(abandonOnInterrupt(journal, turn.turn))
  })

/**
 * What a resume checks before it writes anything: the history leaves
 * unanswered exactly the calls the journal owes (`ResumeMismatch`),
 * and each approved call still has the input the host approved
 * (`ApprovalInputMismatch`).
 */
const checkOwedCalls = (task: Ids.TaskId, turn: TurnState, pending: ReadonlyArray<ToolCallPart>) =>
  Effect.gen(function* () {
    const journalCalls = turn.owedCalls.map((call) => call.callId)
    const historyCalls = pending.map((call) => call.id)
    if (journalCalls.length !== historyCalls.length || journalCalls.some((id) => !historyCalls.includes(id))) {
      return yield* new ResumeMismatch({ task, turn: turn.turn, journalCalls, historyCalls })
    }
    yield* checkApprovedInputs({ task, turn: turn.turn, step: turn.steps }, turn.owedCalls, pending)
  })

const lastAssistantText = (history: History.History): string => {
  const last = history.parts.at(-1)
  return last !== undefined && last._tag === "Text" && last.role === "assistant" ? last.text : ""
}

/** After `TurnResumed`: close an answered turn, or dispatch the owed calls and go on with the next step. */
const continueOpen = <E, R>(
  config: TurnConfig<E, R>,
  journal: JournalService,
  turn: { readonly task: Ids.TaskId; readonly turn: number; readonly steps: number; readonly answered: boolean },
  history: History.History,
  pending: ReadonlyArray<ToolCallPart>
): Effect.Effect<TurnOutcome, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    if (turn.answered) {
      return yield* closeAnswered(config, journal, {
        turn: turn.turn,
        steps: turn.steps,
        history,
        text: lastAssistantText(history)
      })
    }
    const dispatched = yield* dispatchStep(config, { task: turn.task, turn: turn.turn, step: turn.steps }, pending)
    if (dispatched._tag === "Awaiting") {
      return yield* awaitingOutcome(config, {
        turn: turn.turn,
        steps: turn.steps,
        history,
        text: lastAssistantText(history),
        awaiting: dispatched.awaiting
      })
    }
    return yield* continueTurn(
      config,
      { task: turn.task, turn: turn.turn, firstStep: turn.steps + 1 },
      History.append(history, dispatched.results)
    )
  })
