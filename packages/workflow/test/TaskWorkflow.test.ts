/**
 * The task workflow in one process, on `WorkflowEngine.layerMemory`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import {
  EntryGate as Gate,
  History,
  Journal,
  type JournalEntry,
  JournalStorage,
  Model,
  PrivateSummaries,
  TaskExecution,
  ToolResults,
  VolumeStore
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { SharedStore, TaskWorkflow } from "@tessera/workflow"
import { Effect, Exit } from "effect"
import { interruptedAfterLine, interruptedOnce } from "./support/interruptions.ts"
import { onMemoryEngine } from "./support/memoryEngine.ts"
import * as world from "./support/world.ts"

/** Binds without any policy, which defaults to `Disabled` where no writer resolves. */
const EntryGateUnarmed = (context: Parameters<typeof Gate.bind>[0]) => Gate.bind(context, {})

const agent = world.agent

const taskOf = (name: string) => world.taskId(name.replaceAll(" ", "-"))
const run = (name: string) => TaskWorkflow.run({ task: taskOf(name), prompt: `${world.promptPrefix}${name}` })

/** The journal without what differs between two runs of the same turn (time and position). */
const records = (entries: ReadonlyArray<JournalEntry.Entry>) => entries.map(({ at: _at, seq: _seq, ...rest }) => rest)

const requestCount = ScriptedModel.ScriptedModelRecorder.use((recorder) => recorder.count)

