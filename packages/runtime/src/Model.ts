/**
 * The model boundary: what a request and a response look like, and the
 * {@link Model} service the executor calls.
 *
 * Protocol, version 2: a model streams. {@link Model.stream} is the primary
 * form (an Effect `Stream` of {@link ModelStreamEvent}s: text, reasoning and
 * tool-call deltas, completed calls, usage, the finish reason) and
 * {@link Model.generate} is derived from it by {@link collect}. The
 * derivation runs that way because it loses nothing: collecting a stream
 * gives the same response a non-streaming call would, whereas a response
 * turned into a stream can only arrive as one chunk, after the fact. A
 * provider that cannot stream is still a model: {@link fromGenerate} lifts
 * its `generate` into a stream of one chunk. The service carries both, so a
 * caller that does not listen to deltas (a plain `runTurn`) pays nothing for
 * streaming, and an adapter may supply both when it has a cheaper direct
 * call.
 *
 * Responses carry the provider's usage (input, output, cached input and
 * reasoning tokens, each optional: not every provider reports every count),
 * its finish reason and its own metadata, opaque to this library.
 *
 * A request is an ordered list of parts. Native media parts carry the
 * provider's own options (`providerOptions`) and are handed to the adapter as
 * the very objects the harness put into the history: nothing in this library
 * decodes, re-encodes, copies or filters them on the way, so options this
 * library has never heard of still reach the provider.
 *
 * @since 0.1.0
 */
import type * as Volume from "@tessera/core/Volume"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type {
  FileReferencePart,
  FinishReason,
  ModelRequest,
  ModelResponse,
  Role,
  TextPart,
  ToolCallPart,
  ToolResultPart,
  Usage
} from "./internal/modelParts.ts"

/**
 * The parts of a request or a history ({@link Part}: text, tool calls and
 * results, file references, native media), the tools a request offers
 * ({@link ToolSpec}), the request ({@link ModelRequest}), the usage a
 * provider reports ({@link Usage}, summed by {@link addUsage}), why it
 * stopped ({@link FinishReason}) and its response ({@link ModelResponse}).
 * Each is a schema and its type.
 *
 * @since 0.1.0
 * @category parts
 */
export {
  addUsage,
  Base64Data,
  FileReferencePart,
  FinishReason,
  MediaData,
  MediaPart,
  ModelRequest,
  ModelResponse,
  Part,
  Role,
  TextPart,
  ToolCallPart,
  ToolResultPart,
  ToolSpec,
  UrlData,
  Usage
} from "./internal/modelParts.ts"

/**
 * One event of a streamed response, in the order the provider sent it:
 *
 * - `TextDelta`, `ReasoningDelta`: the next piece of the answer or of the
 *   model's reasoning;
 * - `ToolCallDelta`: the next piece of a call's input (JSON text as the
 *   provider streams it), for display only;
 * - `ToolCall`: a completed call, its input decoded; only completed calls
 *   are acted on;
 * - `Usage`: token counts (a later report replaces an earlier one);
 * - `Finish`: why the model stopped, and the provider's metadata.
 *
 * @since 0.1.0
 * @category streaming
 */
