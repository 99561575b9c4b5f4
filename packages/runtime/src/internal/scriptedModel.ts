/**
 * The scripted model: the library's embedded default for demos and tests.
 *
 * It is deterministic (its answers depend only on its script, the request
 * and the request's index), never touches the network, and records every
 * request it receives, in order, so a test can assert the exact count and
 * contents of what the executor sent.
 *
 * It streams (see {@link streamEvents}): a reply's text arrives in several
 * deltas, each tool call as an input delta then the completed call, then
 * the reply's usage and finish reason. Its `generate` collects that same
 * stream, so every caller (streaming or not) runs the streaming path.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { ModelRequest, ModelResponse, ModelStreamEvent } from "../Model.ts"
import { fromStream, Model, ModelError, response, toolCall } from "../Model.ts"

/**
 * What a script step may produce: a response, a text (a response with that
 * text and no tool calls), or a model error (to script a provider failure).
 *
 * @since 0.1.0
 * @category models
 */
export type ScriptedReply = ModelResponse | ModelError | string

/**
 * A script: either a list of replies used in order (the `n`-th request gets
 * the `n`-th reply; one more request than the list holds fails with
 * `ModelError` reason `ScriptExhausted`), or a function of the request and
 * its zero-based index among all requests this model received.
 *
 * @since 0.1.0
 * @category models
 */
export type Script =
  | ReadonlyArray<ScriptedReply>
  | ((request: ModelRequest, index: number) => ScriptedReply | Effect.Effect<ModelResponse, ModelError>)

/**
 * Read access to what the scripted model received. Requests are recorded
 * before the reply is computed, so a request that was answered with an error
 * is recorded too. Requests are stored as given (not copied).
 *
 * @since 0.1.0
 * @category services
 */
export class ScriptedModelRecorder extends Context.Service<
  ScriptedModelRecorder,
  {
    /** Every request received so far, in arrival order. */
    readonly requests: Effect.Effect<ReadonlyArray<ModelRequest>>
    /** How many requests were received so far. */
    readonly count: Effect.Effect<number>
  }
>()("@tessera/runtime/ScriptedModelRecorder") {}

const isModelError = (reply: ScriptedReply): reply is ModelError => reply instanceof ModelError

const reply = (
  value: ScriptedReply | Effect.Effect<ModelResponse, ModelError>
): Effect.Effect<ModelResponse, ModelError> =>
  Effect.isEffect(value)
    ? value
    : typeof value === "string"
      ? Effect.succeed(response({ text: value }))
      : isModelError(value)
        ? Effect.fail(value)
        : Effect.succeed(value)

/**
 * A reply that calls one tool: `name` with `input`, under the call id
 * `id` (by default `call-<name>`; a script that calls one tool twice in one
 * step names the ids itself).
 *
 * @example
 * ```ts
 * import { ScriptedModel } from "@tessera/runtime/testing"
 *
 * // The first request is answered with a call of `fetch_report`, the second with a text.
 * export const model = ScriptedModel.layer([
 *   ScriptedModel.calling("fetch_report", { name: "north" }),
 *   "The north report shows every measurement within tolerance."
 * ])
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const calling = (name: string, input: Schema.Json, id = `call-${name}`): ModelResponse =>
  response({ toolCalls: [toolCall(id, name, input)] })

// A script may hand over input that is not JSON (to test the executor's check): such a call streams
// no input delta, only the completed call, which the executor then refuses.
const renderInput = (input: unknown): string | undefined => {
  try {
    return JSON.stringify(input)
  } catch {
    return undefined
  }
}

/** How many text deltas a reply's text is cut into, at most. */
const textDeltas = 3

/**
 * The events a scripted reply streams as: the reasoning, then the text cut
 * into up to three deltas (at code-point boundaries, never an empty delta),
 * then per tool call its input as one delta (when it renders as JSON) and
 * the completed call, then
 * usage (when the reply has it) and the finish reason (the reply's, else
 * `tool-calls` or `stop`). Collecting them ({@link Model.collect}) gives the
 * reply back.
 *
 * @since 0.1.0
 * @category streaming
 */
