/**
 * A task bound to a runtime: who it is, what it may touch, where its private
 * content and its output go.
 *
 * A task context is frozen, read-only data plus the runtime it is bound to.
 * Only {@link FilesystemTaskRuntime.FilesystemTaskRuntime.bindTask} makes
 * one, after checking the scope (issued by the runtime's host) and the output
 * binding, and records it by identity: every guard refuses a context it did
 * not record (a spread copy with another agent, a hand-built one) with
 * `Unauthorized` `NotMinted`.
 *
 * @since 0.1.0
 */
import type * as Grant from "@tessera/core/Grant"
import type * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import type * as Option from "effect/Option"
import type * as FilesystemTaskRuntime from "./FilesystemTaskRuntime.ts"
import { contexts, type TaskContextTypeId } from "./internal/storeRuntime.ts"

/**
 * A volume a task may write its output to, with the store's facts about it
 * as they were when the binding was checked (in custody, write-granted).
 *
 * @since 0.1.0
 * @category models
 */
export interface OutputBinding {
  readonly ref: Volume.VolumeRef
  readonly descriptor: Volume.VolumeDescriptor
}

/**
 * What binding a task takes.
 *
 * - `scope`: the scope the host issued to the task (its id, agent, grants).
 * - `createdPrivate`: private content volumes the task itself created;
 *   recorded as given, and checked by the private-writer verdict when a
 *   writer is resolved from them.
 * - `output`: the task's output volume. Omitted, the task inherits the
 *   runtime's output binding; `Option.none()` binds no output. Either way the
 *   binding is checked against the task's own scope, since grants are per
 *   task.
 *
 * @since 0.1.0
 * @category models
 */
export interface BindOptions {
  readonly scope: Grant.Scope
  readonly createdPrivate?: ReadonlyArray<Volume.VolumeRef>
  readonly output?: Option.Option<Volume.VolumeRef>
}

/**
 * A task bound to a runtime.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskContext {
  readonly [TaskContextTypeId]: typeof TaskContextTypeId
  /** The runtime the task is bound to, with its verified private volume. */
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly task: Ids.TaskId
  readonly agent: Ids.AgentId
  /** The scope the task was bound with. */
  readonly scope: Grant.Scope
  /** The grants of that scope. */
  readonly grants: ReadonlyArray<Grant.Grant>
  readonly createdPrivate: ReadonlyArray<Volume.VolumeRef>
  readonly output: Option.Option<OutputBinding>
}

/**
 * Whether a value is a task context a runtime made: checked by identity, so
 * a copy of a genuine context (or an object with its marker) is not one.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTaskContext = (value: unknown): value is TaskContext => contexts.has(value)
