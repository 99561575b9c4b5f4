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
import type * as Ids from "@tessera/core/Ids"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type { Entry } from "../JournalEntry.ts"

// The state's types are declared here and re-exported by `Journal` under the same names: the public module
// imports its internals, never the reverse.

/**
 * A call the model asked for that has no result yet. `called` is true once a
 * `ToolCalled` entry was written for it.
 *
 * @since 0.1.0
 * @category state
 */
export interface OwedCall {
  readonly callId: string
  readonly name: string
  readonly called: boolean
  /** Present once the call was put to the host for approval (`ApprovalRequested`), with the decision when made. */
  readonly approval?: CallApproval
}

/**
 * Where a call stands with the host's approval: `Requested` (waiting),
 * `Approved` (it runs when the turn continues) or `Rejected` (the model gets
 * an error result saying so); why it was asked (`reason`), the sequence
 * number of the request entry, and who decided, with their note.
 *
 * @since 0.1.0
 * @category state
 */
export interface CallApproval {
  readonly status: "Requested" | "Approved" | "Rejected"
  readonly reason: "Tool" | "InFlight" | "Delegated"
  readonly requestedSeq: number
  /** The digest of the input the host was asked about: an approved call runs with this input or not at all. */
  readonly inputSha256: string
  /**
   * The approval was spent: the call was called (`ToolCalled`) after it was
   * approved. A spent approval covers no second run: if no result
   * followed, the call is in flight like any other.
   */
  readonly spent: boolean
  readonly by?: string
  readonly note?: string
}

/**
 * What the journal knows about one turn.
 *
 * - `steps`: the turn's current step: model requests dispatched in it, less
 *   the lost requests a durable resume sent again under their own step.
 * - `awaitingResponse`: a request was dispatched and neither a response nor a failure followed.
 * - `owedCalls`: calls of the last response still without a result.
 * - `answered`: the last response asked for no tool calls.
 *
 * @since 0.1.0
 * @category state
 */
export interface TurnState {
  readonly turn: number
  readonly status: "Open" | "Closed" | "Abandoned"
  readonly steps: number
  readonly awaitingResponse: boolean
  readonly owedCalls: ReadonlyArray<OwedCall>
  readonly answered: boolean
  readonly toolResults: number
  readonly toolErrors: number
  readonly modelFailures: number
  readonly resumptions: number
  /** The current step, when its request failed (`ModelFailed`) and no request or resume followed yet. */
  readonly failedStep?: number
}

/**
 * The state rebuilt from a journal: every turn in order (only the last may
 * be open), how many entries the file holds, the last one, and every cut
 * recovered on reopen.
 *
 * @since 0.1.0
 * @category state
 */
export interface JournalState {
  readonly task: Ids.TaskId
  /**
   * The agent the task runs for: recorded by the first turn opened through
   * the gate (`TurnOpened.agent`), `undefined` before that and in journals
   * whose turns record none. Once recorded, only a binding of this agent is
   * admitted to the journal (`Unauthorized` `AgentMismatch`).
   */
  readonly agent: Ids.AgentId | undefined
  readonly entries: number
  readonly lastEntry: Option.Option<Entry>
  readonly turns: ReadonlyArray<TurnState>
  readonly truncations: ReadonlyArray<{ readonly line: number; readonly droppedBytes: number }>
  /** What the journal records about each summary key, by {@link summaryKey}. */
  readonly summaries: ReadonlyMap<string, SummaryRecord>
}

/**
 * What the journal records about one summary key: the inputs of the last
 * summary started for it, and the file staged for it, if any (both cleared
 * by a supersede).
 *
 * @since 0.1.0
 * @category state
 */
export interface SummaryRecord {
  readonly inputsSha256: string | undefined
  readonly staged: { readonly path: string; readonly size: number; readonly sha256: string } | undefined
}

/** The key of `JournalState.summaries` for an operation and step. */
export const summaryKey = (operation: string, step: number): string => `${operation}/${step}`

/** The open turn, if there is one (re-exported by `Journal` as `openTurn`). */
export const openTurn = (state: JournalState): Option.Option<TurnState> => {
  const last = state.turns.at(-1)
  return last !== undefined && last.status === "Open" ? Option.some(last) : Option.none()
}

export const emptyState = (task: Ids.TaskId): JournalState => ({
  task,
  entries: 0,
  lastEntry: Option.none(),
  agent: undefined,
  turns: [],
  truncations: [],
  summaries: new Map()
})

type Step = Result.Result<JournalState, string>

type Truncation = JournalState["truncations"][number]

