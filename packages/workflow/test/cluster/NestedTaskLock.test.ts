/**
 * A task lock taken inside another (a child's journal, opened inside its
 * parent's delegate call): siblings hold theirs at once, each on a
 * transaction of its own, and one child's lock still admits one holder.
 * The control is the same lock as a savepoint of the outer transaction,
 * where the client runs one savepoint at a time: siblings wait for each
 * other.
 */

import { PgClient } from "@effect/sql-pg"
import { assert, describe, it } from "@effect/vitest"
import { Cluster, TaskLock, TemporaryPostgres } from "@tessera/workflow"
import { Effect, Layer, Redacted } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as world from "../support/world.ts"

/** Under `lock` of the parent, two children's locks taken at once; true when their holds overlapped. */
const siblingsOverlap = (lock: TaskLock.TaskLockShape, childA: string, childB: string) =>
  Effect.gen(function* () {
    const started = performance.now()
    const spans: Array<readonly [number, number]> = []
    const child = (task: string) =>
      lock.withLock(
        world.taskId(task),
        Effect.gen(function* () {
          const from = performance.now() - started
          yield* Effect.sleep("300 millis")
          spans.push([from, performance.now() - started])
        })
      )
    yield* lock.withLock(
      world.taskId("parent"),
      Effect.all([child(childA), child(childB)], { concurrency: 2, discard: true })
    )
    const [first, second] = [...spans].sort((a, b) => a[0] - b[0])
    return (first?.[1] ?? 0) > (second?.[0] ?? 0)
  })

/** The lock a runner's `Cluster.layer` provides, on its own pool. */
const runnerLock = (url: string) =>
  Effect.map(Layer.build(Cluster.layerTaskLock({ url, connections: 4 })), (context) =>
    Effect.runSync(TaskLock.TaskLock.useSync((lock) => lock).pipe(Effect.provideContext(context)))
  )

describe("TaskLock on Postgres, nested", () => {
  it.live("task_lock_inside_another_lets_siblings_hold_theirs_at_once", () =>
    Effect.gen(function* () {
      const pg = yield* TemporaryPostgres.make()
      const lock = yield* runnerLock(pg.url)
      assert.isTrue(yield* siblingsOverlap(lock, "child-a", "child-b"), "two children at once")
      assert.isFalse(yield* siblingsOverlap(lock, "child-a", "child-a"), "one child: one holder at a time")
    }).pipe(Effect.scoped)
  )

  it.live("task_lock_inside_another_negative_control_as_a_savepoint_siblings_wait", () =>
    Effect.gen(function* () {
      const pg = yield* TemporaryPostgres.make()
      const sql = yield* PgClient.make({ url: Redacted.make(pg.url), maxConnections: 4 }).pipe(
        Effect.provide(Reactivity.layer)
      )
      // The lock without its own transaction: nested, `withTransaction` makes it a savepoint of the parent's.
      const savepoint: TaskLock.TaskLockShape = {
        withLock: (task, effect) =>
          sql.withTransaction(
            Effect.andThen(sql`select pg_advisory_xact_lock(hashtext('tessera.task'), hashtext(${task}))`, effect)
          )
      }
      assert.isFalse(yield* siblingsOverlap(savepoint, "child-a", "child-b"))
    }).pipe(Effect.scoped)
  )
})
