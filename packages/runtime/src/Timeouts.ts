/**
 * Time limits for model calls and tool calls, as turn configuration.
 *
 * A call that outlives its limit is interrupted and turned into an outcome
 * the journal already knows how to record, so a hung call never hangs a
 * turn and never leaves a call owed:
 *
 * - a model call becomes a `ModelError` with reason `Timeout`, journaled as
 *   `ModelFailed`; the turn stays open, to be resumed or abandoned like after
 *   any model failure;
 * - a tool call becomes a tool-error result with failure `TimedOut`,
 *   journaled as `ToolResulted`; the model sees the error and the turn goes
 *   on.
 *
 * Interruption is how the call is stopped: work inside an uninterruptible
 * region of a tool or an adapter runs to its end before the timeout takes
 * effect.
 *
 * @since 0.1.0
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type { ModelResponse } from "./Model.ts"
import { Model, ModelError } from "./Model.ts"
import type * as Tool from "./Tool.ts"

/**
 * Limits for one turn's calls. Every field is optional; no limit is the
 * default, as before this configuration existed.
 *
 * - `model`: for each model request of the turn: the step's own, and the
 *   summary requests that compaction sends before it.
 * - `tool`: the default for every tool call.
 * - `tools`: per tool name, overriding `tool` for that tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface CallTimeouts {
  readonly model?: Duration.Input
  readonly tool?: Duration.Input
  readonly tools?: Readonly<Record<string, Duration.Input>>
}

const limitOf = (entry: string, field: string, value: unknown): InvalidInput.InvalidInput | undefined => {
  if (value === undefined) return undefined
  let decoded: Option.Option<Duration.Duration>
  try {
    decoded = Duration.fromInput(value as Duration.Input)
  } catch {
    decoded = Option.none()
  }
  const detail = Option.isNone(decoded)
    ? 'expected a duration (milliseconds, "5 seconds", a Duration, ...)'
    : Duration.isNegative(decoded.value)
      ? "a time limit cannot be negative"
      : undefined
  return detail === undefined
    ? undefined
    : new InvalidInput.InvalidInput({ entry, field, value: InvalidInput.renderValue(value), detail })
}

/**
 * Checks the limits handed to a public `entry` (`field` names them there,
 * `timeouts` by default): absent, or an object whose `model`, `tool` and
 * per-tool `tools` entries are each absent or a non-negative duration. The
 * limits are read at every call of a turn, so an entry checks them once
 * first: a wrong one is `InvalidInput` naming it (`timeouts.tools["read"]`)
 * before anything is journaled, not a defect in the middle of a turn.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode =
  (entry: string, field = "timeouts") =>
  (value: CallTimeouts | undefined): Result.Result<CallTimeouts | undefined, InvalidInput.InvalidInput> => {
    const unchecked: unknown = value
    if (unchecked === undefined) return Result.succeed(undefined)
    const refuse = (at: string, given: unknown, detail: string) =>
      Result.fail(new InvalidInput.InvalidInput({ entry, field: at, value: InvalidInput.renderValue(given), detail }))
    if (typeof unchecked !== "object" || unchecked === null) return refuse(field, unchecked, "expected an object")
    const { model, tool, tools } = unchecked as Record<string, unknown>
    const invalid = limitOf(entry, `${field}.model`, model) ?? limitOf(entry, `${field}.tool`, tool)
    if (invalid !== undefined) return Result.fail(invalid)
    if (tools !== undefined) {
      if (typeof tools !== "object" || tools === null || Array.isArray(tools)) {
        return refuse(`${field}.tools`, tools, "expected an object of limits by tool name")
      }
      for (const [name, limit] of Object.entries(tools)) {
        const one = limitOf(entry, `${field}.tools[${JSON.stringify(name)}]`, limit)
        if (one !== undefined) return Result.fail(one)
      }
    }
    return Result.succeed(value)
  }

/**
 * The limit for calls of the tool `name`: its own entry, else the default,
 * else none.
 *
 * @since 0.1.0
 * @category getters
 */
export const forTool = (timeouts: CallTimeouts | undefined, name: string): Option.Option<Duration.Duration> => {
  const own = timeouts?.tools !== undefined && Object.hasOwn(timeouts.tools, name) ? timeouts.tools[name] : undefined
  const chosen = own ?? timeouts?.tool
  return chosen === undefined ? Option.none() : Option.some(Duration.fromInputUnsafe(chosen))
}

/**
 * The limit for model calls, if any.
 *
 * @since 0.1.0
 * @category getters
 */
export const forModel = (timeouts: CallTimeouts | undefined): Option.Option<Duration.Duration> =>
  timeouts?.model === undefined ? Option.none() : Option.some(Duration.fromInputUnsafe(timeouts.model))

/**
 * Runs one model call under the model limit: past it, the call is
 * interrupted and fails with `ModelError` reason `Timeout`.
 *
 * @since 0.1.0
 * @category running
 */
export const limitModelCall = <E, R>(
  timeouts: CallTimeouts | undefined,
  call: Effect.Effect<ModelResponse, E, R>
): Effect.Effect<ModelResponse, E | ModelError, R> => {
  const limit = forModel(timeouts)
  if (Option.isNone(limit)) return call
  return Effect.timeoutOrElse(call, {
    duration: limit.value,
    orElse: () => Effect.fail(timeoutError(limit.value))
  })
}

const timeoutError = (limit: Duration.Duration) =>
  new ModelError({
    reason: "Timeout",
    detail: `the model did not answer within ${Duration.format(limit)}; the request was interrupted`
  })

/**
 * Runs one streamed model call under the model limit: past it (counted from
 * the first pull, over the whole stream), the stream is interrupted and
 * fails with `ModelError` reason `Timeout`.
 *
 * @since 0.1.0
 * @category running
 */
export const limitModelStream = <A, E, R>(
  timeouts: CallTimeouts | undefined,
  stream: Stream.Stream<A, E, R>
): Stream.Stream<A, E | ModelError, R> => {
  const limit = forModel(timeouts)
  if (Option.isNone(limit)) return stream
  return Stream.interruptWhen(stream, Effect.andThen(Effect.sleep(limit.value), Effect.fail(timeoutError(limit.value))))
}

/**
 * Runs `self` with every call of the {@link Model} service it makes under
 * the model limit (unchanged when there is none). The executor runs its
 * `beforeModelStep` hooks this way, so summary requests are limited too.
 *
 * @since 0.1.0
 * @category running
 */
export const limitModel =
  (timeouts: CallTimeouts | undefined) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Model> =>
    Option.isNone(forModel(timeouts))
      ? self
      : Effect.updateService(self, Model, (model) =>
          Model.of({
            generate: (request) => limitModelCall(timeouts, model.generate(request)),
            stream: (request) => limitModelStream(timeouts, model.stream(request))
          })
        )

/**
 * Runs one tool call under its limit: past it, the call is interrupted and
 * its outcome is a tool error with failure `TimedOut`.
 *
 * @since 0.1.0
 * @category running
 */
export const limitToolCall = <R>(
  timeouts: CallTimeouts | undefined,
  name: string,
  call: Effect.Effect<Tool.ToolOutcome, never, R>
): Effect.Effect<Tool.ToolOutcome, never, R> => {
  const limit = forTool(timeouts, name)
  if (Option.isNone(limit)) return call
  return Effect.timeoutOrElse(call, {
    duration: limit.value,
    orElse: () =>
      Effect.succeed<Tool.ToolOutcome>({
        content: `tool "${name}" did not finish within ${Duration.format(limit.value)} and was stopped`,
        failure: Option.some("TimedOut")
      })
  })
}
