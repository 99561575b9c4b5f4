/**
 * Tessera inside the Vercel AI SDK: a `LanguageModelV4` middleware (for
 * `wrapLanguageModel`) that offloads large tool results and compacts the
 * prompt of one bound task, with the same guarantees as Tessera's own
 * executor.
 *
 * - It is made only from a bound task (an `EntryGate.TaskBinding`), never
 *   from a folder: {@link make} runs the entry gate, and a summary or a
 *   private offload happens only through the capability resolved from that
 *   binding. A task that needs a writer and has none fails `Unauthorized`
 *   in {@link make}, before the middleware exists, so no model request can
 *   be sent.
 * - Every request is journaled as the stock executor journals a turn
 *   (`TurnOpened`, `ToolCalled`/`ToolResulted` for the previous step's
 *   calls, `ArtifactOffloaded`, `SummaryStarted`/`SummaryStaged`,
 *   `RequestDispatched`, `ResponseReceived` or `ModelFailed`, `TurnClosed`).
 * - Offloaded bodies and staged summaries pass the host's
 *   `ArtifactRedactor` (when one is provided) before they touch disk.
 * - Summary requests go to the wrapped model and are reported to the host
 *   in the next step's result: added to its `usage` (so `totalUsage`
 *   counts them) and itemized under `providerMetadata.tessera`.
 *
 * The AI SDK hands the middleware the caller's whole history on every
 * step; the middleware remembers (per call id) what it offloaded and (per
 * covered prefix) what it summarized, so each step's request is the
 * compacted one. {@link TesseraAiSdk.prepareStep} also shrinks the
 * caller's own copy: offloaded results are replaced by their pointers.
 *
 * Only `generate` calls (`generateText`) are supported; a `stream` call is
 * refused with {@link StreamingUnsupported} before anything is journaled.
 *
 * @since 0.1.0
 */
import type {
  JSONObject,
  LanguageModelV4,
  LanguageModelV4GenerateResult,
  LanguageModelV4Middleware,
  LanguageModelV4Prompt,
  LanguageModelV4Usage
} from "@ai-sdk/provider"
import { ArtifactRedactor } from "@tessera/artifacts"
import { Digest, type DurableFiles, Unauthorized } from "@tessera/core"
import {
  EntryGate,
  type Executor,
  type History,
  Journal,
  Model,
  PrivateSummaries,
  TaskExecution,
  ToolResultOffload
} from "@tessera/runtime"
import type { ModelMessage } from "ai"
import { Cause, Effect, Exit, type FileSystem, Option, type Path, Schema } from "effect"
import { outputText, toHistory, toPrompt } from "./internal/prompt.ts"

/**
 * How the middleware treats a task's requests. `offload` is the runtime's
 * own `ToolResultOffload.OffloadConfig` (threshold, read tool named in the
 * pointer, destination); without it no result is offloaded. Compaction
 * follows the binding's policy.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly offload?: ToolResultOffload.OffloadConfig
}

/**
 * What the summary requests sent since the host last saw a step cost.
 *
 * @since 0.1.0
 * @category models
 */
export interface SummaryUsage {
  readonly requests: number
  readonly inputTokens: number
  readonly outputTokens: number
}

/**
 * A `stream` call reached the middleware. It journals what a model step
 * answered, which needs the whole answer: use `generateText`.
 *
 * @since 0.1.0
 * @category errors
 */
export class StreamingUnsupported extends Schema.TaggedError<StreamingUnsupported>()("StreamingUnsupported", {
  task: Schema.String
}) {
  override get message(): string {
    return `the Tessera AI SDK middleware of task ${this.task} supports generate calls only (generateText); a stream call was refused before anything was journaled`
  }
}

/**
 * The middleware and its helpers, for one bound task.
 *
 * @since 0.1.0
 * @category models
 */
export interface TesseraAiSdk {
  /** For `wrapLanguageModel({ model, middleware })`. */
  readonly middleware: LanguageModelV4Middleware
  /**
   * A `prepareStep` for `generateText`: returns the step's messages with
   * every result the middleware offloaded replaced by its pointer, so the
   * caller's own history (which the AI SDK carries forward) shrinks too.
   */
  readonly prepareStep: (options: { readonly messages: Array<ModelMessage> }) => {
    readonly messages: Array<ModelMessage>
  }
  /** The pointer each offloaded call id was replaced by. */
  readonly offloaded: ReadonlyMap<string, string>
  /** Every summary request's cost so far (also reported step by step). */
  readonly summaryUsage: () => SummaryUsage
}

