/**
 * Any Vercel AI SDK 7 provider model (a `LanguageModelV4` from
 * `@ai-sdk/provider`: OpenAI, Anthropic, Google, Bedrock, an
 * OpenAI-compatible server such as vLLM, llama.cpp or Ollama...) as a
 * Tessera `Model`, so the runtime's own executor (`TaskExecution.runTurn`,
 * `streamTurn`) drives it.
 *
 * - `generate` calls the provider's `doGenerate` (one non-streaming
 *   request); `stream` calls `doStream` and turns each stream part into a
 *   `Model.ModelStreamEvent` as it arrives: text, reasoning and tool-input
 *   deltas, completed tool calls (input decoded from JSON), usage (input,
 *   output, cached input and reasoning tokens, as far as the provider
 *   reports them) and the finish reason with the provider's metadata.
 * - Tools are offered as function tools (name, description, the input's
 *   JSON Schema). Native media parts become file parts whose
 *   `providerOptions` is the part's own object, untouched.
 * - Provider errors become `ModelError`s with reason `ProviderFailure` and
 *   a `retryable` flag ({@link classify}); they are retried on the
 *   configured `Schedule` (default {@link defaultRetry}), waiting at least
 *   what the server's `retry-after-ms` / `Retry-After` header asks. A
 *   streamed request is retried only until its first part arrived: after
 *   that, deltas have reached the consumer and the error ends the stream.
 * - Each request may have a time limit (`timeout`): past it the request is
 *   aborted and fails with reason `Timeout` (retried like a retryable
 *   failure while nothing was streamed yet).
 * - Interrupting the caller aborts the provider's HTTP request: every call
 *   receives an `AbortSignal` that is aborted when the call's fiber is
 *   interrupted, times out or the consumer of the stream stops.
 * - An error's detail names the error, the HTTP status and the provider's
 *   message, never the request body (the AI SDK keeps it on its
 *   `APICallError`; it is not copied). The executor scrubs the detail with
 *   the host's redactor before it is journaled, as for every model.
 *
 * @since 0.1.0
 */
import {
  APICallError,
  type JSONObject,
  type LanguageModelV4,
  type LanguageModelV4CallOptions,
  type LanguageModelV4Content,
  type LanguageModelV4FilePart,
  type LanguageModelV4FinishReason,
  type LanguageModelV4FunctionTool,
  type LanguageModelV4Message,
  type LanguageModelV4Prompt,
  type LanguageModelV4StreamPart,
  type LanguageModelV4TextPart,
  type LanguageModelV4Usage
} from "@ai-sdk/provider"
import * as Compaction from "@tessera/runtime/Compaction"
import * as Model from "@tessera/runtime/Model"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/**
 * A provider failure as the retry schedule sees it: the `ModelError` the
 * caller will get, the HTTP status when there was a response, and the delay
 * the server asked for (`retry-after-ms` or `Retry-After`), if any.
 *
 * @since 0.1.0
 * @category errors
 */
export class ProviderFailure extends Schema.TaggedError<ProviderFailure>()("ProviderFailure", {
  error: Model.ModelError,
  status: Schema.optionalKey(Schema.Number),
  retryAfter: Schema.optionalKey(Schema.Duration)
}) {
  override get message(): string {
    return this.error.message
  }
}

/**
 * The retry policy applied when no `retry` is configured: exponential
 * backoff from 1 second (jittered), at most 2 retries. A server's stated
 * delay is honoured on top (see {@link Config.retry}).
 *
 * @since 0.1.0
 * @category configuration
 */
export const defaultRetry: Schedule.Schedule<unknown, ProviderFailure> = Schedule.exponential("1 second").pipe(
  Schedule.jittered,
  Schedule.upTo({ times: 2 })
)

