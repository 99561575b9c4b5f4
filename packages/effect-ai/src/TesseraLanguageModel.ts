/**
 * Tessera inside Effect AI: a `LanguageModel` (`effect/ai`) that wraps
 * another one with Tessera's context handling for one bound task. Any code
 * written against `LanguageModel.generateText`/`streamText`/`generateObject`
 * or `Chat` gets offload of large tool results and compaction with a private
 * summary by providing {@link layer} over its provider's layer. It is the
 * runtime's foreign loop (`TaskExecution.foreignLoop`) on Effect AI prompts:
 *
 * - It is made only from a bound task (an `EntryGate.TaskBinding`), never
 *   from a folder: {@link make} runs the entry gate, and a summary or a
 *   private offload happens only through the capability resolved from that
 *   binding. A task that needs a writer and has none fails `Unauthorized`
 *   in {@link make} (so the layer fails to build), before any model request.
 * - Every request is journaled as the stock executor journals a turn
 *   (`TurnOpened` or `TurnResumed`, `ToolCalled`/`ToolResulted`,
 *   `ArtifactOffloaded`, `SummaryStarted`/`SummaryStaged`,
 *   `RequestDispatched`, `ResponseReceived` with usage and finish reason,
 *   or `ModelFailed`, `TurnClosed`); a streamed step is
 *   journaled when its stream ends, every part having passed through as it
 *   arrived.
 * - `RequestDispatched` measures the request as sent: the prompt's parts
 *   and the function tools `LanguageModel` offers the provider (name,
 *   description, the parameters' JSON Schema as Effect AI makes it, in the
 *   toolkit's order, narrowed by a `{ oneOf }` tool choice). A toolkit given
 *   as an Effect is run once per call, in the caller's context, and the
 *   wrapped model gets the resolved toolkit.
 * - Offloaded bodies and staged summaries pass the host's
 *   `ArtifactRedactor` (when one is in the context of {@link make}) before
 *   they touch disk; so does a provider's error, in the journal and in the
 *   `AiError` handed back to the caller.
 * - Summary requests go to the wrapped model (the task they carry keeps
 *   its files as the caller's prompt gave them) and are reported to the host
 *   with the step they preceded: added to the usage of the step's `finish`
 *   part and itemized in its metadata under `tessera`
 *   (`summaryRequests`, `summaryInputTokens`, `summaryOutputTokens`); the
 *   running total is {@link TesseraLanguageModel.summaryUsage}.
 * - When Effect AI resolves the tool calls itself (`generateText` with a
 *   toolkit), each result is recorded and, when large, offloaded as soon as
 *   the response is back; the response's tool-result part then carries the
 *   pointer as its encoded result (the typed `result` is unchanged), so the
 *   caller's history (`Prompt.fromResponseParts`, `Chat`) shrinks too.
 *   Streamed results are offloaded on the next request instead.
 * - Pointers name a read tool (`offload.readTool`). Unless the host opts out
 *   (`registerReadTool: false`), every call that offers a toolkit offers it
 *   too, with its handler (the foreign loop's read tool): Effect AI runs a
 *   read as any tool of the toolkit, a read returns at most the read tool's
 *   output cap and is never offloaded again. A tool of the caller's of that
 *   name is kept instead.
 *
 * The caller's whole history comes back on every request; the wrapper
 * remembers what it offloaded (per call id and original body) and what it
 * summarized, so each request is the compacted one and an offloaded
 * payload is never sent again.
 *
 * @since 0.1.0
 */
import type * as EntryGate from "@tessera/runtime/EntryGate"
import type * as Executor from "@tessera/runtime/Executor"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as Observability from "@tessera/runtime/Observability"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as AiError from "effect/ai/AiError"
import * as LanguageModel from "effect/ai/LanguageModel"
import * as Prompt from "effect/ai/Prompt"
import * as Response from "effect/ai/Response"
import * as Tool from "effect/ai/Tool"
import * as Toolkit from "effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { fromLanguageModel, toFinishReason, toUsage } from "./EffectAiModel.ts"
import { resultText, toHistory, toPrompt } from "./internal/prompt.ts"
import { toolSpecs } from "./internal/toolSpecs.ts"

