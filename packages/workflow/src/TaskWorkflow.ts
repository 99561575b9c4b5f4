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
 * - **Each child is a workflow of its own.** With child offers
 *   (`TaskHosting`'s `children`), every turn offers the `delegate` tool. A
 *   call of it plans its sub-tasks (`Delegation.Offers.plan`), records
 *   `ChildDelegated` for each (one activity of the parent), runs each child
 *   as a `TaskWorkflow` execution of its own (the engine's child workflow,
 *   `maxConcurrent` at once, on whichever runner; the child's request
 *   carries its delegation path, down which any runner binds it), then
 *   collects their answers in one call activity (`ChildAnswered`, published
 *   files received, the call's `ToolCalled` and `ToolResulted` as for any
 *   call). A runner lost mid-child costs the child's current activity only:
 *   the parent's activities and the child's earlier ones are stored. A
 *   child's tools get keys of their own execution (`ToolCallKey.current`). A
 *   child that fails answers the call with its failure; the parent goes on.
 * - **A child's approvals wait in the child's workflow, decided once.** A
 *   child whose call needs approval suspends its own workflow (and its
 *   parent's, which waits for it); {@link awaitingApproval} of the parent
 *   lists the child's call with the child's task and delegation, and
 *   {@link decide} on that task decides it in the child's journal. A
 *   delegate call whose plan refuses its input runs the inline tool, which
 *   gives its `InvalidInput` result.
 * - **Not done: a child's `timeLimit`.** A child workflow runs until it
 *   ends; the offer's time limit (the inline tool's race) is not applied.
 *
 * Runs on any `WorkflowEngine`: `WorkflowEngine.layerMemory` in one process
 * (no database, {@link layerMemory}), or the cluster (`Cluster.layer`,
 * Postgres).
 *
 * @since 0.1.0
 */
import * as Ids from "@tessera/core/Ids"
import * as Delegation from "@tessera/runtime/Delegation"
import * as EntryGate from "@tessera/runtime/EntryGate"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Model from "@tessera/runtime/Model"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as DurableClock from "effect/workflow/DurableClock"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import * as Workflow from "effect/workflow/Workflow"
import * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as Approval from "./Approval.ts"
import { openJournal } from "./internal/activityJournal.ts"
import {
  type ChildEnd,
  collectingTool,
  DelegationPath,
  journalIdentity,
  levelOf,
  type Offers,
  type TaskConfig,
  type TaskLevel
} from "./internal/delegation.ts"
import { failedWith, inconsistent, TaskFailed, transient } from "./internal/taskFailed.ts"
import {
  approvalsActivity,
  callActivity,
  closeTurnActivity,
  collectActivity,
  delegateStartActivity,
  modelStepActivity,
  openTurnActivity,
  resumeActivity,
  type StepResult
} from "./internal/turnActivities.ts"
import { TaskHosting } from "./TaskHosting.ts"
import { TaskLock } from "./TaskLock.ts"

/**
 * What starts a task: its id (one workflow execution per task id) and the
 * user's request; for a delegated child (started by its parent's workflow),
 * its `delegation`: the root task and the `{ agent, task }` steps down to
 * it, by which any runner binds it as its parent's offers do.
 *
 * @since 0.1.0
 * @category models
 */
export const TaskRequest = Schema.Struct({
  task: Ids.TaskId,
  prompt: Schema.String,
  delegation: Schema.optionalKey(DelegationPath)
})

/**
 * Where a delegated child stands: the root task and the `{ agent, task }`
 * steps from it down to the child (the last one). Carried by a child's
 * {@link TaskRequest}, listed with a child's waiting call
 * ({@link PendingApproval}) and passed back to {@link decide}.
 *
 * @since 0.1.0
 * @category models
 */
export { DelegationPath }

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
 * The gate every run of the body passes before its first activity: the
 * task's level (its binding, down its delegation path for a child), then
 * `EntryGate.verify` against the task's journal (the capability, when the
 * policy needs one) and, for private offload, the private writer. Offers
 * of the wrong shape fail here too, before any activity.
 */
