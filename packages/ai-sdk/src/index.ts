/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as AiSdkModel from "./AiSdkModel.ts"

/**
 * @since 0.1.0
 */
export * as TesseraMiddleware from "./TesseraMiddleware.ts"
