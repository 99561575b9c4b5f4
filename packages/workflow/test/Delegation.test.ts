/**
 * Delegation in the task workflow, on `WorkflowEngine.layerMemory`: a
 * parent's `delegate` call is one of its call activities, each sub-task a
 * child task of its own (its own scope, private volume and journal), and
 * the journals end as the local executor leaves them. The control runs the
 * same scenario on broken wiring: a host that binds each child like one of
 * the parent's own tasks (the parent's grants, one shared scratchpad).
 */
import * as crypto from "node:crypto"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import type { Ids } from "@tessera/core"
import {
  Delegation,
  type EntryGate,
  History,
  Journal,
  type JournalEntry,
  JournalStorage,
  Model,
  TaskExecution,
  Tool
} from "@tessera/runtime"
import { SharedStore, TaskWorkflow, ToolCallKey } from "@tessera/workflow"
import { Effect, type FileSystem, Option, type Path } from "effect"
import * as scenario from "./support/delegation.ts"
import { interruptedAfterLine } from "./support/interruptions.ts"
import * as world from "./support/world.ts"

/** The journal without what differs between two runs of the same turn (time and position). */
const records = (entries: ReadonlyArray<JournalEntry.Entry>) => entries.map(({ at: _at, seq: _seq, ...rest }) => rest)

/**
 * A child's journal as two runs of the same sub-task must leave it: its records, but for the digests of the
 * transcript a local child's durable turn keeps (a child workflow's durable record is the engine's: it keeps none).
 */
const childRecords = (entries: ReadonlyArray<JournalEntry.Entry>) =>
  records(entries).map((record) => {
    if (!("transcript" in record)) return record
    const { transcript: _transcript, ...rest } = record
    return rest
  })

const isChildRecord = (entry: JournalEntry.Entry) => entry._tag === "ChildDelegated" || entry._tag === "ChildAnswered"

/**
 * A parent's journal as two runs of the same turn must leave it: its records in order, but for the delegation
 * records of children running at once, whose order is theirs (compared as a set, each once).
 */
const parentRecords = (entries: ReadonlyArray<JournalEntry.Entry>) => ({
  inOrder: records(entries.filter((entry) => !isChildRecord(entry))),
  children: records(entries.filter(isChildRecord))
    .map((record) => JSON.stringify(record))
    .sort()
})

/** What the engine holds of each child's execution, by agent: `Complete`, `Suspended`, or `None` (no execution). */
const executionsOf = (run: scenario.Run) =>
  Effect.gen(function* () {
    const found = new Map<string, string>()
    for (const [agent, child] of run.children) {
      const id = yield* TaskWorkflow.TaskWorkflow.executionId({ task: child.task, prompt: "" })
      const polled = yield* TaskWorkflow.TaskWorkflow.poll(id)
      found.set(agent, Option.isSome(polled) ? polled.value._tag : "None")
    }
    return found
  })

/** The scenario on the workflow, with `bindChild` when a control breaks the wiring. */
const onWorkflow = (dir: string, bindChild?: (shared: SharedStore.SharedStore) => scenario.BindChild) =>
  scenario.onMemoryEngine(dir, bindChild === undefined ? {} : { bindChild }, (shared) =>
    Effect.gen(function* () {
      const answer = yield* TaskWorkflow.run(scenario.request)
      const run = yield* scenario.journalsOf(shared.journalFolder, answer)
      return { ...run, executions: yield* executionsOf(run) }
    })
  )

/**
 * The idempotency key the workflow engine gives a child's call in the child's own execution: a SHA-256 of the
 * execution id (a function of the child task) and the call's name (`ToolCallKey.nameOf`), cut to 32 hex digits.
 */
const childKey = (task: Ids.TaskId, callId: string) =>
  Effect.map(TaskWorkflow.TaskWorkflow.executionId({ task, prompt: "" }), (executionId) =>
    crypto
      .createHash("sha256")
      .update(`${executionId}-${ToolCallKey.nameOf({ task, turn: 1, step: 1, callId })}`)
      .digest("hex")
      .slice(0, 32)
  )

