/**
 * Tessera inside Pi's agent core (`@mariozechner/pi-agent-core`): the
 * `afterToolCall`, `transformContext` and `streamFn` options of an `Agent`
 * (or of `agentLoop`), made for one bound task, with the same guarantees as
 * Tessera's own executor.
 *
 * - `afterToolCall` (its result is what Pi stores): a tool result over the
 *   offload threshold is written (redacted first) under the task's artifact
 *   root and replaced by a one-line pointer, so Pi's own transcript holds
 *   the pointer and the body never reaches the model again. Images stay;
 *   the result's `details` (never sent to the model) are left as they are.
 * - `transformContext` (runs before every request, its output is not
 *   stored): compaction under the binding's `Threshold` policy, with a
 *   private summary staged through the capability resolved from the
 *   binding; Pi's transcript stays whole, each request is the compacted one.
 * - `streamFn` (wraps the host's, default pi-ai's `streamSimple`): journals
 *   each request and its answer or failure (the failure's error message
 *   scrubbed by the host's redactor, in the journal and in what Pi gets
 *   back), and adds what summary requests
 *   cost since the last answer to that answer's `usage` (so Pi's own usage
 *   totals count them); {@link TesseraPi.summaryUsage} itemizes them.
 *
 * It is made only from a bound task (an `EntryGate.TaskBinding`), never from
 * a folder: {@link make} runs the entry gate and resolves and admits the
 * private writer; a task that needs a writer and has none fails
 * `Unauthorized` there, before any hook exists, so no request can be sent.
 * The three options belong together: a request whose context did not pass
 * `transformContext`, or (before any request was sent) a second context
 * prepared while the first never went through `streamFn`, is refused
 * (`TaskExecution.LoopOutOfOrder`) before it reaches the model. A refusal in
 * `transformContext` is thrown (Pi's `Agent` ends the run with it as its
 * error, no request sent); one in `streamFn` is an error message, as Pi
 * expects of a stream function.
 *
 * Pointers name a read tool (`offload.readTool`). Unless the host opts out
 * (`registerReadTool: false`), {@link TesseraPi.tools} is the `AgentTool`
 * that answers it, for the agent's tools, and `streamFn` lists it in every
 * request that lacks it: Pi runs only the agent's own tools, so a model that
 * follows a pointer gets the artifact's bytes only when `tessera.tools` is
 * among them.
 *
 * Pi's tool-call ids contain `:` (`tool:<time>:<random>`). They are map keys
 * here and become file names only through `ToolResults.callIdSegment`,
 * which encodes every byte outside `[A-Za-z0-9_]`.
 *
 * @since 0.1.0
 */
import type { AgentOptions, AgentTool, StreamFn } from "@mariozechner/pi-agent-core"
import {
  type Api,
  type AssistantMessage,
  type AssistantMessageEventStream,
  type Context,
  createAssistantMessageEventStream,
  type Model as PiModel,
  type Usage as PiUsage,
  type SimpleStreamOptions,
  streamSimple,
  type TSchema
} from "@mariozechner/pi-ai"
import type * as EntryGate from "@tessera/runtime/EntryGate"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as Observability from "@tessera/runtime/Observability"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import type * as ToolResults from "@tessera/runtime/ToolResults"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import {
  resultText,
  toHistory,
  toMessages,
  toolCallPart,
  toRequest,
  toResponse,
  toSummaryContext,
  toUsage
} from "./internal/messages.ts"

