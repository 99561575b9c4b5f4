/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as BrowserHarness from "./BrowserHarness.ts"

/**
 * @since 0.1.0
 */
export * as BrowserPlatform from "./BrowserPlatform.ts"

/**
 * @since 0.1.0
 */
export * as BrowserTessera from "./BrowserTessera.ts"

/**
 * @since 0.1.0
 */
export * as OpfsDurableFiles from "./OpfsDurableFiles.ts"

/**
 * @since 0.1.0
 */
export * as OpfsFileSystem from "./OpfsFileSystem.ts"

/**
 * @since 0.1.0
 */
export * as OpfsJournalFile from "./OpfsJournalFile.ts"

/**
 * @since 0.1.0
 */
export * as WebLockNamespace from "./WebLockNamespace.ts"
