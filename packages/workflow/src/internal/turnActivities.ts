/**
 * The activities of a task's turn: opening it, each model step, asking for
 * approvals and resuming after them, each tool call (run or rejected), and
 * closing it. Each runs at least once and records at most once: it reads
 * the journal first and continues from what an earlier attempt left.
 *
 * @internal
 */
import type * as Delegation from "@tessera/runtime/Delegation"
import * as EntryGate from "@tessera/runtime/EntryGate"
import * as Executor from "@tessera/runtime/Executor"
import type * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Model from "@tessera/runtime/Model"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Activity from "effect/workflow/Activity"
import type * as Approval from "../Approval.ts"
import { TaskHosting, type TaskHostingShape } from "../TaskHosting.ts"
import * as ToolCallKey from "../ToolCallKey.ts"
import { openTurnOf, recordResponse, withJournal } from "./activityJournal.ts"
import { bindChildOf, type Offers, type TaskConfig, type TaskLevel } from "./delegation.ts"
import { approvalsOnly, deferResponse, toolView } from "./journalViews.ts"
import { inconsistent, TaskFailed } from "./taskFailed.ts"

const HistorySchema = Schema.Struct({
  task: Schema.Array(Model.Part),
  parts: Schema.Array(Model.Part),
  summary: Schema.optionalKey(Schema.Struct({ parts: Schema.Array(Model.Part), text: Schema.String }))
})

/** What a model step's activity returns, stored by the engine. */
export const StepResult = Schema.Struct({
  /** The journal's number for the step (one more per lost request). */
  step: Schema.Int,
  history: HistorySchema,
  response: Model.ModelResponse,
  /** The `ResponseReceived` the next activity records. */
  received: JournalEntry.Entry
})
/** What a model step's activity returns, stored by the engine. */
export type StepResult = typeof StepResult.Type

/**
 * An activity of `binding`'s task: `body` runs on the task's journal,
 * opened for this activity alone (`withJournal`), with the runner's
 * hosting; whatever it fails with is `TaskFailed`.
 */
const taskActivity = <
  Success extends Schema.Constraint,
  E extends { readonly _tag: string; readonly message: string },
  R
>(
  binding: EntryGate.TaskBinding,
  name: string,
  success: Success,
  body: (journal: Journal.JournalService, hosting: TaskHostingShape) => Effect.Effect<Success["Type"], E, R>
) =>
  Activity.make({
    name,
    success,
    error: TaskFailed,
    execute: withJournal(binding.context.task, (journal) =>
      Effect.gen(function* () {
        return yield* body(journal, yield* TaskHosting)
      })
    )
  })

/** Admits the turn at the gate and opens it; an attempt that runs again finds the turn its predecessor opened. */
export const openTurnActivity = ({ binding }: TaskLevel) =>
  taskActivity(binding, "turn/open", Schema.Int, (journal) =>
    Effect.gen(function* () {
      // The gate's view has no state: the task's own journal answers whose it is (and records the agent).
      yield* EntryGate.admitBinding(binding, "Turn").pipe(Effect.provideService(Journal.Journal, journal))
      const open = Journal.openTurn(yield* journal.state)
      // An earlier attempt opened it and the engine lost the record: this workflow owns the task's journal.
      if (Option.isSome(open)) return open.value.turn
      return (yield* journal.openTurn).turn
    })
  )

/**
 * One model step: the request is journaled, the response is not (the next
 * activity records it, see `deferResponse`). A request an earlier attempt
 * left unanswered is closed by `TurnResumed` first.
 */
export const modelStepActivity = (
  { binding, config }: TaskLevel,
  turn: number,
  index: number,
  history: History.History,
  attempt: number
) =>
  taskActivity(
    binding,
    attempt === 0 ? `turn/${turn}/model/${index}` : `turn/${turn}/model/${index}/retry/${attempt}`,
    StepResult,
    (journal) =>
      Effect.gen(function* () {
        const task = binding.context.task
        const open = yield* openTurnOf(task, yield* journal.state, turn)
        // An attempt that died with its request in flight: the request is lost, the step is dispatched again.
        if (open.awaitingResponse) yield* journal.resumeTurn
        if (open.owedCalls.length > 0) return yield* inconsistent(task, `turn ${turn} still owes tool results`)
        const step = open.steps + 1
        const deferred = deferResponse(journal)
        const outcome = yield* TaskExecution.modelStep(binding, config, { task, turn, step }, history).pipe(
          Effect.provideService(Journal.Journal, deferred.view)
        )
        const received = deferred.taken()
        if (Option.isNone(received)) return yield* inconsistent(task, `step ${step} received no response`)
        const result: StepResult = {
          step,
          history: outcome.history,
          response: outcome.response,
          received: received.value
        }
        return result
      })
  )

