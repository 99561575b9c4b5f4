/**
 * A Tessera model served by an Effect AI `LanguageModel` (`effect/ai`): plug
 * any Effect AI provider into Tessera's own executor (`TaskExecution`,
 * `Executor.runTurn`/`streamTurn`).
 *
 * - A request's parts become a `Prompt` (system text as system messages,
 *   tool calls in assistant messages, results in tool messages, media as
 *   file parts with their provider options, file references as their
 *   rendered text); its tools become dynamic Effect AI tools with the
 *   request's JSON Schema. Tool calls are never resolved by Effect AI: the
 *   executor runs them.
 * - `generate` calls `generateText`, `stream` calls `streamText`: text,
 *   reasoning and tool-input deltas arrive as Tessera stream events as the
 *   provider sends them; completed calls, usage (input, output, cached and
 *   reasoning tokens) and the finish reason come back with the response.
 * - An `AiError` becomes a `ModelError` (`ProviderFailure`) whose
 *   `retryable` is the error's own `isRetryable`; a tool call whose input is
 *   not JSON is `NonJsonToolInput`.
 *
 * Effect AI also exports a `Model` (a provider's layer with its name); the
 * Tessera service this module serves is `@tessera/runtime`'s `Model.Model`:
 * import one of the two under another name.
 *
 * @since 0.1.0
 */
import * as Model from "@tessera/runtime/Model"
import type * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import * as Tool from "effect/ai/Tool"
import type * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { partsToPrompt } from "./internal/prompt.ts"

type AnyResponsePart = Response.AnyPart

/** The one call shape this module makes: a prompt, dynamic tools, no tool resolution. */
interface Call {
  readonly prompt: Prompt.Prompt
  readonly toolkit?: Toolkit.WithHandler<Record<string, Tool.Any>>
  readonly disableToolCallResolution: true
}

type Generate = (options: Call) => Effect.Effect<{ readonly content: ReadonlyArray<AnyResponsePart> }, AiError.AiError>
type StreamText = (options: Call) => Stream.Stream<AnyResponsePart, AiError.AiError>

const isJson = Schema.is(Schema.Json)

/**
 * The `ModelError` an `AiError` becomes: `ProviderFailure`, the error's
 * message as detail, `retryable` as the error says.
 *
 * @since 0.1.0
 * @category errors
 */
export const fromAiError = (error: AiError.AiError): Model.ModelError =>
  new Model.ModelError({ reason: "ProviderFailure", detail: error.message, retryable: error.isRetryable })

const toolkitOf = (tools: ReadonlyArray<Model.ToolSpec>): Toolkit.WithHandler<Record<string, Tool.Any>> | undefined => {
  if (tools.length === 0) return undefined
  const byName: Record<string, Tool.Any> = {}
  for (const spec of tools) {
    byName[spec.name] = Tool.dynamic(spec.name, {
      description: spec.description,
      parameters: spec.inputSchema as Record<string, never>
    }) as unknown as Tool.Any
  }
  // Tool calls are never resolved here (`disableToolCallResolution`): the executor runs them.
  return {
    tools: byName,
    handle: (name: string) => Effect.die(new Error(`EffectAiModel: tool ${name} was to be run by Effect AI`))
  } as unknown as Toolkit.WithHandler<Record<string, Tool.Any>>
}

const callOf = (request: Model.ModelRequest, promptOf: (parts: ReadonlyArray<Model.Part>) => Prompt.Prompt): Call => {
  const toolkit = toolkitOf(request.tools)
  return {
    prompt: promptOf(request.parts),
    ...(toolkit === undefined ? {} : { toolkit }),
    disableToolCallResolution: true
  }
}

/**
 * Effect AI's finish reason as Tessera's (`pause` becomes `other`).
 *
 * @since 0.1.0
 * @category responses
 */
export const toFinishReason = (reason: Response.FinishReason): Model.FinishReason =>
  reason === "pause" ? "other" : reason

/**
 * Effect AI's usage as Tessera's: input and output totals, cache reads and
 * reasoning tokens; a count Effect AI left undefined stays absent.
 *
 * @since 0.1.0
 * @category responses
 */