/**
 * The same parent turn on the local executor: one `TaskExecution.runTurn` with `Delegation.tool` over a child
 * harness that binds each child with `Delegation.bindChild` and opens its journal beside the parent's.
 */
const onLocalExecutor = (dir: string) =>
  Effect.flatMap(
    SharedStore.open(scenario.storeOptions(path.join(dir, "store"), path.join(dir, "notes.log"))),
    inlineTurn
  )

/** The parent turn run inline (the local executor's `Delegation.tool`) on `shared`'s store. */
const inlineTurn = (shared: SharedStore.SharedStore) =>
  Effect.gen(function* () {
    const harness: Delegation.ChildHarness<
      unknown,
      Effect.Services<ReturnType<typeof Delegation.bindChild>> | FileSystem.FileSystem | Path.Path,
      Journal.Journal
    > = {
      withChild: (parent, child, body) =>
        Effect.flatMap(Delegation.bindChild(parent, child), (binding: EntryGate.TaskBinding) =>
          Effect.scoped(
            Effect.flatMap(Journal.open({ folder: shared.journalFolder, task: binding.context.task }), (journal) =>
              Effect.provideService(body(binding), Journal.Journal, journal)
            )
          )
        )
    }
    const task = scenario.parentTask
    const binding = yield* shared.hosting.bindTask(task)
    const outcome = yield* Effect.scoped(
      Effect.flatMap(Journal.open({ folder: shared.journalFolder, task }), (journal) =>
        Effect.gen(function* () {
          const delegate = yield* Delegation.tool(harness, binding, shared.hosting.children ?? [])
          return yield* TaskExecution.runTurn(binding, History.make([Model.text("user", scenario.request.prompt)]), {
            ...scenario.parentConfig,
            tools: Tool.registry(delegate)
          })
        }).pipe(Effect.provideService(Journal.Journal, journal))
      )
    ).pipe(Effect.provide(ArtifactPathPolicy.layer(shared.pathPolicy)))
    const answer: TaskWorkflow.TaskAnswer = {
      task,
      turn: 1,
      steps: outcome.steps,
      text: outcome._tag === "Answered" ? outcome.text : outcome._tag
    }
    return yield* scenario.journalsOf(shared.journalFolder, answer)
  })