/**
 * How the wrapper treats a task's requests: `offload` is the runtime's own
 * `ToolResults.OffloadConfig` (threshold, read tool, destination; no
 * offload without it). Compaction follows the binding's policy.
 * `inlineLimit` is the most UTF-8 bytes of a tool result kept inline (by
 * default the policy's piece limit), as in the stock executor: the
 * wrapper's hooks are the executor's.
 *
 * @since 0.1.0
 * @category models
 */
export type Options = Pick<TaskExecution.ForeignLoopOptions, "offload" | "inlineLimit">

/**
 * The wrapping `LanguageModel` and what it reports, for one bound task.
 *
 * @since 0.1.0
 * @category models
 */
export interface TesseraLanguageModel {
  /** The wrapper: provide it as `LanguageModel.LanguageModel` (see {@link layer}). */
  readonly languageModel: LanguageModel.LanguageModel
  /**
   * The read tool the pointers name with its handler, as the wrapper adds it
   * to each call's toolkit: for a caller that resolves tool calls itself
   * (`disableToolCallResolution`) and answers a read with
   * `readToolkit.handle(name, params, callId)`. A read succeeds with its
   * text, or fails (failure mode `return`) with the refusal's text. None when
   * the wrapper does not offload or the host opted out
   * (`offload.registerReadTool: false`).
   */
  readonly readToolkit: Option.Option<Toolkit.WithHandler<Record<string, Tool.Any>>>
  /** The pointer each offloaded call id was replaced by. */
  readonly offloaded: ReadonlyMap<string, string>
  /** Every summary request's cost so far (also reported step by step). */
  readonly summaryUsage: () => TaskExecution.SummaryUsage
}

/**
 * What {@link make} needs besides the wrapped `LanguageModel`: the bound
 * task's journal, and the platform the runtime writes through.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = TaskExecution.ForeignLoopRequirements

type AnyPart = Response.AnyPart
type ToolResult = Extract<AnyPart, { type: "tool-result" }>
type Finish = Extract<AnyPart, { type: "finish" }>
type WithHandler = Toolkit.WithHandler<Record<string, Tool.Any>>
type Options_ = {
  readonly prompt: Prompt.RawInput
  readonly toolkit?: LanguageModel.ToolkitInput<Record<string, Tool.Any>, unknown, unknown> | undefined
  readonly toolChoice?: LanguageModel.ToolChoice<string> | undefined
} & Record<string, unknown>
type Content = ReadonlyArray<AnyPart>

const isFinish = (part: AnyPart): part is Finish => part.type === "finish"

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** A Tessera failure (journal, gate, offload, summary) inside a call, as the `AiError` the interface allows. */
const tesseraFailure =
  (method: string) =>
  (error: { readonly _tag: string; readonly message: string }): AiError.AiError =>
    AiError.make({
      module: "TesseraLanguageModel",
      method,
      reason: new AiError.UnknownError({ description: `Tessera ${error._tag}: ${error.message}` })
    })

const isJson = Schema.is(Schema.Json)

/** The calls of a response the caller's tools answer (an input that is not JSON is kept as `null`). */
const callsOf = (content: Content): ReadonlyArray<Model.ToolCallPart> =>
  content.flatMap((part) =>
    part.type === "tool-call" && !part.providerExecuted
      ? [Model.toolCall(part.id, part.name, isJson(part.params) ? part.params : null)]
      : []
  )

/** What the journal and compaction see of a response: its text, calls, usage and finish reason. */
const responseOf = (content: Content): Model.ModelResponse => {
  const finish = content.find(isFinish)
  return Model.response({
    text: textOf(content),
    toolCalls: callsOf(content),
    ...(finish === undefined ? {} : { usage: toUsage(finish.usage), finishReason: toFinishReason(finish.reason) })
  })
}

