/**
 * The workflow's one error, {@link TaskFailed}, and how the errors of the
 * runtime's pieces become it.
 *
 * @internal
 */
import * as Model from "@tessera/runtime/Model"
import * as Schema from "effect/Schema"

/** The task failed (documented where `TaskWorkflow` exports it): `reason` is the tag of the error that ended it. */
export class TaskFailed extends Schema.TaggedError<TaskFailed>()("TaskFailed", {
  task: Schema.String,
  reason: Schema.String,
  detail: Schema.String,
  /** For `reason` `ModelError`: the model error's own reason. */
  modelReason: Schema.optionalKey(Model.ModelErrorReason)
}) {
  override get message(): string {
    return `task ${this.task} failed (${this.reason}): ${this.detail}`
  }
}

/** Any tagged error of the task as {@link TaskFailed}, keeping a model error's reason (retries read it). */
export const failedWith =
  (task: string) =>
  (error: { readonly _tag: string; readonly message: string }): TaskFailed =>
    error instanceof TaskFailed
      ? error
      : new TaskFailed({
          task,
          reason: error._tag,
          detail: error.message,
          ...(error instanceof Model.ModelError ? { modelReason: error.reason } : {})
        })

/** Model errors worth sending the step again for: the provider or the time limit, not a bad response. */
export const transient = (failed: TaskFailed): boolean =>
  failed.reason === "ModelError" && (failed.modelReason === "ProviderFailure" || failed.modelReason === "Timeout")

/** The journal does not hold what the workflow's stored results say it must: no activity may go on from it. */
export const inconsistent = (task: string, detail: string) =>
  new TaskFailed({ task, reason: "JournalInconsistent", detail })
