/**
 * Tessera inside the Vercel AI SDK: a `LanguageModelV4` middleware (for
 * `wrapLanguageModel`) that offloads large tool results and compacts the
 * prompt of one bound task, with the same guarantees as Tessera's own
 * executor, for `generateText` and `streamText` alike. It is the runtime's
 * foreign loop (`TaskExecution.foreignLoop`) on AI SDK prompts:
 *
 * - It is made only from a bound task (an `EntryGate.TaskBinding`), never
 *   from a folder: {@link make} runs the entry gate, and a summary or a
 *   private offload happens only through the capability resolved from that
 *   binding. A task that needs a writer and has none fails `Unauthorized`
 *   in {@link make}, before the middleware exists, so no model request can
 *   be sent.
 * - Every request is journaled as the stock executor journals a turn
 *   (`TurnOpened` or `TurnResumed`, `ToolCalled`/`ToolResulted` for the
 *   previous step's calls, `ArtifactOffloaded`,
 *   `SummaryStarted`/`SummaryStaged`, `RequestDispatched`,
 *   `ResponseReceived` with usage and finish reason, or `ModelFailed`,
 *   `TurnClosed`); a streamed step is journaled when its stream ends, every
 *   delta having passed through unchanged as it arrived.
 * - Offloaded bodies and staged summaries pass the host's
 *   `ArtifactRedactor` (when one is provided) before they touch disk, and so
 *   does a provider's error: the journal's copy and the one rethrown to the
 *   AI SDK (and from there to the caller) are both scrubbed.
 * - Summary requests go to the wrapped model (`doGenerate`, with the
 *   headers, provider options and abort signal of the request they
 *   precede; the task they carry keeps its files and images as the
 *   caller's prompt gave them) and are reported to the host in the next step's result: added to its `usage`
 *   (so `totalUsage` counts them) and itemized under
 *   `providerMetadata.tessera` (`summaryRequests`, `summaryInputTokens`,
 *   `summaryOutputTokens`); for `streamText` both ride on the step's
 *   `finish` part.
 *
 * The AI SDK hands the middleware the caller's whole history on every
 * step; the middleware remembers (per call id and original body) what it
 * offloaded and (per covered prefix) what it summarized, so each step's
 * request is the compacted one; a call id the provider reuses in a later
 * prompt is a new call, never given the earlier call's pointer. {@link TesseraAiSdk.prepareStep} and
 * {@link TesseraAiSdk.toModelOutput} also shrink the caller's own copy.
 *
 * Pointers name a read tool (`offload.readTool`); unless the host opts out
 * (`registerReadTool: false`), the middleware lists it in every request
 * that lacks it, and {@link TesseraAiSdk.tools} is the AI SDK tool that
 * answers it, for the caller's `tools`: the AI SDK runs only the tools it
 * was given, so a model that follows a pointer gets the artifact's bytes
 * only when `tessera.tools` is spread there.
 *
 * {@link TesseraAiSdk.delegation} offers the runtime's delegation
 * (`Delegation.tool`) as an AI SDK tool, `delegate`, for the same
 * `tools`: each sub-task runs as a child task of its own on the host's
 * child harness (its own scope, agent-private volume and journal, its turns
 * on Tessera's executor under the `Model` in scope when the tool is made),
 * and only the children's answers (and what they publish) reach the
 * parent. The children are named after the call's place in the parent's
 * journal (the task, the turn and step the middleware journaled the asking
 * response at, the call id), exactly as the stock executor names them, so
 * the same call run again (a retry, a middleware made again after a crash
 * while the call is still owed) finds the same children and runs none of
 * them twice.
 *
 * @since 0.1.0
 */