/**
 * How the adapter calls the provider.
 *
 * - `retry`: the `Schedule` a retryable failure is retried on (input: the
 *   {@link ProviderFailure}); default {@link defaultRetry}. Use
 *   `Schedule.recurs(0)` for no retries. Whatever the schedule's delay, a
 *   retry waits at least the server's stated delay.
 * - `maxRetryAfter`: a server asking to wait longer than this (default 60
 *   seconds) is not retried; the error goes to the caller, `retryable`.
 * - `timeout`: the limit for one request (one attempt), from sending it to
 *   its last stream part; none by default.
 * - `callOptions`: passed to every call as they are (temperature,
 *   `maxOutputTokens`, `providerOptions`, headers...), except the prompt,
 *   tools and abort signal, which the adapter sets.
 *
 * @since 0.1.0
 * @category configuration
 */
export interface Config {
  readonly retry?: Schedule.Schedule<unknown, ProviderFailure>
  readonly maxRetryAfter?: Duration.Input
  readonly timeout?: Duration.Input
  readonly callOptions?: Omit<LanguageModelV4CallOptions, "prompt" | "tools" | "abortSignal">
}

// ---------------------------------------------------------------------------
// Requests

type UserContent = Extract<LanguageModelV4Message, { role: "user" }>["content"][number]
type AssistantContent = Extract<LanguageModelV4Message, { role: "assistant" }>["content"][number]
type ToolContent = Extract<LanguageModelV4Message, { role: "tool" }>["content"][number]

const filePart = (part: Model.MediaPart): LanguageModelV4FilePart => ({
  type: "file",
  mediaType: part.mediaType,
  data:
    part.data._tag === "Base64"
      ? { type: "data", data: part.data.base64 }
      : { type: "url", url: new URL(part.data.url) },
  // The harness's own object: options this library does not know reach the provider.
  providerOptions: part.providerOptions as Record<string, JSONObject>
})

/**
 * A request's parts as an AI SDK prompt, in order: a system text (or a
 * system file reference) is a system message; consecutive user parts,
 * assistant parts and tool results each form one message. A file reference
 * is rendered as text (the runtime's rendering); a media part is a file
 * part carrying its `providerOptions` object as it is.
 *
 * @since 0.1.0
 * @category requests
 */
export const toPrompt = (parts: ReadonlyArray<Model.Part>): LanguageModelV4Prompt => {
  const prompt: Array<LanguageModelV4Message> = []
  let open:
    | { role: "user"; content: Array<UserContent> }
    | { role: "assistant"; content: Array<AssistantContent> }
    | { role: "tool"; content: Array<ToolContent> }
    | undefined
  const into = <R extends "user" | "assistant" | "tool">(role: R) => {
    if (open === undefined || open.role !== role) {
      open = { role, content: [] } as NonNullable<typeof open>
      prompt.push(open as LanguageModelV4Message)
    }
    return open.content as Array<
      R extends "user" ? UserContent : R extends "assistant" ? AssistantContent : ToolContent
    >
  }
  const textOf = (text: string): LanguageModelV4TextPart => ({ type: "text", text })
  for (const part of parts) {
    switch (part._tag) {
      case "Text":
      case "FileReference": {
        const text = part._tag === "Text" ? part.text : Compaction.renderPart(part)
        if (part.role === "system") {
          open = undefined
          prompt.push({ role: "system", content: text })
        } else into(part.role).push(textOf(text))
        break
      }
      case "Media":
        into(part.role === "assistant" ? "assistant" : "user").push(filePart(part))
        break
      case "ToolCall":
        into("assistant").push({ type: "tool-call", toolCallId: part.id, toolName: part.name, input: part.input })
        break
      case "ToolResult":
        into("tool").push({
          type: "tool-result",
          toolCallId: part.callId,
          toolName: part.name,
          output: { type: part.isError ? "error-text" : "text", value: part.content }
        })
    }
  }
  return prompt
}

/**
 * A tool as an AI SDK function tool.
 *
 * @since 0.1.0
 * @category requests
 */