const gate = (request: typeof TaskRequest.Type) =>
  Effect.gen(function* () {
    const hosting = yield* TaskHosting
    const level = yield* levelOf(request.task, Option.fromUndefinedOr(request.delegation))
    // The body may run again while an activity of an earlier run holds the journal: the gate asks its question
    // of the journal's identity, without opening it for writing.
    const record = yield* journalIdentity(hosting.journalFolder, request.task)
    const writer = level.config.offload?.destination === "Private" ? "Required" : "ByPolicy"
    yield* EntryGate.verify(level.binding, "Turn", { writer }).pipe(Effect.provideService(Journal.Journal, record))
    return level
  }).pipe(Effect.mapError(failedWith(request.task)))

/**
 * A model step; a transient model error (see `TaskHosting.modelRetry`) is
 * followed by a durable sleep and the step sent again, as a new activity
 * (the failed request stays in the journal as `ModelFailed`).
 */
const modelStepWithRetry = Effect.fnUntraced(function* (
  level: TaskLevel,
  turn: number,
  index: number,
  history: History.History
) {
  const retry = (yield* TaskHosting).modelRetry
  for (let attempt = 0; ; attempt++) {
    const result = yield* Effect.result(modelStepActivity(level, turn, index, history, attempt))
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
  const level = yield* gate(request)
  const config = level.config
  const turn = yield* openTurnActivity(level)
  // A child's history is its instruction alone, as the inline delegation's: the host's system parts are the root's.
  const system = request.delegation === undefined ? (hosting.system ?? []) : []
  let history: History.History = History.make([...system, Model.text("user", request.prompt)])
  for (let index = 1; ; index++) {
    if (index > config.maxSteps) {
      return yield* new TaskFailed({
        task,
        reason: "StepLimitExceeded",
        detail: `turn ${turn} reached its limit of ${config.maxSteps} model steps without a final answer`
      })
    }
    const step = yield* modelStepWithRetry(level, turn, index, history)
    history = step.history
    if (step.response.toolCalls.length === 0) {
      yield* closeTurnActivity(level, turn, step)
      const answer: TaskAnswer = { task, turn, steps: step.step, text: step.response.text }
      return answer
    }
    const decisions = new Map<string, Approval.Decision>()
    if (Tool.anyNeedsApproval(config.tools)) {
      const asked = yield* approvalsActivity(level, turn, step)
      // Suspended here until the host decides every call put to it (`decide`); nothing of the step runs before.
      for (const callId of asked) {
        decisions.set(
          callId,
          yield* DurableDeferred.await(Approval.deferredOf({ task, turn, step: step.step, callId }))
        )
      }
      if (asked.length > 0) yield* resumeActivity(level, turn, step, [...decisions])
    }
    // The step's calls in the model's order, as the local executor runs them; a delegation runs its children as
    // workflows of their own.
    const answered: Array<Model.ToolResultPart> = []
    for (const call of step.response.toolCalls) {
      const rejected = decisions.get(call.id)?.approved === false
      answered.push(
        !rejected && call.name === Delegation.toolName && Option.isSome(level.offers)
          ? yield* delegateCall(level, level.offers.value, request, turn, step, call)
          : yield* callActivity(level, turn, step, call, rejected)
      )
    }
    history = History.append(history, answered)
  }
})

/**
 * A delegate call of a task with offers: its sub-tasks (`Offers.plan`; an
 * input the plan refuses goes to the call activity, whose tool gives the
 * `InvalidInput` result), their `ChildDelegated` records (one activity),
 * each child a `TaskWorkflow` execution of its own (the engine's child
 * workflow, `maxConcurrent` at once, on whichever runner), then the collect
 * activity, which receives their answers and records the call's result. A
 * runner lost mid-child costs the child's current activity, on the child's
 * own execution: the parent's activities before it are stored.
 */
const delegateCall = Effect.fnUntraced(function* (
  level: TaskLevel,
  offers: Offers,
  request: typeof TaskRequest.Type,
  turn: number,
  step: StepResult,
  call: Model.ToolCallPart
) {
  const hosting = yield* TaskHosting
  const position = { task: request.task, turn, step: step.step, callId: call.id }
  const planned = yield* Effect.result(offers.plan(position, call.input))
  if (planned._tag === "Failure") return yield* callActivity(level, turn, step, call, false)
  const subTasks = planned.success
  yield* delegateStartActivity(level, offers, turn, step, call, subTasks)
  const root = request.delegation?.root ?? request.task
  const path = request.delegation?.path ?? []
  const ends = yield* Effect.forEach(
    subTasks,
    (subTask) =>
      TaskWorkflow.execute({
        task: subTask.task,
        prompt: subTask.instruction,
        delegation: { root, path: [...path, { agent: subTask.agent, task: subTask.task }] }
      }).pipe(
        Effect.map((answer): ChildEnd => ({ _tag: "Answered", text: answer.text })),
        Effect.catchTag("TaskFailed", (failed) =>
          Effect.succeed<ChildEnd>({ _tag: "Failed", reason: failed.reason, detail: failed.detail })
        )
      ),
    { concurrency: hosting.delegation?.maxConcurrent ?? Delegation.defaultLimits.maxConcurrent }
  )
  const collecting = collectingTool(level, offers, subTasks, ends)
  const tools = Tool.registry(
    ...[...level.config.tools.tools.values()].filter((tool) => tool.name !== Delegation.toolName),
    collecting
  )
  const collect: TaskConfig = { ...level.config, tools: tools as TaskConfig["tools"] }
  return yield* collectActivity(level, turn, step, call, collect)
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
 * journal's `ApprovalRequested` records it: the task whose call it is (the
 * task asked about, or a delegated child of it, with its `delegation`, which
 * {@link decide} takes), the turn and step, the call id and tool, the size
 * and SHA-256 of its input (the journal holds no bodies), and why it waits
 * (`Tool`: its tool needs approval for this input; a workflow's delegation
 * never waits itself: its children's calls wait in their own workflows).
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  readonly task: Ids.TaskId
  readonly delegation?: DelegationPath
  readonly turn: number
  readonly step: number
  readonly callId: string
  readonly name: string
  readonly inputSize: number
  readonly inputSha256: string
  readonly reason: JournalEntry.ApprovalReason
}

/**
 * The calls that wait for the host's decision in the task's open turn and,
 * below it, in the open turns of the children its open delegations run
 * (each a workflow of its own, suspended on its own call; a child's
 * children after it), from the journals (empty when nothing waits). Reads
 * the journals only; any runner, or a process that runs none, can ask.
 *
 * @since 0.1.0
 * @category approvals
 */
export const awaitingApproval = (task: Ids.TaskId) => waitingIn(task, Option.none())

const waitingIn = (
  task: Ids.TaskId,
  delegation: Option.Option<DelegationPath>
): Effect.Effect<
  ReadonlyArray<PendingApproval>,
  TaskFailed | Effect.Error<ReturnType<typeof Journal.readEntries>>,
  TaskHosting | FileSystem.FileSystem | Path.Path
> =>
  Effect.gen(function* () {
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
        task,
        ...(Option.isSome(delegation) ? { delegation: delegation.value } : {}),
        turn: requested.turn,
        step: requested.step,
        callId: requested.callId,
        name: requested.name,
        inputSize: requested.inputSize,
        inputSha256: requested.inputSha256,
        reason: requested.reason
      })
    }
    // The children of the open turn's delegations that have not answered yet: their workflows may wait.
    const ofTurn = entries.filter((entry) => "turn" in entry && entry.turn === open.value.turn)
    for (const entry of ofTurn) {
      if (entry._tag !== "ChildDelegated") continue
      const answered = ofTurn.some((other) => other._tag === "ChildAnswered" && other.task === entry.task)
      if (answered) continue
      const root = Option.isSome(delegation) ? delegation.value.root : task
      const path = Option.isSome(delegation) ? delegation.value.path : []
      const below = { root, path: [...path, { agent: entry.agent, task: entry.task }] }
      pending.push(...(yield* waitingIn(entry.task, Option.some(below))))
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
 * A delegated child's call (listed by {@link awaitingApproval} with the
 * child's task and `delegation`) is decided on the child's own workflow:
 * pass the child's task and its `delegation`; the child is bound down that
 * path, as its workflow binds it. An inline delegation waiting for its
 * children (reason `Delegated`) is decided once per wait: each decision
 * completes the deferred of that wait (`Approval.deferredOf(call, n)`).
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
export const decide = Effect.fnUntraced(function* (
  task: Ids.TaskId,
  decision: TaskExecution.Decision,
  options?: { readonly delegation?: DelegationPath | undefined }
) {
  const hosting = yield* TaskHosting
  const lock = yield* TaskLock
  const { binding } = yield* levelOf(task, Option.fromUndefinedOr(options?.delegation))
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
  const executionId = yield* TaskWorkflow.executionId({ task, prompt: "" })
  const identity = { task, turn: entry.turn, step: entry.step, callId: entry.callId }
  const deferred = Approval.deferredOf(identity)
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
