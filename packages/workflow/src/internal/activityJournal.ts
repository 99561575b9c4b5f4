/**
 * The task's journal as one activity holds it: opened for that activity
 * only, under the task's lock, and the checks every activity makes of it
 * before it goes on.
 *
 * @internal
 */
import type * as Ids from "@tessera/core/Ids"
import * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { TaskHosting } from "../TaskHosting.ts"
import { TaskLock } from "../TaskLock.ts"
import { failedWith, inconsistent, TaskFailed } from "./taskFailed.ts"

/**
 * The task's journal for one activity. An activity of this task that is
 * still unwinding in this process (the engine replays a workflow's body
 * while an earlier run's activity finishes) holds the journal for a moment:
 * the open waits for it (`TaskInUse` held by this process), up to 10 s.
 */
export const openJournal = (folder: string, task: Ids.TaskId) =>
  Journal.open({ folder, task }).pipe(
    Effect.retry({
      while: (error) => error._tag === "TaskInUse" && error.holder === "this process",
      schedule: Schedule.spaced("50 millis"),
      times: 200
    })
  )

/** Runs `body` with the task's journal open for this activity only, under the task's lock (`TaskLock`). */
export const withJournal = <A, E extends { readonly _tag: string; readonly message: string }, R>(
  task: Ids.TaskId,
  body: (journal: Journal.JournalService) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const hosting = yield* TaskHosting
    const lock = yield* TaskLock
    return yield* lock.withLock(task, Effect.scoped(Effect.flatMap(openJournal(hosting.journalFolder, task), body)))
  }).pipe(
    // A re-run that would record another result than the first attempt dies with `TaskFailed` (journal views).
    Effect.catchDefect((defect) => (defect instanceof TaskFailed ? Effect.fail(defect) : Effect.die(defect))),
    Effect.mapError(failedWith(task))
  )

/** The journal's open turn, which must be `turn`: any other is a journal the workflow's results do not describe. */
export const openTurnOf = (task: Ids.TaskId, state: Journal.JournalState, turn: number) => {
  const open = Journal.openTurn(state)
  return Option.isSome(open) && open.value.turn === turn
    ? Effect.succeed(open.value)
    : Effect.fail(inconsistent(task, `turn ${turn} is not the open turn of the journal`))
}

/** Records the response an earlier activity received, unless an earlier attempt of this one did. */
export const recordResponse = (task: Ids.TaskId, journal: Journal.JournalService, received: JournalEntry.Entry) =>
  Effect.gen(function* () {
    if (received._tag !== "ResponseReceived")
      return yield* inconsistent(task, `expected a response, got ${received._tag}`)
    const open = yield* openTurnOf(task, yield* journal.state, received.turn)
    if (open.steps === received.step && open.awaitingResponse) {
      const { seq: _seq, at: _at, ...input } = received
      yield* journal.append(input)
      return
    }
    if (open.steps === received.step) return
    return yield* inconsistent(task, `step ${received.step} is not the journal's current step ${open.steps}`)
  })