export const toFunctionTool = (spec: Model.ToolSpec): LanguageModelV4FunctionTool => ({
  type: "function",
  name: spec.name,
  description: spec.description,
  inputSchema: spec.inputSchema as LanguageModelV4FunctionTool["inputSchema"]
})

const callOptions = (
  request: Model.ModelRequest,
  config: Config,
  abortSignal: AbortSignal
): LanguageModelV4CallOptions => ({
  ...config.callOptions,
  prompt: toPrompt(request.parts),
  ...(request.tools.length === 0 ? {} : { tools: request.tools.map(toFunctionTool) }),
  abortSignal
})

// ---------------------------------------------------------------------------
// Responses

/**
 * The provider's usage as Tessera counts: input (with cached reads as
 * `cachedInputTokens`) and output (with `reasoningTokens`); a count the
 * provider left undefined is absent.
 *
 * @since 0.1.0
 * @category responses
 */
export const toUsage = (usage: LanguageModelV4Usage): Model.Usage => {
  const out: { -readonly [K in keyof Model.Usage]: Model.Usage[K] } = {}
  const count = (n: number | undefined) => n !== undefined && Number.isSafeInteger(n) && n >= 0
  if (count(usage.inputTokens.total)) out.inputTokens = usage.inputTokens.total as number
  if (count(usage.outputTokens.total)) out.outputTokens = usage.outputTokens.total as number
  if (count(usage.inputTokens.cacheRead)) out.cachedInputTokens = usage.inputTokens.cacheRead as number
  if (count(usage.outputTokens.reasoning)) out.reasoningTokens = usage.outputTokens.reasoning as number
  return out
}

/**
 * The provider's finish reason as Tessera's (`interrupted` becomes `other`).
 *
 * @since 0.1.0
 * @category responses
 */
export const toFinishReason = (reason: LanguageModelV4FinishReason): Model.FinishReason =>
  reason.unified === "interrupted" ? "other" : reason.unified

const invalid = (detail: string) => new Model.ModelError({ reason: "InvalidResponse", detail, retryable: false })

/** A completed call's input: the provider's JSON text decoded (an empty text is an empty object). */
const decodeInput = (id: string, name: string, input: string): Effect.Effect<Schema.Json, Model.ModelError> =>
  Effect.try({
    try: () => (input.trim().length === 0 ? {} : (JSON.parse(input) as Schema.Json)),
    catch: () => invalid(`the input of tool call "${id}" (${name}) is not JSON`)
  })

const toolCallOf = (part: Extract<LanguageModelV4Content, { type: "tool-call" }>) =>
  Effect.map(decodeInput(part.toolCallId, part.toolName, part.input), (input) =>
    Model.toolCall(part.toolCallId, part.toolName, input)
  )

/**
 * The response a provider's `doGenerate` result makes: text and reasoning
 * concatenated in order, the tool calls the provider did not run itself,
 * usage, finish reason and metadata.
 *
 * @since 0.1.0
 * @category responses
 */
export const fromGenerateResult = Effect.fnUntraced(function* (result: {
  readonly content: ReadonlyArray<LanguageModelV4Content>
  readonly usage: LanguageModelV4Usage
  readonly finishReason: LanguageModelV4FinishReason
  readonly providerMetadata?: Record<string, JSONObject> | undefined
}) {
  let text = ""
  let reasoning: string | undefined
  const toolCalls: Array<Model.ToolCallPart> = []
  for (const part of result.content) {
    if (part.type === "text") text += part.text
    else if (part.type === "reasoning") reasoning = (reasoning ?? "") + part.text
    else if (part.type === "tool-call" && part.providerExecuted !== true) toolCalls.push(yield* toolCallOf(part))
  }
  const usage = toUsage(result.usage)
  const response: Model.ModelResponse = {
    text,
    toolCalls,
    ...(reasoning === undefined ? {} : { reasoning }),
    ...(Object.keys(usage).length === 0 ? {} : { usage }),
    finishReason: toFinishReason(result.finishReason),
    ...(result.providerMetadata === undefined ? {} : { providerMetadata: result.providerMetadata })
  }
  return response
})

