/**
 * Type tests: every `// @ts-expect-error` line must fail to compile.
 */
import { type TaskHosting, TaskWorkflow } from "@tessera/workflow"
import type { Layer } from "effect"
import type { WorkflowEngine } from "effect/workflow"

// The handler layer needs the runner's TaskHosting (and the platform and model): a runner that forgot it does not compile.
// @ts-expect-error TaskHosting is missing from what the layer is given
export const withoutHosting: Layer.Layer<never, never, WorkflowEngine.WorkflowEngine> = TaskWorkflow.layer

// TaskHosting's shape has no default: a hosting without `bindTask` (the entry gate's binding) does not compile.
// @ts-expect-error bindTask is required
export const noBinding: TaskHosting.TaskHosting["Service"] = { journalFolder: "/j", config: undefined as never }
