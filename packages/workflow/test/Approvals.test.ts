/**
 * Tool approvals in the task workflow (on `WorkflowEngine.layerMemory`): a
 * call that needs the host's approval suspends the workflow on a
 * `DurableDeferred` until `TaskWorkflow.decide`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import {
  TaskExecution as Execution,
  History,
  Journal,
  type JournalEntry,
  JournalStorage,
  Model,
  type TaskExecution,
  Tool
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Approval, SharedStore, TaskWorkflow } from "@tessera/workflow"
import { Effect, Exit, Fiber, Option } from "effect"
import { DurableDeferred } from "effect/workflow"
import { approvalConfig, approvalModel, approvalTool, waitFor } from "./support/approvals.ts"
import { interruptedAfterLine, interruptedOnce } from "./support/interruptions.ts"
import { onMemoryEngine } from "./support/memoryEngine.ts"
import * as world from "./support/world.ts"

const taskOf = (name: string) => world.taskId(name.replaceAll(" ", "-"))
const promptOf = (name: string) => `${world.promptPrefix}${name}`

/** No compaction (every tool result stays in the history the model sees); private offload. */
const options = (declared = true) => ({ gate: {}, config: approvalConfig(declared) })

const requestCount = ScriptedModel.ScriptedModelRecorder.use((recorder) => recorder.count)

/** What the engine says of the task's execution: `Suspended`, `Complete`, or `None` while it runs. */
const engineState = (task: ReturnType<typeof taskOf>) =>
  Effect.flatMap(TaskWorkflow.TaskWorkflow.executionId({ task, prompt: "" }), (executionId) =>
    Effect.map(
      TaskWorkflow.TaskWorkflow.poll(executionId),
      Option.map((result) => result._tag)
    )
  )

const suspended = (task: ReturnType<typeof taskOf>) =>
  waitFor(engineState(task), (state) => Option.isSome(state) && state.value === "Suspended", "the suspension")

const readJournal = (shared: SharedStore.SharedStore, task: ReturnType<typeof taskOf>) =>
  Journal.readEntries({ folder: shared.journalFolder, task })

/** The journal without what differs between two runs of the same turn (time and position). */
const records = (entries: ReadonlyArray<JournalEntry.Entry>) => entries.map(({ at: _at, seq: _seq, ...rest }) => rest)

const failureTag = (exit: Exit.Exit<unknown, { readonly _tag: string }>) => {
  const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
  return reason?._tag === "Fail" ? reason.error._tag : ""
}

const rejectionByBob = 'the call to tool "work" was rejected by bob: not today; it did not run'

/** The scenario to its end: call-a approved by alice, call-b rejected by bob, once both wait. */
const approveAndReject = (dir: string, name: string, engineOptions: ReturnType<typeof options> = options()) =>
  onMemoryEngine(dir, engineOptions, (shared) =>
    Effect.gen(function* () {
      const task = taskOf(name)
      const fiber = yield* Effect.forkChild(TaskWorkflow.run({ task, prompt: promptOf(name) }))
      yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 2, "2 calls")
      yield* TaskWorkflow.decide(task, { callId: "call-a", approved: true, by: "alice" })
      yield* TaskWorkflow.decide(task, { callId: "call-b", approved: false, by: "bob", note: "not today" })
      const answer = yield* Fiber.join(fiber)
      return { answer, entries: yield* readJournal(shared, task) }
    })
  ).pipe(Effect.provide(approvalModel))