/** What one entry changes besides the entry count and the last entry. */
type Change =
  | { readonly _tag: "None" }
  | { readonly _tag: "OpenTurnUpdated"; readonly turn: TurnState }
  | { readonly _tag: "TurnAdded"; readonly turn: TurnState; readonly agent: Ids.AgentId | undefined }
  | { readonly _tag: "TruncationAdded"; readonly truncation: Truncation }
  | { readonly _tag: "SummaryRecorded"; readonly key: string; readonly record: SummaryRecord }

/**
 * A change, or why the entry cannot follow. Reopening applies every entry of
 * a file through {@link transition}, so it returns plain values (a string
 * is the refusal) rather than a wrapper per entry.
 */
type Outcome = Change | string

/** The parts of a state a transition reads. */
type View = Pick<JournalState, "task" | "agent" | "turns" | "truncations" | "summaries">

const none: Change = { _tag: "None" }

const updated = (turn: TurnState): Change => ({ _tag: "OpenTurnUpdated", turn })

/** The open turn, which must be `turn`, or why there is none. */
const openTurnNamed = (state: View, turn: number): TurnState | string => {
  const last = state.turns.at(-1)
  if (last === undefined || last.status !== "Open") return `turn ${turn} is not open`
  if (last.turn !== turn) return `turn ${turn} is not the open turn (${last.turn})`
  return last
}

/**
 * The open turn `turn`, at its current step `step` and, when asked,
 * awaiting a response; or why not (checked in that order).
 */
const openTurnAt = (state: View, turn: number, step: number, awaitingResponse: boolean): TurnState | string => {
  const open = openTurnNamed(state, turn)
  if (typeof open === "string") return open
  if (awaitingResponse && !open.awaitingResponse) return "no request is awaiting a response"
  return step === open.steps ? open : `step ${step} is not the current step ${open.steps}`
}

/** The turn without its `failedStep` (a new request, or a resume, leaves the failure behind). */
const withoutFailedStep = (turn: TurnState): TurnState => {
  if (turn.failedStep === undefined) return turn
  const { failedStep: _, ...rest } = turn
  return rest
}

/**
 * The call `callId` the open turn owes, which must be for tool `name`, or
 * why there is none.
 */
const owedCallNamed = (open: TurnState, callId: string, name: string): OwedCall | string => {
  const owed = open.owedCalls.find((call) => call.callId === callId)
  if (owed === undefined) return `call ${callId} was not asked for or already has a result`
  if (owed.name !== name) return `call ${callId} is for "${owed.name}", not "${name}"`
  return owed
}

/** The turn with its owed call `callId` replaced by what `change` makes of it. */
const withOwedCall = (turn: TurnState, callId: string, change: (call: OwedCall) => OwedCall): TurnState => ({
  ...turn,
  owedCalls: turn.owedCalls.map((call) => (call.callId === callId ? change(call) : call))
})

const sharesAnId = (calls: ReadonlyArray<{ readonly callId: string }>): boolean => {
  for (let index = 1; index < calls.length; index++) {
    const id = calls[index]?.callId
    for (let earlier = 0; earlier < index; earlier++) if (calls[earlier]?.callId === id) return true
  }
  return false
}