const textOf = (content: Content): string =>
  content.map((part) => (part.type === "text" ? part.text : part.type === "text-delta" ? part.delta : "")).join("")

const withSummary = (part: Finish, summary: TaskExecution.SummaryUsage): Finish =>
  summary.requests === 0
    ? part
    : {
        ...part,
        usage: new Response.Usage({
          inputTokens: {
            ...part.usage.inputTokens,
            total: (part.usage.inputTokens.total ?? 0) + summary.inputTokens
          },
          outputTokens: {
            ...part.usage.outputTokens,
            total: (part.usage.outputTokens.total ?? 0) + summary.outputTokens
          }
        }),
        metadata: {
          ...part.metadata,
          tessera: {
            summaryRequests: summary.requests,
            summaryInputTokens: summary.inputTokens,
            summaryOutputTokens: summary.outputTokens
          }
        }
      }

/**
 * The foreign loop's read tool as an Effect AI tool with its handler: the
 * pointer's JSON Schema as the runtime gives it (the handler decodes the
 * input), the read's text as its success, a refusal's text as its failure,
 * returned to the model (`failureMode: "return"`) rather than failing the
 * call.
 */
const readToolkitOf = (read: TaskExecution.ForeignReadTool) => {
  const name = read.spec.name
  const tool = Tool.dynamic(name, {
    description: read.spec.description,
    parameters: read.spec.inputSchema as JsonSchema.JsonSchema,
    success: Schema.String,
    failure: Schema.String,
    failureMode: "return"
  })
  const toolkit = Toolkit.make(tool)
  const handler = (params: unknown, context: Toolkit.HandlerContext<typeof tool>) =>
    Effect.flatMap(read.run(Model.toolCall(context.toolCallId ?? "", name, params as Schema.Json)), (result) =>
      result.isError ? Effect.fail(result.content) : Effect.succeed(result.content)
    )
  const handlers = { [name]: handler } as unknown as Toolkit.HandlersFrom<Record<string, typeof tool>>
  return Effect.flatMap(toolkit.toHandlers(handlers), (context) =>
    Effect.provideContext(toolkit as unknown as Effect.Effect<WithHandler, never, never>, context)
  )
}

/** `toolkit` with the read tool added, unless it has a tool of that name (the caller's is kept). */
const withRead = (toolkit: WithHandler, read: Option.Option<WithHandler>): WithHandler => {
  if (Option.isNone(read)) return toolkit
  const [name, tool] = Object.entries(read.value.tools)[0] as [string, Tool.Any]
  if (Object.hasOwn(toolkit.tools, name)) return toolkit
  const handle: WithHandler["handle"] = (called, params, callId, parse) =>
    called === name ? read.value.handle(called, params, callId, parse) : toolkit.handle(called, params, callId, parse)
  return { tools: { ...toolkit.tools, [name]: tool }, handle }
}

