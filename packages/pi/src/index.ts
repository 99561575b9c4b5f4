/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as TesseraPi from "./TesseraPi.ts"