/**
 * What {@link make} needs: the bound task's journal, and the platform the
 * runtime writes through.
 *
 * @since 0.1.0
 * @category models
 */
export type Requirements = Journal.Journal | FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles

interface Compacted {
  readonly covered: number
  readonly lastKey: string
  readonly summary: History.HistorySummary
}

const keyOf = (part: Model.Part): string => {
  switch (part._tag) {
    case "ToolCall":
      return `call:${part.id}`
    case "ToolResult":
      return `result:${part.callId}`
    case "Text":
      return `text:${part.role}:${part.text.length}:${part.text.slice(0, 64)}`
    default:
      return part._tag
  }
}

const zeroUsage: SummaryUsage = { requests: 0, inputTokens: 0, outputTokens: 0 }

const addUsage = (usage: SummaryUsage, step: LanguageModelV4Usage): SummaryUsage => ({
  requests: usage.requests + 1,
  inputTokens: usage.inputTokens + (step.inputTokens.total ?? 0),
  outputTokens: usage.outputTokens + (step.outputTokens.total ?? 0)
})

const responseText = (result: LanguageModelV4GenerateResult): string =>
  result.content
    .filter((part) => part.type === "text")
    .map((part) => part.text)
    .join("")

const responseCalls = (result: LanguageModelV4GenerateResult): ReadonlyArray<Model.ToolCallPart> =>
  result.content.flatMap((part) =>
    part.type === "tool-call" && part.providerExecuted !== true
      ? [Model.toolCall(part.toolCallId, part.toolName, parseInput(part.input))]
      : []
  )

const parseInput = (input: string): Schema.Json => {
  try {
    return JSON.parse(input) as Schema.Json
  } catch {
    return input
  }
}

const withSummaryUsage = (
  result: LanguageModelV4GenerateResult,
  usage: SummaryUsage
): LanguageModelV4GenerateResult => {
  if (usage.requests === 0) return result
  const tessera: JSONObject = {
    summaryRequests: usage.requests,
    summaryInputTokens: usage.inputTokens,
    summaryOutputTokens: usage.outputTokens
  }
  return {
    ...result,
    usage: {
      ...result.usage,
      inputTokens: {
        ...result.usage.inputTokens,
        total: (result.usage.inputTokens.total ?? 0) + usage.inputTokens
      },
      outputTokens: {
        ...result.usage.outputTokens,
        total: (result.usage.outputTokens.total ?? 0) + usage.outputTokens
      }
    },
    providerMetadata: { ...result.providerMetadata, tessera }
  }
}

const scrub = (detail: string): Effect.Effect<string> =>
  Effect.flatMap(Effect.serviceOption(ArtifactRedactor.ArtifactRedactor), (redactor) =>
    Option.isNone(redactor)
      ? Effect.succeed(detail)
      : redactor.value.redact(detail).pipe(Effect.orElseSucceed(() => "[detail withheld: the redactor failed on it]"))
  )

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const offloadTarget = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  config: ToolResultOffload.OffloadConfig,
  armed: Option.Option<PrivateSummaries.PrivateWriterCapability>
) {
  if (config.destination === "Output") return yield* ToolResultOffload.outputTarget(binding.context, "AiSdk.make")
  const capability = Option.isSome(armed)
    ? armed.value
    : yield* PrivateSummaries.resolve(binding.context).pipe(
        Effect.mapError((error) =>
          error._tag === "Unauthorized"
            ? new Unauthorized.Unauthorized({
                reason: error.reason,
                detail: `AiSdk.make: private offload needs a private writer, but ${error.detail}`,
                task: binding.context.task
              })
            : error
        )
      )
  return yield* ToolResultOffload.privateTarget.pipe(PrivateSummaries.provide(capability))
})