describe("delegation in the task workflow on WorkflowEngine.layerMemory", () => {
  it.live("workflow_delegates_to_children", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const run = yield* onWorkflow(path.join(dir, "wf"))
      assert.deepStrictEqual(scenario.violations(path.join(dir, "wf", "store"), run), [])
      const scout = run.children.get("scout")
      const critic = run.children.get("critic")
      assert.include(run.answer.text, `[scout, task ${scout?.task}] scout: all readings nominal.`)
      assert.include(run.answer.text, `[critic, task ${critic?.task}] critic: the plan holds.`)
      assert.notInclude(run.answer.text, "PRIVATE-NOTES")
      // Each child's tool acted once, with a key of its own naming the child call (not the delegate call's key).
      const acted = scenario.actedKeys(path.join(dir, "wf", "notes.log"))
      const scoutKeys = acted.get("scout") ?? []
      const criticKeys = acted.get("critic") ?? []
      assert.lengthOf(scoutKeys, 1)
      assert.lengthOf(criticKeys, 1)
      assert.notStrictEqual(scoutKeys[0], criticKeys[0])
      // The key is the child's own execution's, over its call: each child is a workflow of its own.
      assert.strictEqual(scoutKeys[0], yield* childKey(scout?.task ?? scenario.parentTask, "n1"))
      assert.strictEqual(criticKeys[0], yield* childKey(critic?.task ?? scenario.parentTask, "n1"))
      // The engine lists each child as an execution of its own, complete with the answer the parent received.
      for (const agent of ["scout", "critic"]) {
        const execution = run.executions.get(agent)
        assert.strictEqual(execution, "Complete", `${agent}'s execution`)
      }
      // The journals the local executor leaves for the same turn: the parent's, and each child's.
      const local = yield* onLocalExecutor(path.join(dir, "local"))
      assert.strictEqual(run.answer.text, local.answer.text)
      assert.strictEqual(run.answer.steps, local.answer.steps)
      assert.deepStrictEqual(parentRecords(run.parent), parentRecords(local.parent))
      for (const agent of ["scout", "critic"]) {
        assert.deepStrictEqual(
          childRecords(run.children.get(agent)?.entries ?? []),
          childRecords(local.children.get(agent)?.entries ?? []),
          `${agent}'s journal`
        )
      }
    }).pipe(Effect.scoped, Effect.provide(scenario.model), Effect.provide(world.platformLayer))
  )

  it.live("workflow_delegates_to_children_negative_control_the_inline_form_leaves_no_child_execution", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      // Broken wiring: the delegation run inline (inside the parent's call), on the same engine: the children's
      // journals are there, the engine holds no execution of theirs.
      const executions = yield* scenario.onMemoryEngine(dir, {}, (shared) =>
        Effect.flatMap(inlineTurn(shared), executionsOf)
      )
      // Sorted: the children run at once, so either may be recorded first.
      assert.deepStrictEqual(
        [...executions].sort(([a], [b]) => a.localeCompare(b)),
        [
          ["critic", "None"],
          ["scout", "None"]
        ]
      )
    }).pipe(Effect.scoped, Effect.provide(scenario.model), Effect.provide(world.platformLayer))
  )

  /** The scenario with the critic held to `criticSteps` model steps; the parent's answer and journal. */
  const withCriticSteps = (dir: string, criticSteps: number | undefined) =>
    scenario.onMemoryEngine(
      dir,
      {
        children: (log) =>
          scenario
            .children(log)
            .map((child) =>
              child.agent === "critic" && criticSteps !== undefined ? { ...child, maxSteps: criticSteps } : child
            )
      },
      (shared) =>
        Effect.gen(function* () {
          const answer = yield* TaskWorkflow.run(scenario.request)
          return { answer, parent: yield* Journal.readEntries({ folder: shared.journalFolder, task: answer.task }) }
        })
    )
  const criticOutcome = (parent: ReadonlyArray<JournalEntry.Entry>) =>
    parent.flatMap((entry) => (entry._tag === "ChildAnswered" ? [entry.outcome] : [])).sort()

  it.live("workflow_child_that_fails_answers_the_call_with_its_failure", () =>
    Effect.gen(function* () {
      // The critic's workflow fails (one step allowed, it asks for a tool first): the parent's call reports it, goes on.
      const { answer, parent } = yield* withCriticSteps(yield* world.tempDir, 1)
      assert.deepStrictEqual(criticOutcome(parent), ["Answered", "Failed"])
      assert.include(answer.text, "gave no answer: it failed (StepLimitExceeded)")
      assert.include(answer.text, "scout: all readings nominal.")
    }).pipe(Effect.scoped, Effect.provide(scenario.model), Effect.provide(world.platformLayer))
  )

  it.live(
    "workflow_child_that_fails_answers_the_call_with_its_failure negative control: with its step budget the critic answers, and nothing reports a failure",
    () =>
      Effect.gen(function* () {
        const { answer, parent } = yield* withCriticSteps(yield* world.tempDir, undefined)
        assert.deepStrictEqual(criticOutcome(parent), ["Answered", "Answered"])
        assert.notInclude(answer.text, "it failed")
      }).pipe(Effect.scoped, Effect.provide(scenario.model), Effect.provide(world.platformLayer))
  )

  it.live("workflow_delegates_to_children_negative_control_children_bound_as_the_parents_own_tasks", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      // Broken wiring: each child bound like one of the parent's own tasks, its offloads in the agent's volume.
      const run = yield* onWorkflow(dir, scenario.asParentsOwn)
      const found = scenario.violations(path.join(dir, "store"), run)
      assert.include(found, "scout: its notes are in the agent's private volume")
      assert.include(found, "critic: its notes are in the agent's private volume")
      assert.include(
        found,
        `scout: its notes are not in its own private volume ${Delegation.childVolumes(run.children.get("scout")?.task ?? scenario.parentTask).private}`
      )
    }).pipe(Effect.scoped, Effect.provide(scenario.model), Effect.provide(world.platformLayer))
  )

  /** Interrupts the run right after the parent's journal durably recorded the delegate call's result. */
  const afterDelegateResult = () =>
    interruptedAfterLine((line) => line.includes('"_tag":"ToolResulted"') && line.includes('"callId":"d1"'))

  it.live("delegate_call_recorded_before_the_engine_stored_it_reads_its_children_back", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const expected = yield* onWorkflow(path.join(dir, "plain"))
      // The delegate call's activity is cut after its result was recorded: it runs again, its children answered.
      const cut = afterDelegateResult()
      const run = yield* onWorkflow(path.join(dir, "cut")).pipe(
        Effect.provideService(JournalStorage.JournalFile, cut.file)
      )
      assert.isTrue(cut.fired(), "the interruption happened")
      assert.deepStrictEqual(scenario.violations(path.join(dir, "cut", "store"), run), [])
      const ofCall = (tag: string) => run.parent.filter((entry) => entry._tag === tag).length
      assert.strictEqual(ofCall("ToolResulted"), 1, "the call's result recorded once")
      for (const agent of ["scout", "critic"]) {
        assert.lengthOf(scenario.actedKeys(path.join(dir, "cut", "notes.log")).get(agent) ?? [], 1, `${agent} once`)
        assert.deepStrictEqual(
          scenario.requestDigests(run.children.get(agent)?.entries ?? []),
          scenario.requestDigests(expected.children.get(agent)?.entries ?? [])
        )
      }
      assert.strictEqual(run.answer.text, expected.answer.text)
      assert.deepStrictEqual(scenario.requestDigests(run.parent), scenario.requestDigests(expected.parent))
    }).pipe(Effect.scoped, Effect.provide(scenario.model), Effect.provide(world.platformLayer))
  )

  it.live("delegate_call_recorded_before_the_engine_stored_it_negative_control_a_host_that_forgets_its_children", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      // Broken wiring: a host that forgets its children between runs, so the re-run finds none answered and runs
      // them anew.
      const cut = afterDelegateResult()
      const run = yield* onWorkflow(dir, scenario.forgetful).pipe(
        Effect.provideService(JournalStorage.JournalFile, cut.file)
      )
      assert.isTrue(cut.fired(), "the interruption happened")
      // Each child's workflow binds it on every run of its body and the parent's collect binds it again: a host
      // that forgets it in between leaves no child turn whole, and the run's checks find each child's work lost.
      const found = [...scenario.violations(path.join(dir, "store"), run)]
      assert.includeMembers(found, ["scout: turn not closed", "critic: turn not closed"])
    }).pipe(Effect.scoped, Effect.provide(scenario.model), Effect.provide(world.platformLayer))
  )

  const parentCall = { task: world.taskId("plan-1"), turn: 1, step: 1, callId: "d1" }
  const childCall = { task: world.taskId("plan-1-child-abc"), turn: 1, step: 1, callId: "n1" }
  /** The key a tool sees at `position` under the delegate call's key, provided with or without its call. */
  const keyAt = (position: Tool.CallPosition, withCall: boolean) =>
    ToolCallKey.current.pipe(
      Effect.provideService(Tool.CurrentCall, Option.some(position)),
      withCall ? ToolCallKey.provide("K", parentCall) : ToolCallKey.provide("K")
    )

  it.effect("child_calls_get_tool_call_keys_of_their_own", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* keyAt(parentCall, true), Option.some("K"))
      assert.deepStrictEqual(yield* keyAt(childCall, true), Option.some(`K/${ToolCallKey.nameOf(childCall)}`))
      const sibling = { ...childCall, callId: "n2" }
      assert.notDeepEqual(yield* keyAt(sibling, true), yield* keyAt(childCall, true))
    })
  )

  it.effect("child_calls_get_tool_call_keys_of_their_own_negative_control_a_key_without_its_call_is_shared", () =>
    Effect.gen(function* () {
      // Provided without the call it was made for, the key cannot tell a child's call from the delegate call.
      assert.deepStrictEqual(yield* keyAt(childCall, false), yield* keyAt(parentCall, false))
    })
  )
})
