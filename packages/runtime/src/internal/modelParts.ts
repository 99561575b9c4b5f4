/**
 * The model boundary's vocabulary: the parts of a request or a history, the
 * tools a request offers, the usage a provider reports and the response.
 * `Model` re-exports all of it; the declarations (with their contracts) live
 * here so that the public module holds the service and what an adapter
 * calls.
 */
import * as Volume from "@tessera/core/Volume"
import * as Schema from "effect/Schema"

/**
 * Who speaks a text or media part.
 *
 * @since 0.1.0
 * @category models
 */
export const Role = Schema.Literals(["system", "user", "assistant"])
/**
 * @since 0.1.0
 * @category models
 */
export type Role = typeof Role.Type

/**
 * Plain text from the system prompt, the user, or the model.
 *
 * @since 0.1.0
 * @category parts
 */
export const TextPart = Schema.TaggedStruct("Text", { role: Role, text: Schema.String })
/**
 * @since 0.1.0
 * @category parts
 */
export interface TextPart extends Schema.Schema.Type<typeof TextPart> {}

/**
 * The model asked to run a tool. `id` pairs the call with its result.
 *
 * @since 0.1.0
 * @category parts
 */
export const ToolCallPart = Schema.TaggedStruct("ToolCall", {
  id: Schema.String,
  name: Schema.String,
  input: Schema.Json
})
/**
 * @since 0.1.0
 * @category parts
 */
export interface ToolCallPart extends Schema.Schema.Type<typeof ToolCallPart> {}

/**
 * The answer to one tool call. `isError` tells the model the tool did not
 * succeed (unknown tool, input rejected by its schema, failure or crash);
 * `content` then explains why.
 *
 * @since 0.1.0
 * @category parts
 */
export const ToolResultPart = Schema.TaggedStruct("ToolResult", {
  callId: Schema.String,
  name: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean
})
/**
 * @since 0.1.0
 * @category parts
 */
export interface ToolResultPart extends Schema.Schema.Type<typeof ToolResultPart> {}

/**
 * A pointer to a file on a volume (a staged summary, an offloaded artifact).
 * The body stays on disk; the adapter decides how to present the pointer.
 *
 * @since 0.1.0
 * @category parts
 */
export const FileReferencePart = Schema.TaggedStruct("FileReference", {
  role: Role,
  volume: Volume.VolumeRef,
  path: Schema.String,
  mediaType: Schema.String
})
/**
 * @since 0.1.0
 * @category parts
 */
export type FileReferencePart = typeof FileReferencePart.Type

/**
 * Inline media bytes, base64 encoded.
 *
 * @since 0.1.0
 * @category parts
 */
export const Base64Data = Schema.TaggedStruct("Base64", { base64: Schema.String })
/**
 * Media the provider fetches itself.
 *
 * @since 0.1.0
 * @category parts
 */
export const UrlData = Schema.TaggedStruct("Url", { url: Schema.String })
/**
 * Where a media part's bytes are: inline (`Base64`) or at a URL the provider
 * fetches (`Url`).
 *
 * @since 0.1.0
 * @category parts
 */
export const MediaData = Schema.Union([Base64Data, UrlData])
/**
 * @since 0.1.0
 * @category parts
 */
export type MediaData = typeof MediaData.Type

/**
 * A native media part (an image, audio, a document) with the provider's own
 * options. `providerOptions` is opaque to this library: it reaches the
 * adapter as the same object, keys this library does not know included.
 *
 * @since 0.1.0
 * @category parts
 */
export const MediaPart = Schema.TaggedStruct("Media", {
  role: Role,
  mediaType: Schema.String,
  data: MediaData,
  providerOptions: Schema.Record(Schema.String, Schema.Unknown)
})
/**
 * @since 0.1.0
 * @category parts
 */
export type MediaPart = typeof MediaPart.Type

/**
 * Any part of a request or a history.
 *
 * @since 0.1.0
 * @category parts
 */
export const Part = Schema.Union([TextPart, ToolCallPart, ToolResultPart, FileReferencePart, MediaPart])
/**
 * @since 0.1.0
 * @category parts
 */
