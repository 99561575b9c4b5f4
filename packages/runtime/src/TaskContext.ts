/**
 * A task bound to a runtime: who it is, what it may touch, where its private
 * content and its output go.
 *
 * A task context is frozen, read-only data plus the runtime it is bound to.
 * Only `FilesystemTaskRuntime.FilesystemTaskRuntime.bindTask` makes one,
 * after checking the scope (issued by the runtime's host) and the output
 * binding, and records it by identity: every guard refuses a context it did
 * not record (a spread copy with another agent, a hand-built one) with
 * `Unauthorized` `NotMinted`.
 *
 * @since 0.1.0
 */
import { type BindOptions, contexts, type OutputBinding, type TaskContext } from "./internal/storeRuntime.ts"

/**
 * A task bound to a runtime ({@link TaskContext}), what binding one takes ({@link BindOptions})
 * and the output volume it may write ({@link OutputBinding}). Declared where contexts are made,
 * in the package's internals.
 *
 * @since 0.1.0
 * @category models
 */
export type { BindOptions, OutputBinding, TaskContext }

/**
 * Whether a value is a task context a runtime made: checked by identity, so
 * a copy of a genuine context (or an object with its marker) is not one.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTaskContext = (value: unknown): value is TaskContext => contexts.has(value)