describe("TaskWorkflow on WorkflowEngine.layerMemory", () => {
  it.live("task_runs_as_workflow_with_offload_and_compaction", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const answer = yield* onMemoryEngine(dir, {}, (shared) =>
        Effect.gen(function* () {
          const answer = yield* run("task one")
          const entries = yield* Journal.readEntries({ folder: shared.journalFolder, task: answer.task })
          return { answer, entries }
        })
      )
      assert.strictEqual(answer.answer.text, world.expectedAnswer("task one"))
      const tags = answer.entries.map((entry) => entry._tag)
      assert.strictEqual(tags.filter((tag) => tag === "ArtifactOffloaded").length, world.callsPerTask)
      assert.isAtLeast(tags.filter((tag) => tag === "SummaryStaged").length, 1)
      assert.strictEqual(tags.at(-1), "TurnClosed")
      const counts = world.effectCounts(path.join(dir, "effects.log"))
      assert.strictEqual(counts.size, world.callsPerTask)
      for (const count of counts.values()) assert.strictEqual(count, 1)
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("workflow_journal_equals_local_executor_journal", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const workflow = yield* onMemoryEngine(path.join(dir, "wf"), {}, (shared) =>
        Effect.flatMap(run("same task"), (answer) =>
          Effect.map(Journal.readEntries({ folder: shared.journalFolder, task: answer.task }), (entries) => ({
            answer,
            entries
          }))
        )
      )
      // The same task on the local executor: one `TaskExecution.runTurn` over the same store layout.
      const local = yield* Effect.gen(function* () {
        const log = path.join(dir, "local", "effects.log")
        const shared = yield* SharedStore.open({
          root: path.join(dir, "local", "store"),
          storeId: world.storeId,
          agent,
          config: world.config(log),
          gate: { policy: world.policy }
        })
        const binding = yield* shared.hosting.bindTask(taskOf("same task"))
        const outcome = yield* Effect.scoped(
          Effect.flatMap(Journal.open({ folder: shared.journalFolder, task: taskOf("same task") }), (journal) =>
            TaskExecution.runTurn(
              binding,
              History.make([Model.text("user", `${world.promptPrefix}same task`)]),
              shared.hosting.config
            ).pipe(Effect.provideService(Journal.Journal, journal))
          )
        ).pipe(Effect.provide(ArtifactPathPolicy.layer(shared.pathPolicy)))
        const entries = yield* Journal.readEntries({ folder: shared.journalFolder, task: taskOf("same task") })
        return { outcome, entries }
      })
      assert.strictEqual(workflow.answer.text, local.outcome.text)
      assert.strictEqual(workflow.answer.steps, local.outcome.steps)
      assert.deepStrictEqual(records(workflow.entries), records(local.entries))
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("gate_refuses_before_the_first_activity", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      // Compaction armed (Threshold) on a runtime without a private volume: no writer.
      const exit = yield* onMemoryEngine(dir, { privateVolume: false }, () => Effect.exit(run("no writer")))
      assert.isTrue(Exit.isFailure(exit))
      const failure = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      assert.strictEqual(
        failure?._tag === "Fail" ? (failure.error as TaskWorkflow.TaskFailed).reason : "",
        "Unauthorized"
      )
      assert.strictEqual(yield* requestCount, 0)
      assert.isFalse(fs.existsSync(path.join(dir, "store", "volumes", "journal", "no-writer.jsonl")))
      assert.isFalse(fs.existsSync(path.join(dir, "effects.log")))
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("gate_negative_control_a_binding_without_the_gate_sends_requests", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      // Broken wiring: the host binds the task without its armed policy (the gate's question never asked),
      // and offloads to the output volume, so nothing asks for the missing writer.
      const exit = yield* onMemoryEngine(
        dir,
        {
          privateVolume: false,
          config: (log) => ({
            ...world.config(log),
            offload: { threshold: 1_024, readTool: "read_artifact", destination: "Output" }
          }),
          bindTask: (shared) => (task) =>
            Effect.flatMap(
              shared.host.issueScope(task, [{ volume: shared.volumes.output, access: ["read", "write"] }], agent),
              (scope) =>
                Effect.flatMap(shared.runtime.bindTask({ scope, createdPrivate: [] }), (context) =>
                  EntryGateUnarmed(context)
                )
            )
        },
        () => Effect.exit(run("no writer"))
      )
      assert.isTrue(Exit.isSuccess(exit))
      assert.isAbove(yield* requestCount, 0)
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("private_offload_resolves_the_writer_before_the_first_activity", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const exit = yield* onMemoryEngine(dir, { privateVolume: false, gate: {} }, () => Effect.exit(run("no writer")))
      const failure = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      assert.strictEqual(
        failure?._tag === "Fail" ? (failure.error as TaskWorkflow.TaskFailed).reason : "",
        "Unauthorized"
      )
      assert.strictEqual(yield* requestCount, 0)
      assert.isFalse(fs.existsSync(path.join(dir, "store", "volumes", "journal", "no-writer.jsonl")))
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("interrupted_tool_call_runs_again_without_a_second_side_effect", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const result = yield* onMemoryEngine(
        dir,
        {
          config: (log) => {
            const base = world.config(log)
            return {
              ...base,
              tools: { ...base.tools, tools: new Map([["work", interruptedOnce(world.workTool(log), 3)]]) }
            }
          }
        },
        (shared) =>
          Effect.flatMap(run("interrupted tool"), (answer) =>
            Effect.map(Journal.readEntries({ folder: shared.journalFolder, task: answer.task }), (entries) => ({
              answer,
              entries
            }))
          )
      )
      assert.strictEqual(result.answer.text, world.expectedAnswer("interrupted tool"))
      const calledThree = result.entries.filter((entry) => entry._tag === "ToolCalled" && entry.callId === "call-3")
      assert.strictEqual(calledThree.length, 2, "the interrupted attempt and the re-run both journal ToolCalled")
      const counts = world.effectCounts(path.join(dir, "effects.log"))
      assert.strictEqual(counts.get("interrupted_tool 3"), 1)
      for (const count of counts.values()) assert.strictEqual(count, 1)
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("idempotency_negative_control_a_tool_without_keys_acts_twice", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      yield* onMemoryEngine(
        dir,
        {
          config: (log) => {
            const base = world.config(log)
            const tool = interruptedOnce(world.workTool(log, { idempotent: false }), 3)
            return { ...base, tools: { ...base.tools, tools: new Map([["work", tool]]) } }
          }
        },
        () => run("interrupted tool")
      )
      assert.strictEqual(world.effectCounts(path.join(dir, "effects.log")).get("interrupted_tool 3"), 2)
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("interrupted_model_request_is_counted_lost_and_sent_again", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      let calls = 0
      const model = Model.layerFromGenerate((request) =>
        Effect.suspend(() => {
          calls += 1
          return calls === 3 ? Effect.interrupt : Effect.succeed(world.answer(request))
        })
      )
      const result = yield* onMemoryEngine(dir, {}, (shared) =>
        Effect.flatMap(run("lost request"), (answer) =>
          Effect.map(Journal.readEntries({ folder: shared.journalFolder, task: answer.task }), (entries) => ({
            answer,
            entries
          }))
        )
      ).pipe(Effect.provide(model))
      assert.strictEqual(result.answer.text, world.expectedAnswer("lost request"))
      assert.strictEqual(result.entries.filter((entry) => entry._tag === "TurnResumed").length, 1)
      const dispatched = result.entries.filter((entry) => entry._tag === "RequestDispatched").length
      const received = result.entries.filter((entry) => entry._tag === "ResponseReceived").length
      assert.strictEqual(dispatched, received + 1, "exactly one request was lost")
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("summary_staging_identical_retry_succeeds_different_body_fails", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const shared = yield* SharedStore.open({
        root: path.join(dir, "store"),
        agent,
        config: world.config(path.join(dir, "effects.log")),
        gate: { policy: world.policy }
      })
      const binding = yield* shared.hosting.bindTask(taskOf("staging"))
      const capability = yield* PrivateSummaries.resolve(binding.context)
      const key = { operation: world.operationId("staging-t1"), step: 3 }
      const stage = (body: string) => PrivateSummaries.stageOnce(key, body).pipe(PrivateSummaries.provide(capability))
      const first = yield* stage("summary A")
      const retry = yield* stage("summary A")
      const other = yield* Effect.exit(stage("summary B"))
      assert.strictEqual(first.outcome, "Published")
      assert.strictEqual(retry.outcome, "AlreadyStaged")
      assert.isTrue(Exit.isFailure(other))
      const failure = Exit.isFailure(other) ? other.cause.reasons[0] : undefined
      assert.strictEqual(failure?._tag === "Fail" ? failure.error._tag : "", "StagingConflict")
      assert.strictEqual(fs.readFileSync(first.absolutePath, "utf8"), "summary A")
      // Negative control: a stager that writes the final name directly lets the second body win.
      const naive = path.join(dir, "naive.txt")
      fs.writeFileSync(naive, "summary A")
      fs.writeFileSync(naive, "summary B")
      assert.notStrictEqual(fs.readFileSync(naive, "utf8"), "summary A")
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  /** Where the offload puts call `n` of the task's first turn (its step is `n`: one call per step). */
  const artifactOf = (shared: SharedStore.SharedStore, name: string, n: number) =>
    Effect.map(
      ToolResults.resultTarget({
        task: taskOf(name),
        turn: 1,
        step: n,
        call: Model.toolCall(`call-${n}`, "work", {})
      }),
      (target) => path.join(shared.privateFolder, VolumeStore.artifactFolder, target)
    )

  const withLeftover = (name: string, body: string) => (shared: SharedStore.SharedStore) =>
    Effect.map(artifactOf(shared, name, 1), (file) => {
      fs.mkdirSync(path.dirname(file), { recursive: true })
      fs.writeFileSync(file, body)
    })

  it.live("offload_identical_retry_reuses_different_body_fails_loudly", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const same = yield* onMemoryEngine(path.join(dir, "same"), {}, (shared) =>
        Effect.gen(function* () {
          // What an attempt that died after offloading call 1 left: exactly the bytes the re-run produces.
          yield* withLeftover("offload retry", world.resultOf(1))(shared)
          const answer = yield* run("offload retry")
          return yield* Journal.readEntries({ folder: shared.journalFolder, task: answer.task })
        })
      )
      const first = same.find((entry) => entry._tag === "ArtifactOffloaded" && entry.callId === "call-1")
      assert.strictEqual(first?._tag === "ArtifactOffloaded" ? first.disposition : undefined, "Reused")
      const changed = yield* onMemoryEngine(path.join(dir, "changed"), {}, (shared) =>
        Effect.gen(function* () {
          yield* withLeftover("offload retry", "[[r:1]] other bytes")(shared)
          const exit = yield* Effect.exit(run("offload retry"))
          const entries = yield* Journal.readEntries({ folder: shared.journalFolder, task: taskOf("offload retry") })
          return { exit, entries }
        })
      )
      const failure = Exit.isFailure(changed.exit) ? changed.exit.cause.reasons[0] : undefined
      assert.strictEqual(
        failure?._tag === "Fail" ? (failure.error as TaskWorkflow.TaskFailed).reason : "",
        "ToolResultChanged"
      )
      assert.isFalse(
        changed.entries.some((entry) => entry._tag === "ToolResulted"),
        "nothing recorded for the call"
      )
      assert.isFalse(changed.entries.some((entry) => entry._tag === "ArtifactOffloaded"))
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("offload_negative_control_the_local_executor_replaces_silently", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const shared = yield* SharedStore.open({
        root: path.join(dir, "store"),
        agent,
        config: world.config(path.join(dir, "effects.log")),
        gate: { policy: world.policy }
      })
      yield* withLeftover("offload retry", "[[r:1]] other bytes")(shared)
      const binding = yield* shared.hosting.bindTask(taskOf("offload retry"))
      const outcome = yield* Effect.scoped(
        Effect.flatMap(Journal.open({ folder: shared.journalFolder, task: taskOf("offload retry") }), (journal) =>
          TaskExecution.runTurn(
            binding,
            History.make([Model.text("user", `${world.promptPrefix}offload retry`)]),
            shared.hosting.config
          ).pipe(Effect.provideService(Journal.Journal, journal))
        )
      ).pipe(Effect.provide(ArtifactPathPolicy.layer(shared.pathPolicy)))
      // Without the workflow's check, the other bytes are replaced and the turn succeeds: no loud failure.
      assert.strictEqual(outcome.text, world.expectedAnswer("offload retry"))
      const entries = yield* Journal.readEntries({ folder: shared.journalFolder, task: taskOf("offload retry") })
      const first = entries.find((entry) => entry._tag === "ArtifactOffloaded" && entry.callId === "call-1")
      assert.strictEqual(first?._tag === "ArtifactOffloaded" ? first.disposition : undefined, "Replaced")
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  const runRecording = (dir: string, name: string, when: (line: string) => boolean) =>
    Effect.gen(function* () {
      const interrupted = interruptedAfterLine(when)
      const result = yield* onMemoryEngine(dir, {}, (shared) =>
        Effect.flatMap(run(name), (answer) =>
          Effect.map(Journal.readEntries({ folder: shared.journalFolder, task: answer.task }), (entries) => ({
            answer,
            entries
          }))
        )
      ).pipe(Effect.provideService(JournalStorage.JournalFile, interrupted.file))
      assert.isTrue(interrupted.fired(), "the interruption happened")
      return result
    })

  it.live("tool_result_recorded_before_the_engine_stored_it_is_not_recorded_again", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const { answer, entries } = yield* runRecording(
        dir,
        "recorded tool",
        (line) => line.includes('"_tag":"ToolResulted"') && line.includes('"callId":"call-3"')
      )
      assert.strictEqual(answer.text, world.expectedAnswer("recorded tool"))
      const ofCall = (tag: string) =>
        entries.filter((entry) => entry._tag === tag && "callId" in entry && entry.callId === "call-3").length
      assert.strictEqual(ofCall("ToolCalled"), 1)
      assert.strictEqual(ofCall("ToolResulted"), 1)
      assert.strictEqual(ofCall("ArtifactOffloaded"), 1)
      for (const count of world.effectCounts(path.join(dir, "effects.log")).values()) assert.strictEqual(count, 1)
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("response_recorded_before_the_engine_stored_it_is_not_recorded_again", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const { answer, entries } = yield* runRecording(
        dir,
        "recorded response",
        (line) => line.includes('"_tag":"ResponseReceived"') && line.includes('"step":2')
      )
      assert.strictEqual(answer.text, world.expectedAnswer("recorded response"))
      const count = (tag: string) => entries.filter((entry) => entry._tag === tag).length
      assert.strictEqual(count("ResponseReceived"), count("RequestDispatched"))
      assert.strictEqual(count("TurnResumed"), 0)
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  it.live("recorded_call_negative_control_a_naive_rerun_is_refused_by_the_journal", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      // The same re-run without the workflow's reconciliation: dispatching a call the journal already recorded.
      const shared = yield* SharedStore.open({
        root: path.join(dir, "store"),
        agent,
        config: world.config(path.join(dir, "effects.log")),
        gate: { policy: world.policy }
      })
      const task = taskOf("naive rerun")
      const binding = yield* shared.hosting.bindTask(task)
      const exit = yield* Effect.scoped(
        Effect.gen(function* () {
          const journal = yield* Journal.open({ folder: shared.journalFolder, task })
          const withJournal = Effect.provideService(Journal.Journal, journal)
          const config = shared.hosting.config
          const opened = yield* journal.openTurn
          const context = { task, turn: opened.turn, step: 1 }
          const history = History.make([Model.text("user", `${world.promptPrefix}naive rerun`)])
          const step = yield* withJournal(TaskExecution.modelStep(binding, config, context, history))
          const call = step.response.toolCalls[0] as Model.ToolCallPart
          yield* withJournal(TaskExecution.dispatchTools(binding, config, context, [call]))
          return yield* Effect.exit(withJournal(TaskExecution.dispatchTools(binding, config, context, [call])))
        })
      ).pipe(Effect.provide(ArtifactPathPolicy.layer(shared.pathPolicy)))
      const failure = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
      assert.strictEqual(failure?._tag === "Fail" ? failure.error._tag : "", "JournalSequenceError")
    }).pipe(Effect.scoped, Effect.provide(world.modelLayer), Effect.provide(world.platformLayer))
  )

  /** The test model, failing request `n` once with `reason`. */
  const failingOnce = (n: number, reason: Model.ModelErrorReason) => {
    let calls = 0
    return Model.layerFromGenerate((request) =>
      Effect.suspend(() => {
        calls += 1
        return calls === n
          ? Effect.fail(new Model.ModelError({ reason, detail: "the provider is overloaded" }))
          : Effect.succeed(world.answer(request))
      })
    )
  }

  const failureOf = (exit: Exit.Exit<unknown, unknown>) => {
    const reason = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
    return reason?._tag === "Fail" ? (reason.error as TaskWorkflow.TaskFailed) : undefined
  }

  it.live("transient_model_error_waits_durably_and_sends_the_step_again", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const started = Date.now()
      const result = yield* onMemoryEngine(dir, { modelRetry: { times: 2, delay: "300 millis" } }, (shared) =>
        Effect.flatMap(run("flaky model"), (answer) =>
          Effect.map(Journal.readEntries({ folder: shared.journalFolder, task: answer.task }), (entries) => ({
            answer,
            entries
          }))
        )
      ).pipe(Effect.provide(failingOnce(3, "ProviderFailure")))
      assert.strictEqual(result.answer.text, world.expectedAnswer("flaky model"))
      assert.strictEqual(result.entries.filter((entry) => entry._tag === "ModelFailed").length, 1)
      assert.isAtLeast(Date.now() - started, 300, "the step waited before it was sent again")
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("model_retry_negative_control_without_retry_or_for_a_bad_response_the_task_fails", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const plain = yield* onMemoryEngine(path.join(dir, "plain"), {}, () => Effect.exit(run("flaky model"))).pipe(
        Effect.provide(failingOnce(3, "ProviderFailure"))
      )
      assert.strictEqual(failureOf(plain)?.reason, "ModelError")
      assert.strictEqual(failureOf(plain)?.modelReason, "ProviderFailure")
      // A bad response is not transient: retrying would send the same request for the same answer.
      const invalid = yield* onMemoryEngine(
        path.join(dir, "invalid"),
        { modelRetry: { times: 2, delay: "10 millis" } },
        () => Effect.exit(run("flaky model"))
      ).pipe(Effect.provide(failingOnce(3, "InvalidResponse")))
      assert.strictEqual(failureOf(invalid)?.modelReason, "InvalidResponse")
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )
})
