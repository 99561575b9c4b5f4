/**
 * The journal's transition function. The same function guards every append
 * and replays the file on reopen, which is what makes a reopened journal's
 * state equal to the writer's.
 *
 * {@link transition} says what an entry changes; {@link advance} applies
 * that to an immutable state (appends, whose states are handed out), and
 * {@link makeReplay} applies it in place to one private state (reopen, where
 * no intermediate state is ever seen), so replaying a long journal does not
 * copy the list of turns once per entry.
 */
import type { Ids } from "@tessera/core"
import { Option, Result } from "effect"
import type { Entry, JournalState, TurnState } from "../Journal.ts"

export const emptyState = (task: Ids.TaskId): JournalState => ({
  task,
  entries: 0,
  lastEntry: Option.none(),
  turns: [],
  truncations: []
})

type Step = Result.Result<JournalState, string>

type Truncation = JournalState["truncations"][number]

/** What one entry changes besides the entry count and the last entry. */
type Change =
  | { readonly _tag: "None" }
  | { readonly _tag: "OpenTurnUpdated"; readonly turn: TurnState }
  | { readonly _tag: "TurnAdded"; readonly turn: TurnState }
  | { readonly _tag: "TruncationAdded"; readonly truncation: Truncation }

/** The parts of a state a transition reads. */
type View = Pick<JournalState, "task" | "turns" | "truncations">

const none: Result.Result<Change, string> = Result.succeed({ _tag: "None" })

const withTurn = (
  state: View,
  turn: number,
  update: (open: TurnState) => Result.Result<TurnState, string>
): Result.Result<Change, string> => {
  const last = state.turns.at(-1)
  if (last === undefined || last.status !== "Open") return Result.fail(`turn ${turn} is not open`)
  if (last.turn !== turn) return Result.fail(`turn ${turn} is not the open turn (${last.turn})`)
  return Result.map(update(last), (next): Change => ({ _tag: "OpenTurnUpdated", turn: next }))
}

const requireStep = (open: TurnState, step: number): Result.Result<void, string> =>
  step === open.steps ? Result.succeed(undefined) : Result.fail(`step ${step} is not the current step ${open.steps}`)

const transition = (state: View, entry: Entry): Result.Result<Change, string> => {
  switch (entry._tag) {
    case "TurnOpened": {
      if (entry.task !== state.task)
        return Result.fail(`the entry names task ${entry.task}, the journal is task ${state.task}`)
      const last = state.turns.at(-1)
      if (last !== undefined && last.status === "Open") return Result.fail(`turn ${last.turn} is still open`)
      if (entry.turn !== state.turns.length + 1)
        return Result.fail(`turn ${entry.turn} opened, expected ${state.turns.length + 1}`)
      const opened: TurnState = {
        turn: entry.turn,
        status: "Open",
        steps: 0,
        awaitingResponse: false,
        owedCalls: [],
        answered: false,
        toolResults: 0,
        toolErrors: 0,
        modelFailures: 0,
        resumptions: 0
      }
      return Result.succeed({ _tag: "TurnAdded", turn: opened })
    }
    case "TurnResumed":
      return withTurn(state, entry.turn, (open) =>
        Result.succeed({ ...open, awaitingResponse: false, resumptions: open.resumptions + 1 })
      )
    case "RequestDispatched":
      return withTurn(state, entry.turn, (open) => {
        if (open.awaitingResponse) return Result.fail(`step ${open.steps} is still awaiting its response`)
        if (open.owedCalls.length > 0) {
          return Result.fail(`calls ${open.owedCalls.map((call) => call.callId).join(", ")} have no result yet`)
        }
        if (entry.step !== open.steps + 1)
          return Result.fail(`step ${entry.step} dispatched, expected ${open.steps + 1}`)
        return Result.succeed({ ...open, steps: entry.step, awaitingResponse: true, answered: false })
      })
    case "ResponseReceived":
      return withTurn(state, entry.turn, (open) => {
        if (!open.awaitingResponse) return Result.fail("no request is awaiting a response")
        return Result.flatMap(requireStep(open, entry.step), () => {
          const ids = new Set(entry.toolCalls.map((call) => call.callId))
          if (ids.size !== entry.toolCalls.length) return Result.fail("two tool calls share an id")
          return Result.succeed({
            ...open,
            awaitingResponse: false,
            answered: entry.toolCalls.length === 0,
            owedCalls: entry.toolCalls.map((call) => ({ callId: call.callId, name: call.name, called: false }))
          })
        })
      })
    case "ModelFailed":
      return withTurn(state, entry.turn, (open) => {
        if (!open.awaitingResponse) return Result.fail("no request is awaiting a response")
        return Result.map(requireStep(open, entry.step), () => ({
          ...open,
          awaitingResponse: false,
          answered: false,
          modelFailures: open.modelFailures + 1
        }))
      })
    case "ToolCalled":
      return withTurn(state, entry.turn, (open) =>
        Result.flatMap(requireStep(open, entry.step), () => {
          const owed = open.owedCalls.find((call) => call.callId === entry.callId)
          if (owed === undefined) return Result.fail(`call ${entry.callId} was not asked for or already has a result`)
          if (owed.name !== entry.name)
            return Result.fail(`call ${entry.callId} is for "${owed.name}", not "${entry.name}"`)
          // Calling again is allowed: after a crash the earlier run's result was never recorded.
          return Result.succeed({
            ...open,
            owedCalls: open.owedCalls.map((call) => (call.callId === entry.callId ? { ...call, called: true } : call))
          })
        })
      )
    case "ToolResulted":
      return withTurn(state, entry.turn, (open) =>
        Result.flatMap(requireStep(open, entry.step), () => {
          const owed = open.owedCalls.find((call) => call.callId === entry.callId)
          if (owed === undefined || !owed.called) return Result.fail(`call ${entry.callId} has no ToolCalled entry`)
          if (owed.name !== entry.name)
            return Result.fail(`call ${entry.callId} is for "${owed.name}", not "${entry.name}"`)
          return Result.succeed({
            ...open,
            owedCalls: open.owedCalls.filter((call) => call.callId !== entry.callId),
            toolResults: open.toolResults + 1,
            toolErrors: open.toolErrors + (entry.isError ? 1 : 0)
          })
        })
      )
    case "TurnClosed":
      return withTurn(state, entry.turn, (open) => {
        if (open.awaitingResponse || open.owedCalls.length > 0 || !open.answered) {
          return Result.fail(`turn ${open.turn} is not finished`)
        }
        if (entry.steps !== open.steps)
          return Result.fail(`turn ${open.turn} has ${open.steps} steps, not ${entry.steps}`)
        return Result.succeed({ ...open, status: "Closed" })
      })
    case "TurnAbandoned":
      return withTurn(state, entry.turn, (open) => Result.succeed({ ...open, status: "Abandoned" }))
    case "TruncationRecovered":
      return Result.succeed({
        _tag: "TruncationAdded",
        truncation: { line: entry.line, droppedBytes: entry.droppedBytes }
      })
    case "Admission":
    case "Rejection":
    case "SummaryStaged":
    case "ArtifactOffloaded":
      return none
  }
}

