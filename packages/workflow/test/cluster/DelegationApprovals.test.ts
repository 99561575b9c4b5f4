/**
 * A child's approval on a cluster over Postgres: the parent's workflow
 * suspends on its delegate call while the child waits for the host; the
 * runner it suspended on is then killed with SIGKILL, and the decision,
 * made from a process that runs no task, resumes the parent on another
 * runner: the child's deploy runs once, the child's call is decided once
 * with who decided, and the parent completes.
 *
 * The control makes no decision after the kill: the parent stays
 * suspended on another runner and the deploy never runs (the wait is the
 * host's, not a runner's).
 *
 * Skipped, loudly, when no PostgreSQL server is installed (see
 * `vitest.workspace.ts`).
 */
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Journal } from "@tessera/runtime"
import { SharedStore, TaskHosting, TaskWorkflow, TemporaryPostgres } from "@tessera/workflow"
import { Effect, Option } from "effect"
import { waitFor } from "../support/approvals.ts"
import * as cluster from "../support/cluster.ts"
import * as scenario from "../support/delegationApprovals.ts"
import * as world from "../support/world.ts"

/**
 * Runner 0 alone until the parent waits on its delegate call; then it is SIGKILLed and runner 1 joins; `decide`
 * (when given) comes from this process, and the parent's run returns what it ended with.
 */
const killWhileWaiting = (dir: string, decide: boolean) =>
  Effect.gen(function* () {
    const pg = yield* TemporaryPostgres.make()
    const options = {
      store: path.join(dir, "store"),
      log: path.join(dir, "deploys.log"),
      environments: ["production"]
    }
    const first = yield* scenario.startRunner(pg, options, 0)
    // The deciding host mounts the same store as the runners; it serves no task.
    const shared = yield* SharedStore.open(scenario.storeOptions(options.store, options.log))
    const task = scenario.parentTask
    return yield* Effect.gen(function* () {
      yield* TaskWorkflow.TaskWorkflow.execute(scenario.request, { discard: true })
      const pending = yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 1, "the wait")
      yield* cluster.kill(first)
      yield* scenario.startRunner(pg, options, 1)
      const executionId = yield* TaskWorkflow.TaskWorkflow.executionId(scenario.request)
      if (!decide) {
        // However long the host takes, the parent stays suspended on its call and the child's deploy does not run.
        yield* Effect.sleep("3 seconds")
        const state = yield* TaskWorkflow.TaskWorkflow.poll(executionId)
        return { pending, answer: Option.none<string>(), state: Option.map(state, (result) => result._tag) }
      }
      for (const call of pending) {
        yield* TaskWorkflow.decide(
          call.task,
          { callId: call.callId, approved: true, by: "alice" },
          { delegation: call.delegation }
        )
      }
      const answer = yield* TaskWorkflow.run(scenario.request).pipe(Effect.timeout("90 seconds"))
      const state = yield* TaskWorkflow.TaskWorkflow.poll(executionId)
      return { pending, answer: Option.some(answer.text), state: Option.map(state, (result) => result._tag) }
    }).pipe(
      Effect.provide(cluster.client(pg)),
      Effect.provideService(TaskHosting.TaskHosting, shared.hosting),
      Effect.map((result) => ({ ...result, shared, log: options.log }))
    )
  })

const journalsOf = (shared: SharedStore.SharedStore) =>
  Effect.gen(function* () {
    const parent = yield* Journal.readEntries({ folder: shared.journalFolder, task: scenario.parentTask })
    const child = scenario.childTaskOf(parent)
    return {
      parent,
      child: child === undefined ? [] : yield* Journal.readEntries({ folder: shared.journalFolder, task: child })
    }
  })

describe("a child's approvals on a cluster over Postgres", () => {
  it.live(
    "workflow_child_approval_decided_after_the_runner_died",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const run = yield* killWhileWaiting(dir, true)
        // The child's own call waits, in the child's workflow, listed with the child's task.
        const { child, parent } = yield* journalsOf(run.shared)
        assert.deepStrictEqual(
          run.pending.map((call) => [call.task, call.callId, call.reason]),
          [[scenario.childTaskOf(parent), "x1", "Tool"]]
        )
        assert.include(
          Option.getOrElse(run.answer, () => ""),
          "deployed to production"
        )
        assert.deepStrictEqual(scenario.deploysIn(run.log), ["production"], "the deploy ran once")
        assert.deepStrictEqual(scenario.decisionsOf(parent), [])
        assert.deepStrictEqual(scenario.decisionsOf(child), [["x1", true, "alice"]])
        assert.strictEqual(parent.at(-1)?._tag, "TurnClosed")
        assert.strictEqual(child.at(-1)?._tag, "TurnClosed")
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer)),
    { timeout: 150_000 }
  )

  it.live(
    "workflow_child_approval_decided_after_the_runner_died negative control: without the decision, the new runner never completes the parent and the deploy stays unrun",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const run = yield* killWhileWaiting(dir, false)
        // Not complete: suspended, or (the new runner replaying it, waiting for its child) still running.
        assert.notDeepEqual(run.state, Option.some("Complete"))
        assert.deepStrictEqual(scenario.deploysIn(run.log), [])
        const { child, parent } = yield* journalsOf(run.shared)
        assert.deepStrictEqual(scenario.decisionsOf(parent), [])
        assert.deepStrictEqual(scenario.decisionsOf(child), [])
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer)),
    { timeout: 150_000 }
  )
})