/**
 * How the hooks treat a task's requests. `offload` is the runtime's own
 * `ToolResults.OffloadConfig`; without it no result is offloaded.
 * Compaction follows the binding's policy; its summary requests go to
 * `summaryModel` (default: the model of the latest request) through the
 * same stream function as the agent's requests, with the latest request's
 * credentials and transport settings (`apiKey`, `headers`, `transport`,
 * `timeoutMs`, `maxRetries`, `maxRetryDelayMs`) overridden by
 * `summaryOptions`, and the abort signal Pi gives `transformContext`.
 * A summary request's system prompt is Tessera's summary instruction
 * followed by the agent's own system prompt, unchanged: the one of the
 * agent's latest request, or `systemPrompt` before its first (Pi's
 * `transformContext` does not see it); a summary request sent before any
 * request and without `systemPrompt` fails, naming the option (pass `""`
 * for an agent without one).
 * `streamFn` is the host's own stream function, if it has one.
 * `inlineLimit` is the most UTF-8 bytes of a tool result kept inline (by
 * default the policy's piece limit), as in the stock executor: the hooks
 * are the executor's.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly offload?: ToolResults.OffloadConfig
  readonly inlineLimit?: number
  readonly summaryModel?: PiModel<Api>
  readonly summaryOptions?: SimpleStreamOptions
  readonly systemPrompt?: string
  readonly streamFn?: StreamFn
}

/**
 * What the summary requests cost so far, in Pi's counts.
 *
 * @since 0.1.0
 * @category models
 */
export interface SummaryUsage {
  readonly requests: number
  readonly input: number
  readonly output: number
  readonly cacheRead: number
  readonly cacheWrite: number
  readonly totalTokens: number
  readonly cost: number
}

/**
 * The hooks of one bound task.
 *
 * @since 0.1.0
 * @category models
 */
export interface TesseraPi {
  readonly afterToolCall: NonNullable<AgentOptions["afterToolCall"]>
  readonly transformContext: NonNullable<AgentOptions["transformContext"]>
  readonly streamFn: StreamFn
  /** The three hooks, to spread into `new Agent({ ... })`. */
  readonly agentOptions: {
    readonly afterToolCall: NonNullable<AgentOptions["afterToolCall"]>
    readonly transformContext: NonNullable<AgentOptions["transformContext"]>
    readonly streamFn: StreamFn
  }
  /**
   * The read tool the pointers name, for the agent's tools:
   * `tools: [...yours, ...tessera.tools]`. Its `execute` is the foreign loop's
   * read tool (`TaskExecution.ForeignLoop.readTool`): a read returns at most
   * the read tool's output cap and, through `afterToolCall`, is journaled
   * and never offloaded again; a refused read is thrown, so Pi hands the
   * model an error result naming why. Empty when the hooks do not offload
   * or the host opted out (`offload.registerReadTool: false`).
   */
  readonly tools: ReadonlyArray<AgentTool>
  /** The pointer each offloaded call id was replaced by. */
  readonly offloaded: ReadonlyMap<string, string>
  /** Every summary request's cost so far (also added to the answers' usage). */
  readonly summaryUsage: () => SummaryUsage
}

