/**
 * A Tessera task as a durable workflow on Effect's workflow engine
 * (`effect/workflow`): one turn, each model step and each tool call an
 * activity, so a task survives the process (or machine) running it and
 * resumes on another runner from the results the engine stored.
 *
 * The same pieces as the local executor run inside the activities
 * (`TaskExecution.modelStep`, `TaskExecution.dispatchTools`: the entry gate,
 * compaction with its capability-checked summaries, offload, inline limits)
 * against the same journal, and the journal ends with the same records a
 * local turn leaves. What the workflow adds:
 *
 * - **Gate before the first activity.** The body binds the task
 *   (`TaskHosting.bindTask`, i.e. `EntryGate.bind`), runs `EntryGate.verify`
 *   against the task's journal, and resolves the private writer when offload
 *   is private, before any activity: a refusal is {@link TaskFailed} with no
 *   model request and no journal entry.
 * - **Activities run at least once, records at most once.** Each activity
 *   reads the journal first and continues from what it finds: a request an
 *   interrupted attempt left unanswered is closed by `TurnResumed` (counted as
 *   lost, as `Executor.resumeTurn` does) and the step is dispatched again; a
 *   response is recorded (`ResponseReceived`) only by the activity after the
 *   one that received it, once the engine stored the response, so the
 *   journal never records a response whose body nobody kept; a tool call an
 *   earlier attempt already recorded is not recorded again.
 * - **Idempotency keys.** Every tool call runs with a key
 *   (`Activity.idempotencyKey` over the task's execution, the turn, the step
 *   and the call id), readable by the tool through `ToolCallKey.current`.
 * - **Idempotent staging and offload.** A summary staged again with the same
 *   bytes is the same summary (`PrivateStaging.stageOnce`: `AlreadyStaged`)
 *   and other bytes fail `StagingConflict`; an artifact offloaded again with
 *   the same bytes is reused, and a re-run call that produced other bytes
 *   than an earlier attempt (offloaded, or recorded by digest) fails the
 *   task `TaskFailed` with reason `ToolResultChanged`, before it is recorded.
 *
 * - **Approvals wait durably.** A step whose calls need the host's approval
 *   (`Tool.needsApproval`) journals them `ApprovalRequested` (the runtime's
 *   `dispatchStep`, on a view that runs nothing) and suspends on one
 *   `DurableDeferred` per call (`Approval.deferredOf`) until {@link decide}
 *   journals `ApprovalDecided` and completes it; then `TurnResumed`, the
 *   approved calls run and the rejected ones give the model the runtime's
 *   `Rejected` result. The journal is the local executor's for the same
 *   decisions.
 * - **One writer per journal.** Every activity opens the task's journal
 *   under `TaskLock` (on the cluster, a Postgres advisory lock on the task),
 *   so an activity still running on a runner that lost the task and its
 *   re-run on the new owner never write the journal at once.
 *
 * Runs on any `WorkflowEngine`: `WorkflowEngine.layerMemory` in one process
 * (no database, {@link layerMemory}), or the cluster (`Cluster.layer`,
 * Postgres).
 *
 * @since 0.1.0
 */
import * as Ids from "@tessera/core/Ids"
import * as EntryGate from "@tessera/runtime/EntryGate"
import * as Executor from "@tessera/runtime/Executor"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Model from "@tessera/runtime/Model"
import * as PrivateSummaries from "@tessera/runtime/PrivateSummaries"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Activity from "effect/workflow/Activity"
import * as DurableClock from "effect/workflow/DurableClock"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import * as Workflow from "effect/workflow/Workflow"
import * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as Approval from "./Approval.ts"
import { approvalsOnly, deferResponse, toolView } from "./internal/journalViews.ts"
import { TaskHosting } from "./TaskHosting.ts"
import { TaskLock } from "./TaskLock.ts"
import * as ToolCallKey from "./ToolCallKey.ts"