import type {
  JSONObject,
  LanguageModelV4,
  LanguageModelV4CallOptions,
  LanguageModelV4FunctionTool,
  LanguageModelV4GenerateResult,
  LanguageModelV4Middleware,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage
} from "@ai-sdk/provider"
import type * as InvalidInput from "@tessera/core/InvalidInput"
import * as Delegation from "@tessera/runtime/Delegation"
import type * as EntryGate from "@tessera/runtime/EntryGate"
import type * as Executor from "@tessera/runtime/Executor"
import * as History from "@tessera/runtime/History"
import { Journal } from "@tessera/runtime/Journal"
import * as Model from "@tessera/runtime/Model"
import * as Observability from "@tessera/runtime/Observability"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import type * as TesseraTool from "@tessera/runtime/Tool"
import type * as ToolResults from "@tessera/runtime/ToolResults"
import { jsonSchema, type ModelMessage, type Tool, tool } from "ai"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import { toFinishReason, toUsage } from "./AiSdkModel.ts"
import {
  type DelegateRequest as DelegateRequestShape,
  type DelegateServices,
  type DelegateTool as DelegateToolShape,
  delegateTool,
  makeCallPositions
} from "./internal/delegation.ts"
import { type Converted, outputText, toHistory, toPrompt } from "./internal/prompt.ts"

/**
 * How the middleware treats a task's requests. `offload` is the runtime's
 * own `ToolResults.OffloadConfig` (threshold, read tool named in the
 * pointer, destination); without it no result is offloaded. Compaction
 * follows the binding's policy. `inlineLimit` is the most UTF-8 bytes of a
 * tool result kept inline (by default the policy's piece limit), as in the
 * stock executor: the middleware's hooks are the executor's.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly offload?: ToolResults.OffloadConfig
  readonly inlineLimit?: number
}

/**
 * What the summary requests sent since the host last saw a step cost.
 *
 * @since 0.1.0
 * @category models
 */
export type SummaryUsage = TaskExecution.SummaryUsage

/**
 * The middleware and its helpers, for one bound task.
 *
 * @since 0.1.0
 * @category models
 */
export interface TesseraAiSdk {
  /** For `wrapLanguageModel({ model, middleware })`; serves `generateText` and `streamText`. */
  readonly middleware: LanguageModelV4Middleware
  /**
   * A `prepareStep` for `generateText`/`streamText`: returns the step's
   * messages with every result the middleware offloaded replaced by its
   * pointer, so the caller's own history (which the AI SDK carries forward)
   * shrinks too.
   */
  readonly prepareStep: (options: { readonly messages: Array<ModelMessage> }) => {
    readonly messages: Array<ModelMessage>
  }
  /**
   * `toModelOutput(name)` is a tool's `toModelOutput` (AI SDK 7) for the
   * tool registered as `name`: as soon as the tool returns, its result is
   * recorded (journaled `ToolCalled`/`ToolResulted`) and, when large,
   * offloaded; the model and the caller's history (the step's response
   * messages) then hold the pointer, never the body. A small result is
   * kept as the SDK would keep it (a string as text, anything else as
   * JSON).
   */
  readonly toModelOutput: (
    name: string
  ) => (options: {
    readonly toolCallId: string
    readonly input: unknown
    readonly output: unknown
  }) => Promise<
    { readonly type: "text"; readonly value: string } | { readonly type: "json"; readonly value: Schema.Json }
  >
  /**
   * The read tool the pointers name, under its name (`offload.readTool`),
   * for `generateText`/`streamText`: `tools: { ...tessera.tools, ...yours }`.
   * Its `execute` is the foreign loop's read tool (`TaskExecution.ForeignLoop.readTool`):
   * a read returns at most the read tool's output cap, and its result is
   * journaled as soon as it returns and never offloaded again. A refused read
   * (a path no pointer gave, a bad selection) is thrown, so the model gets
   * the AI SDK's tool error naming why. Empty when the middleware does not
   * offload or the host opted out (`offload.registerReadTool: false`); a
   * tool of yours spread after it under the same name replaces it.
   */
  readonly tools: Readonly<Record<string, ReadTool>>
  /**
   * Delegation as an AI SDK tool, for `generateText`/`streamText`:
   * `tools: { ...tessera.tools, ...delegation }`. Gives `{ delegate }`,
   * the runtime's `delegate` tool (`Delegation.tool` over `harness`,
   * offering `children` within `limits`) for this middleware's bound task:
   * its input schema is the runtime tool's, its result every child's
   * answer labelled with its agent and task. Its `execute` runs the
   * runtime tool with the parent's journal and platform this middleware was
   * made with, and with `Tool.CurrentCall` at the call's place (this task,
   * the turn and step the middleware journaled the response asking for the
   * call at, the AI SDK's `toolCallId`), so the children are the ones
   * `Delegation.childTaskId` names for that place, and a call run again
   * finds them (one that answered is not run again); a streamed call has
   * its place as soon as its part passes, so the children may be journaled
   * before the response that asked for them. A call run by a middleware
   * made again after a crash has the place of the open turn that still
   * owes it. A call no response asked for delegates nothing and is thrown
   * (the model gets the AI SDK's tool error), as is an input the runtime
   * tool refuses; the
   * result is journaled as soon as it returns and offloaded when large, as
   * any tool's through {@link toModelOutput}. Aborting the call interrupts
   * its children. The children run with what is in scope here (the
   * `Model` their turns go to, a redactor, what the harness and the
   * children's tools need); refused offers or limits (an agent that is no
   * identifier or offered twice, offers deeper than `maxDepth`, a limit
   * below 1) fail `InvalidInput` here, before any request.
   */
  readonly delegation: <H extends Delegation.ChildHarness<unknown, unknown, unknown>, RChild = never>(
    harness: H,
    children: ReadonlyArray<Delegation.ChildAgent<RChild>>,
    limits?: Delegation.Limits
  ) => Effect.Effect<{ readonly delegate: DelegateTool }, InvalidInput.InvalidInput, DelegationServices<H, RChild>>
  /** The pointer each offloaded call id was replaced by. */
  readonly offloaded: ReadonlyMap<string, string>
  /** Every summary request's cost so far (also reported step by step). */
  readonly summaryUsage: () => SummaryUsage
}