export const streamEvents = (response: ModelResponse): ReadonlyArray<ModelStreamEvent> => {
  const events: Array<ModelStreamEvent> = []
  if (response.reasoning !== undefined && response.reasoning.length > 0) {
    events.push({ _tag: "ReasoningDelta", delta: response.reasoning })
  }
  const points = Array.from(response.text)
  const size = Math.ceil(points.length / textDeltas)
  for (let start = 0; start < points.length; start += size) {
    events.push({ _tag: "TextDelta", delta: points.slice(start, start + size).join("") })
  }
  for (const call of response.toolCalls) {
    const rendered = renderInput(call.input)
    if (rendered !== undefined)
      events.push({ _tag: "ToolCallDelta", id: call.id, name: call.name, inputDelta: rendered })
    events.push({ _tag: "ToolCall", call })
  }
  if (response.usage !== undefined) events.push({ _tag: "Usage", usage: response.usage })
  events.push({
    _tag: "Finish",
    reason: response.finishReason ?? (response.toolCalls.length > 0 ? "tool-calls" : "stop"),
    ...(response.providerMetadata === undefined ? {} : { providerMetadata: response.providerMetadata })
  })
  return events
}

/**
 * Builds a scripted model and its recorder (the model as a service value,
 * for a caller that provides it itself; {@link layer} provides both).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (script: Script) =>
  Effect.sync(() => {
    // Appending in place keeps recording linear over long runs; readers get a copy.
    const received: Array<ModelRequest> = []
    const answer = (request: ModelRequest): Effect.Effect<ModelResponse, ModelError> =>
      Effect.sync(() => received.push(request) - 1).pipe(
        Effect.flatMap((index) => {
          if (typeof script === "function") return Effect.suspend(() => reply(script(request, index)))
          const scripted = script[index]
          return scripted === undefined
            ? Effect.fail(
                new ModelError({
                  reason: "ScriptExhausted",
                  detail: `the script holds ${script.length} response(s) and request ${index + 1} arrived`
                })
              )
            : reply(scripted)
        })
      )
    const stream = (request: ModelRequest): Stream.Stream<ModelStreamEvent, ModelError> =>
      Stream.flatMap(Stream.fromEffect(answer(request)), (response) => Stream.fromIterable(streamEvents(response)))
    return {
      model: fromStream(stream),
      recorder: ScriptedModelRecorder.of({
        requests: Effect.sync(() => received.slice()),
        count: Effect.sync(() => received.length)
      })
    }
  })

/**
 * The scripted model as a layer providing both {@link Model} and
 * {@link ScriptedModelRecorder}. Each build of the layer starts with an empty
 * record.
 *
 * @example
 * ```ts
 * import { Model } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 *
 * // Replies in order, one per request (a `ModelError` in the list fails that request); streams them like a provider.
 * export const fixed = ScriptedModel.layer([
 *   Model.response({ toolCalls: [Model.toolCall("c1", "fetch_report", { name: "north" })] }),
 *   new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503", retryable: true }),
 *   Model.response({ text: "North: all nominal." })
 * ])
 *
 * // Or a function of the request, for replies that depend on what was sent (a summary request, say).
 * export const byRequest = ScriptedModel.layer((request) =>
 *   request.parts[0]?._tag === "Text" && request.parts[0].role === "system"
 *     ? Model.response({ text: "Summary: the reports were fetched." })
 *     : Model.response({ text: "Done." })
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (script: Script): Layer.Layer<Model | ScriptedModelRecorder> =>
  Layer.effectContext(
    Effect.map(make(script), ({ model, recorder }) =>
      Context.make(Model, model).pipe(Context.add(ScriptedModelRecorder, recorder))
    )
  )
