/**
 * A child's approval request in the task workflow (on
 * `WorkflowEngine.layerMemory`): a parent's `delegate` call whose child
 * waits for the host suspends the parent's workflow durably, as a call that
 * needs approval does (`ApprovalRequested`, reason `Delegated`, naming the
 * child's call; a `DurableDeferred` for the call; the engine reports the
 * execution `Suspended`). `TaskWorkflow.decide` on the parent's call
 * journals `ApprovalDecided` and completes the deferred; the call runs
 * again, the decision goes on to exactly the child's call (decided once, in
 * the child's journal, with who decided), the child continues and the
 * parent answers. The parent's journal is the one the local executor leaves
 * for the same decisions, and activities cut short after a record (the
 * call's wait, the decision handed on to the child, the call's result) write
 * none of it twice. The negative control dispatches the same
 * delegation where nothing can wait, as the workflow did before: the parent
 * answers without the host ever deciding.
 */
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
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
import { SharedStore, TaskHosting, TaskWorkflow } from "@tessera/workflow"
import { Effect, Fiber, type FileSystem, Layer, Option, type Path } from "effect"
import { levelOf } from "../src/internal/delegation.js"
import { waitFor } from "./support/approvals.ts"
import {
  childTaskOf,
  decisionsOf,
  delegatedRequests,
  deploysIn,
  modelFor,
  parentTask,
  request,
  storeOptions
} from "./support/delegationApprovals.ts"
import { interruptedAfterLine } from "./support/interruptions.ts"
import * as world from "./support/world.ts"

/** The journal without what differs between two runs of the same turn (time and position). */
const records = (entries: ReadonlyArray<JournalEntry.Entry>) => entries.map(({ at: _at, seq: _seq, ...rest }) => rest)

/**
 * A parent's journal as both forms leave it for the same decisions: the inline form's waits on the delegate call
 * (its `ApprovalRequested`, `ApprovalDecided` and `TurnResumed`, and the children's answers while they waited,
 * recorded again once they answered) are the child workflow's own; the rest is the same.
 */
const parentRecords = (entries: ReadonlyArray<JournalEntry.Entry>) => {
  const kept = records(
    entries.filter(
      (entry) =>
        entry._tag !== "ApprovalRequested" &&
        entry._tag !== "ApprovalDecided" &&
        entry._tag !== "TurnResumed" &&
        !(entry._tag === "ChildAnswered" && entry.outcome === "AwaitingApproval")
    )
  )
  const isChild = (record: (typeof kept)[number]) => record._tag === "ChildDelegated" || record._tag === "ChildAnswered"
  // The children's records as a set, each once: the inline form records its children on each run of the call, and
  // records them inside the call (after its `ToolCalled`), the child workflows before it.
  // The inline form calls the delegate again after each decision (a `ToolCalled` per run): the call, once.
  const called = new Set<string>()
  return {
    inOrder: kept.filter((record) => {
      if (isChild(record)) return false
      if (record._tag !== "ToolCalled") return true
      const seen = called.has(record.callId)
      called.add(record.callId)
      return !seen
    }),
    children: [...new Set(kept.filter(isChild).map((record) => JSON.stringify(record)))].sort()
  }
}

/** A child's journal without its durable turn's transcript digests (a child workflow's record is the engine's). */
const childRecords = (entries: ReadonlyArray<JournalEntry.Entry>) =>
  records(entries).map((record) => {
    if (!("transcript" in record)) return record
    const { transcript: _transcript, ...rest } = record
    return rest
  })

/** A store whose tasks may delegate to the releaser, its deploys marked in `<dir>/deploys.log`. */
const openStore = (dir: string) =>
  SharedStore.open(storeOptions(path.join(dir, "store"), path.join(dir, "deploys.log")))
const deploys = (dir: string) => deploysIn(path.join(dir, "deploys.log"))

/** Runs `body` with the workflow on the in-memory engine over a fresh store (see {@link openStore}). */
const onMemoryEngine = <A, E, R>(dir: string, body: (shared: SharedStore.SharedStore) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const shared = yield* openStore(dir)
    const services = Layer.mergeAll(
      Layer.succeed(TaskHosting.TaskHosting)(shared.hosting),
      ArtifactPathPolicy.layer(shared.pathPolicy)
    )
    return yield* body(shared).pipe(
      Effect.provide(TaskWorkflow.layerMemory.pipe(Layer.provide(services))),
      Effect.provide(services)
    )
  })

