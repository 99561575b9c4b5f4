/**
 * What a trace and the metrics of a Tessera run show, and the helpers the
 * runtime records them with. docs/tracing.md describes every span.
 *
 * Attributes follow OpenTelemetry's GenAI semantic conventions where they
 * name the thing (`gen_ai.operation.name`, `gen_ai.conversation.id`,
 * `gen_ai.tool.name`, `gen_ai.usage.*`, `gen_ai.response.finish_reasons`,
 * through `effect/ai/Telemetry`'s vocabulary), and `tessera.*` for what the
 * conventions have no name for (turn, step, sizes, offload and compaction
 * outcomes).
 *
 * The guarantee: no span attribute and no metric attribute recorded by the
 * runtime carries content (task text, model text, tool input or output,
 * summaries). Attributes carry ids the harness chose (task, operation, tool
 * call), tool names, counts, sizes in UTF-8 bytes, and outcomes.
 *
 * @since 0.1.0
 */

import type * as GenAI from "effect/ai/Telemetry"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as References from "effect/References"
import * as Tracer from "effect/Tracer"

/**
 * The GenAI operation names a Tessera span carries: a turn invokes the
 * agent, a model step or summary request is a chat, a tool call executes a
 * tool.
 *
 * @since 0.1.0
 * @category attributes
 */
export type OperationName = GenAI.WellKnownOperationName | "invoke_agent" | "execute_tool"

/**
 * Attributes of a span that runs one GenAI operation for a task: the
 * operation, and the task as the GenAI conversation (a task's turns are one
 * conversation).
 *
 * @since 0.1.0
 * @category attributes
 */
export const operation = (
  name: OperationName,
  task: string
): { readonly "gen_ai.operation.name": OperationName; readonly "gen_ai.conversation.id": string } => ({
  "gen_ai.operation.name": name,
  "gen_ai.conversation.id": task
})

/**
 * GenAI attributes of a tool-call span: the tool's name, the call's id and
 * the tool type (Tessera's tools are functions the runtime calls).
 *
 * @since 0.1.0
 * @category attributes
 */
export const toolAttributes = (name: string, callId: string) => ({
  "gen_ai.tool.name": name,
  "gen_ai.tool.call.id": callId,
  "gen_ai.tool.type": "function"
})

// Whether a span started here would reach anyone: a tracer was provided (the key is present, not Effect's default)
// and tracing is not switched off. Effect's default tracer keeps its spans in memory and exports nothing.
const traced = (context: Context.Context<never>): boolean =>
  Context.getOrUndefined(context, Tracer.Tracer) !== undefined && Context.get(context, References.TracerEnabled)

/**
 * Runs `self` in a span named `name` when the fiber has a tracer of its own
 * (Effect's `Tracer` provided, as `OtlpTracer.layer`, `Layer.setTracer` or
 * `Effect.withTracer` do, and `References.TracerEnabled` on); otherwise runs
 * `self` unchanged. Every span the runtime opens goes through it, so a
 * program that installs no tracer pays nothing for tracing (no span, no
 * clock read, no attributes built: `options` is called only when the span is
 * made), as the AI SDK records no telemetry unless asked. Under Effect's
 * default tracer, which exports nothing, the runtime's spans are therefore
 * absent: `Effect.currentSpan` inside a tool sees the caller's span, if any.
 * A span captures no stack: it would point into the runtime, not at the
 * harness, and capturing one is a measurable part of a step; its name and
 * attributes say where it ran. The success, failure and interruption of
 * `self` are unchanged either way.
 *
 * @since 0.1.0
 * @category tracing
 */
export const withSpan =
  (name: string, options?: () => Tracer.SpanOptionsNoTrace) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber((fiber) =>
      traced(fiber.context) ? Effect.withSpan(self, name, { ...options?.(), captureStackTrace: false }) : self
    )

/**
 * Sets attributes on the current span when spans are being made (see
 * {@link withSpan}): with no tracer of the program's own it does nothing, so
 * the runtime's attributes never land on a span of the caller's that Effect's
 * default tracer keeps in memory.
 *
 * @since 0.1.0
 * @category tracing
 */
export const annotate: {
  (key: string, value: unknown): Effect.Effect<void>
  (attributes: Readonly<Record<string, unknown>>): Effect.Effect<void>
} = (...args: [string, unknown] | [Readonly<Record<string, unknown>>]): Effect.Effect<void> =>
  Effect.withFiber((fiber) =>
    !traced(fiber.context)
      ? Effect.void
      : args.length === 2
        ? Effect.annotateCurrentSpan(args[0], args[1])
        : Effect.annotateCurrentSpan(args[0])
  )