/**
 * The AI SDK tool of {@link TesseraAiSdk.tools}: the read request
 * (`ToolResults.ReadRequest`: a pointer's path, at most one selection) in,
 * the read's text out.
 *
 * @since 0.1.0
 * @category models
 */
export type ReadTool = Tool<ToolResults.ReadRequest, string>

/**
 * What a model sends {@link TesseraAiSdk.delegation}'s tool: the
 * sub-tasks, each an offered agent and its instruction (at most the
 * limits' `maxChildren`).
 *
 * @since 0.1.0
 * @category models
 */
export type DelegateRequest = DelegateRequestShape

/**
 * The AI SDK tool of {@link TesseraAiSdk.delegation}: a
 * {@link DelegateRequest} in, every child's labelled answer out.
 *
 * @since 0.1.0
 * @category models
 */
export type DelegateTool = DelegateToolShape

/**
 * What {@link TesseraAiSdk.delegation} needs in scope over `harness`
 * offering children whose tools need `RChild`: what the runtime `delegate`
 * tool needs (the `Model` the children's turns go to, the harness's and
 * the children's tools' services) but the parent's journal and the
 * platform, which the middleware gives it.
 *
 * @since 0.1.0
 * @category models
 */
export type DelegationServices<H extends Delegation.ChildHarness<unknown, unknown, unknown>, RChild = never> = Exclude<
  DelegateServices<H, RChild>,
  Requirements
>

/**
 * What {@link make} needs: the bound task's journal, and the platform the
 * runtime writes through.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = TaskExecution.ForeignLoopRequirements

const responseText = (result: LanguageModelV4GenerateResult): string =>
  result.content
    .filter((part) => part.type === "text")
    .map((part) => part.text)
    .join("")

/** A call's input as JSON: the provider's text decoded (empty is `{}`), or kept as a string when it is not JSON. */
const callInput = (input: string): Schema.Json => {
  if (input.trim().length === 0) return {}
  try {
    return JSON.parse(input) as Schema.Json
  } catch {
    return input
  }
}

/** The calls of a response the caller's tools answer (not those the provider ran itself). */
const responseCalls = (content: ReadonlyArray<{ readonly type: string }>): ReadonlyArray<Model.ToolCallPart> =>
  content.flatMap((part) => {
    if (part.type !== "tool-call") return []
    const call = part as Extract<LanguageModelV4StreamPart, { type: "tool-call" }>
    return call.providerExecuted === true ? [] : [Model.toolCall(call.toolCallId, call.toolName, callInput(call.input))]
  })

/** What the journal and compaction see of an answer: its text, calls, usage and finish reason. */
const responseOf = (
  text: string,
  toolCalls: ReadonlyArray<Model.ToolCallPart>,
  finish: Pick<LanguageModelV4GenerateResult, "usage" | "finishReason"> | undefined
): Model.ModelResponse => {
  const usage = finish === undefined ? undefined : toUsage(finish.usage)
  return Model.response({
    text,
    toolCalls,
    ...(usage === undefined || Object.keys(usage).length === 0 ? {} : { usage }),
    ...(finish === undefined ? {} : { finishReason: toFinishReason(finish.finishReason) })
  })
}

