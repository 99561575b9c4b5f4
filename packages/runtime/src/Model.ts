/**
 * The model boundary: what a request and a response look like, and the
 * {@link Model} service the executor calls.
 *
 * A request is an ordered list of parts. Native media parts carry the
 * provider's own options (`providerOptions`) and are handed to the adapter as
 * the very objects the harness put into the history: nothing in this library
 * decodes, re-encodes, copies or filters them on the way, so options this
 * library has never heard of still reach the provider.
 *
 * @since 0.1.0
 */
import { Volume } from "@tessera/core"
import type { Effect } from "effect"
import { Context, Layer, Schema } from "effect"

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
export type TextPart = typeof TextPart.Type

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
export type ToolCallPart = typeof ToolCallPart.Type

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
export type ToolResultPart = typeof ToolResultPart.Type

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
export type Part = typeof Part.Type

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
export type ModelRequest = typeof ModelRequest.Type

/**
 * One response: text (possibly empty) and the tool calls the model asks for,
 * in the order the model gave them. No tool calls means the turn is answered.
 *
 * @since 0.1.0
 * @category models
 */
export const ModelResponse = Schema.Struct({
  text: Schema.String,
  toolCalls: Schema.Array(ToolCallPart)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ModelResponse = typeof ModelResponse.Type

/**
 * Why a model step failed.
 *
 * - `ScriptExhausted`: a scripted model was asked for more responses than its script has.
 * - `InvalidResponse`: the response cannot be acted on (for example two tool calls share an id).
 * - `ProviderFailure`: the provider or its transport failed.
 * - `NonJsonToolInput`: the adapter handed over a tool call whose input is
 *   not JSON (`undefined`, a cycle, a bigint...): a bug in the adapter, which
 *   must decode the provider's arguments into JSON values.
 * - `Timeout`: the call took longer than the configured model timeout and
 *   was interrupted (see `Timeouts`).
 *
 * @since 0.1.0
 * @category errors
 */
export const ModelErrorReason = Schema.Literals([
  "ScriptExhausted",
  "InvalidResponse",
  "ProviderFailure",
  "NonJsonToolInput",
  "Timeout"
])
/**
 * @since 0.1.0
 * @category errors
 */
export type ModelErrorReason = typeof ModelErrorReason.Type

/**
 * A model step produced no usable response. The executor journals it
 * (`ModelFailed`) and leaves the turn open, so it can be resumed or abandoned.
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelError extends Schema.TaggedError<ModelError>()("ModelError", {
  reason: ModelErrorReason,
  detail: Schema.String
}) {
  override get message(): string {
    return `model error (${this.reason}): ${this.detail}`
  }
}

/**
 * The model the executor calls. A real provider is plugged in by providing
 * a different layer for this service; the library's default is the scripted
 * model (see `ScriptedModel`).
 *
 * Adapters receive the request's parts as given: the executor never
 * converts them, so an adapter may rely on object identity and on
 * `providerOptions` keys the library does not know.
 *
 * @since 0.1.0
 * @category services
 */
export class Model extends Context.Service<
  Model,
  {
    readonly generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
  }
>()("@tessera/runtime/Model") {}

/**
 * A layer for an adapter written as one function.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromGenerate = (
  generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
): Layer.Layer<Model> => Layer.succeed(Model)(Model.of({ generate }))

/**
 * @since 0.1.0
 * @category constructors
 */
export const text = (role: Role, body: string): TextPart => ({ _tag: "Text", role, text: body })

/**
 * @since 0.1.0
 * @category constructors
 */
export const toolCall = (id: string, name: string, input: Schema.Json): ToolCallPart => ({
  _tag: "ToolCall",
  id,
  name,
  input
})

/**
 * @since 0.1.0
 * @category constructors
 */
export const toolResult = (options: {
  readonly callId: string
  readonly name: string
  readonly content: string
  readonly isError: boolean
}): ToolResultPart => ({ _tag: "ToolResult", ...options })

/**
 * @since 0.1.0
 * @category constructors
 */
export const fileReference = (options: {
  readonly role: Role
  readonly volume: Volume.VolumeRef
  readonly path: string
  readonly mediaType: string
}): FileReferencePart => ({ _tag: "FileReference", ...options })

/**
 * Builds a response. `toolCalls` defaults to none, which answers the turn.
 *
 * @since 0.1.0
 * @category constructors
 */
export const response = (options: {
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<ToolCallPart>
}): ModelResponse => ({ text: options.text ?? "", toolCalls: options.toolCalls ?? [] })