/**
 * A stateful mapper from one request's stream parts to Tessera events
 * (create one per request): it remembers each streamed call's tool name
 * for its deltas and skips calls the provider runs itself.
 *
 * @since 0.1.0
 * @category responses
 */
export const streamPartMapper = () => {
  const names = new Map<string, string>()
  const providerRun = new Set<string>()
  return (part: LanguageModelV4StreamPart): Effect.Effect<ReadonlyArray<Model.ModelStreamEvent>, Model.ModelError> => {
    switch (part.type) {
      case "text-delta":
        return Effect.succeed(part.delta.length === 0 ? [] : [{ _tag: "TextDelta", delta: part.delta }])
      case "reasoning-delta":
        return Effect.succeed(part.delta.length === 0 ? [] : [{ _tag: "ReasoningDelta", delta: part.delta }])
      case "tool-input-start":
        if (part.providerExecuted === true) providerRun.add(part.id)
        else names.set(part.id, part.toolName)
        return Effect.succeed([])
      case "tool-input-delta": {
        const name = names.get(part.id)
        return Effect.succeed(
          name === undefined || part.delta.length === 0
            ? []
            : [{ _tag: "ToolCallDelta", id: part.id, name, inputDelta: part.delta }]
        )
      }
      case "tool-call":
        if (part.providerExecuted === true || providerRun.has(part.toolCallId)) return Effect.succeed([])
        return Effect.map(toolCallOf(part), (call) => [{ _tag: "ToolCall", call }])
      case "finish": {
        const usage = toUsage(part.usage)
        return Effect.succeed([
          ...(Object.keys(usage).length === 0 ? [] : [{ _tag: "Usage", usage } as const]),
          {
            _tag: "Finish",
            reason: toFinishReason(part.finishReason),
            ...(part.providerMetadata === undefined ? {} : { providerMetadata: part.providerMetadata })
          }
        ])
      }
      case "error":
        return Effect.fail(classify(part.error).error)
      default:
        return Effect.succeed([])
    }
  }
}

// ---------------------------------------------------------------------------
// Errors

const retryableStatus = (status: number): boolean => status === 408 || status === 409 || status === 429 || status >= 500

const networkCodes = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT"
])

/** Whether `error` (or an error it wraps) is a transport failure: a reset, refused or timed-out connection. */
const isNetworkError = (error: unknown, depth = 0): boolean => {
  if (depth > 4 || typeof error !== "object" || error === null) return false
  const code = (error as { code?: unknown }).code
  if (typeof code === "string" && networkCodes.has(code)) return true
  if (error instanceof TypeError && error.message === "fetch failed") return true
  return isNetworkError((error as { cause?: unknown }).cause, depth + 1)
}

const headerOf = (headers: Record<string, string> | undefined, name: string): string | undefined => {
  if (headers === undefined) return undefined
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === name) return value
  return undefined
}

/**
 * The delay a response asks for before a retry: `retry-after-ms`
 * (milliseconds), else `Retry-After` (seconds, or an HTTP date, measured
 * from `now`). Unparseable or negative values are ignored.
 *
 * @since 0.1.0
 * @category errors
 */
export const retryAfter = (
  headers: Record<string, string> | undefined,
  now: number = Date.now()
): Option.Option<Duration.Duration> => {
  const ms = headerOf(headers, "retry-after-ms")
  if (ms !== undefined && ms.trim() !== "") {
    const value = Number(ms)
    if (Number.isFinite(value) && value >= 0) return Option.some(Duration.millis(value))
  }
  const after = headerOf(headers, "retry-after")
  if (after === undefined || after.trim() === "") return Option.none()
  const seconds = Number(after)
  if (Number.isFinite(seconds)) return seconds >= 0 ? Option.some(Duration.seconds(seconds)) : Option.none()
  const date = Date.parse(after)
  return Number.isNaN(date) ? Option.none() : Option.some(Duration.millis(Math.max(0, date - now)))
}

