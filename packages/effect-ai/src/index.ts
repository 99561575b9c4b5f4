/**
 * @since 0.1.0
 */

/**
 * @since 0.1.0
 */
export * as EffectAiModel from "./EffectAiModel.ts"
/**
 * @since 0.1.0
 */
export * as TesseraLanguageModel from "./TesseraLanguageModel.ts"