// `Exclude<_, never>` names the union `Part` wherever it appears (a bare `typeof Part.Type` is spelled out in full).
export type Part = Exclude<typeof Part.Type, never>

/**
 * What the model is told about one tool: its name, what it does, and a JSON
 * Schema document for its input (derived from the tool's input Schema).
 *
 * @since 0.1.0
 * @category models
 */
export const ToolSpec = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  inputSchema: Schema.Record(Schema.String, Schema.Unknown)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ToolSpec = typeof ToolSpec.Type

/**
 * One request: the ordered parts the model sees, and the tools it may call.
 *
 * @since 0.1.0
 * @category models
 */
export const ModelRequest = Schema.Struct({
  parts: Schema.Array(Part),
  tools: Schema.Array(ToolSpec)
})
/**
 * @since 0.1.0
 * @category models
 */
export interface ModelRequest extends Schema.Schema.Type<typeof ModelRequest> {}

const TokenCount = Schema.Number.check(
  Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= 0, { expected: "an integer >= 0" })
)

/**
 * Token counts a provider reported for one request. Every count is optional:
 * an absent count means the provider did not report it, never zero.
 * `cachedInputTokens` and `reasoningTokens` are parts of `inputTokens` and
 * `outputTokens` respectively, as providers report them.
 *
 * @since 0.1.0
 * @category usage
 */
export const Usage = Schema.Struct({
  inputTokens: Schema.optionalKey(TokenCount),
  outputTokens: Schema.optionalKey(TokenCount),
  cachedInputTokens: Schema.optionalKey(TokenCount),
  reasoningTokens: Schema.optionalKey(TokenCount)
})
/**
 * @since 0.1.0
 * @category usage
 */
export interface Usage extends Schema.Schema.Type<typeof Usage> {}

const usageKeys = ["inputTokens", "outputTokens", "cachedInputTokens", "reasoningTokens"] as const

/**
 * Sums usages count by count. A count is present in the sum when it is
 * present in at least one operand (absent counts add nothing).
 *
 * @since 0.1.0
 * @category usage
 */
export const addUsage = (self: Usage, that: Usage): Usage => {
  const out: { -readonly [K in keyof Usage]: Usage[K] } = {}
  for (const key of usageKeys) {
    const a = self[key]
    const b = that[key]
    if (a !== undefined || b !== undefined) out[key] = (a ?? 0) + (b ?? 0)
  }
  return out
}

/**
 * Why the model stopped: it answered (`stop`), hit its output limit
 * (`length`), asked for tools (`tool-calls`), was filtered
 * (`content-filter`), failed (`error`), or something the provider names
 * otherwise (`other`, `unknown`).
 *
 * @since 0.1.0
 * @category models
 */
export const FinishReason = Schema.Literals([
  "stop",
  "length",
  "tool-calls",
  "content-filter",
  "error",
  "other",
  "unknown"
])
/**
 * @since 0.1.0
 * @category models
 */
export type FinishReason = typeof FinishReason.Type

/**
 * One response: text (possibly empty) and the tool calls the model asks for,
 * in the order the model gave them. No tool calls means the turn is answered.
 * Optionally the model's reasoning text, the provider's usage, its finish
 * reason and its metadata (opaque to this library).
 *
 * @example
 * ```ts
 * import { Model } from "@tessera/runtime"
 * import { Schema } from "effect"
 *
 * // An adapter that gets a response as JSON decodes it with the schema: a malformed one fails here, not mid-turn.
 * export const fromProvider = (json: unknown): Model.ModelResponse => Schema.decodeUnknownSync(Model.ModelResponse)(json)
 *
 * console.log(fromProvider({ text: "Done.", toolCalls: [] }).text) // "Done."
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export const ModelResponse = Schema.Struct({
  text: Schema.String,
  toolCalls: Schema.Array(ToolCallPart),
  reasoning: Schema.optionalKey(Schema.String),
  usage: Schema.optionalKey(Usage),
  finishReason: Schema.optionalKey(FinishReason),
  providerMetadata: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
})
/**
 * @since 0.1.0
 * @category models
 */
export interface ModelResponse extends Schema.Schema.Type<typeof ModelResponse> {}