/**
 * What starts a task: its id (one workflow execution per task id) and the
 * user's request.
 *
 * @since 0.1.0
 * @category models
 */
export const TaskRequest = Schema.Struct({
  task: Ids.TaskId,
  prompt: Schema.String
})

/**
 * How a task ended: its turn, the model steps the journal counted (lost
 * requests included), and the model's final answer.
 *
 * @since 0.1.0
 * @category models
 */
export const TaskAnswer = Schema.Struct({
  task: Ids.TaskId,
  turn: Schema.Int,
  steps: Schema.Int,
  text: Schema.String
})

/**
 * @since 0.1.0
 * @category models
 */
export type TaskAnswer = typeof TaskAnswer.Type

/**
 * The task failed: `reason` is the tag of the error that ended it
 * (`Unauthorized` from the gate, `ModelError`, `StepLimitExceeded`,
 * `StagingConflict`, `ToolResultChanged`, `JournalCorrupt`, ...) and
 * `detail` its message. Stored by the engine like a result.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskFailed extends Schema.TaggedError<TaskFailed>()("TaskFailed", {
  task: Schema.String,
  reason: Schema.String,
  detail: Schema.String,
  /** For `reason` `ModelError`: the model error's own reason. */
  modelReason: Schema.optionalKey(Model.ModelErrorReason)
}) {
  override get message(): string {
    return `task ${this.task} failed (${this.reason}): ${this.detail}`
  }
}

/**
 * The workflow: one execution per task id.
 *
 * @since 0.1.0
 * @category workflows
 */
export const TaskWorkflow = Workflow.make("TesseraTask", {
  payload: TaskRequest,
  success: TaskAnswer,
  error: TaskFailed,
  idempotencyKey: (request) => request.task
})

const HistorySchema = Schema.Struct({
  task: Schema.Array(Model.Part),
  parts: Schema.Array(Model.Part),
  summary: Schema.optionalKey(Schema.Struct({ parts: Schema.Array(Model.Part), text: Schema.String }))
})

const StepResult = Schema.Struct({
  /** The journal's number for the step (one more per lost request). */
  step: Schema.Int,
  history: HistorySchema,
  response: Model.ModelResponse,
  /** The `ResponseReceived` the next activity records. */
  received: JournalEntry.Entry
})
type StepResult = typeof StepResult.Type

const failedWith =
  (task: string) =>
  (error: { readonly _tag: string; readonly message: string }): TaskFailed =>
    error instanceof TaskFailed
      ? error
      : new TaskFailed({
          task,
          reason: error._tag,
          detail: error.message,
          ...(error instanceof Model.ModelError ? { modelReason: error.reason } : {})
        })

/** Model errors worth sending the step again for: the provider or the time limit, not a bad response. */
const transient = (failed: TaskFailed): boolean =>
  failed.reason === "ModelError" && (failed.modelReason === "ProviderFailure" || failed.modelReason === "Timeout")

/**
 * The task's journal for one activity. An activity of this task that is
 * still unwinding in this process (the engine replays a workflow's body
 * while an earlier run's activity finishes) holds the journal for a moment:
 * the open waits for it (`TaskInUse` held by this process), up to 10 s.
 */
const openJournal = (folder: string, task: Ids.TaskId) =>
  Journal.open({ folder, task }).pipe(
    Effect.retry({
      while: (error) => error._tag === "TaskInUse" && error.holder === "this process",
      schedule: Schedule.spaced("50 millis"),
      times: 200
    })
  )

