/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as Digest from "./Digest.ts"
/**
 * @since 0.1.0
 */
export * as DurableFiles from "./DurableFiles.ts"
/**
 * @since 0.1.0
 */
export * as Grant from "./Grant.ts"
/**
 * @since 0.1.0
 */
export * as HostAuthority from "./HostAuthority.ts"
/**
 * @since 0.1.0
 */
export * as Ids from "./Ids.ts"
/**
 * @since 0.1.0
 */
export * as InvalidInput from "./InvalidInput.ts"
/**
 * @since 0.1.0
 */
export * as PrivateWriter from "./PrivateWriter.ts"
/**
 * @since 0.1.0
 */
export * as Unauthorized from "./Unauthorized.ts"
/**
 * @since 0.1.0
 */
export * as Volume from "./Volume.ts"