const maxMessage = 500
const shortMessage = (error: unknown): string => {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : "unknown error"
  return text.length > maxMessage ? `${text.slice(0, maxMessage)}...` : text
}

const errorName = (error: unknown): string =>
  error instanceof Error ? error.name : typeof error === "object" && error !== null ? "object" : typeof error

/**
 * A provider's error as a {@link ProviderFailure}. An `APICallError` is
 * retryable when the AI SDK says so (`isRetryable`) or its status is 408,
 * 409, 429 or 5xx; a transport failure (connection reset, refused, timed
 * out) is retryable; anything else (a rejected request, a missing key, an
 * unparseable response) is not. The detail is the error's name, its status
 * and its message (at most 500 characters), never the request body.
 *
 * @since 0.1.0
 * @category errors
 */
export const classify = (error: unknown, now: number = Date.now()): ProviderFailure => {
  if (APICallError.isInstance(error)) {
    const status = error.statusCode
    const retryable = error.isRetryable || (status !== undefined && retryableStatus(status)) || isNetworkError(error)
    const after = retryAfter(error.responseHeaders, now)
    return new ProviderFailure({
      error: new Model.ModelError({
        reason: "ProviderFailure",
        detail: `${error.name}${status === undefined ? "" : ` (HTTP ${status})`}: ${shortMessage(error)}`,
        retryable
      }),
      ...(status === undefined ? {} : { status }),
      ...(Option.isSome(after) ? { retryAfter: after.value } : {})
    })
  }
  return new ProviderFailure({
    error: new Model.ModelError({
      reason: "ProviderFailure",
      detail: `${errorName(error)}: ${shortMessage(error)}`,
      retryable: isNetworkError(error)
    })
  })
}

// ---------------------------------------------------------------------------
// Calls

const timedOut = (limit: Duration.Duration) =>
  new ProviderFailure({
    error: new Model.ModelError({
      reason: "Timeout",
      detail: `the provider did not answer within ${Duration.format(limit)}`,
      retryable: true
    })
  })

/** A fresh abort controller for one attempt, aborted when the scope closes (interruption, timeout, end). */
const controller = Effect.acquireRelease(
  Effect.sync(() => new AbortController()),
  (controller) => Effect.sync(() => controller.abort())
)

const settings = (config: Config) => ({
  schedule: config.retry ?? defaultRetry,
  maxRetryAfter: Duration.fromInputUnsafe(config.maxRetryAfter ?? "60 seconds"),
  timeout: config.timeout === undefined ? Option.none() : Option.some(Duration.fromInputUnsafe(config.timeout))
})
type Settings = ReturnType<typeof settings>

/** Retries `attempt` on the schedule while its failure is retryable, waiting at least the server's stated delay. */
const withRetries = <A, R>(
  attempt: Effect.Effect<A, ProviderFailure, R>,
  options: Settings
): Effect.Effect<A, Model.ModelError, R> =>
  attempt.pipe(
    Effect.retry({
      schedule: Schedule.modifyDelay(options.schedule, ({ duration, input }) =>
        Effect.succeed(
          input.retryAfter === undefined ? duration : Duration.max(duration, Duration.fromInputUnsafe(input.retryAfter))
        )
      ),
      while: (failure) =>
        failure.error.retryable === true &&
        (failure.retryAfter === undefined ||
          Duration.isLessThanOrEqualTo(Duration.fromInputUnsafe(failure.retryAfter), options.maxRetryAfter))
    }),
    Effect.mapError((failure) => failure.error)
  )

