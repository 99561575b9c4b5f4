/**
 * One writer per task journal across runners: two runners (two Postgres
 * connection pools) running an activity of the same task one after the
 * other, never at once; different tasks at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cluster, TaskLock, TemporaryPostgres } from "@tessera/workflow"
import { Effect, Layer } from "effect"
import * as world from "../support/world.ts"

/** Two activities under `lock`, as two runners would run them; returns the spans each held, in ms since start. */
const overlapOf = (lockA: TaskLock.TaskLockShape, lockB: TaskLock.TaskLockShape, taskA: string, taskB: string) =>
  Effect.gen(function* () {
    const started = performance.now()
    const spans: Array<readonly [number, number]> = []
    const activity = (lock: TaskLock.TaskLockShape, task: string) =>
      lock.withLock(
        world.taskId(task),
        Effect.gen(function* () {
          const from = performance.now() - started
          yield* Effect.sleep("300 millis")
          spans.push([from, performance.now() - started])
        })
      )
    yield* Effect.all([activity(lockA, taskA), activity(lockB, taskB)], { concurrency: 2 })
    const [first, second] = [...spans].sort((a, b) => a[0] - b[0])
    return (first?.[1] ?? 0) > (second?.[0] ?? 0)
  })

/** The lock a runner's `Cluster.layer` provides, on its own pool. */
const runnerLock = (url: string) =>
  Effect.map(Layer.build(Cluster.layerTaskLock({ url, connections: 2 })), (context) =>
    Effect.runSync(TaskLock.TaskLock.useSync((lock) => lock).pipe(Effect.provideContext(context)))
  )

describe("TaskLock on Postgres", () => {
  it.live("task_lock_serializes_one_task_across_runners", () =>
    Effect.gen(function* () {
      const pg = yield* TemporaryPostgres.make()
      const a = yield* runnerLock(pg.url)
      const b = yield* runnerLock(pg.url)
      assert.isFalse(yield* overlapOf(a, b, "same-task", "same-task"), "one task: one activity at a time")
      assert.isTrue(yield* overlapOf(a, b, "task-a", "task-b"), "two tasks run at once")
    }).pipe(Effect.scoped)
  )

  it.live("task_lock_negative_control_without_the_lock_one_task_overlaps", () =>
    Effect.gen(function* () {
      // The one-process default (no lock), used by two runners: the same task's activities overlap.
      const none = TaskLock.TaskLock.defaultValue()
      assert.isTrue(yield* overlapOf(none, none, "same-task", "same-task"))
    })
  )
})