export type ModelStreamEvent =
  | { readonly _tag: "TextDelta"; readonly delta: string }
  | { readonly _tag: "ReasoningDelta"; readonly delta: string }
  | { readonly _tag: "ToolCallDelta"; readonly id: string; readonly name: string; readonly inputDelta: string }
  | { readonly _tag: "ToolCall"; readonly call: ToolCallPart }
  | { readonly _tag: "Usage"; readonly usage: Usage }
  | {
      readonly _tag: "Finish"
      readonly reason: FinishReason
      readonly providerMetadata?: { readonly [key: string]: unknown }
    }

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
 * `retryable`, when an adapter sets it, says whether the same request may
 * succeed if sent again (a rate limit, an overloaded or unreachable
 * server: `true`; a rejected request, a bad key: `false`); absent means the
 * adapter does not know. The executor keeps it when it scrubs `detail`.
 *
 * @example
 * ```ts
 * import { Model } from "@tessera/runtime"
 * import { Effect } from "effect"
 *
 * // A provider's failure, said as the executor understands it: `retryable` tells a retry schedule it may try again.
 * export const generate = (_request: Model.ModelRequest): Effect.Effect<Model.ModelResponse, Model.ModelError> =>
 *   Effect.fail(new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503", retryable: true }))
 *
 * export const model = Model.layerFromGenerate(generate)
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelError extends Schema.TaggedError<ModelError>()("ModelError", {
  reason: ModelErrorReason,
  detail: Schema.String,
  retryable: Schema.optionalKey(Schema.Boolean)
}) {
  override get message(): string {
    return `model error (${this.reason}): ${this.detail}`
  }
}

/**
 * The model the executor calls. A real provider is plugged in by providing
 * a different layer for this service; the library's default is the scripted
 * model (see `ScriptedModel` in `@tessera/runtime/testing`).
 *
 * `stream` and `generate` answer the same request the same way: `generate`
 * succeeds with what collecting `stream` gives ({@link collect}). Build the
 * service with {@link fromStream} or {@link fromGenerate}, which derive the
 * other member.
 *
 * Adapters receive the request's parts as given: the executor never
 * converts them, so an adapter may rely on object identity and on
 * `providerOptions` keys the library does not know.
 *
 * Both members are interruptible: interrupting the caller's fiber interrupts
 * the call (an adapter aborts its HTTP request in the effect's finalizer).
 *
 * @since 0.1.0
 * @category services
 */
export class Model extends Context.Service<
  Model,
  {
    readonly generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
    readonly stream: (request: ModelRequest) => Stream.Stream<ModelStreamEvent, ModelError>
  }
>()("@tessera/runtime/Model") {}

/**
 * The events a whole response streams as, in one chunk: reasoning, text,
 * each call, usage, finish (the parts the response has). Collecting them
 * ({@link collect}) gives the response back, except that metadata without
 * a finish reason comes back with one (`tool-calls` when the response has
 * calls, else `stop`), since metadata travels with the finish event.
 *
 * @since 0.1.0
 * @category streaming
 */
export const responseEvents = (response: ModelResponse): ReadonlyArray<ModelStreamEvent> => {
  const events: Array<ModelStreamEvent> = []
  if (response.reasoning !== undefined && response.reasoning.length > 0) {
    events.push({ _tag: "ReasoningDelta", delta: response.reasoning })
  }
  if (response.text.length > 0) events.push({ _tag: "TextDelta", delta: response.text })
  for (const call of response.toolCalls) events.push({ _tag: "ToolCall", call })
  if (response.usage !== undefined) events.push({ _tag: "Usage", usage: response.usage })
  if (response.finishReason !== undefined || response.providerMetadata !== undefined) {
    events.push({
      _tag: "Finish",
      reason: response.finishReason ?? (response.toolCalls.length > 0 ? "tool-calls" : "stop"),
      ...(response.providerMetadata === undefined ? {} : { providerMetadata: response.providerMetadata })
    })
  }
  return events
}

/**
 * Accumulates stream events into a response. Create one per request, feed
 * it every event in order, then read the result with {@link Collector.done}.
 *
 * @since 0.1.0
 * @category streaming
 */
export interface Collector {
  readonly add: (event: ModelStreamEvent) => void
  /** The response so far; fails `InvalidResponse` when a call streamed deltas but never completed. */
  readonly done: () => Effect.Effect<ModelResponse, ModelError>
}

/**
 * A fresh {@link Collector}: text and reasoning deltas concatenated in
 * order, completed calls in order, the last usage report, the finish reason
 * and metadata.
 *
 * @since 0.1.0
 * @category streaming
 */
export const collector = (): Collector => {
  let textOut = ""
  let reasoning: string | undefined
  const toolCalls: Array<ToolCallPart> = []
  const streamedCalls = new Set<string>()
  let usage: Usage | undefined
  let finish: Extract<ModelStreamEvent, { _tag: "Finish" }> | undefined
  return {
    add: (event) => {
      switch (event._tag) {
        case "TextDelta":
          textOut += event.delta
          break
        case "ReasoningDelta":
          reasoning = (reasoning ?? "") + event.delta
          break
        case "ToolCallDelta":
          streamedCalls.add(event.id)
          break
        case "ToolCall":
          toolCalls.push(event.call)
          break
        case "Usage":
          usage = event.usage
          break
        case "Finish":
          finish = event
      }
    },
    done: () => {
      const unfinished = [...streamedCalls].filter((id) => !toolCalls.some((call) => call.id === id))
      if (unfinished.length > 0) {
        return Effect.fail(
          new ModelError({
            reason: "InvalidResponse",
            detail: `the stream ended with tool call(s) ${unfinished.map((id) => `"${id}"`).join(", ")} begun but never completed`
          })
        )
      }
      return Effect.succeed({
        text: textOut,
        toolCalls,
        ...(reasoning === undefined ? {} : { reasoning }),
        ...(usage === undefined ? {} : { usage }),
        ...(finish === undefined ? {} : { finishReason: finish.reason }),
        ...(finish?.providerMetadata === undefined ? {} : { providerMetadata: finish.providerMetadata })
      })
    }
  }
}

/**
 * Runs a stream to its end and returns the response it makes (see
 * {@link collector}). `onEvent` sees every event as it arrives, before the
 * next one is pulled.
 *
 * @since 0.1.0
 * @category streaming
 */
export const collect = <E, R, E2 = never, R2 = never>(
  stream: Stream.Stream<ModelStreamEvent, E, R>,
  onEvent?: (event: ModelStreamEvent) => Effect.Effect<void, E2, R2>
): Effect.Effect<ModelResponse, E | E2 | ModelError, R | R2> =>
  Effect.suspend(() => {
    const into = collector()
    // A chunk at a time: without an observer a chunk is one synchronous step, not an effect per event.
    const run =
      onEvent === undefined
        ? Stream.runForEachArray(stream, (events) => {
            for (const event of events) into.add(event)
            return Effect.void
          })
        : Stream.runForEach(stream, (event) => {
            into.add(event)
            return onEvent(event)
          })
    return Effect.flatMap(run, into.done)
  })

/**
 * A model from a streaming adapter; `generate` collects the stream.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromStream = (
  stream: (request: ModelRequest) => Stream.Stream<ModelStreamEvent, ModelError>
): Model["Service"] => Model.of({ stream, generate: (request) => collect(stream(request)) })

/**
 * A model from a non-streaming adapter; `stream` emits the whole response as
 * one chunk once `generate` succeeds.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromGenerate = (
  generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
): Model["Service"] =>
  Model.of({
    generate,
    stream: (request) =>
      Stream.flatMap(Stream.fromEffect(generate(request)), (response) => Stream.fromIterable(responseEvents(response)))
  })

/**
 * A layer for an adapter written as one non-streaming function (see
 * {@link fromGenerate}).
 *
 * @example
 * ```ts
 * import { Model } from "@tessera/runtime"
 * import { Effect } from "effect"
 *
 * // A non-streaming provider of your own: one function from a request to a response.
 * export const echo = Model.layerFromGenerate((request) => {
 *   const last = request.parts.at(-1)
 *   return last?._tag === "Text"
 *     ? Effect.succeed(Model.response({ text: `You said: ${last.text}` }))
 *     : Effect.fail(new Model.ModelError({ reason: "InvalidResponse", detail: "nothing to echo" }))
 * })
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromGenerate = (
  generate: (request: ModelRequest) => Effect.Effect<ModelResponse, ModelError>
): Layer.Layer<Model> => Layer.succeed(Model)(fromGenerate(generate))