/** Runs `body` with the task's journal open for this activity only, under the task's lock (`TaskLock`). */
const withJournal = <A, E extends { readonly _tag: string; readonly message: string }, R>(
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

const inconsistent = (task: string, detail: string) => new TaskFailed({ task, reason: "JournalInconsistent", detail })

const openTurnOf = (task: Ids.TaskId, state: Journal.JournalState, turn: number) => {
  const open = Journal.openTurn(state)
  return Option.isSome(open) && open.value.turn === turn
    ? Effect.succeed(open.value)
    : Effect.fail(inconsistent(task, `turn ${turn} is not the open turn of the journal`))
}

/** Records the response an earlier activity received, unless an earlier attempt of this one did. */
const recordResponse = (task: Ids.TaskId, journal: Journal.JournalService, received: JournalEntry.Entry) =>
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

const openTurnActivity = (binding: EntryGate.TaskBinding) =>
  Activity.make({
    name: "turn/open",
    success: Schema.Int,
    error: TaskFailed,
    execute: withJournal(binding.context.task, (journal) =>
      Effect.gen(function* () {
        // The gate's view has no state: the task's own journal answers whose it is (and records the agent).
        yield* EntryGate.admitBinding(binding, "Turn").pipe(Effect.provideService(Journal.Journal, journal))
        const open = Journal.openTurn(yield* journal.state)
        // An earlier attempt opened it and the engine lost the record: this workflow owns the task's journal.
        if (Option.isSome(open)) return open.value.turn
        return (yield* journal.openTurn).turn
      })
    )
  })

const modelStepActivity = (
  binding: EntryGate.TaskBinding,
  turn: number,
  index: number,
  history: History.History,
  attempt: number
) =>
  Activity.make({
    name: attempt === 0 ? `turn/${turn}/model/${index}` : `turn/${turn}/model/${index}/retry/${attempt}`,
    success: StepResult,
    error: TaskFailed,
    execute: withJournal(binding.context.task, (journal) =>
      Effect.gen(function* () {
        const hosting = yield* TaskHosting
        const task = binding.context.task
        const open = yield* openTurnOf(task, yield* journal.state, turn)
        // An attempt that died with its request in flight: the request is lost, the step is dispatched again.
        if (open.awaitingResponse) yield* journal.resumeTurn
        if (open.owedCalls.length > 0) return yield* inconsistent(task, `turn ${turn} still owes tool results`)
        const step = open.steps + 1
        const deferred = deferResponse(journal)
        const outcome = yield* TaskExecution.modelStep(binding, hosting.config, { task, turn, step }, history).pipe(
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
  })

/** The digest the journal recorded for a call's result in `turn`, if it recorded one. */
const recordedResult = (journal: Journal.JournalService, turn: number, callId: string) =>
  Effect.gen(function* () {
    const hosting = yield* TaskHosting
    const entries = yield* Journal.readEntries({ folder: hosting.journalFolder, task: journal.task })
    const found = entries.findLast(
      (entry) => entry._tag === "ToolResulted" && entry.turn === turn && entry.callId === callId
    )
    return found?._tag === "ToolResulted" ? Option.some(found.sha256) : Option.none<string>()
  })

const toolActivity = (binding: EntryGate.TaskBinding, turn: number, step: StepResult, call: Model.ToolCallPart) =>
  Activity.make({
    name: `turn/${turn}/tool/${step.step}/${call.id}`,
    success: Model.ToolResultPart,
    error: TaskFailed,
    execute: withJournal(binding.context.task, (journal) =>
      Effect.gen(function* () {
        const hosting = yield* TaskHosting
        const task = binding.context.task
        yield* recordResponse(task, journal, step.received)
        const open = yield* openTurnOf(task, yield* journal.state, turn)
        const owed = open.owedCalls.some((owedCall) => owedCall.callId === call.id)
        const recorded = owed ? Option.none<string>() : yield* recordedResult(journal, turn, call.id)
        if (!owed && Option.isNone(recorded)) {
          return yield* inconsistent(task, `call ${call.id} is neither owed nor recorded in turn ${turn}`)
        }
        const view = toolView(
          journal,
          call.id,
          recorded,
          (detail) => new TaskFailed({ task, reason: "ToolResultChanged", detail })
        )
        const key = yield* Activity.idempotencyKey(ToolCallKey.nameOf({ task, turn, step: step.step, callId: call.id }))
        const results = yield* TaskExecution.dispatchTools(binding, hosting.config, { task, turn, step: step.step }, [
          call
        ]).pipe(Effect.provideService(Journal.Journal, view), ToolCallKey.provide(key))
        const result = results[0]
        if (result === undefined) return yield* inconsistent(task, `call ${call.id} gave no result`)
        return result
      })
    )
  })

/**
 * Puts the step's calls that need the host's approval to the host: records
 * the step's response, then journals `ApprovalRequested` for every call
 * whose tool needs approval for its input, through the runtime's own
 * `dispatchStep` (so the records are the local executor's), on a journal
 * that refuses anything else (nothing runs here). Returns the ids of the
 * step's calls put to the host, in the model's order; an attempt that runs
 * again finds the requests an earlier one wrote and does not repeat them.
 */
const approvalsActivity = (binding: EntryGate.TaskBinding, turn: number, step: StepResult) =>
  Activity.make({
    name: `turn/${turn}/approvals/${step.step}`,
    success: Schema.Array(Schema.String),
    error: TaskFailed,
    execute: withJournal(binding.context.task, (journal) =>
      Effect.gen(function* () {
        const hosting = yield* TaskHosting
        const task = binding.context.task
        yield* recordResponse(task, journal, step.received)
        const calls = step.response.toolCalls
        const owedOf = (open: Journal.TurnState) => new Map(open.owedCalls.map((owed) => [owed.callId, owed]))
        const before = owedOf(yield* openTurnOf(task, yield* journal.state, turn))
        const toAsk: Array<Model.ToolCallPart> = []
        for (const call of calls) {
          const owed = before.get(call.id)
          if (owed === undefined || owed.called || owed.approval !== undefined) continue
          if (yield* Tool.needsApproval(hosting.config.tools, call)) toAsk.push(call)
        }
        if (toAsk.length > 0) {
          const view = approvalsOnly(journal, (detail) => inconsistent(task, detail))
          const dispatched = yield* TaskExecution.dispatchStep(
            binding,
            hosting.config,
            { task, turn, step: step.step },
            toAsk
          ).pipe(Effect.provideService(Journal.Journal, view))
          if (dispatched._tag !== "Awaiting")
            return yield* inconsistent(task, `step ${step.step} asked for no approval`)
        }
        const after = owedOf(yield* openTurnOf(task, yield* journal.state, turn))
        return calls.filter((call) => after.get(call.id)?.approval !== undefined).map((call) => call.id)
      })
    )
  })

/**
 * After every call put to the host is decided: checks that the journal
 * holds each decision (a deferred completed without `decide`'s record gets
 * its `ApprovalDecided` here, behind the gate), then journals
 * `TurnResumed`, once, as the local executor's resume does.
 */
const resumeActivity = (
  binding: EntryGate.TaskBinding,
  turn: number,
  step: StepResult,
  decisions: ReadonlyArray<readonly [string, Approval.Decision]>
) =>
  Activity.make({
    name: `turn/${turn}/resume/${step.step}`,
    error: TaskFailed,
    execute: withJournal(binding.context.task, (journal) =>
      Effect.gen(function* () {
        const hosting = yield* TaskHosting
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
  })

/**
 * A rejected call: the model gets the `Rejected` error result the local
 * executor gives (`dispatchStep` journals it; the tool never runs). An
 * attempt that runs again after the result was recorded rebuilds the same
 * result from the journal's approval records and writes nothing.
 */
const rejectActivity = (binding: EntryGate.TaskBinding, turn: number, step: StepResult, call: Model.ToolCallPart) =>
  Activity.make({
    name: `turn/${turn}/reject/${step.step}/${call.id}`,
    success: Model.ToolResultPart,
    error: TaskFailed,
    execute: withJournal(binding.context.task, (journal) =>
      Effect.gen(function* () {
        const hosting = yield* TaskHosting
        const task = binding.context.task
        const open = yield* openTurnOf(task, yield* journal.state, turn)
        const owed = open.owedCalls.find((owedCall) => owedCall.callId === call.id)
        if (owed !== undefined) {
          if (owed.approval?.status !== "Rejected") {
            return yield* inconsistent(task, `call ${call.id} of turn ${turn} is not rejected in the journal`)
          }
          const dispatched = yield* TaskExecution.dispatchStep(
            binding,
            hosting.config,
            { task, turn, step: step.step },
            [call]
          ).pipe(Effect.provideService(Journal.Journal, journal))
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
  })

const closeTurnActivity = (task: Ids.TaskId, turn: number, step: StepResult) =>
  Activity.make({
    name: `turn/${turn}/close`,
    error: TaskFailed,
    execute: withJournal(task, (journal) =>
      Effect.gen(function* () {
        yield* recordResponse(task, journal, step.received)
        const open = Journal.openTurn(yield* journal.state)
        if (Option.isSome(open) && open.value.turn === turn) yield* journal.closeTurn
      })
    )
  })

/**
 * The task's journal as the entry gate sees it: its task and file, the
 * identity `EntryGate.verify` checks against the binding. It writes
 * nothing: every write fails `JournalSequenceError`, and reading its state
 * is a defect (the gate never does).
 */
const recordOf = (folder: string, task: Ids.TaskId) =>
  Path.Path.useSync((path) => {
    const file = path.resolve(folder, Journal.fileName(task))
    const refused = (entry: string) =>
      Effect.fail(new Journal.JournalSequenceError({ file, entry, detail: "the entry gate's view writes nothing" }))
    const record: Journal.JournalService = {
      task,
      file,
      state: Effect.die(new Error("the entry gate's view of the journal has no state")),
      append: (input) => refused(input._tag),
      sync: Effect.void,
      openTurn: refused("TurnOpened"),
      resumeTurn: refused("TurnResumed"),
      closeTurn: refused("TurnClosed"),
      abandonTurn: () => refused("TurnAbandoned"),
      // A view claims nothing: the journal the activities write is claimed by their own admissions.
      claimAgent: () => Effect.succeed(Option.none())
    }
    return record
  })

/**
 * The gate every run of the body passes before its first activity: the
 * binding, `EntryGate.verify` against the task's journal (the capability,
 * when the policy needs one) and, for private offload, the private writer.
 */
const gate = (task: Ids.TaskId) =>
  Effect.gen(function* () {
    const hosting = yield* TaskHosting
    const binding = yield* hosting.bindTask(task)
    // The body may run again while an activity of an earlier run holds the journal: the gate asks its question
    // of the journal's identity (`recordOf`), without opening it for writing.
    const record = yield* recordOf(hosting.journalFolder, task)
    yield* EntryGate.verify(binding, "Turn").pipe(Effect.provideService(Journal.Journal, record))
    if (hosting.config.offload?.destination === "Private") yield* PrivateSummaries.resolve(binding.context)
    return binding
  }).pipe(Effect.mapError(failedWith(task)))

/**
 * A model step; a transient model error (see `TaskHosting.modelRetry`) is
 * followed by a durable sleep and the step sent again, as a new activity
 * (the failed request stays in the journal as `ModelFailed`).
 */
const modelStepWithRetry = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  turn: number,
  index: number,
  history: History.History
) {
  const retry = (yield* TaskHosting).modelRetry
  for (let attempt = 0; ; attempt++) {
    const result = yield* Effect.result(modelStepActivity(binding, turn, index, history, attempt))
    if (result._tag === "Success") return result.success
    if (retry === undefined || attempt >= retry.times || !transient(result.failure)) return yield* result.failure
    yield* DurableClock.sleep({ name: `turn/${turn}/model/${index}/wait/${attempt + 1}`, duration: retry.delay })
  }
})

/**
 * The workflow's body: the gate, then one turn of model-step and tool-call
 * activities until the model answers without tool calls (the turn is
 * closed) or the step limit (`TaskFailed`, reason `StepLimitExceeded`, the
 * turn left open).
 *
 * @since 0.1.0
 * @category workflows
 */
export const runTask = Effect.fnUntraced(function* (request: typeof TaskRequest.Type) {
  const task = request.task
  const hosting = yield* TaskHosting
  const binding = yield* gate(task)
  const turn = yield* openTurnActivity(binding)
  let history: History.History = History.make([...(hosting.system ?? []), Model.text("user", request.prompt)])
  for (let index = 1; ; index++) {
    if (index > hosting.config.maxSteps) {
      return yield* new TaskFailed({
        task,
        reason: "StepLimitExceeded",
        detail: `turn ${turn} reached its limit of ${hosting.config.maxSteps} model steps without a final answer`
      })
    }
    const step = yield* modelStepWithRetry(binding, turn, index, history)
    history = step.history
    if (step.response.toolCalls.length === 0) {
      yield* closeTurnActivity(task, turn, step)
      const answer: TaskAnswer = { task, turn, steps: step.step, text: step.response.text }
      return answer
    }
    const decisions = new Map<string, Approval.Decision>()
    if (Tool.anyNeedsApproval(hosting.config.tools)) {
      const asked = yield* approvalsActivity(binding, turn, step)
      // Suspended here until the host decides every call put to it (`decide`); nothing of the step runs before.
      for (const callId of asked) {
        decisions.set(
          callId,
          yield* DurableDeferred.await(Approval.deferredOf({ task, turn, step: step.step, callId }))
        )
      }
      if (asked.length > 0) yield* resumeActivity(binding, turn, step, [...decisions])
    }
    for (const call of step.response.toolCalls) {
      const rejected = decisions.get(call.id)?.approved === false
      const result = rejected
        ? yield* rejectActivity(binding, turn, step, call)
        : yield* toolActivity(binding, turn, step, call)
      history = History.append(history, [result])
    }
  }
})

/**
 * The workflow's handler for a runner: register it with the runner's
 * engine (`WorkflowEngine.layerMemory` or the cluster's) beside
 * `TaskHosting` and the platform services the runtime needs.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = TaskWorkflow.toLayer((request) => runTask(request))

/**
 * The default way to run: the handler on `WorkflowEngine.layerMemory`, in
 * this process, with no database. Provides the engine `run` needs.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = layer.pipe(Layer.provideMerge(WorkflowEngine.layerMemory))

/**
 * Runs a task to its end on the engine in context and returns its answer;
 * a second call for the same task id returns the stored outcome.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (request: typeof TaskRequest.Type) => TaskWorkflow.execute(request)

/**
 * A call of a task's open turn that waits for the host's decision, as the
 * journal's `ApprovalRequested` records it: the turn and step, the call id
 * and tool, the size and SHA-256 of its input (the journal holds no
 * bodies), and why it waits (`Tool`: its tool needs approval for this
 * input).
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  readonly turn: number
  readonly step: number
  readonly callId: string
  readonly name: string
  readonly inputSize: number
  readonly inputSha256: string
  readonly reason: JournalEntry.ApprovalReason
}

/**
 * The calls of the task's open turn that wait for the host's decision, from
 * its journal (empty when no turn is open or nothing waits). Reads the
 * journal only; any runner, or a process that runs none, can ask.
 *
 * @since 0.1.0
 * @category approvals
 */
export const awaitingApproval = Effect.fnUntraced(function* (task: Ids.TaskId) {
  const hosting = yield* TaskHosting
  const entries = yield* Journal.readEntries({ folder: hosting.journalFolder, task })
  const state = Journal.stateOf(task, entries)
  if (state._tag === "Failure") return yield* inconsistent(task, state.failure)
  const open = Journal.openTurn(state.success)
  if (Option.isNone(open)) return []
  const pending: Array<PendingApproval> = []
  for (const owed of Journal.awaitingApproval(open.value)) {
    const requested = entries.find((entry) => entry.seq === owed.approval?.requestedSeq)
    if (requested?._tag !== "ApprovalRequested") continue
    pending.push({
      turn: requested.turn,
      step: requested.step,
      callId: requested.callId,
      name: requested.name,
      inputSize: requested.inputSize,
      inputSha256: requested.inputSha256,
      reason: requested.reason
    })
  }
  return pending
})

/**
 * The host's decision on a call its task's workflow waits for.
 *
 * Behind the gate (`TaskHosting.bindTask`, then `TaskExecution.decide`,
 * entry `Approve`), under the task's lock: journals `ApprovalDecided`
 * (approved or not, `by`, `note`) exactly as the local executor's `decide`
 * does, then completes the call's `DurableDeferred` (`Approval.deferredOf`)
 * through the engine with the same decision, so the workflow resumes on
 * whichever runner replays it, after restarts too. The deferred's token is
 * a function of the task id alone (the workflow's execution id is), so any
 * process on the same engine can decide.
 *
 * A decision may come while the workflow is suspended or before it reaches
 * the call's wait (the engine keeps it). Retrying a decision whose record
 * was written (the decider died before completing the deferred) journals
 * nothing new and completes the deferred; a different decision on a call
 * already decided fails `NotAwaitingApproval`, as does a call that does not
 * wait; a malformed decision fails `InvalidInput`. In every failure nothing
 * was written and the deferred is untouched.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { TaskWorkflow } from "@tessera/workflow"
 * import { Effect, Schema } from "effect"
 *
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("release-7")
 *
 * // Any process on the task's engine may decide: the decision is journaled, then the call's deferred completed,
 * // and the workflow resumes on whichever runner replays it.
 * export const review = Effect.gen(function* () {
 *   const waiting = yield* TaskWorkflow.awaitingApproval(task)
 *   for (const call of waiting) {
 *     const approved = call.name !== "drop_database"
 *     yield* TaskWorkflow.decide(task, { callId: call.callId, approved, by: "alice", note: "reviewed in the console" })
 *   }
 *   return waiting.length
 * })
 * ```
 *
 * @since 0.1.0
 * @category approvals
 */
export const decide = Effect.fnUntraced(function* (task: Ids.TaskId, decision: TaskExecution.Decision) {
  const hosting = yield* TaskHosting
  const lock = yield* TaskLock
  const binding = yield* hosting.bindTask(task)
  const entry = yield* lock.withLock(
    task,
    Effect.scoped(
      Effect.flatMap(openJournal(hosting.journalFolder, task), (journal) =>
        Effect.gen(function* () {
          const open = Journal.openTurn(yield* journal.state)
          if (Option.isSome(open)) {
            const entries = yield* Journal.readEntries({ folder: hosting.journalFolder, task })
            const earlier = entries.findLast(
              (entry) =>
                entry._tag === "ApprovalDecided" && entry.turn === open.value.turn && entry.callId === decision.callId
            )
            if (
              earlier?._tag === "ApprovalDecided" &&
              earlier.approved === decision.approved &&
              earlier.by === decision.by &&
              earlier.note === decision.note
            ) {
              return earlier
            }
          }
          return yield* TaskExecution.decide(binding, decision).pipe(Effect.provideService(Journal.Journal, journal))
        })
      )
    )
  )
  if (entry._tag !== "ApprovalDecided") return yield* Effect.die(inconsistent(task, `decide wrote ${entry._tag}`))
  const executionId = yield* TaskWorkflow.executionId({ task, prompt: "" })
  const deferred = Approval.deferredOf({ task, turn: entry.turn, step: entry.step, callId: entry.callId })
  const value: Approval.Decision = {
    approved: entry.approved,
    by: entry.by,
    ...(entry.note === undefined ? {} : { note: entry.note })
  }
  yield* DurableDeferred.succeed(deferred, {
    token: DurableDeferred.tokenFromExecutionId(deferred, { workflow: TaskWorkflow, executionId }),
    value
  })
  return entry
})