/** What the engine says of the task's execution: `Suspended`, `Complete`, or `None` while it runs. */
const engineState = Effect.flatMap(TaskWorkflow.TaskWorkflow.executionId({ task: parentTask, prompt: "" }), (id) =>
  Effect.map(
    TaskWorkflow.TaskWorkflow.poll(id),
    Option.map((result) => result._tag)
  )
)
const suspended = waitFor(engineState, (state) => Option.isSome(state) && state.value === "Suspended", "suspension")

/** A decision the host makes on the parent's `d1`, once the workflow waits for it the `round`-th time. */
interface HostDecision {
  readonly approved: boolean
  readonly by: string
  readonly note?: string
}

/**
 * The scenario on the workflow: the parent runs until it waits for each decision in turn, which the host then
 * makes on `d1`; what the host saw at each wait (the engine's state, the deploys run, the calls that wait), and
 * the journals.
 */
const onWorkflow = (dir: string, decisions: ReadonlyArray<HostDecision>) =>
  onMemoryEngine(dir, (shared) =>
    Effect.gen(function* () {
      const fiber = yield* Effect.forkChild(TaskWorkflow.run(request))
      const waits: Array<{ readonly state: string; readonly ran: ReadonlyArray<string>; readonly pending: string }> = []
      for (const [index, decision] of decisions.entries()) {
        // The child's own call waits, in the child's own workflow; the parent lists it, with the child's task.
        const pending = yield* waitFor(
          TaskWorkflow.awaitingApproval(parentTask),
          (calls) => calls.length === 1 && calls[0]?.callId === `x${index + 1}`,
          `wait ${index + 1}`
        )
        yield* suspended
        // However long the host takes, nothing more of the turn runs while the parent waits.
        yield* Effect.sleep("200 millis")
        const state = Option.getOrElse(yield* engineState, () => "None")
        waits.push({ state, ran: deploys(dir), pending: pending.map((call) => `${call.callId}:${call.reason}`).join() })
        for (const call of pending) {
          yield* TaskWorkflow.decide(call.task, { callId: call.callId, ...decision }, { delegation: call.delegation })
        }
      }
      const answer = yield* Fiber.join(fiber)
      return { answer: answer.text, waits, ran: deploys(dir), ...(yield* journalsOf(shared)) }
    })
  )

/** The parent's journal and its child's. */
const journalsOf = (shared: SharedStore.SharedStore) =>
  Effect.gen(function* () {
    const parent = yield* Journal.readEntries({ folder: shared.journalFolder, task: parentTask })
    const child = childTaskOf(parent)
    const childEntries =
      child === undefined ? [] : yield* Journal.readEntries({ folder: shared.journalFolder, task: child })
    return { parent, child: childEntries }
  })

/**
 * The same decisions on the local executor: `TaskExecution.runTurn` with `Delegation.tool` over a harness that
 * binds the child with `Delegation.bindChild` and opens its journal beside the parent's; after each wait the host
 * decides the parent's call (`TaskExecution.decide`) and resumes the turn (`TaskExecution.resumeTurn`).
 */
const onLocalExecutor = (dir: string, decisions: ReadonlyArray<HostDecision>) =>
  Effect.gen(function* () {
    const shared = yield* openStore(dir)
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
    const binding = yield* shared.hosting.bindTask(parentTask)
    const answer = yield* Effect.scoped(
      Effect.flatMap(Journal.open({ folder: shared.journalFolder, task: parentTask }), (journal) =>
        Effect.gen(function* () {
          const delegate = yield* Delegation.tool(harness, binding, shared.hosting.children ?? [])
          const config = { ...shared.hosting.config, tools: Tool.registry(delegate) }
          let outcome = yield* TaskExecution.runTurn(
            binding,
            History.make([Model.text("user", request.prompt)]),
            config
          )
          for (const decision of decisions) {
            if (outcome._tag !== "AwaitingApproval") return `answered before ${decision.by} decided`
            yield* TaskExecution.decide(binding, { callId: "d1", ...decision })
            outcome = yield* TaskExecution.resumeTurn(binding, outcome.history, config)
          }
          return outcome._tag === "Answered" ? outcome.text : outcome._tag
        }).pipe(Effect.provideService(Journal.Journal, journal))
      )
    ).pipe(Effect.provide(ArtifactPathPolicy.layer(shared.pathPolicy)))
    return { answer, ran: deploys(dir), ...(yield* journalsOf(shared)) }
  })