/**
 * What the journal holds of a call in `turn` that a re-run must not write
 * again: the digest of its result, if it recorded one, and the delegation
 * records (`ChildDelegated`, `ChildAnswered`) an earlier attempt of the same
 * run wrote. A delegation run again after the host's decision records its
 * children anew, as the local executor's does: only the records since the
 * call's last decision are this run's.
 */
const recordedOfCall = (journal: Journal.JournalService, hosting: TaskHostingShape, turn: number, callId: string) =>
  Effect.map(Journal.readEntries({ folder: hosting.journalFolder, task: journal.task }), (entries) => {
    const ofCall = entries.filter((entry) => "callId" in entry && entry.turn === turn && entry.callId === callId)
    const found = ofCall.findLast((entry) => entry._tag === "ToolResulted")
    const decided = ofCall.findLastIndex((entry) => entry._tag === "ApprovalDecided")
    return {
      result: found?._tag === "ToolResulted" ? Option.some(found.sha256) : Option.none<string>(),
      children: ofCall
        .slice(decided + 1)
        .filter((entry) => entry._tag === "ChildDelegated" || entry._tag === "ChildAnswered")
    }
  })

/** The name of a call's activity, and of a delegate call's collect activity. */
const toolActivityName = (turn: number, step: number, callId: string, collect: boolean) =>
  collect ? `turn/${turn}/tool/${step}/${callId}/collect` : `turn/${turn}/tool/${step}/${callId}`

/**
 * One tool call, with its idempotency key (`ToolCallKey`). A call an
 * earlier attempt already recorded runs again without being recorded again,
 * and must give the recorded result (`toolView`); a delegation record an
 * earlier attempt wrote is not written again.
 *
 * Calls run through `dispatchTools`: a call an interrupted attempt left in
 * flight runs again under its key (activities run at least once), rather
 * than being put to the host as `InFlight`. A delegate call reaches it only
 * to be collected (its children ran as workflows of their own) or when its
 * plan refused the input (the tool gives the `InvalidInput` result): it
 * never waits.
 */
const toolActivity = (
  { binding, config }: TaskLevel,
  turn: number,
  step: StepResult,
  call: Model.ToolCallPart,
  collect?: TaskConfig
) =>
  taskActivity(
    binding,
    toolActivityName(turn, step.step, call.id, collect !== undefined),
    Model.ToolResultPart,
    (journal, hosting) =>
      Effect.gen(function* () {
        const task = binding.context.task
        yield* recordResponse(task, journal, step.received)
        const open = yield* openTurnOf(task, yield* journal.state, turn)
        const owedCall = open.owedCalls.find((owedCall) => owedCall.callId === call.id)
        const owed = owedCall !== undefined
        // A call not called yet has nothing in the journal to find: only a re-run reads it.
        const earlier =
          owedCall !== undefined && !owedCall.called
            ? { result: Option.none<string>(), children: [] }
            : yield* recordedOfCall(journal, hosting, turn, call.id)
        const recorded = owed ? Option.none<string>() : earlier.result
        if (!owed && Option.isNone(recorded)) {
          return yield* inconsistent(task, `call ${call.id} is neither owed nor recorded in turn ${turn}`)
        }
        const view = toolView(
          journal,
          call.id,
          recorded,
          earlier.children,
          (detail) => new TaskFailed({ task, reason: "ToolResultChanged", detail })
        )
        const identity = { task, turn, step: step.step, callId: call.id }
        const key = yield* Activity.idempotencyKey(ToolCallKey.nameOf(identity))
        const context = { task, turn, step: step.step }
        const ran = yield* TaskExecution.dispatchTools(binding, collect ?? config, context, [call]).pipe(
          Effect.provideService(Journal.Journal, view),
          ToolCallKey.provide(key, identity)
        )
        const result = ran[0]
        if (result === undefined) return yield* inconsistent(task, `call ${call.id} gave no result`)
        return result
      })
  )

/**
 * Puts the step's calls that need the host's approval to the host: records
 * the step's response, then journals `ApprovalRequested` for every call
 * whose tool needs approval for its input, through the runtime's own
 * `dispatchStep` (so the records are the local executor's), on a journal
 * that refuses anything else (nothing runs here). Returns the ids of the
 * step's calls put to the host, in the model's order; an attempt that runs
 * again finds the requests an earlier one wrote and does not repeat them.
 */
