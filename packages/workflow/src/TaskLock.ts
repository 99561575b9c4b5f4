/**
 * One writer per task journal across runners.
 *
 * The workflow engine runs a task on one runner at a time, but an activity
 * cannot be cut short (the engine runs it uninterruptibly): during a shard
 * hand-over (a runner joined, or one shut down), an activity still running
 * on the old owner and its re-run on the new owner could write the same
 * journal at once. Every activity of the task workflow therefore opens the
 * task's journal under {@link TaskLock}: on the cluster
 * ({@link postgres}, provided by `Cluster.layer`), a Postgres advisory lock
 * of the task held for the activity's transaction, which a runner that dies
 * gives up with its session; in one process, nothing more than the
 * journal's own claim (`TaskInUse` within a process) is needed, and the
 * default does nothing.
 *
 * @since 0.1.0
 */
import type * as Ids from "@tessera/core/Ids"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as SqlClient from "effect/sql/SqlClient"

/**
 * Runs `effect` holding the task's lock: another holder of the same task's
 * lock waits until this one ends.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskLockShape {
  readonly withLock: <A, E, R>(
    task: Ids.TaskId,
    effect: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | { readonly _tag: string; readonly message: string }, R>
}

/**
 * The lock the task workflow's activities hold; by default none (one
 * process).
 *
 * @since 0.1.0
 * @category references
 */
export const TaskLock: Context.Reference<TaskLockShape> = Context.Reference<TaskLockShape>(
  "@tessera/workflow/TaskLock",
  { defaultValue: () => ({ withLock: (_task, effect) => effect }) }
)

/**
 * A task lock in Postgres: `pg_advisory_xact_lock` on the task (keys
 * `hashtext('tessera.task')` and `hashtext(<task>)`, a key space apart from
 * the cluster's own shard locks) inside a transaction that lasts as long as
 * the effect. Two tasks whose ids hash alike share a lock, which only makes
 * one wait. Give it a connection pool of its own: every running activity
 * holds one connection, and so does every child task of a delegation
 * running inside one.
 *
 * A lock taken inside another (a child's journal, opened inside its
 * parent's delegate call) is a transaction of its own, on a connection of
 * its own: nested in the outer one it would be a savepoint, which the
 * client runs one at a time per transaction, so sibling children would
 * wait for each other.
 *
 * @since 0.1.0
 * @category constructors
 */
export const postgres = (sql: SqlClient.SqlClient): TaskLockShape => ({
  withLock: (task, effect) =>
    Effect.updateContext(
      sql.withTransaction(
        Effect.andThen(sql`select pg_advisory_xact_lock(hashtext('tessera.task'), hashtext(${task}))`, effect)
      ),
      // Only the transaction in scope is dropped: the context keeps every service the effect needs.
      (context) => Context.omit(sql.transactionService)(context) as typeof context
    )
})