const alice: HostDecision = { approved: true, by: "alice" }
const bob: HostDecision = { approved: false, by: "bob", note: "EU freeze" }

/** Runs the scenario on the workflow and on the local executor, each over a store of its own. */
const bothWays = (dir: string, environments: ReadonlyArray<string>, decisions: ReadonlyArray<HostDecision>) =>
  Effect.gen(function* () {
    const workflow = yield* onWorkflow(path.join(dir, "wf"), decisions).pipe(Effect.provide(modelFor(environments)))
    const local = yield* onLocalExecutor(path.join(dir, "local"), decisions).pipe(
      Effect.provide(modelFor(environments))
    )
    return { workflow, local }
  })

describe("a child's approvals in the task workflow on WorkflowEngine.layerMemory", () => {
  it.live("workflow_child_approval_waits_durably", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const { local, workflow } = yield* bothWays(dir, ["production"], [alice])
      // Suspended on the delegate call, the child's deploy not run.
      assert.deepStrictEqual(workflow.waits, [{ state: "Suspended", ran: [], pending: "x1:Tool" }])
      // The parent's own journal asks nothing: the child's call waits in the child's workflow.
      assert.deepStrictEqual(delegatedRequests(workflow.parent), [])
      // Approved: the child's deploy ran once, and the parent answered with it.
      assert.deepStrictEqual(workflow.ran, ["production"])
      assert.deepStrictEqual(local.ran, ["production"])
      assert.strictEqual(workflow.answer, local.answer)
      assert.include(workflow.answer, "deployed to production")
      // Decided once, on the child's call, by the parent's host.
      assert.deepStrictEqual(decisionsOf(workflow.child), [["x1", true, "alice"]])
      assert.deepStrictEqual(decisionsOf(workflow.parent), [])
      // The journals the local executor leaves for the same decision.
      assert.deepStrictEqual(parentRecords(workflow.parent), parentRecords(local.parent))
      assert.deepStrictEqual(childRecords(workflow.child), childRecords(local.child))
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("workflow_child_approval_waits_durably rejected: the child is told, answers, and the parent completes", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const { local, workflow } = yield* bothWays(dir, ["eu"], [bob])
      assert.deepStrictEqual(workflow.waits, [{ state: "Suspended", ran: [], pending: "x1:Tool" }])
      assert.deepStrictEqual(workflow.ran, [])
      assert.include(workflow.answer, 'the call to tool "deploy" was rejected by bob: EU freeze; it did not run')
      assert.strictEqual(workflow.answer, local.answer)
      assert.deepStrictEqual(decisionsOf(workflow.child), [["x1", false, "bob"]])
      assert.deepStrictEqual(parentRecords(workflow.parent), parentRecords(local.parent))
      assert.deepStrictEqual(childRecords(workflow.child), childRecords(local.child))
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live(
    "workflow_child_approval_waits_durably twice: a child that asks again suspends the parent again, each wait its own decision",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const { local, workflow } = yield* bothWays(dir, ["production", "eu"], [alice, bob])
        assert.deepStrictEqual(workflow.waits, [
          { state: "Suspended", ran: [], pending: "x1:Tool" },
          { state: "Suspended", ran: ["production"], pending: "x2:Tool" }
        ])
        assert.deepStrictEqual(workflow.ran, ["production"])
        assert.strictEqual(workflow.answer, local.answer)
        assert.deepStrictEqual(decisionsOf(workflow.child), [
          ["x1", true, "alice"],
          ["x2", false, "bob"]
        ])
        assert.deepStrictEqual(parentRecords(workflow.parent), parentRecords(local.parent))
        assert.deepStrictEqual(childRecords(workflow.child), childRecords(local.child))
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live(
    "workflow_child_approval_waits_durably twice, the same decision both times: the second is journaled for the second wait, not taken for a retry of the first",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const { local, workflow } = yield* bothWays(dir, ["production", "eu"], [alice, alice])
        assert.deepStrictEqual(workflow.ran, ["production", "eu"])
        assert.strictEqual(workflow.answer, local.answer)
        assert.deepStrictEqual(decisionsOf(workflow.parent), [])
        assert.deepStrictEqual(decisionsOf(workflow.child), [
          ["x1", true, "alice"],
          ["x2", true, "alice"]
        ])
        assert.deepStrictEqual(parentRecords(workflow.parent), parentRecords(local.parent))
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live("workflow_child_approval_activities_interrupted_after_a_record_do_not_write_it_twice", () =>
    Effect.gen(function* () {
      const dir = yield* world.tempDir
      const plain = yield* onWorkflow(path.join(dir, "plain"), [alice, bob]).pipe(
        Effect.provide(modelFor(["production", "eu"]))
      )
      const points: ReadonlyArray<readonly [string, (line: string) => boolean]> = [
        // The child's call waits (journaled), and the runner dies before the engine stored that it waits.
        ["waits", (line) => line.includes('"_tag":"ApprovalRequested"') && line.includes('"callId":"x1"')],
        // The child's turn resumed after the host's decision on its call, and died there.
        ["handed on", (line) => line.includes('"_tag":"TurnResumed"')],
        ["answered", (line) => line.includes('"_tag":"ToolResulted"') && line.includes('"callId":"d1"')]
      ]
      for (const [label, when] of points) {
        const interrupted = interruptedAfterLine(when)
        const run = yield* onWorkflow(path.join(dir, label), [alice, bob]).pipe(
          Effect.provide(modelFor(["production", "eu"])),
          Effect.provideService(JournalStorage.JournalFile, interrupted.file)
        )
        assert.isTrue(interrupted.fired(), `${label}: the interruption happened`)
        assert.deepStrictEqual(run.ran, ["production"], label)
        assert.strictEqual(run.answer, plain.answer, label)
        // Nothing twice: each activity cut short finds its record and does not write it again.
        const called = (entries: ReadonlyArray<JournalEntry.Entry>) =>
          entries.filter((entry) => entry._tag === "ToolCalled").length
        assert.strictEqual(called(run.parent), called(plain.parent), label)
        assert.strictEqual(called(run.child), called(plain.child), label)
        const others = (entries: ReadonlyArray<JournalEntry.Entry>) =>
          records(entries.filter((entry) => entry._tag !== "ToolCalled"))
        assert.deepStrictEqual(others(run.parent), others(plain.parent), label)
        assert.deepStrictEqual(records(run.child), records(plain.child), label)
      }
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )

  it.live(
    "workflow_child_approval_waits_durably negative control: the delegation dispatched where nothing can wait (as the workflow did) answers without any decision",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        // The workflow's own delegate tool (its child harness, under the child's lock), dispatched as before:
        // stripped of its approval declaration, the turn's loop sends it through `dispatchTools`.
        const outcome = yield* onMemoryEngine(dir, (shared) =>
          Effect.gen(function* () {
            const { binding, config } = yield* levelOf(parentTask, Option.none())
            const tools = [...config.tools.tools.values()].map((tool) => {
              const { needsApproval: _, ...stripped } = tool
              return stripped as typeof tool
            })
            const answer = yield* Effect.scoped(
              Effect.flatMap(Journal.open({ folder: shared.journalFolder, task: parentTask }), (journal) =>
                TaskExecution.runTurn(binding, History.make([Model.text("user", request.prompt)]), {
                  ...config,
                  tools: Tool.registry(...tools)
                }).pipe(Effect.provideService(Journal.Journal, journal))
              )
            )
            return { answer, ...(yield* journalsOf(shared)) }
          })
        ).pipe(Effect.provide(modelFor(["production"])))
        assert.strictEqual(outcome.answer._tag, "Answered")
        assert.include(outcome.answer._tag === "Answered" ? outcome.answer.text : "", "waits for an approval")
        assert.deepStrictEqual(deploys(dir), [])
        assert.deepStrictEqual(delegatedRequests(outcome.parent), [])
        assert.deepStrictEqual(decisionsOf(outcome.parent), [])
        assert.deepStrictEqual(decisionsOf(outcome.child), [])
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )
})