/**
 * What {@link make} needs: the bound task's journal, and the platform the
 * runtime writes through.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = TaskExecution.ForeignLoopRequirements

const zeroUsage: SummaryUsage = {
  requests: 0,
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: 0
}

const addUsage = (total: SummaryUsage, usage: PiUsage): SummaryUsage => ({
  requests: total.requests + 1,
  input: total.input + usage.input,
  output: total.output + usage.output,
  cacheRead: total.cacheRead + usage.cacheRead,
  cacheWrite: total.cacheWrite + usage.cacheWrite,
  totalTokens: total.totalTokens + usage.totalTokens,
  cost: total.cost + usage.cost.total
})

const withSummaryUsage = (message: AssistantMessage, usage: SummaryUsage): AssistantMessage =>
  usage.requests === 0
    ? message
    : {
        ...message,
        usage: {
          input: message.usage.input + usage.input,
          output: message.usage.output + usage.output,
          cacheRead: message.usage.cacheRead + usage.cacheRead,
          cacheWrite: message.usage.cacheWrite + usage.cacheWrite,
          totalTokens: message.usage.totalTokens + usage.totalTokens,
          cost: { ...message.usage.cost, total: message.usage.cost.total + usage.cost }
        }
      }

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const failedMessage = (model: PiModel<Api>, detail: string): AssistantMessage => ({
  role: "assistant",
  content: [],
  api: model.api,
  provider: model.provider,
  model: model.id,
  usage: {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
  },
  stopReason: "error",
  errorMessage: detail,
  timestamp: Date.now()
})

/**
 * Makes the hooks for a bound task. Runs the entry gate first (the binding
 * must be one `EntryGate.bind` made, the journal in scope the task's own);
 * with a `Threshold` policy, or with `Private` offload, the private writer
 * must resolve and is admitted. Any refusal is `Unauthorized` here, before
 * the hooks exist: no model request, no journal entry.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding, options: Options = {}) {
  const loop = yield* TaskExecution.foreignLoop(binding, {
    entry: "TesseraPi.make",
    ...(options.offload === undefined ? {} : { offload: options.offload }),
    ...(options.inlineLimit === undefined ? {} : { inlineLimit: options.inlineLimit })
  })
  const inner: StreamFn = options.streamFn ?? streamSimple
  let latestModel: PiModel<Api> | undefined
  // The agent's system prompt, as its latest request carried it: summary requests carry it too.
  let latestSystemPrompt: string | undefined = options.systemPrompt
  let pending = zeroUsage
  let total = zeroUsage

  const run = async <A, E>(effect: Effect.Effect<A, E>): Promise<A> => {
    const exit = await Effect.runPromiseExit(effect)
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  }

  // What a summary request borrows from the agent's latest request: how to reach the provider, never its callbacks.
  let latestOptions: SimpleStreamOptions = {}
  const borrowed = (streamOptions: SimpleStreamOptions | undefined): SimpleStreamOptions => {
    if (streamOptions === undefined) return {}
    const { apiKey, headers, maxRetries, maxRetryDelayMs, timeoutMs, transport } = streamOptions
    return {
      ...(apiKey === undefined ? {} : { apiKey }),
      ...(headers === undefined ? {} : { headers }),
      ...(transport === undefined ? {} : { transport }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(maxRetries === undefined ? {} : { maxRetries }),
      ...(maxRetryDelayMs === undefined ? {} : { maxRetryDelayMs })
    }
  }

  const summaryModel = (signal: AbortSignal | undefined) =>
    Model.fromGenerate((request) =>
      Effect.tryPromise({
        try: async () => {
          const model = options.summaryModel ?? latestModel
          if (model === undefined) throw new Error("no Pi model is known yet for summary requests: pass summaryModel")
          if (latestSystemPrompt === undefined) {
            throw new Error("no system prompt of the agent is known yet for summary requests: pass systemPrompt")
          }
          const stream = await inner(model, toSummaryContext(request, latestSystemPrompt), {
            ...latestOptions,
            ...options.summaryOptions,
            ...(signal === undefined ? {} : { signal })
          })
          const message = await stream.result()
          if (message.stopReason === "error" || message.stopReason === "aborted") {
            throw new Error(message.errorMessage ?? `the summary request ended with ${message.stopReason}`)
          }
          pending = addUsage(pending, message.usage)
          total = addUsage(total, message.usage)
          return message
        },
        catch: (error) => new Model.ModelError({ reason: "ProviderFailure", detail: describe(error) })
      }).pipe(
        Effect.map((message) => Model.response({ text: toResponse(message).text, usage: toUsage(message.usage) }))
      )
    )

  const transformContext: TesseraPi["transformContext"] = async (messages, signal) => {
    const converted = toHistory(messages)
    const after = await run(loop.prepare(converted.history, summaryModel(signal)))
    return toMessages(History.toParts(after), converted)
  }

  const afterToolCall: TesseraPi["afterToolCall"] = async ({ isError, result, toolCall }) => {
    const content = result.content
    const part = Model.toolResult({
      callId: toolCall.id,
      name: toolCall.name,
      content: resultText(content),
      isError
    })
    const kept = await run(loop.toolResult(toolCallPart(toolCall), part))
    if (kept.content === part.content) return undefined
    return { content: [{ type: "text", text: kept.content }, ...content.filter((block) => block.type === "image")] }
  }

  // One request: journaled, sent through the host's stream function, its answer journaled before Pi sees the end.
  const answer = async (
    outer: AssistantMessageEventStream,
    model: PiModel<Api>,
    context: Context,
    streamOptions: SimpleStreamOptions | undefined
  ): Promise<void> => {
    const request = toRequest(context)
    const dispatched = await Effect.runPromiseExit(loop.dispatch(request))
    if (Exit.isFailure(dispatched)) {
      const refused = failedMessage(model, describe(Cause.squash(dispatched.cause)))
      outer.push({ type: "error", reason: "error", error: refused })
      outer.end(refused)
      return
    }
    const step = dispatched.value
    const finish = async (final: AssistantMessage, event: "done" | "error") => {
      let answered = final
      if (event === "done") await run(loop.receive(step, request, toResponse(final)))
      else {
        // The error Pi keeps (and may write to its session file) is the journal's scrubbed copy.
        const scrubbed = await run(loop.fail(step, final.stopReason, final.errorMessage ?? final.stopReason))
        if (final.errorMessage !== undefined) answered = { ...final, errorMessage: scrubbed }
      }
      const usage = pending
      pending = zeroUsage
      const reported = withSummaryUsage(answered, usage)
      if (reported.stopReason === "error" || reported.stopReason === "aborted") {
        outer.push({ type: "error", reason: reported.stopReason, error: reported })
      } else {
        outer.push({ type: "done", reason: reported.stopReason, message: reported })
      }
      outer.end(reported)
    }
    try {
      const stream = await inner(model, context, streamOptions)
      for await (const event of stream) {
        if (event.type === "done") return await finish(event.message, "done")
        if (event.type === "error") return await finish(event.error, "error")
        outer.push(event)
      }
      const final = await stream.result()
      await finish(final, final.stopReason === "error" || final.stopReason === "aborted" ? "error" : "done")
    } catch (error) {
      // A stream function that throws breaks Pi's contract; the failure is journaled and reported as Pi expects.
      await finish(failedMessage(model, describe(error)), "error").catch((journalError: unknown) => {
        const failed = failedMessage(model, describe(journalError))
        outer.push({ type: "error", reason: "error", error: failed })
        outer.end(failed)
      })
    }
  }

  const tools: Array<AgentTool> = []
  if (Option.isSome(loop.readTool)) {
    const read = loop.readTool.value
    tools.push({
      name: read.spec.name,
      label: "Read artifact",
      description: read.spec.description,
      // Plain JSON Schema, which Pi validates as such; the read tool decodes the input again.
      parameters: read.spec.inputSchema as unknown as TSchema,
      execute: async (toolCallId, params) => {
        const result = await run(read.run(Model.toolCall(toolCallId, read.spec.name, params as Schema.Json)))
        if (result.isError) throw new Error(result.content)
        return { content: [{ type: "text", text: result.content }], details: {} }
      }
    })
  }

  /**
   * `context` with the read tool appended when no tool of its name is
   * offered: the model is always shown the tool its pointers name. A tool
   * of that name the agent has (the one in `tools`, or its own) is left as
   * it is.
   */
  const offeringRead = (context: Context): Context => {
    const read = tools[0]
    if (read === undefined || (context.tools ?? []).some((tool) => tool.name === read.name)) return context
    return {
      ...context,
      tools: [...(context.tools ?? []), { name: read.name, description: read.description, parameters: read.parameters }]
    }
  }

  const streamFn: StreamFn = (model, given, streamOptions) => {
    const context = offeringRead(given)
    latestModel = model
    latestSystemPrompt = context.systemPrompt ?? ""
    latestOptions = borrowed(streamOptions)
    const outer = createAssistantMessageEventStream()
    void answer(outer, model, context, streamOptions)
    return outer
  }

  const adapter: TesseraPi = {
    afterToolCall,
    transformContext,
    streamFn,
    agentOptions: { afterToolCall, transformContext, streamFn },
    tools,
    offloaded: loop.offloaded,
    summaryUsage: () => total
  }
  return adapter
}, Observability.withSpan("TesseraPi.make"))