describe("TaskWorkflow approvals on WorkflowEngine.layerMemory", () => {
  it.live("approval_activities_interrupted_after_their_record_do_not_write_it_twice", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const name = "interrupted approvals"
      const plain = yield* approveAndReject(path.join(dir, "plain"), name)
      const points: ReadonlyArray<readonly [string, (line: string) => boolean]> = [
        ["requested", (line) => line.includes('"_tag":"ApprovalRequested"') && line.includes('"callId":"call-a"')],
        ["resumed", (line) => line.includes('"_tag":"TurnResumed"')],
        ["rejected", (line) => line.includes('"_tag":"ToolResulted"') && line.includes('"callId":"call-b"')]
      ]
      for (const [label, when] of points) {
        // The activity dies right after its record is durable, before the engine stored its result: it runs again.
        const interrupted = interruptedAfterLine(when)
        const run = yield* approveAndReject(path.join(dir, label), name).pipe(
          Effect.provideService(JournalStorage.JournalFile, interrupted.file)
        )
        assert.isTrue(interrupted.fired(), `${label}: the interruption happened`)
        assert.strictEqual(run.answer.text, plain.answer.text, label)
        assert.deepStrictEqual(records(run.entries), records(plain.entries), label)
      }
      assert.strictEqual(plain.answer.text, `call-a=ok; call-b=error(${rejectionByBob}); call-c=ok`)
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("approved_call_interrupted_after_its_effect_runs_again_under_its_key_and_acts_once", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const name = "interrupted approved"
      const config = (log: string): TaskExecution.ExecutionConfig => ({
        ...world.config(log),
        tools: Tool.registry(interruptedOnce(approvalTool(log), 1))
      })
      const run = yield* approveAndReject(dir, name, { gate: {}, config })
      assert.strictEqual(run.answer.text, `call-a=ok; call-b=error(${rejectionByBob}); call-c=ok`)
      assert.strictEqual(world.effectCounts(path.join(dir, "effects.log")).get("interrupted_approved 1"), 1)
      const calledA = run.entries.filter((entry) => entry._tag === "ToolCalled" && entry.callId === "call-a")
      assert.strictEqual(calledA.length, 2, "the interrupted attempt and the re-run")
      // At least once under the key, not an `InFlight` question to the host.
      const requested = run.entries.flatMap((entry) => (entry._tag === "ApprovalRequested" ? [entry.reason] : []))
      assert.deepStrictEqual(requested, ["Tool", "Tool"])
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("approval_suspends_the_workflow_until_the_host_decides_approve_one_reject_another", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const log = path.join(dir, "effects.log")
      const task = taskOf("approve and reject")
      const result = yield* onMemoryEngine(dir, options(), (shared) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.forkChild(TaskWorkflow.run({ task, prompt: promptOf("approve and reject") }))
          const pending = yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 2, "2 calls")
          yield* suspended(task)
          const atWait = yield* readJournal(shared, task)
          // Suspended: however long the host takes, nothing of the step runs and no request is sent.
          yield* Effect.sleep("400 millis")
          const waited = {
            entries: yield* readJournal(shared, task),
            requests: yield* requestCount,
            effects: world.effectCounts(log).size,
            state: yield* engineState(task)
          }
          const approved = yield* TaskWorkflow.decide(task, { callId: "call-a", approved: true, by: "alice" })
          // Still suspended on call-b: call-a has not run either (nothing of the step runs before every decision).
          yield* Effect.sleep("200 millis")
          const afterFirst = world.effectCounts(log).size
          yield* TaskWorkflow.decide(task, { callId: "call-b", approved: false, by: "bob", note: "not today" })
          const answer = yield* Fiber.join(fiber)
          return { pending, atWait, waited, approved, afterFirst, answer, entries: yield* readJournal(shared, task) }
        })
      ).pipe(Effect.provide(approvalModel))
      assert.deepStrictEqual(
        result.pending.map((call) => [call.callId, call.name, call.turn, call.step, call.reason]),
        [
          ["call-a", "work", 1, 1, "Tool"],
          ["call-b", "work", 1, 1, "Tool"]
        ]
      )
      assert.strictEqual(result.atWait.at(-1)?._tag, "ApprovalRequested")
      assert.deepStrictEqual(records(result.waited.entries), records(result.atWait), "no journal entry while waiting")
      assert.strictEqual(result.waited.requests, 1, "no model request while waiting")
      assert.strictEqual(result.waited.effects, 0, "no tool acted while waiting")
      assert.deepStrictEqual(result.waited.state, Option.some("Suspended"))
      assert.strictEqual(result.afterFirst, 0, "an approved call waits for the step's other decision")
      assert.strictEqual(result.approved._tag, "ApprovalDecided")
      // The model saw both outcomes: call-a's result, and call-b's rejection naming who and why.
      assert.strictEqual(result.answer.text, `call-a=ok; call-b=error(${rejectionByBob}); call-c=ok`)
      const counts = world.effectCounts(log)
      assert.strictEqual(counts.get("approve_and_reject 1"), 1)
      assert.strictEqual(counts.get("approve_and_reject 2"), undefined, "the rejected call never ran")
      assert.strictEqual(counts.get("approve_and_reject 3"), 1)
      const decided = result.entries.flatMap((entry) => (entry._tag === "ApprovalDecided" ? [entry] : []))
      assert.deepStrictEqual(
        decided.map((entry) => [entry.callId, entry.approved, entry.by, entry.note]),
        [
          ["call-a", true, "alice", undefined],
          ["call-b", false, "bob", "not today"]
        ]
      )
      const rejected = result.entries.find((entry) => entry._tag === "ToolResulted" && entry.callId === "call-b")
      assert.strictEqual(rejected?._tag === "ToolResulted" ? rejected.failure : undefined, "Rejected")
      assert.strictEqual(result.entries.at(-1)?._tag, "TurnClosed")
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("approval_negative_control_a_host_that_does_not_declare_approval_runs_the_calls_at_once", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const log = path.join(dir, "effects.log")
      const task = taskOf("undeclared")
      // Broken wiring: the same scenario with the tools' approval not declared, so nothing makes the workflow wait.
      const result = yield* onMemoryEngine(dir, options(false), (shared) =>
        Effect.gen(function* () {
          const answer = yield* TaskWorkflow.run({ task, prompt: promptOf("undeclared") }).pipe(
            Effect.timeout("20 seconds")
          )
          return { answer, entries: yield* readJournal(shared, task) }
        })
      ).pipe(Effect.provide(approvalModel))
      // No decision was made, yet the calls acted: what the suspension test would catch.
      assert.strictEqual(world.effectCounts(log).get("undeclared 2"), 1)
      assert.isFalse(result.entries.some((entry) => entry._tag === "ApprovalRequested"))
      assert.strictEqual(result.answer.text, "call-a=ok; call-b=ok; call-c=ok")
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("approval_decided_before_the_workflow_reaches_its_wait_is_kept", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const log = path.join(dir, "effects.log")
      const task = taskOf("early decision")
      const result = yield* onMemoryEngine(dir, options(), (shared) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.forkChild(TaskWorkflow.run({ task, prompt: promptOf("early decision") }))
          yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 2, "2 calls")
          yield* suspended(task)
          // The workflow waits on call-a; call-b is decided first, before the workflow reaches call-b's wait.
          yield* TaskWorkflow.decide(task, { callId: "call-b", approved: false, by: "bob", note: "not today" })
          yield* Effect.sleep("200 millis")
          yield* suspended(task)
          const stillWaiting = world.effectCounts(log).size
          yield* TaskWorkflow.decide(task, { callId: "call-a", approved: true, by: "alice" })
          const answer = yield* Fiber.join(fiber)
          return { stillWaiting, answer, entries: yield* readJournal(shared, task) }
        })
      ).pipe(Effect.provide(approvalModel))
      assert.strictEqual(result.stillWaiting, 0)
      assert.strictEqual(result.answer.text, `call-a=ok; call-b=error(${rejectionByBob}); call-c=ok`)
      assert.deepStrictEqual(
        result.entries.flatMap((entry) => (entry._tag === "ApprovalDecided" ? [entry.callId] : [])),
        ["call-b", "call-a"]
      )
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("decide_retry_is_idempotent_and_a_call_that_does_not_wait_is_refused", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const task = taskOf("decide twice")
      const result = yield* onMemoryEngine(dir, options(), (shared) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.forkChild(TaskWorkflow.run({ task, prompt: promptOf("decide twice") }))
          yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 2, "2 calls")
          const first = yield* TaskWorkflow.decide(task, { callId: "call-a", approved: true, by: "alice" })
          const before = (yield* readJournal(shared, task)).length
          const retry = yield* TaskWorkflow.decide(task, { callId: "call-a", approved: true, by: "alice" })
          const changed = yield* Effect.exit(
            TaskWorkflow.decide(task, { callId: "call-a", approved: false, by: "mallory" })
          )
          const unknown = yield* Effect.exit(
            TaskWorkflow.decide(task, { callId: "call-z", approved: true, by: "alice" })
          )
          const malformed = yield* Effect.exit(TaskWorkflow.decide(task, { callId: "call-b", approved: true, by: "" }))
          const after = (yield* readJournal(shared, task)).length
          yield* TaskWorkflow.decide(task, { callId: "call-b", approved: true, by: "alice" })
          const answer = yield* Fiber.join(fiber)
          return { first, retry, changed, unknown, malformed, before, after, answer }
        })
      ).pipe(Effect.provide(approvalModel))
      assert.strictEqual(result.retry.seq, result.first.seq, "the retry returns the recorded decision")
      assert.strictEqual(result.after, result.before, "nothing written by the retry or the refusals")
      assert.strictEqual(failureTag(result.changed), "NotAwaitingApproval")
      assert.strictEqual(failureTag(result.unknown), "NotAwaitingApproval")
      assert.strictEqual(failureTag(result.malformed), "InvalidInput")
      assert.strictEqual(result.answer.text, "call-a=ok; call-b=ok; call-c=ok")
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("deferred_completed_without_decide_is_journaled_before_the_step_runs", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const task = taskOf("engine decision")
      const entries = yield* onMemoryEngine(dir, options(), (shared) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.forkChild(TaskWorkflow.run({ task, prompt: promptOf("engine decision") }))
          yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 2, "2 calls")
          // A host that completes the deferreds through the engine alone, bypassing `decide`'s journal record.
          const executionId = yield* TaskWorkflow.TaskWorkflow.executionId({ task, prompt: "" })
          for (const [callId, approved] of [
            ["call-a", true],
            ["call-b", false]
          ] as const) {
            const deferred = Approval.deferredOf({ task, turn: 1, step: 1, callId })
            yield* DurableDeferred.succeed(deferred, {
              token: DurableDeferred.tokenFromExecutionId(deferred, {
                workflow: TaskWorkflow.TaskWorkflow,
                executionId
              }),
              value: { approved, by: "engine-host" }
            })
          }
          yield* Fiber.join(fiber)
          return yield* readJournal(shared, task)
        })
      ).pipe(Effect.provide(approvalModel))
      const tags = entries.map((entry) => entry._tag)
      const decided = entries.flatMap((entry) => (entry._tag === "ApprovalDecided" ? [[entry.callId, entry.by]] : []))
      assert.deepStrictEqual(decided, [
        ["call-a", "engine-host"],
        ["call-b", "engine-host"]
      ])
      assert.isBelow(tags.lastIndexOf("ApprovalDecided"), tags.indexOf("ToolCalled"), "recorded before any call ran")
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("workflow_approvals_journal_equals_local_executor_journal", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const name = "same approvals"
      const task = taskOf(name)
      const decisions: ReadonlyArray<TaskExecution.Decision> = [
        { callId: "call-a", approved: true, by: "alice" },
        { callId: "call-b", approved: false, by: "bob", note: "not today" }
      ]
      const workflow = yield* onMemoryEngine(path.join(dir, "wf"), options(), (shared) =>
        Effect.gen(function* () {
          const fiber = yield* Effect.forkChild(TaskWorkflow.run({ task, prompt: promptOf(name) }))
          yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 2, "2 calls")
          for (const decision of decisions) yield* TaskWorkflow.decide(task, decision)
          const answer = yield* Fiber.join(fiber)
          return { answer, entries: yield* readJournal(shared, task) }
        })
      )
      // The same task on the local executor: runTurn pauses, the host decides, resumeTurn continues.
      const local = yield* Effect.gen(function* () {
        const log = path.join(dir, "local", "effects.log")
        const config = approvalConfig()(log)
        const shared = yield* SharedStore.open({
          root: path.join(dir, "local", "store"),
          storeId: world.storeId,
          agent: world.agent,
          config,
          gate: {}
        })
        const binding = yield* shared.hosting.bindTask(task)
        const outcome = yield* Effect.scoped(
          Effect.flatMap(Journal.open({ folder: shared.journalFolder, task }), (journal) =>
            Effect.gen(function* () {
              const paused = yield* Execution.runTurn(
                binding,
                History.make([Model.text("user", promptOf(name))]),
                config
              )
              if (paused._tag !== "AwaitingApproval")
                return yield* Effect.die(new Error("the local turn did not pause"))
              for (const decision of decisions) yield* Execution.decide(binding, decision)
              return yield* Execution.resumeTurn(binding, paused.history, config)
            }).pipe(Effect.provideService(Journal.Journal, journal))
          )
        ).pipe(Effect.provide(ArtifactPathPolicy.layer(shared.pathPolicy)))
        return { outcome, entries: yield* readJournal(shared, task) }
      })
      assert.strictEqual(local.outcome._tag, "Answered")
      assert.strictEqual(workflow.answer.text, local.outcome.text)
      assert.strictEqual(workflow.answer.steps, local.outcome.steps)
      assert.isTrue(workflow.entries.some((entry) => entry._tag === "ApprovalDecided"))
      assert.deepStrictEqual(records(workflow.entries), records(local.entries))
      assert.isTrue(fs.existsSync(path.join(dir, "wf", "effects.log")))
    }).pipe(Effect.scoped, Effect.provide(approvalModel), Effect.provide(world.platformLayer))
  )
})
