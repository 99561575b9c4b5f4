/**
 * An approval on the cluster: the task waits for the host's decision on a
 * runner that is then killed with SIGKILL; the decision, made from a client
 * process, resumes the task on another runner.
 */
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Journal } from "@tessera/runtime"
import { SharedStore, TaskHosting, TaskWorkflow, TemporaryPostgres } from "@tessera/workflow"
import { Effect } from "effect"
import { approvalConfig, waitFor } from "../support/approvals.ts"
import * as cluster from "../support/cluster.ts"
import * as world from "../support/world.ts"

describe("approvals on a cluster over Postgres", () => {
  it.live(
    "approval_waits_across_a_runner_kill_and_resumes_on_another_runner",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const pg = yield* TemporaryPostgres.make()
        const options = { store: path.join(dir, "store"), log: path.join(dir, "effects.log"), approvals: true }
        const first = yield* cluster.startRunner(pg, options, 0)
        // The deciding host mounts the same store as the runners; it serves no task.
        const shared = yield* SharedStore.open({
          root: options.store,
          storeId: world.storeId,
          agent: world.agent,
          config: approvalConfig()(options.log),
          gate: {}
        })
        const task = world.taskId("cluster-approvals")
        const request = { task, prompt: `${world.promptPrefix}cluster approvals` }
        const result = yield* Effect.gen(function* () {
          yield* TaskWorkflow.TaskWorkflow.execute(request, { discard: true })
          const pending = yield* waitFor(TaskWorkflow.awaitingApproval(task), (calls) => calls.length === 2, "2 calls")
          // The runner the task waits on dies; the decision comes later, and another runner continues.
          yield* cluster.kill(first)
          yield* cluster.startRunner(pg, options, 1)
          yield* TaskWorkflow.decide(task, { callId: "call-a", approved: true, by: "alice" })
          yield* TaskWorkflow.decide(task, { callId: "call-b", approved: false, by: "bob", note: "not today" })
          const answer = yield* TaskWorkflow.run(request).pipe(Effect.timeout("90 seconds"))
          return { pending, answer }
        }).pipe(Effect.provide(cluster.client(pg)), Effect.provideService(TaskHosting.TaskHosting, shared.hosting))
        assert.deepStrictEqual(
          result.pending.map((call) => call.callId),
          ["call-a", "call-b"]
        )
        assert.strictEqual(
          result.answer.text,
          'call-a=ok; call-b=error(the call to tool "work" was rejected by bob: not today; it did not run); call-c=ok'
        )
        const counts = world.effectCounts(options.log)
        assert.strictEqual(counts.get("cluster_approvals 1"), 1)
        assert.strictEqual(counts.get("cluster_approvals 2"), undefined, "the rejected call never ran")
        const entries = yield* Journal.readEntries({ folder: shared.journalFolder, task })
        assert.deepStrictEqual(
          entries.flatMap((entry) => (entry._tag === "ApprovalDecided" ? [[entry.callId, entry.by]] : [])),
          [
            ["call-a", "alice"],
            ["call-b", "bob"]
          ]
        )
        assert.strictEqual(entries.at(-1)?._tag, "TurnClosed")
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer)),
    { timeout: 150_000 }
  )
})
