/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as Approval from "./Approval.ts"
/**
 * @since 0.1.0
 */
export * as Cluster from "./Cluster.ts"
/**
 * @since 0.1.0
 */
export * as SharedStore from "./SharedStore.ts"
/**
 * @since 0.1.0
 */
export * as TaskHosting from "./TaskHosting.ts"
/**
 * @since 0.1.0
 */
export * as TaskLock from "./TaskLock.ts"
/**
 * @since 0.1.0
 */
export * as TaskWorkflow from "./TaskWorkflow.ts"
/**
 * @since 0.1.0
 */
export * as TemporaryPostgres from "./TemporaryPostgres.ts"
/**
 * @since 0.1.0
 */
export * as ToolCallKey from "./ToolCallKey.ts"