/**
 * Wraps the `LanguageModel` in context for a bound task (see the module
 * comment). Runs the entry gate first; with a `Threshold` policy, or with
 * `Private` offload, the private-summaries capability must resolve. Any
 * refusal is `Unauthorized` here: no model request, no journal entry.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding, options: Options = {}) {
  const inner = yield* LanguageModel.LanguageModel
  const loop = yield* TaskExecution.foreignLoop(binding, {
    entry: "TesseraLanguageModel.make",
    ...(options.offload === undefined ? {} : { offload: options.offload }),
    ...(options.inlineLimit === undefined ? {} : { inlineLimit: options.inlineLimit })
  })
  const readToolkit = Option.isNone(loop.readTool)
    ? Option.none<WithHandler>()
    : Option.some(yield* readToolkitOf(loop.readTool.value))

  /**
   * The call's toolkit resolved as `LanguageModel` resolves it (an Effect is
   * run, in the caller's context), the read tool added, and the specs of the
   * tools it offers. The options passed on carry that toolkit, so the
   * caller's Effect runs once per call; the inner model resolves a
   * `WithHandler` to itself and offers the same tools. A call without a
   * toolkit runs no tools and is given none: a read it could not run would
   * end its answer with an unresolved call.
   */
  const offered = (method: string, options: Options_) =>
    Effect.gen(function* () {
      if (options.toolkit === undefined) return { options, tools: [] }
      // Its error and services are the caller's: the interface types them from the options.
      const resolved = yield* (
        Effect.isEffect(options.toolkit) ? options.toolkit : Effect.succeed(options.toolkit)
      ) as Effect.Effect<WithHandler>
      const toolkit = withRead(resolved, readToolkit)
      const tools = yield* toolSpecs(toolkit, options.toolChoice, method)
      return { options: { ...options, toolkit }, tools }
    })

  /** Prepares and journals one request: the prompt to send, and its step. */
  const dispatch = (method: string, raw: Prompt.RawInput, tools: ReadonlyArray<Model.ToolSpec>) =>
    Effect.gen(function* () {
      const converted = toHistory(Prompt.make(raw))
      // Summary requests carry the task as the caller's prompt gave it: its files reach the provider as files.
      const summaryModel = fromLanguageModel(inner, (parts) => toPrompt(parts, converted.origins))
      const history = yield* loop.prepare(converted.history, summaryModel, tools)
      const request: Model.ModelRequest = { parts: History.toParts(history), tools }
      const prompt = toPrompt(request.parts, converted.origins)
      const step = yield* loop.dispatch(request)
      return { prompt, request, step }
    }).pipe(Effect.mapError(tesseraFailure(method)))

  /**
   * One call's start: its toolkit resolved (the caller's errors stay the
   * caller's), then its request prepared and journaled with the tools offered.
   */
  const begin = (method: string, input: Options_) =>
    Effect.flatMap(offered(method, input), ({ options, tools }) =>
      Effect.map(dispatch(method, options.prompt, tools), (dispatched) => ({ options, ...dispatched }))
    )

  /** Journals a failure scrubbed, and fails with the error scrubbed the same way. */
  const failure = (method: string, step: Executor.StepContext, error: unknown): Effect.Effect<never, unknown> =>
    loop
      .fail(step, "ProviderFailure", describe(error))
      .pipe(
        Effect.mapError(tesseraFailure(method)),
        Effect.andThen(loop.scrubThrown(error)),
        Effect.flatMap(Effect.fail)
      )

  /** A resolved tool result, recorded (and offloaded) now; the pointer becomes its encoded result. */
  const record = (content: Content, part: ToolResult) =>
    Effect.gen(function* () {
      if (part.providerExecuted || part.preliminary) return part
      const call = content.find((candidate) => candidate.type === "tool-call" && candidate.id === part.id)
      const params = call?.type === "tool-call" ? call.params : null
      const text = resultText(
        Prompt.makePart("tool-result", {
          id: part.id,
          name: part.name,
          isFailure: part.isFailure,
          result: part.encodedResult,
          ...(part.modelOutput === undefined ? {} : { modelOutput: part.modelOutput }),
          providerExecuted: false
        })
      )
      const recorded = yield* loop.toolResult(
        { _tag: "ToolCall", id: part.id, name: part.name, input: (params ?? null) as never },
        { _tag: "ToolResult", callId: part.id, name: part.name, content: text, isError: part.isFailure }
      )
      if (recorded.content === text) return part
      const { modelOutput: _dropped, ...rest } = part
      return { ...rest, encodedResult: recorded.content } as ToolResult
    })

  /** A whole response: journaled, its resolved results recorded, the summary usage put on its finish part. */
  const settle = (method: string, step: Executor.StepContext, request: Model.ModelRequest, content: Content) =>
    Effect.gen(function* () {
      yield* loop.receive(step, request, responseOf(content))
      const summary = loop.takeSummaryUsage()
      const out: Array<AnyPart> = []
      for (const part of content) {
        out.push(
          part.type === "tool-result"
            ? yield* record(content, part)
            : isFinish(part)
              ? withSummary(part, summary)
              : part
        )
      }
      return out
    }).pipe(Effect.mapError(tesseraFailure(method)))

  const generateText = (input: Options_) =>
    Effect.gen(function* () {
      const { options, prompt, request, step } = yield* begin("generateText", input)
      const response = yield* (inner.generateText as unknown as (o: Options_) => Effect.Effect<{ content: Content }>)({
        ...options,
        prompt
      }).pipe(Effect.catch((error) => failure("generateText", step, error)))
      const content = yield* settle("generateText", step, request, response.content)
      return new LanguageModel.GenerateTextResponse(content as Array<Response.Part<never>>)
    })

  const generateObject = (input: Options_) =>
    Effect.gen(function* () {
      const { options, prompt, request, step } = yield* begin("generateObject", input)
      const response = yield* (
        inner.generateObject as unknown as (o: Options_) => Effect.Effect<{ value: unknown; content: Content }>
      )({ ...options, prompt }).pipe(Effect.catch((error) => failure("generateObject", step, error)))
      const content = yield* settle("generateObject", step, request, response.content)
      return new LanguageModel.GenerateObjectResponse(response.value, content as Array<Response.Part<never>>)
    })

  const streamText = (input: Options_) =>
    Stream.unwrap(
      Effect.gen(function* () {
        const { options, prompt, request, step } = yield* begin("streamText", input)
        const summary = loop.takeSummaryUsage()
        const seen: Array<AnyPart> = []
        let settled = false
        const parts = (inner.streamText as unknown as (o: Options_) => Stream.Stream<AnyPart, unknown>)({
          ...options,
          prompt
        })
        return parts.pipe(
          Stream.map((part) => {
            seen.push(part)
            return isFinish(part) ? withSummary(part, summary) : part
          }),
          Stream.catch((error) => {
            settled = true
            return Stream.fromEffect(failure("streamText", step, error))
          }),
          Stream.onEnd(
            Effect.suspend(() => {
              settled = true
              return loop.receive(step, request, responseOf(seen))
            }).pipe(Effect.mapError(tesseraFailure("streamText")))
          ),
          // A consumer that stops early (interruption): the step is journaled as failed, so the turn can go on.
          Stream.ensuring(
            Effect.suspend(
              (): Effect.Effect<unknown, TaskExecution.JournalError> =>
                settled ? Effect.void : loop.fail(step, "ProviderFailure", "the stream was interrupted by its consumer")
            ).pipe(Effect.ignore)
          )
        )
      })
    )

  const languageModel = {
    [LanguageModel.TypeId]: LanguageModel.TypeId,
    ...(inner.supportsSystemMessagesInHistory === undefined
      ? {}
      : { supportsSystemMessagesInHistory: inner.supportsSystemMessagesInHistory }),
    generateText,
    generateObject,
    streamText
  } as unknown as LanguageModel.LanguageModel

  const wrapped: TesseraLanguageModel = {
    languageModel,
    readToolkit,
    offloaded: loop.offloaded,
    summaryUsage: loop.summaryUsage
  }
  return wrapped
}, Observability.withSpan("EffectAi.TesseraLanguageModel.make"))

/**
 * The `LanguageModel` for a bound task, wrapping the one below it:
 * `TesseraLanguageModel.layer(binding).pipe(Layer.provide(providerLayer))`.
 * Building it runs {@link make}'s checks (a refused binding fails the
 * layer, before any request).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (binding: EntryGate.TaskBinding, options: Options = {}) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.map(make(binding, options), (wrapped) => wrapped.languageModel)
  )
