/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as ArtifactOffload from "./ArtifactOffload.ts"
/**
 * @since 0.1.0
 */
export * as ArtifactPath from "./ArtifactPath.ts"
/**
 * @since 0.1.0
 */
export * as ArtifactPathPolicy from "./ArtifactPathPolicy.ts"
/**
 * @since 0.1.0
 */
export * as ArtifactPointer from "./ArtifactPointer.ts"
/**
 * @since 0.1.0
 */
export * as ArtifactRedactor from "./ArtifactRedactor.ts"
/**
 * @since 0.1.0
 */
export * as DefaultRedactor from "./DefaultRedactor.ts"
