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
 *   bytes is the same summary (`PrivateSummaries.stageOnce`: `AlreadyStaged`)
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
 * - **Delegation survives the runner.** With child offers
 *   (`TaskHosting`'s `children`), every turn offers the `delegate` tool; a
 *   call of it is one of the parent's call activities, each child a task of
 *   its own (its own scope, private volume and journal, the journal held
 *   under the child's `TaskLock`). A runner lost mid-child leaves the
 *   activity to run again on another runner: the tool finds its children
 *   by name, finishes an open child turn from the child's journal (no
 *   child turn twice, a recorded child call never again, a lost request
 *   sent again as it was) and reads an answered child back; the parent's
 *   journal records each `ChildDelegated` and `ChildAnswered` once. A
 *   child's tools get keys of their own (`ToolCallKey.current`).
 * - **A child's approvals wait durably, and are decided once.** The
 *   delegate call goes through the runtime's approval-aware dispatch
 *   (`TaskExecution.dispatchStep`): a child whose turn waits for approvals
 *   makes the call wait (`ApprovalRequested`, reason `Delegated`, naming the
 *   child calls), and the workflow suspends on the call's `DurableDeferred`
 *   as for any approval, holding no runner. {@link decide} on the parent's
 *   call journals `ApprovalDecided` and completes it; the call activity runs
 *   again, approved or rejected, and the runtime's delegation hands the
 *   decision on to exactly those child calls (each decided once, in its
 *   child's journal, with who decided). A child that asks again makes the
 *   call wait again, on a deferred of its own (`Approval.deferredOf`'s
 *   ordinal). The parent's journal is the local executor's for the same
 *   decisions.
 *
 * Runs on any `WorkflowEngine`: `WorkflowEngine.layerMemory` in one process
 * (no database, {@link layerMemory}), or the cluster (`Cluster.layer`,
 * Postgres).
 *
 * @since 0.1.0
 */
import * as Ids from "@tessera/core/Ids"
import * as EntryGate from "@tessera/runtime/EntryGate"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Model from "@tessera/runtime/Model"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as DurableClock from "effect/workflow/DurableClock"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import * as Workflow from "effect/workflow/Workflow"
import * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as Approval from "./Approval.ts"
import { openJournal } from "./internal/activityJournal.ts"
import { turnConfig } from "./internal/delegation.ts"
import { failedWith, inconsistent, TaskFailed, transient } from "./internal/taskFailed.ts"
import {
  approvalsActivity,
  callActivity,
  closeTurnActivity,
  modelStepActivity,
  openTurnActivity,
  resumeActivity
} from "./internal/turnActivities.ts"
import { TaskHosting } from "./TaskHosting.ts"
import { TaskLock } from "./TaskLock.ts"

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
 * `detail` its message. Stored by the engine like a result. Declared with
 * the activities that fail with it, in the package's internals.
 *
 * @since 0.1.0
 * @category errors
 */
export { TaskFailed }

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
    const writer = hosting.config.offload?.destination === "Private" ? "Required" : "ByPolicy"
    yield* EntryGate.verify(binding, "Turn", { writer }).pipe(Effect.provideService(Journal.Journal, record))
    // The host's child offers are checked here: offers of the wrong shape fail the task before any activity.
    yield* turnConfig(binding)
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
      yield* closeTurnActivity(binding, turn, step)
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
    // A delegation whose children wait for the host waits with them (its own deferred, one per wait), and runs
    // again once decided; the step's other calls run meanwhile, in the model's order, as the local executor's do.
    const results = new Map<string, Model.ToolResultPart>()
    let pending = step.response.toolCalls
    for (let round = 0; pending.length > 0; round++) {
      const waiting: Array<Model.ToolCallPart> = []
      for (const call of pending) {
        const rejected = round === 0 && decisions.get(call.id)?.approved === false
        const ran = yield* callActivity(binding, turn, step, call, rejected, round)
        if (ran._tag === "Ran") results.set(call.id, ran.result)
        else waiting.push(call)
      }
      if (waiting.length === 0) break
      const decided: Array<readonly [string, Approval.Decision]> = []
      for (const call of waiting) {
        const identity = { task, turn, step: step.step, callId: call.id }
        decided.push([call.id, yield* DurableDeferred.await(Approval.deferredOf(identity, round + 1))])
      }
      yield* resumeActivity(binding, turn, step, decided, round + 1)
      pending = waiting
    }
    const answered = step.response.toolCalls.flatMap((call) => {
      const result = results.get(call.id)
      return result === undefined ? [] : [result]
    })
    history = History.append(history, answered)
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
 * input; `Delegated`: a delegation whose children wait for approvals, the
 * decision going on to them).
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
 * A delegation waiting for its children (reason `Delegated`) is decided
 * the same way, once per wait: each decision completes the deferred of
 * that wait (the call's n-th decision, `Approval.deferredOf(call, n)`).
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
          // A call that waits is decided now; only one that does not can be a retry of a decision written before.
          const waits =
            Option.isSome(open) &&
            open.value.owedCalls.some(
              (owed) => owed.callId === decision.callId && owed.approval?.status === "Requested"
            )
          if (Option.isSome(open) && !waits) {
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
  // The deferred of this decision: a delegation is decided once per time its children waited, each its own.
  const entries = yield* Journal.readEntries({ folder: hosting.journalFolder, task })
  const ordinal = entries.filter(
    (other) =>
      other._tag === "ApprovalDecided" &&
      other.seq <= entry.seq &&
      other.turn === entry.turn &&
      other.step === entry.step &&
      other.callId === entry.callId
  ).length
  const executionId = yield* TaskWorkflow.executionId({ task, prompt: "" })
  const identity = { task, turn: entry.turn, step: entry.step, callId: entry.callId }
  const deferred = Approval.deferredOf(identity, ordinal)
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
