/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as Compaction from "./Compaction.ts"
/**
 * @since 0.1.0
 */
export * as Delegation from "./Delegation.ts"
/**
 * @since 0.1.0
 */
export * as EntryGate from "./EntryGate.ts"
/**
 * @since 0.1.0
 */
export * as Executor from "./Executor.ts"
/**
 * @since 0.1.0
 */
export * as FilesystemTaskRuntime from "./FilesystemTaskRuntime.ts"
/**
 * @since 0.1.0
 */
export * as History from "./History.ts"
/**
 * @since 0.1.0
 */
export * as Journal from "./Journal.ts"
/**
 * @since 0.1.0
 */
export * as JournalEntry from "./JournalEntry.ts"
/**
 * @since 0.1.0
 */
export * as JournalStorage from "./JournalStorage.ts"

/**
 * @since 0.1.0
 */
export * as Model from "./Model.ts"
/**
 * @since 0.1.0
 */
export * as Observability from "./Observability.ts"
/**
 * @since 0.1.0
 */
export * as PrivateSummaries from "./PrivateSummaries.ts"
/**
 * @since 0.1.0
 */
export * as TaskExecution from "./TaskExecution.ts"
/**
 * @since 0.1.0
 */
export * as TaskHost from "./TaskHost.ts"
/**
 * @since 0.1.0
 */
export * as Timeouts from "./Timeouts.ts"
/**
 * @since 0.1.0
 */
export * as Tool from "./Tool.ts"
/**
 * @since 0.1.0
 */
export * as ToolResults from "./ToolResults.ts"

/**
 * A task's transcript: the bodies the journal only describes, stored
 * write-once on the agent-private volume, so a turn can be resumed from
 * disk alone.
 *
 * @since 0.1.0
 */
export * as Transcript from "./Transcript.ts"
/**
 * @since 0.1.0
 */
export * as VolumeStore from "./VolumeStore.ts"
