/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as Inspector from "./Inspector.ts"
/**
 * @since 0.1.0
 */
export * as JournalForbiddingHost from "./JournalForbiddingHost.ts"
/**
 * @since 0.1.0
 */
export * as LocalHarness from "./LocalHarness.ts"
/**
 * @since 0.1.0
 */
export * as NamespaceLock from "./NamespaceLock.ts"
/**
 * @since 0.1.0
 */
export * as NodeDigest from "./NodeDigest.ts"
/**
 * @since 0.1.0
 */
export * as NodeDurableFiles from "./NodeDurableFiles.ts"
/**
 * @since 0.1.0
 */
export * as NodeJournalFile from "./NodeJournalFile.ts"

/**
 * @since 0.1.0
 */
export * as NodeTessera from "./NodeTessera.ts"
/**
 * @since 0.1.0
 */
export * as StateNamespace from "./StateNamespace.ts"
