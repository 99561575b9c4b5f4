/**
 * What a turn runs with: its configuration ({@link TurnConfig}), the hooks
 * in it and where each one runs ({@link StepContext}, {@link ToolContext},
 * {@link EntryContext}), and the recorder of a durable turn
 * ({@link TurnRecorder}). Declared here so the turn's pieces and the public
 * `Executor` module share them without importing each other; `Executor`
 * re-exports every one under the same name. The checks a turn entry runs
 * on a configuration are `turnConfig.ts`.
 */
import type * as Ids from "@tessera/core/Ids"
import type * as Effect from "effect/Effect"
import type * as History from "../History.ts"
import type { ModelRequest, ModelResponse, ToolCallPart, ToolResultPart } from "../Model.ts"
import type * as Timeouts from "../Timeouts.ts"
import type * as Tool from "../Tool.ts"
import type { TurnEvent } from "./executorEvents.ts"

/**
 * Where a model step is: the task, the turn and the 1-based step.
 *
 * @since 0.1.0
 * @category models
 */
export interface StepContext {
  readonly task: Ids.TaskId
  readonly turn: number
  readonly step: number
}

/**
 * Where a tool call is: its step, and the call itself.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolContext extends StepContext {
  readonly call: ToolCallPart
}

/**
 * Where a turn entry is: the task, and whether an open turn is being resumed.
 *
 * @since 0.1.0
 * @category models
 */
export interface EntryContext {
  readonly task: Ids.TaskId
  readonly resuming: boolean
}

/**
 * What one model step did: the request sent, the response received, and the
 * history after it (the history the request was built from, with the
 * response's text and tool calls appended).
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelStepOutcome {
  readonly request: ModelRequest
  readonly response: ModelResponse
  readonly history: History.History
}

/**
 * Optional hooks; see the `Executor` module comment for when each runs and
 * what it may change. Every hook may fail with `E` and need services `R`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Hooks<E = never, R = never> {
  readonly beforeTurn?: (context: EntryContext, history: History.History) => Effect.Effect<void, E, R>
  readonly beforeModelStep?: (context: StepContext, history: History.History) => Effect.Effect<History.History, E, R>
  readonly afterModelStep?: (context: StepContext, outcome: ModelStepOutcome) => Effect.Effect<void, E, R>
  /** May change `content` and `isError`; the call id and tool name are kept. */
  readonly onToolResult?: (context: ToolContext, result: ToolResultPart) => Effect.Effect<ToolResultPart, E, R>
}

/**
 * What a turn runs with: the tools offered to the model, the most model
 * steps one turn may take, the hooks, the time limits of its calls (none by
 * default; see `Timeouts`), and an optional observer of its
 * {@link TurnEvent}s. With `onEvent`, model responses are streamed and each
 * event waits for `onEvent` to finish before the turn goes on.
 *
 * The turn entries check it once, before anything is journaled or sent,
 * and fail `InvalidInput` naming the field for a wrong shape: `tools` not a
 * registry of tools (`Tool.decodeRegistry`), `maxSteps` not an integer of
 * at least 1, a hook, `onEvent` or a `recorder` method not a function, a
 * limit in `timeouts` not a non-negative duration (`Timeouts.decode`). The
 * pieces (`modelStep`, `dispatchTools`, ...) run per step and
 * trust the configuration their loop checked.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnConfig<E = never, R = never> {
  readonly tools: Tool.Registry<R>
  readonly maxSteps: number
  readonly hooks?: Hooks<E, R>
  readonly timeouts?: Timeouts.CallTimeouts
  readonly onEvent?: (event: TurnEvent) => Effect.Effect<void>
  /** Stores the bodies the journal only describes (a durable turn: see `TaskExecution`); none by default. */
  readonly recorder?: TurnRecorder<E, R>
}

/**
 * Where a durable turn stores what the journal only describes. Each method
 * stores one body and returns the digest of the record it wrote, which the
 * executor puts in the `transcript` field of the journal entry it writes
 * next, so the record is durable before the entry that names it:
 *
 * - `opened`: the history the turn starts from (before `TurnOpened`);
 * - `rewritten`: the history `beforeModelStep` returned, when it is not the
 *   one it was given (before `RequestDispatched`);
 * - `responded`: the checked response (before `ResponseReceived`);
 * - `resulted`: the result the history receives, after `onToolResult`
 *   (before `ToolResulted`).
 *
 * Each may instead return a {@link RecordedBody}:
 * the record's digest and, for a record whose stored body is not the one
 * sent (scrubbed by a redactor), that body's digest, journaled as the
 * entry's `storedSha256` so a resume can check the record against it.
 *
 * `TaskExecution` builds one over the task's transcript (see `Transcript`).
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnRecorder<E = never, R = never> {
  readonly opened: (history: History.History) => Effect.Effect<string | RecordedBody, E, R>
  readonly rewritten: (before: History.History, after: History.History) => Effect.Effect<string | RecordedBody, E, R>
  readonly responded: (response: ModelResponse) => Effect.Effect<string | RecordedBody, E, R>
  readonly resulted: (result: ToolResultPart) => Effect.Effect<string | RecordedBody, E, R>
}

/**
 * A response or result record as a {@link TurnRecorder} stored it: its
 * digest (the entry's `transcript`) and, when the stored body differs from
 * the one sent, the stored body's digest (the entry's `storedSha256`).
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordedBody {
  readonly transcript: string
  readonly storedSha256?: string
}

/** The fields a journal entry takes from what the recorder returned (none without a recorder). */
export const recordedFields = (
  recorded: string | RecordedBody | undefined
): { readonly transcript?: string; readonly storedSha256?: string } =>
  recorded === undefined
    ? {}
    : typeof recorded === "string"
      ? { transcript: recorded }
      : recorded.storedSha256 === undefined
        ? { transcript: recorded.transcript }
        : { transcript: recorded.transcript, storedSha256: recorded.storedSha256 }