const outOfSequence = (entry: Entry, entries: number): string | undefined =>
  entry.seq === entries ? undefined : `entry ${entry.seq} found where entry ${entries} belongs`

/** Applies one entry, or says why it cannot follow the state. */
export const advance = (state: JournalState, entry: Entry): Step => {
  const misplaced = outOfSequence(entry, state.entries)
  if (misplaced !== undefined) return Result.fail(misplaced)
  return Result.map(transition(state, entry), (change) => {
    let turns = state.turns
    let truncations = state.truncations
    switch (change._tag) {
      case "OpenTurnUpdated":
        turns = state.turns.with(-1, change.turn)
        break
      case "TurnAdded":
        turns = [...state.turns, change.turn]
        break
      case "TruncationAdded":
        truncations = [...state.truncations, change.truncation]
        break
      case "None":
        break
    }
    return { task: state.task, entries: state.entries + 1, lastEntry: Option.some(entry), turns, truncations }
  })
}

/**
 * A fold for replaying a file: `add` applies each entry in order through
 * the same checks and transition as {@link advance} (returning why an entry
 * cannot follow, and then changing nothing), and `state` gives the state
 * after the entries added so far, equal to folding them with `advance`.
 */
export interface Replay {
  readonly add: (entry: Entry) => string | undefined
  readonly state: () => JournalState
}

export const makeReplay = (task: Ids.TaskId): Replay => {
  const turns: Array<TurnState> = []
  const truncations: Array<Truncation> = []
  const view: View = { task, turns, truncations }
  let entries = 0
  let last: Entry | undefined
  return {
    add: (entry) => {
      const misplaced = outOfSequence(entry, entries)
      if (misplaced !== undefined) return misplaced
      const next = transition(view, entry)
      if (Result.isFailure(next)) return next.failure
      const change = next.success
      switch (change._tag) {
        case "OpenTurnUpdated":
          turns[turns.length - 1] = change.turn
          break
        case "TurnAdded":
          turns.push(change.turn)
          break
        case "TruncationAdded":
          truncations.push(change.truncation)
          break
        case "None":
          break
      }
      entries += 1
      last = entry
      return undefined
    },
    state: () => ({
      task,
      entries,
      lastEntry: last === undefined ? Option.none() : Option.some(last),
      turns: turns.slice(),
      truncations: truncations.slice()
    })
  }
}