export const approvalsActivity = ({ binding, config }: TaskLevel, turn: number, step: StepResult) =>
  taskActivity(binding, `turn/${turn}/approvals/${step.step}`, Schema.Array(Schema.String), (journal) =>
    Effect.gen(function* () {
      const task = binding.context.task
      yield* recordResponse(task, journal, step.received)
      const calls = step.response.toolCalls
      const owedOf = (open: Journal.TurnState) => new Map(open.owedCalls.map((owed) => [owed.callId, owed]))
      const before = owedOf(yield* openTurnOf(task, yield* journal.state, turn))
      const toAsk: Array<Model.ToolCallPart> = []
      for (const call of calls) {
        const owed = before.get(call.id)
        if (owed === undefined || owed.called || owed.approval !== undefined) continue
        // The `delegate` tool needs the journal to run, never to say whether a call needs approval.
        const asks = Tool.needsApproval(config.tools, call).pipe(Effect.provideService(Journal.Journal, journal))
        if (yield* asks) toAsk.push(call)
      }
      if (toAsk.length > 0) {
        const view = approvalsOnly(journal, (detail) => inconsistent(task, detail))
        const dispatched = yield* TaskExecution.dispatchStep(
          binding,
          config,
          { task, turn, step: step.step },
          toAsk
        ).pipe(Effect.provideService(Journal.Journal, view))
        if (dispatched._tag !== "Awaiting") return yield* inconsistent(task, `step ${step.step} asked for no approval`)
      }
      const after = owedOf(yield* openTurnOf(task, yield* journal.state, turn))
      return calls.filter((call) => after.get(call.id)?.approval !== undefined).map((call) => call.id)
    })
  )

/**
 * After every call put to the host is decided: checks that the journal
 * holds each decision (a deferred completed without `decide`'s record gets
 * its `ApprovalDecided` here, behind the gate), then journals
 * `TurnResumed`, once, as the local executor's resume does. `round` 0
 * follows the step's approvals; round n follows the decisions on the
 * delegations that waited in the step's n-th run of its calls.
 */
export const resumeActivity = (
  { binding }: TaskLevel,
  turn: number,
  step: StepResult,
  decisions: ReadonlyArray<readonly [string, Approval.Decision]>
) =>
  taskActivity(binding, `turn/${turn}/resume/${step.step}`, Schema.Void, (journal, hosting) =>
    Effect.gen(function* () {
      const task = binding.context.task
      for (const [callId, decision] of decisions) {
        const open = yield* openTurnOf(task, yield* journal.state, turn)
        const approval = open.owedCalls.find((owed) => owed.callId === callId)?.approval
        if (approval === undefined) {
          return yield* inconsistent(task, `call ${callId} of turn ${turn} is not awaiting a decision`)
        }
        if (approval.status === "Requested") {
          yield* TaskExecution.decide(binding, { callId, ...decision }).pipe(
            Effect.provideService(Journal.Journal, journal)
          )
        } else if ((approval.status === "Approved") !== decision.approved || approval.by !== decision.by) {
          return yield* inconsistent(
            task,
            `the journal's decision on call ${callId} (${approval.status} by ${approval.by}) is not the one the workflow received`
          )
        }
      }
      const entries = yield* Journal.readEntries({ folder: hosting.journalFolder, task })
      const lastDecided = entries.findLastIndex((entry) => entry._tag === "ApprovalDecided" && entry.turn === turn)
      const resumed = entries
        .slice(lastDecided + 1)
        .some((entry) => entry._tag === "TurnResumed" && entry.turn === turn)
      if (!resumed) yield* journal.resumeTurn
    })
  )

/**
 * A rejected call: the model gets the `Rejected` error result the local
 * executor gives (`dispatchStep` journals it; the tool never runs). An
 * attempt that runs again after the result was recorded rebuilds the same
 * result from the journal's approval records and writes nothing.
 */