const transition = (state: View, entry: Entry): Outcome => {
  switch (entry._tag) {
    case "TurnOpened": {
      if (entry.task !== state.task) return `the entry names task ${entry.task}, the journal is task ${state.task}`
      const last = state.turns.at(-1)
      if (last !== undefined && last.status === "Open") return `turn ${last.turn} is still open`
      if (entry.turn !== state.turns.length + 1) return `turn ${entry.turn} opened, expected ${state.turns.length + 1}`
      if (entry.agent !== undefined && state.agent !== undefined && entry.agent !== state.agent) {
        return `turn ${entry.turn} opened for agent ${entry.agent}, the journal is agent ${state.agent}'s`
      }
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
      return { _tag: "TurnAdded", turn: opened, agent: state.agent ?? entry.agent }
    }
    case "TurnResumed": {
      const open = openTurnNamed(state, entry.turn)
      if (typeof open === "string") return open
      const rest = withoutFailedStep(open)
      if (entry.retryStep !== undefined) {
        // The lost (or failed) request is sent again under its own step number.
        if (!open.awaitingResponse && open.failedStep !== entry.retryStep) {
          return `step ${entry.retryStep} is neither awaiting a response nor failed; nothing to retry`
        }
        if (entry.retryStep !== open.steps) return `step ${entry.retryStep} is not the current step ${open.steps}`
        return updated({
          ...rest,
          steps: open.steps - 1,
          awaitingResponse: false,
          resumptions: open.resumptions + 1
        })
      }
      return updated({ ...rest, awaitingResponse: false, resumptions: open.resumptions + 1 })
    }
    case "RequestDispatched": {
      const open = openTurnNamed(state, entry.turn)
      if (typeof open === "string") return open
      if (open.awaitingResponse) return `step ${open.steps} is still awaiting its response`
      if (open.owedCalls.length > 0)
        return `calls ${open.owedCalls.map((call) => call.callId).join(", ")} have no result yet`
      if (entry.step !== open.steps + 1) return `step ${entry.step} dispatched, expected ${open.steps + 1}`
      return updated({ ...withoutFailedStep(open), steps: entry.step, awaitingResponse: true, answered: false })
    }
    case "ResponseReceived": {
      const open = openTurnAt(state, entry.turn, entry.step, true)
      if (typeof open === "string") return open
      if (sharesAnId(entry.toolCalls)) return "two tool calls share an id"
      return updated({
        ...open,
        awaitingResponse: false,
        answered: entry.toolCalls.length === 0,
        owedCalls: entry.toolCalls.map((call) => ({ callId: call.callId, name: call.name, called: false }))
      })
    }
    case "ModelFailed": {
      const open = openTurnAt(state, entry.turn, entry.step, true)
      if (typeof open === "string") return open
      return updated({
        ...open,
        awaitingResponse: false,
        answered: false,
        modelFailures: open.modelFailures + 1,
        failedStep: entry.step
      })
    }
    case "ToolCalled": {
      const open = openTurnAt(state, entry.turn, entry.step, false)
      if (typeof open === "string") return open
      const owed = owedCallNamed(open, entry.callId, entry.name)
      if (typeof owed === "string") return owed
      if (owed.approval?.status === "Requested") return `call ${entry.callId} is awaiting approval`
      // A delegation runs again after either decision: it hands the decision to the children that asked.
      if (owed.approval?.status === "Rejected" && owed.approval.reason !== "Delegated") {
        return `call ${entry.callId} was rejected`
      }
      // Calling again is allowed: after a crash the earlier run's result was never recorded.
      return updated(
        withOwedCall(open, entry.callId, (call) =>
          call.approval !== undefined && call.approval.status !== "Requested"
            ? { ...call, called: true, approval: { ...call.approval, spent: true } }
            : { ...call, called: true }
        )
      )
    }
    case "ToolResulted": {
      const open = openTurnAt(state, entry.turn, entry.step, false)
      if (typeof open === "string") return open
      const owed = open.owedCalls.find((call) => call.callId === entry.callId)
      if (owed === undefined) return `call ${entry.callId} has no ToolCalled entry`
      if (!owed.called && owed.approval?.status !== "Rejected") return `call ${entry.callId} has no ToolCalled entry`
      if (owed.approval?.status === "Requested") return `call ${entry.callId} is awaiting approval`
      if (owed.name !== entry.name) return `call ${entry.callId} is for "${owed.name}", not "${entry.name}"`
      return updated({
        ...open,
        owedCalls: open.owedCalls.filter((call) => call.callId !== entry.callId),
        toolResults: open.toolResults + 1,
        toolErrors: open.toolErrors + (entry.isError ? 1 : 0)
      })
    }
    case "TurnClosed": {
      const open = openTurnNamed(state, entry.turn)
      if (typeof open === "string") return open
      if (open.awaitingResponse || open.owedCalls.length > 0 || !open.answered) {
        return `turn ${open.turn} is not finished`
      }
      if (entry.steps !== open.steps) return `turn ${open.turn} has ${open.steps} steps, not ${entry.steps}`
      return updated({ ...open, status: "Closed" })
    }
    case "TurnAbandoned": {
      const open = openTurnNamed(state, entry.turn)
      if (typeof open === "string") return open
      return updated({ ...open, status: "Abandoned" })
    }
    case "ApprovalRequested": {
      const open = openTurnAt(state, entry.turn, entry.step, false)
      if (typeof open === "string") return open
      const owed = owedCallNamed(open, entry.callId, entry.name)
      if (typeof owed === "string") return owed
      const status = owed.approval?.status
      if (status === "Requested") return `call ${entry.callId} is already awaiting approval`
      // A delegation asks again whenever a child asks anew, once the call ran after the last decision.
      if (entry.reason === "Delegated") {
        if (!owed.called) return `call ${entry.callId} was never called, so no child of it waits`
        if (owed.approval !== undefined && !owed.approval.spent) return `call ${entry.callId} has an unspent decision`
      } else if (status === "Rejected") return `call ${entry.callId} was rejected`
      if (entry.reason === "InFlight" && !owed.called)
        return `call ${entry.callId} was never called, so it is not in flight`
      if (entry.reason === "Tool" && (owed.called || status === "Approved")) {
        return `call ${entry.callId} was already called or approved`
      }
      return updated(
        withOwedCall(open, entry.callId, (call) => ({
          ...call,
          approval: {
            status: "Requested",
            reason: entry.reason,
            requestedSeq: entry.seq,
            inputSha256: entry.inputSha256,
            spent: false
          }
        }))
      )
    }
    case "ApprovalDecided": {
      const open = openTurnAt(state, entry.turn, entry.step, false)
      if (typeof open === "string") return open
      const owed = open.owedCalls.find((call) => call.callId === entry.callId)
      if (owed === undefined || owed.approval?.status !== "Requested") {
        return `call ${entry.callId} is not awaiting approval`
      }
      const requested = owed.approval
      return updated(
        withOwedCall(open, entry.callId, (call) => ({
          ...call,
          approval: {
            status: entry.approved ? "Approved" : "Rejected",
            reason: requested.reason,
            requestedSeq: requested.requestedSeq,
            inputSha256: requested.inputSha256,
            spent: false,
            by: entry.by,
            ...(entry.note === undefined ? {} : { note: entry.note })
          }
        }))
      )
    }
    case "TruncationRecovered":
      return { _tag: "TruncationAdded", truncation: { line: entry.line, droppedBytes: entry.droppedBytes } }
    case "SummaryStarted": {
      const key = summaryKey(entry.operation, entry.step)
      const known = state.summaries.get(key)
      if (known?.staged !== undefined) return `summary ${key} is staged already; supersede it first`
      return { _tag: "SummaryRecorded", key, record: { inputsSha256: entry.inputsSha256, staged: undefined } }
    }
    case "SummaryStaged": {
      const key = summaryKey(entry.operation, entry.step ?? 0)
      const known = state.summaries.get(key)
      if (known?.staged !== undefined && known.staged.sha256 !== entry.sha256) {
        return `summary ${key} is staged already with other content; supersede it first`
      }
      const staged = { path: entry.path, size: entry.size, sha256: entry.sha256 }
      return { _tag: "SummaryRecorded", key, record: { inputsSha256: known?.inputsSha256, staged } }
    }
    case "SummarySuperseded": {
      const key = summaryKey(entry.operation, entry.step)
      return { _tag: "SummaryRecorded", key, record: { inputsSha256: undefined, staged: undefined } }
    }
    case "Admission":
    case "Rejection":
    case "ArtifactOffloaded":
    case "ChildDelegated":
    case "ChildAnswered":
    case "CompactionWarning":
    case "JournalRepaired":
    case "SummaryRequestAnswered":
      return none
  }
}

