/**
 * @since 0.2.0
 */

/**
 * @since 0.2.0
 */
export * as TesseraPi from "./TesseraPi.ts"