const rejectActivity = ({ binding, config }: TaskLevel, turn: number, step: StepResult, call: Model.ToolCallPart) =>
  taskActivity(binding, `turn/${turn}/reject/${step.step}/${call.id}`, Model.ToolResultPart, (journal, hosting) =>
    Effect.gen(function* () {
      const task = binding.context.task
      const open = yield* openTurnOf(task, yield* journal.state, turn)
      const owed = open.owedCalls.find((owedCall) => owedCall.callId === call.id)
      if (owed !== undefined) {
        if (owed.approval?.status !== "Rejected") {
          return yield* inconsistent(task, `call ${call.id} of turn ${turn} is not rejected in the journal`)
        }
        const dispatched = yield* TaskExecution.dispatchStep(binding, config, { task, turn, step: step.step }, [
          call
        ]).pipe(Effect.provideService(Journal.Journal, journal))
        const result = dispatched._tag === "Results" ? dispatched.results[0] : undefined
        if (result === undefined) return yield* inconsistent(task, `rejected call ${call.id} gave no result`)
        return result
      }
      const entries = yield* Journal.readEntries({ folder: hosting.journalFolder, task })
      const ofCall = entries.filter((entry) => "callId" in entry && entry.callId === call.id && entry.turn === turn)
      const requested = ofCall.findLast((entry) => entry._tag === "ApprovalRequested")
      const decided = ofCall.findLast((entry) => entry._tag === "ApprovalDecided")
      const resulted = ofCall.findLast((entry) => entry._tag === "ToolResulted")
      if (
        requested?._tag !== "ApprovalRequested" ||
        decided?._tag !== "ApprovalDecided" ||
        decided.approved ||
        resulted?._tag !== "ToolResulted" ||
        resulted.failure !== "Rejected"
      ) {
        return yield* inconsistent(task, `call ${call.id} of turn ${turn} has no recorded rejection`)
      }
      const approval: Journal.CallApproval = {
        status: "Rejected",
        reason: requested.reason,
        requestedSeq: requested.seq,
        inputSha256: requested.inputSha256,
        spent: false,
        by: decided.by,
        ...(decided.note === undefined ? {} : { note: decided.note })
      }
      return Model.toolResult({
        callId: call.id,
        name: call.name,
        content: Executor.rejectionText(call, approval),
        isError: true
      })
    })
  )

/**
 * One call of a step, as the host decided it: run ({@link toolActivity}),
 * or, when the host rejected it, answered with the rejection
 * ({@link rejectActivity}).
 */
export const callActivity = (
  level: TaskLevel,
  turn: number,
  step: StepResult,
  call: Model.ToolCallPart,
  rejected: boolean
): Effect.Effect<Model.ToolResultPart, TaskFailed, Effect.Services<ReturnType<typeof toolActivity>>> =>
  rejected ? rejectActivity(level, turn, step, call) : toolActivity(level, turn, step, call)

/**
 * A delegate call's last activity, once its children's workflows ended:
 * the call dispatched as any call (`ToolCalled`, `ToolResulted`, offload,
 * its key), through `collect`, the task's configuration with `delegate`
 * replaced by the collecting tool (`collectingTool`), which receives each
 * child's answer into the parent.
 */
export const collectActivity = (
  level: TaskLevel,
  turn: number,
  step: StepResult,
  call: Model.ToolCallPart,
  collect: TaskConfig
): Effect.Effect<Model.ToolResultPart, TaskFailed, Effect.Services<ReturnType<typeof toolActivity>>> =>
  toolActivity(level, turn, step, call, collect)

/**
 * A delegate call's first activity: records the step's response (unless an
 * earlier activity did), then `ChildDelegated` for every sub-task, each
 * child bound first (`Offers.delegated` refuses a binding of another task),
 * under the parent's lock. A re-run finds the records an earlier attempt
 * wrote and does not write them again.
 */
export const delegateStartActivity = (
  { binding }: TaskLevel,
  offers: Offers,
  turn: number,
  step: StepResult,
  call: Model.ToolCallPart,
  subTasks: ReadonlyArray<Delegation.SubTask>
) =>
  taskActivity(binding, `turn/${turn}/tool/${step.step}/${call.id}/start`, Schema.Void, (journal, hosting) =>
    Effect.gen(function* () {
      const task = binding.context.task
      yield* recordResponse(task, journal, step.received)
      const earlier = yield* recordedOfCall(journal, hosting, turn, call.id)
      const view = toolView(journal, call.id, Option.none(), earlier.children, (detail) => inconsistent(task, detail))
      const position = { task, turn, step: step.step, callId: call.id }
      for (const subTask of subTasks) {
        const child = yield* bindChildOf(binding, subTask)
        yield* offers.delegated(view, position, subTask, child)
      }
    })
  )

/** Records the last step's response and closes the turn; an attempt that runs again finds it closed. */
export const closeTurnActivity = ({ binding }: TaskLevel, turn: number, step: StepResult) =>
  taskActivity(binding, `turn/${turn}/close`, Schema.Void, (journal) =>
    Effect.gen(function* () {
      yield* recordResponse(binding.context.task, journal, step.received)
      const open = Journal.openTurn(yield* journal.state)
      if (Option.isSome(open) && open.value.turn === turn) yield* journal.closeTurn
    })
  )