const outOfSequence = (entry: Entry, entries: number): string | undefined =>
  entry.seq === entries ? undefined : `entry ${entry.seq} found where entry ${entries} belongs`

/** Applies one entry, or says why it cannot follow the state. */
export const advance = (state: JournalState, entry: Entry): Step => {
  const misplaced = outOfSequence(entry, state.entries)
  if (misplaced !== undefined) return Result.fail(misplaced)
  const change = transition(state, entry)
  if (typeof change === "string") return Result.fail(change)
  let turns = state.turns
  let agent = state.agent
  let truncations = state.truncations
  let summaries = state.summaries
  switch (change._tag) {
    case "OpenTurnUpdated":
      turns = state.turns.with(-1, change.turn)
      break
    case "TurnAdded":
      turns = [...state.turns, change.turn]
      agent = change.agent
      break
    case "TruncationAdded":
      truncations = [...state.truncations, change.truncation]
      break
    case "SummaryRecorded":
      summaries = new Map(state.summaries).set(change.key, change.record)
      break
    case "None":
      break
  }
  return Result.succeed({
    task: state.task,
    agent,
    entries: state.entries + 1,
    lastEntry: Option.some(entry),
    turns,
    truncations,
    summaries
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
  const summaries = new Map<string, SummaryRecord>()
  const view: { -readonly [K in keyof View]: View[K] } = { task, agent: undefined, turns, truncations, summaries }
  let entries = 0
  let last: Entry | undefined
  return {
    add: (entry) => {
      const misplaced = outOfSequence(entry, entries)
      if (misplaced !== undefined) return misplaced
      const change = transition(view, entry)
      if (typeof change === "string") return change
      switch (change._tag) {
        case "OpenTurnUpdated":
          turns[turns.length - 1] = change.turn
          break
        case "TurnAdded":
          turns.push(change.turn)
          view.agent = change.agent
          break
        case "TruncationAdded":
          truncations.push(change.truncation)
          break
        case "SummaryRecorded":
          summaries.set(change.key, change.record)
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
      agent: view.agent,
      entries,
      lastEntry: last === undefined ? Option.none() : Option.some(last),
      turns: turns.slice(),
      truncations: truncations.slice(),
      summaries: new Map(summaries)
    })
  }
}