/**
 * Makes the middleware for a bound task. Runs the entry gate first (the
 * binding must be one `EntryGate.bind` made, the journal in scope the
 * task's own); with a `Threshold` policy, or with `Private` offload, the
 * private-summaries capability must resolve. Any refusal is `Unauthorized`
 * here, before a middleware exists: no model request, no journal entry.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("AiSdk.make")(function* (binding: EntryGate.TaskBinding, options: Options = {}) {
  const capability = yield* EntryGate.verify(binding, "Turn")
  const journal = yield* Journal.Journal
  const target =
    options.offload === undefined
      ? Option.none()
      : Option.some(yield* offloadTarget(binding, options.offload, capability))
  const compaction =
    binding.policy._tag === "Threshold" && Option.isSome(capability)
      ? Option.some(yield* TaskExecution.compactionHooks(binding.policy, capability.value, journal))
      : Option.none()
  const offload =
    options.offload !== undefined && Option.isSome(target)
      ? Option.some(yield* ToolResultOffload.offloadHooks(options.offload, target.value, journal))
      : Option.none()
  const onToolResult = Option.isSome(offload) ? offload.value.onToolResult : undefined
  const beforeModelStep = Option.isSome(compaction) ? compaction.value.beforeModelStep : undefined
  const services = yield* Effect.context<Requirements>()
  const task = binding.context.task

  const results = new Map<string, Model.ToolResultPart>()
  const pointers = new Map<string, string>()
  let compacted: Compacted | undefined
  let pending = zeroUsage
  let total = zeroUsage

  const run = async <A, E>(effect: Effect.Effect<A, E, Requirements>): Promise<A> => {
    const exit = await Effect.runPromiseExitWith(services)(effect)
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  }

  const summaryModel = (inner: LanguageModelV4) =>
    Model.fromGenerate((request) =>
      Effect.tryPromise({
        try: () => inner.doGenerate({ prompt: toPrompt(request.parts, new WeakMap()) }),
        catch: (error) => new Model.ModelError({ reason: "ProviderFailure", detail: describe(error) })
      }).pipe(
        Effect.map((result) => {
          pending = addUsage(pending, result.usage)
          total = addUsage(total, result.usage)
          return Model.response({ text: responseText(result) })
        })
      )
    )

  // The turn's previous calls, answered in this prompt: journaled, then offloaded, as the executor does.
  const recordResults = Effect.fnUntraced(function* (turn: Journal.TurnState, history: History.History) {
    const byId = new Map<string, Model.ToolResultPart>()
    const calls = new Map<string, Model.ToolCallPart>()
    for (const part of history.parts) {
      if (part._tag === "ToolResult") byId.set(part.callId, part)
      if (part._tag === "ToolCall") calls.set(part.id, part)
    }
    for (const owed of turn.owedCalls) {
      const result = byId.get(owed.callId)
      const call = calls.get(owed.callId)
      if (result === undefined || call === undefined) continue
      const context: Executor.ToolContext = { task, turn: turn.turn, step: turn.steps, call }
      if (!owed.called) {
        const input = yield* Digest.measureText(JSON.stringify(call.input) ?? "null")
        yield* journal.append({
          _tag: "ToolCalled",
          turn: turn.turn,
          step: turn.steps,
          callId: call.id,
          name: call.name,
          inputSize: input.size,
          inputSha256: input.sha256
        })
      }
      const replaced = onToolResult === undefined ? result : yield* onToolResult(context, result)
      const measured = yield* Digest.measureText(replaced.content)
      yield* journal.append({
        _tag: "ToolResulted",
        turn: turn.turn,
        step: turn.steps,
        callId: call.id,
        name: call.name,
        isError: replaced.isError,
        ...(replaced.isError ? { failure: "Failed" as const } : {}),
        size: measured.size,
        sha256: measured.sha256
      })
      results.set(call.id, replaced)
      if (replaced.content !== result.content) pointers.set(call.id, replaced.content)
    }
  })

  const prepare = Effect.fnUntraced(function* (prompt: LanguageModelV4Prompt, inner: LanguageModelV4) {
    yield* EntryGate.admitBinding(binding, "ModelStep")
    const open = Journal.openTurn(yield* journal.state)
    const turn = Option.isSome(open) ? open.value : yield* journal.openTurn
    const converted = toHistory(prompt)
    yield* recordResults(turn, converted.history)
    // What was offloaded stays offloaded: the SDK sends the caller's whole history again on every step.
    const parts = converted.history.parts.map((part) => {
      if (part._tag !== "ToolResult") return part
      const known = results.get(part.callId)
      return known !== undefined && known.content !== part.content ? known : part
    })
    const previous = compacted
    const resumes =
      previous !== undefined &&
      previous.covered <= parts.length &&
      previous.covered > 0 &&
      keyOf(parts[previous.covered - 1] as Model.Part) === previous.lastKey
    const base = resumes ? previous.covered : 0
    const before: History.History =
      resumes && previous !== undefined
        ? { task: converted.history.task, parts: parts.slice(base), summary: previous.summary }
        : { task: converted.history.task, parts }
    const after =
      beforeModelStep === undefined
        ? before
        : yield* beforeModelStep({ task, turn: turn.turn, step: turn.steps + 1 }, before).pipe(
            Effect.provideService(Model.Model, summaryModel(inner)),
            Effect.provideService(Journal.Journal, journal)
          )
    if (after.summary !== undefined && after.summary !== before.summary) {
      const covered = base + (before.parts.length - after.parts.length)
      compacted = { covered, lastKey: keyOf(parts[covered - 1] as Model.Part), summary: after.summary }
    }
    // System messages stay first, before the summary reference.
    const system = after.task.filter((part) => part._tag === "Text" && part.role === "system")
    const rest = after.task.filter((part) => !(part._tag === "Text" && part.role === "system"))
    return toPrompt([...system, ...(after.summary?.parts ?? []), ...rest, ...after.parts], converted.origins)
  })

  const generate = Effect.fnUntraced(function* (
    prompt: LanguageModelV4Prompt,
    doGenerate: () => PromiseLike<LanguageModelV4GenerateResult>
  ) {
    const open = Journal.openTurn(yield* journal.state)
    if (Option.isNone(open)) {
      return yield* Effect.die(
        new Error("AiSdk: a generate call reached the model without the middleware's transformParams")
      )
    }
    const { turn } = open.value
    const step = open.value.steps + 1
    const measured = yield* Digest.measureText(JSON.stringify(prompt))
    yield* journal.append({
      _tag: "RequestDispatched",
      turn,
      step,
      parts: prompt.reduce(
        (count, message) => count + (typeof message.content === "string" ? 1 : message.content.length),
        0
      ),
      size: measured.size,
      sha256: measured.sha256
    })
    const result = yield* Effect.tryPromise({ try: doGenerate, catch: (error) => error }).pipe(
      Effect.catch((error) =>
        Effect.flatMap(scrub(describe(error)), (detail) =>
          journal
            .append({ _tag: "ModelFailed", turn, step, reason: "ProviderFailure", detail })
            .pipe(Effect.andThen(Effect.fail(error)))
        )
      )
    )
    const text = yield* Digest.measureText(responseText(result))
    const calls = responseCalls(result)
    yield* journal.append({
      _tag: "ResponseReceived",
      turn,
      step,
      textSize: text.size,
      textSha256: text.sha256,
      toolCalls: calls.map((call) => ({ callId: call.id, name: call.name }))
    })
    if (calls.length === 0) yield* journal.closeTurn
    const usage = pending
    pending = zeroUsage
    return withSummaryUsage(result, usage)
  })

  const middleware: LanguageModelV4Middleware = {
    specificationVersion: "v4",
    transformParams: async ({ model, params, type }) => {
      if (type === "stream") throw new StreamingUnsupported({ task })
      return { ...params, prompt: await run(prepare(params.prompt, model)) }
    },
    wrapGenerate: ({ doGenerate, params }) => run(generate(params.prompt, doGenerate)),
    wrapStream: async () => {
      throw new StreamingUnsupported({ task })
    }
  }

  const prepareStep: TesseraAiSdk["prepareStep"] = ({ messages }) => ({
    messages: messages.map((message) => {
      if (message.role !== "tool") return message
      return {
        ...message,
        content: message.content.map((part) => {
          if (part.type !== "tool-result") return part
          const pointer = pointers.get(part.toolCallId)
          return pointer === undefined || outputText(part.output as never) === pointer
            ? part
            : { ...part, output: { type: "text" as const, value: pointer } }
        })
      }
    })
  })

  const adapter: TesseraAiSdk = { middleware, prepareStep, offloaded: pointers, summaryUsage: () => total }
  return adapter
})