const withUsage = (usage: LanguageModelV4Usage, summary: SummaryUsage): LanguageModelV4Usage => ({
  ...usage,
  inputTokens: { ...usage.inputTokens, total: (usage.inputTokens.total ?? 0) + summary.inputTokens },
  outputTokens: { ...usage.outputTokens, total: (usage.outputTokens.total ?? 0) + summary.outputTokens }
})

const tesseraMetadata = (usage: SummaryUsage): JSONObject => ({
  summaryRequests: usage.requests,
  summaryInputTokens: usage.inputTokens,
  summaryOutputTokens: usage.outputTokens
})

const withSummaryUsage = <A extends { usage: LanguageModelV4Usage; providerMetadata?: Record<string, JSONObject> }>(
  result: A,
  usage: SummaryUsage
): A =>
  usage.requests === 0
    ? result
    : {
        ...result,
        usage: withUsage(result.usage, usage),
        providerMetadata: { ...result.providerMetadata, tessera: tesseraMetadata(usage) }
      }

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

/** The function tools a request offers, as Tessera's tool specs (provider-run tools are the provider's own). */
const toolSpecs = (params: Pick<LanguageModelV4CallOptions, "tools">): ReadonlyArray<Model.ToolSpec> =>
  (params.tools ?? []).flatMap((tool) =>
    tool.type === "function"
      ? [
          {
            name: tool.name,
            description: tool.description ?? "",
            inputSchema: tool.inputSchema as unknown as Record<string, unknown>
          }
        ]
      : []
  )

/**
 * `params` with the read tool's spec appended when no tool of its name is
 * offered: the model is always shown the tool its pointers name, as the
 * stock executor offers it. A tool of that name the caller gave (the one in
 * {@link TesseraAiSdk.tools}, or the caller's own) is left as it is.
 */
const offeringRead = (
  params: LanguageModelV4CallOptions,
  read: Option.Option<TaskExecution.ForeignReadTool>
): LanguageModelV4CallOptions => {
  if (Option.isNone(read)) return params
  const spec = read.value.spec
  const tools = params.tools ?? []
  if (tools.some((offered) => offered.name === spec.name)) return params
  const listed: LanguageModelV4FunctionTool = {
    type: "function",
    name: spec.name,
    description: spec.description,
    inputSchema: spec.inputSchema as LanguageModelV4FunctionTool["inputSchema"]
  }
  return { ...params, tools: [...tools, listed] }
}

const renderOutput = (output: unknown): string =>
  typeof output === "string" ? output : (JSON.stringify(output) ?? "null")