/**
 * Bucket boundaries, in seconds, of the duration histograms: those the
 * GenAI conventions advise for `gen_ai.client.operation.duration`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const durationBoundaries: ReadonlyArray<number> = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92
]

/**
 * Bucket boundaries of the token histogram: those the GenAI conventions
 * advise for `gen_ai.client.token.usage` (powers of 4 up to 4^13).
 *
 * @since 0.1.0
 * @category metrics
 */
export const tokenBoundaries: ReadonlyArray<number> = Array.from({ length: 14 }, (_, power) => 4 ** power)

const secondsHistogram = (name: string, description: string) =>
  Metric.histogram(name, { description, boundaries: durationBoundaries })

/**
 * Seconds each model request took, failed ones included (with `error.type`):
 * the GenAI client duration histogram. `tessera.request.kind` is `step` for
 * a turn's model step and `summary` for a compaction summary request.
 *
 * @since 0.1.0
 * @category metrics
 */
export const modelRequestDuration = secondsHistogram(
  "gen_ai.client.operation.duration",
  "Seconds a model request took (model steps and summary requests), in seconds"
)

/**
 * Seconds each tool call took, by `gen_ai.tool.name`, failed calls included
 * (with `error.type`, the tool failure); a call stopped at its time limit
 * counts the limit.
 *
 * @since 0.1.0
 * @category metrics
 */
export const toolCallDuration = secondsHistogram(
  "tessera.tool.duration",
  "Seconds a tool call took, by tool name, in seconds"
)

/**
 * Tokens a model request used, by `gen_ai.token.type` (`input` or
 * `output`): the GenAI token histogram. Recorded by {@link recordUsage} only
 * when the model reports usage.
 *
 * @since 0.1.0
 * @category metrics
 */
export const tokenUsage = Metric.histogram("gen_ai.client.token.usage", {
  description: "Tokens a model request used, by token type",
  boundaries: tokenBoundaries
})

/**
 * How many summary requests compaction sent (every piece of every summary).
 *
 * @since 0.1.0
 * @category metrics
 */
export const summaryRequests = Metric.counter("tessera.summary.requests", {
  description: "Summary requests sent by compaction",
  incremental: true
})

/**
 * The kinds of model request {@link modelRequestDuration} tells apart.
 *
 * @since 0.1.0
 * @category metrics
 */
export type RequestKind = "step" | "summary"

const stepRequests = Metric.withAttributes(modelRequestDuration, {
  "gen_ai.operation.name": "chat",
  "tessera.request.kind": "step"
})
const summaryRequestDuration = Metric.withAttributes(modelRequestDuration, {
  "gen_ai.operation.name": "chat",
  "tessera.request.kind": "summary"
})

// The error's tag, never its message: a provider's message may echo the request.
const errorType = (exit: Exit.Exit<unknown, unknown>): string => {
  if (Exit.isSuccess(exit)) return ""
  const failure = exit.cause.reasons[0]
  if (failure === undefined) return "unknown"
  if (failure._tag === "Interrupt") return "interrupted"
  if (failure._tag === "Die") return "defect"
  const error = failure.error
  return typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : "error"
}

const timed =
  <A>(metric: Metric.Metric<number, unknown>, failureOf: (exit: Exit.Exit<A, unknown>) => string | undefined) =>
  <E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(Clock.currentTimeNanos, (start) =>
      Effect.onExit(self, (exit) =>
        Effect.flatMap(Clock.currentTimeNanos, (end) => {
          const seconds = Number(end - start) / 1e9
          const failure = failureOf(exit)
          return failure === undefined
            ? Metric.update(metric, seconds)
            : Metric.update(Metric.withAttributes(metric, { "error.type": failure }), seconds)
        })
      )
    )

const exitFailure = (exit: Exit.Exit<unknown, unknown>): string | undefined =>
  Exit.isSuccess(exit) ? undefined : errorType(exit)

/**
 * Records how long a model request of `kind` took in
 * {@link modelRequestDuration} (and, for a summary, counts it in
 * {@link summaryRequests}); the effect's outcome is unchanged.
 *
 * @since 0.1.0
 * @category metrics
 */
export const timeModelRequest = (kind: RequestKind) => {
  const metric = kind === "step" ? stepRequests : summaryRequestDuration
  return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    const time = timed<A>(metric, exitFailure)(self)
    return kind === "step" ? time : Effect.andThen(Metric.update(summaryRequests, 1), time)
  }
}

/**
 * Records how long a call of tool `name` took in {@link toolCallDuration},
 * with `error.type` set to the outcome's failure (a tool's failures are
 * outcomes, not errors); the effect's outcome is unchanged.
 *
 * @since 0.1.0
 * @category metrics
 */
