/**
 * The journal's transition function. The same function guards every append
 * and replays the file on reopen, which is what makes a reopened journal's
 * state equal to the writer's.
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

const withTurn = (
  state: JournalState,
  turn: number,
  update: (open: TurnState) => Result.Result<TurnState, string>
): Step => {
  const last = state.turns.at(-1)
  if (last === undefined || last.status !== "Open") return Result.fail(`turn ${turn} is not open`)
  if (last.turn !== turn) return Result.fail(`turn ${turn} is not the open turn (${last.turn})`)
  return Result.map(update(last), (next) => ({ ...state, turns: [...state.turns.slice(0, -1), next] }))
}

const requireStep = (open: TurnState, step: number): Result.Result<void, string> =>
  step === open.steps ? Result.succeed(undefined) : Result.fail(`step ${step} is not the current step ${open.steps}`)

const transition = (state: JournalState, entry: Entry): Step => {
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
      return Result.succeed({ ...state, turns: [...state.turns, opened] })
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
        ...state,
        truncations: [...state.truncations, { line: entry.line, droppedBytes: entry.droppedBytes }]
      })
    case "Admission":
    case "Rejection":
    case "SummaryStaged":
    case "ArtifactOffloaded":
      return Result.succeed(state)
  }
}

/** Applies one entry, or says why it cannot follow the state. */
export const advance = (state: JournalState, entry: Entry): Step => {
  if (entry.seq !== state.entries) return Result.fail(`entry ${entry.seq} found where entry ${state.entries} belongs`)
  return Result.map(transition(state, entry), (next) => ({
    ...next,
    entries: state.entries + 1,
    lastEntry: Option.some(entry)
  }))
}
