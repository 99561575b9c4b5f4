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
import { Ids } from "@tessera/core"
import { EntryGate, History, Journal, Model, PrivateSummaries, TaskExecution } from "@tessera/runtime"
import { Effect, Layer, Option, Path, Schedule, Schema } from "effect"
import { Activity, DurableClock, Workflow, WorkflowEngine } from "effect/workflow"
import { deferResponse, toolView } from "./internal/journalViews.ts"
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
  received: Journal.Entry
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
const recordResponse = (task: Ids.TaskId, journal: Journal.JournalService, received: Journal.Entry) =>
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

const openTurnActivity = (task: Ids.TaskId) =>
  Activity.make({
    name: "turn/open",
    success: Schema.Int,
    error: TaskFailed,
    execute: withJournal(task, (journal) =>
      Effect.gen(function* () {
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
      openTurn: refused("TurnOpened"),
      resumeTurn: refused("TurnResumed"),
      closeTurn: refused("TurnClosed"),
      abandonTurn: () => refused("TurnAbandoned")
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
  const turn = yield* openTurnActivity(task)
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
    for (const call of step.response.toolCalls) {
      const result = yield* toolActivity(binding, turn, step, call)
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