export const timeToolCall =
  (name: string) =>
  <A extends { readonly failure: Option.Option<string> }, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    timed<A>(toolMetric(name), toolFailure)(self)

const toolFailure = (exit: Exit.Exit<{ readonly failure: Option.Option<string> }, unknown>): string | undefined =>
  Exit.isSuccess(exit) ? Option.getOrUndefined(exit.value.failure) : errorType(exit)

// One attributed metric per tool name, made once: a turn calls the same few tools over and over. The names come
// from model output, so the cache is bounded; past the bound a metric is made per call.
const toolMetricsBound = 256
const toolMetrics = new Map<string, Metric.Metric<number, unknown>>()
const toolMetric = (name: string): Metric.Metric<number, unknown> => {
  const known = toolMetrics.get(name)
  if (known !== undefined) return known
  const made = Metric.withAttributes(toolCallDuration, {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": name
  })
  if (toolMetrics.size < toolMetricsBound) toolMetrics.set(name, made)
  return made
}

/**
 * Token counts and finish reasons of one model response, as far as the
 * model reported them.
 *
 * @since 0.1.0
 * @category usage
 */
export interface Usage {
  readonly inputTokens?: number | undefined
  readonly outputTokens?: number | undefined
  readonly finishReasons?: ReadonlyArray<string> | undefined
}

/**
 * The usage report of a model response: its token counts and finish reason,
 * as far as the model reported them.
 *
 * @since 0.1.0
 * @category usage
 */
export const usageOf = (response: {
  readonly usage?: { readonly inputTokens?: number | undefined; readonly outputTokens?: number | undefined } | undefined
  readonly finishReason?: string | undefined
}): Usage => ({
  inputTokens: response.usage?.inputTokens,
  outputTokens: response.usage?.outputTokens,
  ...(response.finishReason === undefined ? {} : { finishReasons: [response.finishReason] })
})

/**
 * Puts a response's usage and finish reasons on the current span
 * (`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`,
 * `gen_ai.response.finish_reasons`, through `effect/ai/Telemetry`) and
 * records the token counts in {@link tokenUsage}, for the `kind` of request.
 * Counts the model did not report are left out, never recorded as zero.
 * Without a current span only the metric is recorded.
 *
 * This is where a model step reports usage once model responses carry it.
 *
 * @since 0.1.0
 * @category usage
 */
export const recordUsage = (kind: RequestKind, usage: Usage): Effect.Effect<void> =>
  // A response that reports nothing (no counts, no finish reason) leaves the span and the metric as they are:
  // skipped without looking the span up, as every step of a model that reports no usage would otherwise do.
  usage.inputTokens === undefined && usage.outputTokens === undefined && usage.finishReasons === undefined
    ? Effect.void
    : recordReported(kind, usage)

// The token histogram with each kind's and type's attributes, made once: every reporting step updates two.
const tokenUsageBy = (kind: RequestKind, type: "input" | "output") =>
  Metric.withAttributes(tokenUsage, {
    "gen_ai.operation.name": "chat",
    "gen_ai.token.type": type,
    "tessera.request.kind": kind
  })
const tokenUsageOf: Record<RequestKind, Record<"input" | "output", typeof tokenUsage>> = {
  step: { input: tokenUsageBy("step", "input"), output: tokenUsageBy("step", "output") },
  summary: { input: tokenUsageBy("summary", "input"), output: tokenUsageBy("summary", "output") }
}

const recordReported = (kind: RequestKind, usage: Usage): Effect.Effect<void> => {
  const { inputTokens, outputTokens } = usage
  // The names `Telemetry.addGenAIAnnotations` writes, set directly: it derives each one from a camelCase key on
  // every call, which cost more than the rest of a step's usage reporting. Annotating does nothing when no span is
  // open, where looking the span up (`Effect.currentSpan`) would fail with an error and its stack trace every step.
  const attributes: Record<string, unknown> = {}
  if (inputTokens !== undefined) attributes["gen_ai.usage.input_tokens"] = inputTokens
  if (outputTokens !== undefined) attributes["gen_ai.usage.output_tokens"] = outputTokens
  if (usage.finishReasons !== undefined) attributes["gen_ai.response.finish_reasons"] = usage.finishReasons
  const metrics = tokenUsageOf[kind]
  const recorded =
    inputTokens === undefined
      ? outputTokens === undefined
        ? Effect.void
        : Metric.update(metrics.output, outputTokens)
      : outputTokens === undefined
        ? Metric.update(metrics.input, inputTokens)
        : Effect.andThen(Metric.update(metrics.input, inputTokens), Metric.update(metrics.output, outputTokens))
  return Effect.andThen(annotate(attributes), recorded)
}