const limited = <A, R>(effect: Effect.Effect<A, ProviderFailure, R>, limit: Option.Option<Duration.Duration>) =>
  Option.isNone(limit)
    ? effect
    : Effect.timeoutOrElse(effect, { duration: limit.value, orElse: () => Effect.fail(timedOut(limit.value)) })

const attemptPromise = <A>(run: (signal: AbortSignal) => PromiseLike<A>) =>
  Effect.flatMap(controller, (own) =>
    Effect.tryPromise({
      // Aborted when this attempt is interrupted (timeout, caller) or its scope closes.
      try: (signal) => run(AbortSignal.any([own.signal, signal])),
      catch: (error) => classify(error)
    })
  )

/**
 * The `Model` service for a provider model (see the module's guarantees).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (model: LanguageModelV4, config: Config = {}): Model.Model["Service"] => {
  const options = settings(config)
  const generate = (request: Model.ModelRequest): Effect.Effect<Model.ModelResponse, Model.ModelError> =>
    withRetries(
      Effect.scoped(
        limited(
          Effect.flatMap(
            attemptPromise((signal) => model.doGenerate(callOptions(request, config, signal))),
            (result) => Effect.mapError(fromGenerateResult(result), (error) => new ProviderFailure({ error }))
          ),
          options.timeout
        )
      ),
      options
    )

  const stream = (request: Model.ModelRequest): Stream.Stream<Model.ModelStreamEvent, Model.ModelError> =>
    Stream.unwrap(
      Effect.gen(function* () {
        // One attempt: send the request and wait for its first part (retried as a whole).
        const attempt = Effect.gen(function* () {
          const started = yield* Clock.currentTimeMillis
          const result = yield* attemptPromise((signal) => model.doStream(callOptions(request, config, signal)))
          const reader = result.stream.getReader()
          const first = yield* Effect.tryPromise({ try: () => reader.read(), catch: (error) => classify(error) })
          return { started, reader, first }
        })
        const { first, reader, started } = yield* withRetries(limited(attempt, options.timeout), options)
        const map = streamPartMapper()
        const rest = Stream.fromReadableStream({
          evaluate: () =>
            new ReadableStream<LanguageModelV4StreamPart>({
              pull: async (into) => {
                const next = await reader.read()
                if (next.done) into.close()
                else into.enqueue(next.value)
              },
              cancel: (reason) => reader.cancel(reason)
            }),
          onError: (error) => classify(error).error
        })
        const parts = first.done ? Stream.empty : Stream.concat(Stream.make(first.value), rest)
        const events = Stream.flattenIterable(Stream.mapEffect(parts, map))
        if (Option.isNone(options.timeout)) return events
        const limit = options.timeout.value
        const elapsed = (yield* Clock.currentTimeMillis) - started
        const remaining = Duration.max(Duration.zero, Duration.subtract(limit, Duration.millis(elapsed)))
        return Stream.interruptWhen(events, Effect.andThen(Effect.sleep(remaining), Effect.fail(timedOut(limit).error)))
      })
    )

  return Model.Model.of({ generate, stream })
}

/**
 * A layer providing the `Model` service for a provider model.
 *
 * @example
 * ```ts
 * import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
 * import { AiSdkModel } from "@tessera/ai-sdk"
 * import { Schedule } from "effect"
 *
 * const provider = createOpenAICompatible({
 *   name: "my-server",
 *   baseURL: "http://127.0.0.1:8080/v1",
 *   includeUsage: true
 * })
 *
 * // Any AI SDK provider model as Tessera's `Model`: retries on the schedule (honouring Retry-After), a limit per request.
 * export const model = AiSdkModel.layer(provider.chatModel("my-model"), {
 *   retry: Schedule.exponential("1 second").pipe(Schedule.jittered, Schedule.upTo({ times: 3 })),
 *   timeout: "2 minutes"
 * })
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (model: LanguageModelV4, config: Config = {}): Layer.Layer<Model.Model> =>
  Layer.succeed(Model.Model)(make(model, config))
