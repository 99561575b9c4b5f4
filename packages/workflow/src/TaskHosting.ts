/**
 * What a runner tells the task workflow about its host: how a task is bound
 * (its grants, private writer and compaction policy, behind the entry gate),
 * where its journal is, and what its turns run with (tools, step limit,
 * offload, inline limit).
 *
 * The workflow asks for the binding again on every run of its body (a
 * runner that takes over a task after another died binds it afresh on its
 * own store), so `bindTask` must give the same verdict for the same task on
 * every runner: it is a function of the shared store and the task id, never
 * of a runner's memory. The same holds of `bindChild`, for the children of a
 * task's delegations.
 *
 * @since 0.1.0
 */
import type * as Ids from "@tessera/core/Ids"
import type * as Delegation from "@tessera/runtime/Delegation"
import type * as EntryGate from "@tessera/runtime/EntryGate"
import type * as Model from "@tessera/runtime/Model"
import type * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"

/**
 * The host of a runner's tasks.
 *
 * - `bindTask`: the task's binding, made by `EntryGate.bind` (so a policy
 *   armed without a writer is refused there). Any failure becomes the
 *   workflow's `TaskFailed`, before the first activity runs.
 * - `journalFolder`: the folder of the task journals (the store's journal
 *   volume); every runner opens a task's journal there, one activity at a
 *   time.
 * - `config`: the turn configuration every task of this host runs with. Its
 *   tools may read `ToolCallKey.current` to make their side effects happen at
 *   most once per call (activities run at least once).
 * - `system`: parts that open every task's history (system prompts).
 * - `modelRetry`: how often a model step that failed with a transient
 *   `ModelError` (`ProviderFailure`, `Timeout`) is sent again, and after how
 *   long (a `DurableClock` sleep: it survives the runner, and on the cluster a
 *   long one holds no runner while it waits). None by default: the task fails.
 * - `children`: the child agents the host offers. Given, every turn offers
 *   the `delegate` tool (`Delegation.offers`, bounded by `delegation`, the
 *   host's `Delegation.Limits`): each sub-task of a call runs as a task
 *   workflow of its own, bound by `bindChild` (by default
 *   `Delegation.bindChild`: its own scope, agent-private volume and output
 *   volume) down its delegation path, with its own journal in
 *   `journalFolder`, each activity under the child's `TaskLock`. Offers of
 *   the wrong shape fail the task (`TaskFailed`, reason `InvalidInput`)
 *   before the first activity.
 * - `bindChild`: how a child task of a delegation is bound; it must name the
 *   child after `child.task` (a binding of another task fails
 *   `ChildBindingMismatch`), and bind it alike every time: a child's
 *   workflow binds it on every run of its body.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskHostingShape {
  readonly bindTask: (
    task: Ids.TaskId
  ) => Effect.Effect<EntryGate.TaskBinding, { readonly _tag: string; readonly message: string }>
  readonly journalFolder: string
  readonly config: TaskExecution.ExecutionConfig
  readonly system?: ReadonlyArray<Model.Part>
  readonly modelRetry?: { readonly times: number; readonly delay: Duration.Input }
  readonly children?: ReadonlyArray<Delegation.ChildAgent>
  readonly delegation?: Delegation.Limits
  readonly bindChild?: (
    parent: EntryGate.TaskBinding,
    child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId }
  ) => Effect.Effect<EntryGate.TaskBinding, { readonly _tag: string; readonly message: string }, ChildBindServices>
}

/**
 * What binding a child task may need of the runner: the platform, the
 * digest and the parent's journal (a delegation is one of the parent's
 * gated entries), all of which the runner provides its activities.
 *
 * @since 0.1.0
 * @category models
 */
export type ChildBindServices = Effect.Services<ReturnType<typeof Delegation.bindChild>>

/**
 * The service the task workflow's handler needs on every runner.
 *
 * @since 0.1.0
 * @category services
 */
export class TaskHosting extends Context.Service<TaskHosting, TaskHostingShape>()("@tessera/workflow/TaskHosting") {}