export const toUsage = (usage: Response.Usage): Model.Usage => ({
  ...(usage.inputTokens.total === undefined ? {} : { inputTokens: usage.inputTokens.total }),
  ...(usage.outputTokens.total === undefined ? {} : { outputTokens: usage.outputTokens.total }),
  ...(usage.inputTokens.cacheRead === undefined ? {} : { cachedInputTokens: usage.inputTokens.cacheRead }),
  ...(usage.outputTokens.reasoning === undefined ? {} : { reasoningTokens: usage.outputTokens.reasoning })
})

const toolCallOf = (
  part: Extract<AnyResponsePart, { type: "tool-call" }>
): Effect.Effect<Model.ToolCallPart, Model.ModelError> =>
  isJson(part.params)
    ? Effect.succeed(Model.toolCall(part.id, part.name, part.params))
    : Effect.fail(
        new Model.ModelError({
          reason: "NonJsonToolInput",
          detail: `tool call ${part.id} (${part.name}) has an input that is not JSON`
        })
      )

/** The Tessera events one Effect AI part stands for (none for parts Tessera does not model). */
const eventsOf = (
  part: AnyResponsePart,
  names: Map<string, string>
): Effect.Effect<ReadonlyArray<Model.ModelStreamEvent>, Model.ModelError> => {
  switch (part.type) {
    case "text":
      return Effect.succeed(part.text.length === 0 ? [] : [{ _tag: "TextDelta", delta: part.text }])
    case "text-delta":
      return Effect.succeed([{ _tag: "TextDelta", delta: part.delta }])
    case "reasoning":
      return Effect.succeed(part.text.length === 0 ? [] : [{ _tag: "ReasoningDelta", delta: part.text }])
    case "reasoning-delta":
      return Effect.succeed([{ _tag: "ReasoningDelta", delta: part.delta }])
    case "tool-params-start":
      names.set(part.id, part.name)
      return Effect.succeed([])
    case "tool-params-delta":
      return Effect.succeed([
        { _tag: "ToolCallDelta", id: part.id, name: names.get(part.id) ?? "", inputDelta: part.delta }
      ])
    case "tool-call":
      return part.providerExecuted
        ? Effect.succeed([])
        : Effect.map(toolCallOf(part), (call) => [{ _tag: "ToolCall", call }])
    case "finish":
      return Effect.succeed([
        { _tag: "Usage", usage: toUsage(part.usage) },
        {
          _tag: "Finish",
          reason: toFinishReason(part.reason),
          ...(Object.keys(part.metadata).length === 0 ? {} : { providerMetadata: part.metadata })
        }
      ])
    case "error":
      return Effect.fail(
        new Model.ModelError({
          reason: "ProviderFailure",
          detail: part.error instanceof Error ? part.error.message : String(part.error)
        })
      )
    default:
      return Effect.succeed([])
  }
}

/**
 * A Tessera model served by `languageModel` (see the module comment).
 * `promptOf` turns a request's parts into the prompt sent (default: each
 * part rendered as the module comment says); an adapter whose parts stand
 * for a caller's own prompt passes one that gives those parts back as the
 * caller wrote them (`TesseraLanguageModel`'s summary requests do).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromLanguageModel = (
  languageModel: LanguageModel.LanguageModel,
  promptOf: (parts: ReadonlyArray<Model.Part>) => Prompt.Prompt = partsToPrompt
): Model.Model["Service"] => {
  const generateText = languageModel.generateText as unknown as Generate
  const streamText = languageModel.streamText as unknown as StreamText
  return Model.Model.of({
    generate: (request) =>
      Effect.gen(function* () {
        const response = yield* Effect.mapError(generateText(callOf(request, promptOf)), fromAiError)
        const collected = Model.collector()
        const names = new Map<string, string>()
        for (const part of response.content) {
          for (const event of yield* eventsOf(part, names)) collected.add(event)
        }
        return yield* collected.done()
      }),
    stream: (request) => {
      const names = new Map<string, string>()
      return streamText(callOf(request, promptOf)).pipe(
        Stream.mapError(fromAiError),
        Stream.mapEffect((part) => eventsOf(part, names)),
        Stream.flatMap((events) => Stream.fromIterable(events))
      )
    }
  })
}

/**
 * Tessera's `Model` served by the `LanguageModel` in context (an Effect AI
 * provider's layer, or a test model made with `LanguageModel.make`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Model.Model, never, LanguageModel.LanguageModel> = Layer.effect(
  Model.Model,
  Effect.gen(function* () {
    return fromLanguageModel(yield* LanguageModel.LanguageModel)
  })
)