/**
 * A layer for a streaming adapter written as one function (see
 * {@link fromStream}).
 *
 * @example
 * ```ts
 * import { Model } from "@tessera/runtime"
 * import { Stream } from "effect"
 *
 * // A streaming provider of your own: events in the order the provider sends them.
 * export const streaming = Model.layerFromStream(() =>
 *   Stream.fromIterable<Model.ModelStreamEvent>([
 *     { _tag: "TextDelta", delta: "Hello, " },
 *     { _tag: "TextDelta", delta: "world." },
 *     { _tag: "Usage", usage: { inputTokens: 12, outputTokens: 4 } },
 *     { _tag: "Finish", reason: "stop" }
 *   ])
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromStream = (
  stream: (request: ModelRequest) => Stream.Stream<ModelStreamEvent, ModelError>
): Layer.Layer<Model> => Layer.succeed(Model)(fromStream(stream))

/**
 * A text part from `role`: what the system prompt, the user or the model
 * said.
 *
 * @example
 * ```ts
 * import { History, Model } from "@tessera/runtime"
 *
 * // A text part: who said it, and what. A history starts from the task's parts.
 * export const task = History.make([
 *   Model.text("system", "You are a careful site-reliability assistant."),
 *   Model.text("user", "Is the north service healthy?")
 * ])
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (role: Role, body: string): TextPart => ({ _tag: "Text", role, text: body })

/**
 * A call of the tool `name` with the JSON `input`; `id` is what the result
 * answering it names.
 *
 * @example
 * ```ts
 * import { Model } from "@tessera/runtime"
 *
 * // A call's input is JSON (`Schema.Json`): the tool's own schema decodes it before its handler runs.
 * export const call = Model.toolCall("call-1", "fetch_report", { name: "north", lines: 200 })
 *
 * export const answer = Model.response({ toolCalls: [call] })
 * ```
 *
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
 * The result of the call `callId`; `isError` marks a failed call, whose
 * `content` says why.
 *
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
 * A file on a volume handed to the model by reference (`path` on
 * `volume`), not inline.
 *
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
 * @example
 * ```ts
 * import { Model } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 *
 * // Omitted fields are empty: no text, no tool calls, no usage.
 * export const script = ScriptedModel.layer([
 *   Model.response({ toolCalls: [Model.toolCall("call-1", "fetch_report", { name: "north" })] }),
 *   Model.response({
 *     text: "The north report shows every measurement within tolerance.",
 *     usage: { inputTokens: 1_200, outputTokens: 14 },
 *     finishReason: "stop"
 *   })
 * ])
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const response = (options: {
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<ToolCallPart>
  readonly usage?: Usage
  readonly finishReason?: FinishReason
}): ModelResponse => ({
  text: options.text ?? "",
  toolCalls: options.toolCalls ?? [],
  ...(options.usage === undefined ? {} : { usage: options.usage }),
  ...(options.finishReason === undefined ? {} : { finishReason: options.finishReason })
})