/**
 * Makes the middleware for a bound task (see `TaskExecution.foreignLoop`). Runs the
 * entry gate first; with a `Threshold` policy, or with `Private` offload,
 * the private-summaries capability must resolve. Any refusal is
 * `Unauthorized` here, before a middleware exists: no model request, no
 * journal entry.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding, options: Options = {}) {
  const loop = yield* TaskExecution.foreignLoop(binding, {
    entry: "TesseraMiddleware.make",
    ...(options.offload === undefined ? {} : { offload: options.offload }),
    ...(options.inlineLimit === undefined ? {} : { inlineLimit: options.inlineLimit })
  })
  // The Tessera request each prepared prompt stands for: what `RequestDispatched` measures, and compaction sees.
  const requests = new WeakMap<LanguageModelV4Prompt, Model.ModelRequest>()
  // The parent's journal and platform, for the delegations of this task whatever is in scope when they are made.
  const captured = yield* Effect.context<Requirements>()
  // Where each call was asked for: a delegation names its children after it.
  const positions = makeCallPositions(loop.task, Context.get(captured, Journal))
  const recordCalls = (step: Executor.StepContext, calls: ReadonlyArray<Model.ToolCallPart>) => {
    for (const call of calls) positions.record(call.id, { turn: step.turn, step: step.step })
  }

  const run = async <A, E>(effect: Effect.Effect<A, E>): Promise<A> => {
    const exit = await Effect.runPromiseExit(effect)
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  }

  /**
   * Summary requests borrow how the request they precede reaches the provider, never its tools or format. The
   * task and the history's media they carry are rendered from that request's own prompt parts (`origins`), so
   * inline files and images reach the provider as the caller gave them (a URL-referenced file stays its text
   * stand-in, as in the history).
   */
  const summaryModel = (inner: LanguageModelV4, params: LanguageModelV4CallOptions, origins: Converted["origins"]) =>
    Model.fromGenerate((request) =>
      Effect.tryPromise({
        try: () =>
          inner.doGenerate({
            prompt: toPrompt(request.parts, origins),
            ...(params.headers === undefined ? {} : { headers: params.headers }),
            ...(params.providerOptions === undefined ? {} : { providerOptions: params.providerOptions }),
            ...(params.abortSignal === undefined ? {} : { abortSignal: params.abortSignal })
          }),
        catch: (error) => new Model.ModelError({ reason: "ProviderFailure", detail: describe(error) })
      }).pipe(Effect.map((result) => responseOf(responseText(result), [], result)))
    )

  const prepare = (params: LanguageModelV4CallOptions, inner: LanguageModelV4) =>
    Effect.suspend(() => {
      const converted = toHistory(params.prompt)
      const tools = toolSpecs(params)
      return Effect.map(
        loop.prepare(converted.history, summaryModel(inner, params, converted.origins), tools),
        (history) => {
          const request: Model.ModelRequest = { parts: History.toParts(history), tools }
          const prompt = toPrompt(request.parts, converted.origins)
          requests.set(prompt, request)
          return prompt
        }
      )
    })

  /** The Tessera request of a prepared prompt (the prompt itself, read back, if another middleware replaced it). */
  const requestOf = (params: LanguageModelV4CallOptions): Model.ModelRequest =>
    requests.get(params.prompt) ?? {
      parts: History.toParts(toHistory(params.prompt).history),
      tools: toolSpecs(params)
    }

  /** Journals the failure (scrubbed) and gives the error to rethrow, scrubbed the same way. */
  const failure = (step: Executor.StepContext, error: unknown) =>
    Effect.andThen(loop.fail(step, "ProviderFailure", describe(error)), loop.scrubThrown(error))

  const generate = async (
    params: LanguageModelV4CallOptions,
    doGenerate: () => PromiseLike<LanguageModelV4GenerateResult>
  ): Promise<LanguageModelV4GenerateResult> => {
    const request = requestOf(params)
    const step = await run(loop.dispatch(request))
    let result: LanguageModelV4GenerateResult
    try {
      result = await doGenerate()
    } catch (error) {
      throw await run(failure(step, error))
    }
    const calls = responseCalls(result.content)
    await run(loop.receive(step, request, responseOf(responseText(result), calls, result)))
    recordCalls(step, calls)
    return withSummaryUsage(result, loop.takeSummaryUsage())
  }

  const stream: NonNullable<LanguageModelV4Middleware["wrapStream"]> = async ({ doStream, params }) => {
    const request = requestOf(params)
    const step = await run(loop.dispatch(request))
    let result: Awaited<ReturnType<typeof doStream>>
    try {
      result = await doStream()
    } catch (error) {
      throw await run(failure(step, error))
    }
    const summary = loop.takeSummaryUsage()
    const reader = result.stream.getReader()
    let text = ""
    const calls: Array<Model.ToolCallPart> = []
    let finished: Pick<LanguageModelV4GenerateResult, "usage" | "finishReason"> | undefined
    let settled = false
    const fail = async (error: unknown) => {
      if (settled) return run(loop.scrubThrown(error))
      settled = true
      return run(failure(step, error))
    }
    const passed = new ReadableStream<LanguageModelV4StreamPart>({
      pull: async (controller) => {
        let next: ReadableStreamReadResult<LanguageModelV4StreamPart>
        try {
          next = await reader.read()
        } catch (error) {
          controller.error(await fail(error))
          return
        }
        if (next.done) {
          if (!settled) {
            settled = true
            await run(loop.receive(step, request, responseOf(text, calls, finished)))
          }
          controller.close()
          return
        }
        const part = next.value
        switch (part.type) {
          case "text-delta":
            text += part.delta
            controller.enqueue(part)
            return
          case "tool-call": {
            const call = responseCalls([part])
            calls.push(...call)
            // Before the part passes: the AI SDK may run the call before the stream (and its journaling) ends.
            recordCalls(step, call)
            controller.enqueue(part)
            return
          }
          case "finish":
            finished = part
            controller.enqueue(withSummaryUsage(part, summary))
            return
          case "error":
            controller.enqueue({ type: "error", error: await fail(part.error) })
            return
          default:
            controller.enqueue(part)
        }
      },
      cancel: async (reason) => {
        // The consumer gave up on the answer: the step is journaled as failed, so the turn can go on.
        if (!settled) {
          settled = true
          await run(loop.fail(step, "ProviderFailure", "the stream was cancelled by its consumer"))
        }
        await reader.cancel(reason)
      }
    })
    return { ...result, stream: passed }
  }

  const middleware: LanguageModelV4Middleware = {
    specificationVersion: "v4",
    transformParams: async ({ model, params }) => {
      const offered = offeringRead(params, loop.readTool)
      return { ...offered, prompt: await run(prepare(offered, model)) }
    },
    wrapGenerate: ({ doGenerate, params }) => generate(params, doGenerate),
    wrapStream: stream
  }

  const prepareStep: TesseraAiSdk["prepareStep"] = ({ messages }) => ({
    messages: messages.map((message) => {
      if (message.role !== "tool") return message
      return {
        ...message,
        content: message.content.map((part) => {
          if (part.type !== "tool-result") return part
          const pointer = loop.offloaded.get(part.toolCallId)
          return pointer === undefined || outputText(part.output as never) === pointer
            ? part
            : { ...part, output: { type: "text" as const, value: pointer } }
        })
      }
    })
  })

  const toModelOutput: TesseraAiSdk["toModelOutput"] =
    (name) =>
    async ({ input, output, toolCallId }) => {
      const content = renderOutput(output)
      const recorded = await run(
        loop.toolResult(
          Model.toolCall(toolCallId, name, (JSON.parse(JSON.stringify(input) ?? "null") as Schema.Json) ?? null),
          Model.toolResult({ callId: toolCallId, name, content, isError: false })
        )
      )
      if (recorded.content !== content || typeof output === "string") return { type: "text", value: recorded.content }
      return { type: "json", value: JSON.parse(content) as Schema.Json }
    }

  const tools: Record<string, ReadTool> = {}
  if (Option.isSome(loop.readTool)) {
    const read = loop.readTool.value
    const name = read.spec.name
    tools[name] = tool({
      description: read.spec.description,
      inputSchema: jsonSchema<ToolResults.ReadRequest>(read.spec.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (input, { toolCallId }) => {
        // The input is the model's, unchecked by the AI SDK (a JSON Schema alone): the read tool decodes it.
        const result = await run(read.run(Model.toolCall(toolCallId, name, input as unknown as Schema.Json)))
        if (result.isError) throw new Error(result.content)
        return result.content
      },
      // Journaled (and held to the inline limit) as soon as it returns, as any tool with `toModelOutput`.
      toModelOutput: toModelOutput(name)
    })
  }

  const delegation = <H extends Delegation.ChildHarness<unknown, unknown, unknown>, RChild = never>(
    harness: H,
    children: ReadonlyArray<Delegation.ChildAgent<RChild>>,
    limits?: Delegation.Limits
  ) =>
    Effect.gen(function* () {
      const delegate: TesseraTool.Tool<DelegateServices<H, RChild>> = yield* Delegation.tool(
        harness,
        loop.binding,
        children,
        limits
      )
      const caller = yield* Effect.context<DelegationServices<H, RChild>>()
      // The middleware's own over the caller's: the journal a delegation records in is always the parent's.
      const services = Context.merge(caller, captured) as Context.Context<DelegateServices<H, RChild>>
      return {
        delegate: delegateTool({ delegate, services, positions, toModelOutput: toModelOutput(Delegation.toolName) })
      }
    })

  const adapter: TesseraAiSdk = {
    middleware,
    prepareStep,
    toModelOutput,
    tools,
    delegation,
    offloaded: loop.offloaded,
    summaryUsage: loop.summaryUsage
  }
  return adapter
}, Observability.withSpan("AiSdk.make"))
