/**
 * The stock executor, and the pieces it is made of.
 *
 * A turn is: model step, then (if the model asked for tools) tool dispatch,
 * then the next model step, until the model answers without tool calls or
 * the step limit is hit. {@link runTurn} is exactly that loop over the
 * exported pieces {@link modelStep} and {@link dispatchTools}; a harness that
 * needs a different loop composes its own from the same pieces and hooks,
 * and keeps the same journal records and spans.
 *
 * Hooks are where later behaviour plugs in without changing the loop:
 *
 * - `beforeTurn` is the entry gate: it runs before anything is journaled
 *   or dispatched, so failing it costs no model request and no journal write.
 * - `beforeModelStep` may rewrite the history the next request is built
 *   from (compaction replaces old rounds by a summary reference) and may
 *   fail the step before anything is dispatched. The rewritten history is
 *   the one the turn carries on with.
 * - `afterModelStep` sees each request and response.
 * - `onToolResult` may replace a tool result (artifact offload puts a
 *   pointer in place of a large body) before it is journaled and before it
 *   enters the next request.
 *
 * Every turn, model step and tool call runs in its own span (see
 * `Observability` and docs/tracing.md for their attributes and metrics).
 *
 * A turn can be watched as it runs: with `onEvent` in its configuration
 * the executor streams each model response ({@link Model.stream}) and hands
 * every {@link TurnEvent} (deltas included) to `onEvent` before it goes on,
 * so a slow observer slows the turn instead of piling events up. Without
 * it, model steps call {@link Model.generate} and pay nothing for
 * streaming.
 *
 * An interrupted turn (`Effect.timeout`, `Fiber.interrupt`, a consumer
 * that stops listening) is closed in the journal: `TurnAbandoned` with
 * reason {@link interruptedReason} is written as the turn's fiber unwinds,
 * after the model or tool call in flight was itself interrupted, so the
 * next turn can open.
 *
 * @since 0.1.0
 */
import * as Ids from "@tessera/core/Ids"
import type { InvalidInput } from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as History from "./History.ts"
import {
  makeRequestChain,
  measureJson,
  measureRequest,
  measureText,
  type RequestChain,
  rememberBody
} from "./internal/digest.ts"
import type { EntryTurnEvent } from "./internal/entryFacts.ts"
import { scrubError } from "./internal/scrub.ts"
import { checkTurn } from "./internal/turnConfig.ts"
import type {
  JournalIoError,
  JournalSequenceError,
  JournalService,
  TurnAlreadyOpen,
  TurnUnfinished
} from "./Journal.ts"
import {
  Journal,
  NoOpenTurn,
  type OwedCall,
  openTurn,
  TurnAlreadyOpen as TurnAlreadyOpenError,
  type TurnState
} from "./Journal.ts"
import type * as JournalEntry from "./JournalEntry.ts"
import type {
  FinishReason,
  ModelRequest,
  ModelResponse,
  ModelStreamEvent,
  ToolCallPart,
  ToolResultPart,
  Usage
} from "./Model.ts"
import { collect, Model, ModelError, toolResult } from "./Model.ts"
import * as Observability from "./Observability.ts"
import * as Timeouts from "./Timeouts.ts"
import * as Tool from "./Tool.ts"

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
 * Optional hooks; see the module comment for when each runs and what it may
 * change. Every hook may fail with `E` and need services `R`.
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
 * Runs several sets of hooks in order: gates and observers one after the
 * other, history rewrites and result replacements each fed the previous
 * one's output.
 *
 * @since 0.1.0
 * @category combinators
 */
export const composeHooks = <E, R>(...all: ReadonlyArray<Hooks<E, R>>): Hooks<E, R> => ({
  beforeTurn: (context, history) =>
    Effect.forEach(all, (hooks) => hooks.beforeTurn?.(context, history) ?? Effect.void, { discard: true }),
  beforeModelStep: (context, history) =>
    Effect.reduce(
      all,
      () => history,
      (current, hooks) => hooks.beforeModelStep?.(context, current) ?? Effect.succeed(current)
    ),
  afterModelStep: (context, outcome) =>
    Effect.forEach(all, (hooks) => hooks.afterModelStep?.(context, outcome) ?? Effect.void, { discard: true }),
  onToolResult: (context, result) =>
    Effect.reduce(
      all,
      () => result,
      (current, hooks) => hooks.onToolResult?.(context, current) ?? Effect.succeed(current)
    )
})

/**
 * What happens in a turn, as a host forwards it (to a chat UI, a log), in
 * order: each step starts, streams its deltas, finishes (with the
 * provider's usage and finish reason); each tool call is called and
 * resulted; offloads and staged summaries the hooks make are reported as
 * the journal entries that record them; the turn closes with its outcome.
 * Deltas are for display; the history and the journal are built from the
 * completed response, as without streaming.
 *
 * @since 0.1.0
 * @category events
 */
export type TurnEvent =
  | { readonly _tag: "StepStarted"; readonly turn: number; readonly step: number }
  | { readonly _tag: "TextDelta"; readonly turn: number; readonly step: number; readonly delta: string }
  | { readonly _tag: "ReasoningDelta"; readonly turn: number; readonly step: number; readonly delta: string }
  | {
      readonly _tag: "ToolCallDelta"
      readonly turn: number
      readonly step: number
      readonly callId: string
      readonly name: string
      readonly inputDelta: string
    }
  | { readonly _tag: "ToolCalled"; readonly turn: number; readonly step: number; readonly call: ToolCallPart }
  | { readonly _tag: "ToolResulted"; readonly turn: number; readonly step: number; readonly result: ToolResultPart }
  // The journal entries that become turn events, from the table of entry facts (`turnEvent`).
  | EntryTurnEvent
  | {
      readonly _tag: "StepFinished"
      readonly turn: number
      readonly step: number
      readonly toolCalls: number
      readonly usage?: Usage
      readonly finishReason?: FinishReason
    }
  | { readonly _tag: "TurnClosed"; readonly outcome: TurnAnswered }
  | { readonly _tag: "AwaitingApproval"; readonly outcome: TurnAwaitingApproval }

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
 * pieces ({@link modelStep}, {@link dispatchTools}, ...) run per step and
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

/** The fields a `ResponseReceived` or `ToolResulted` entry takes from what the recorder returned. */
const recordedFields = (
  recorded: string | RecordedBody | undefined
): { readonly transcript?: string; readonly storedSha256?: string } =>
  recorded === undefined
    ? {}
    : typeof recorded === "string"
      ? { transcript: recorded }
      : recorded.storedSha256 === undefined
        ? { transcript: recorded.transcript }
        : { transcript: recorded.transcript, storedSha256: recorded.storedSha256 }

/**
 * The reason `TurnAbandoned` records for a turn whose fiber was interrupted.
 *
 * @since 0.1.0
 * @category turns
 */
export const interruptedReason = "interrupted"

/**
 * The model still asked for tools after `maxSteps` model steps. The calls of
 * the last step were run and journaled, so the turn is consistent and stays
 * open: resume it (with a higher limit) or abandon it.
 *
 * @since 0.1.0
 * @category errors
 */
export class StepLimitExceeded extends Schema.TaggedError<StepLimitExceeded>()("StepLimitExceeded", {
  task: Ids.TaskId,
  turn: Schema.Int,
  maxSteps: Schema.Int
}) {
  override get message(): string {
    return `turn ${this.turn} of task ${this.task} reached its limit of ${this.maxSteps} model steps without a final answer`
  }
}

/**
 * A turn cannot be resumed from the given history: the calls the history
 * leaves unanswered are not the calls the journal still owes.
 *
 * @since 0.1.0
 * @category errors
 */
export class ResumeMismatch extends Schema.TaggedError<ResumeMismatch>()("ResumeMismatch", {
  task: Ids.TaskId,
  turn: Schema.Int,
  journalCalls: Schema.Array(Schema.String),
  historyCalls: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `cannot resume turn ${this.turn} of task ${this.task}: the journal owes results for [${this.journalCalls.join(", ")}] but the history leaves [${this.historyCalls.join(", ")}] unanswered`
  }
}

/**
 * An approved call was about to run with another input than the one the
 * host approved (the digest journaled with `ApprovalRequested`): the history
 * it came from was changed since. Nothing ran and nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalInputMismatch extends Schema.TaggedError<ApprovalInputMismatch>()("ApprovalInputMismatch", {
  task: Ids.TaskId,
  turn: Schema.Int,
  step: Schema.Int,
  callId: Schema.String,
  approvedSha256: Schema.String,
  foundSha256: Schema.String
}) {
  override get message(): string {
    return `call ${this.callId} (turn ${this.turn}, step ${this.step} of task ${this.task}) was approved with input sha256 ${this.approvedSha256}, but its input now has sha256 ${this.foundSha256}; it was not run`
  }
}

/**
 * How a turn ended: answered ({@link TurnAnswered}, the turn is closed), or
 * paused with calls awaiting the host's approval
 * ({@link TurnAwaitingApproval}, the turn stays open). Both carry the turn's
 * number, its steps so far, its history and the text of its last response.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnOutcome = TurnAnswered | TurnAwaitingApproval

/**
 * The model answered without tool calls and the turn was closed: `text`
 * is the answer.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnAnswered {
  readonly _tag: "Answered"
  readonly turn: number
  readonly steps: number
  readonly history: History.History
  readonly text: string
}

/**
 * The last step's calls include some that wait for the host's approval
 * (`awaiting`); nothing of that step ran. The turn stays open: decide each
 * call (`TaskExecution.decide`), then resume it. `text` is the text of the
 * response that asked for the calls.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnAwaitingApproval {
  readonly _tag: "AwaitingApproval"
  readonly turn: number
  readonly steps: number
  readonly history: History.History
  readonly text: string
  readonly awaiting: ReadonlyArray<PendingApproval>
}

/**
 * A call waiting for the host's approval: the call itself (its input
 * included) and why it waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  readonly call: ToolCallPart
  readonly reason: JournalEntry.ApprovalReason
}

/**
 * Every way a step or a turn can fail besides the hooks' own errors.
 * `InvalidInput`: a turn entry ({@link runTurn}, {@link resumeTurn},
 * {@link resumeRebuilt}) was handed a configuration or a history of the
 * wrong shape (see {@link TurnConfig}); nothing was journaled or sent.
 *
 * @since 0.1.0
 * @category errors
 */
export type ExecutorError =
  | InvalidInput
  | ModelError
  | JournalIoError
  | JournalSequenceError
  | TurnAlreadyOpen
  | NoOpenTurn
  | TurnUnfinished
  | StepLimitExceeded
  | ResumeMismatch
  | ApprovalInputMismatch

const timeStepRequest = Observability.timeModelRequest("step")

const checkResponse = (response: ModelResponse): Effect.Effect<ModelResponse, ModelError> => {
  const ids = response.toolCalls.map((call) => call.id)
  const duplicate = ids.find((id, index) => ids.indexOf(id) !== index)
  if (duplicate !== undefined) {
    return Effect.fail(
      new ModelError({ reason: "InvalidResponse", detail: `two tool calls share the id "${duplicate}"` })
    )
  }
  // The input's type says JSON, but an adapter builds it at run time: checked here, before anything
  // renders, measures or journals it, so a bad value never reaches the history (or compaction).
  for (const call of response.toolCalls) {
    const notJson = Tool.findNotJson(call.input)
    if (Option.isSome(notJson)) {
      return Effect.fail(
        new ModelError({
          reason: "NonJsonToolInput",
          detail: `the model adapter returned tool call "${call.id}" (tool "${call.name}") whose input is not JSON: ${notJson.value.path} is ${notJson.value.found}; the adapter must decode the provider's arguments into JSON values`
        })
      )
    }
  }
  return Effect.succeed(response)
}

/**
 * One model step: runs `beforeModelStep`, builds the request from the
 * (possibly rewritten) history, journals `RequestDispatched`, calls the
 * model, journals `ResponseReceived` (or `ModelFailed`, then fails), and runs
 * `afterModelStep`. The request's parts are the history's own objects.
 *
 * The response is checked before anything acts on it: two calls sharing an
 * id fail `InvalidResponse`, a call whose input is not JSON (see
 * `Tool.findNotJson`) fails `NonJsonToolInput`, naming the call and where the
 * input stops being JSON. With `config.timeouts.model`, the call (and any
 * summary request `beforeModelStep` sends) fails `Timeout` past the limit.
 *
 * If the adapter dies or the step is interrupted while the request is in
 * flight, no `ModelFailed` is written: the journal shows the request as
 * unanswered, which {@link resumeTurn} counts as lost.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Executor, History, Journal, Model, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("one-step")
 * const noop = Tool.make({ name: "noop", description: "Does nothing", input: Schema.Struct({}), handler: () => Effect.succeed("") })
 * const config: Executor.TurnConfig = { tools: Tool.registry(noop), maxSteps: 1 }
 *
 * // One step of your own loop: the request and response are journaled exactly as the stock executor journals them.
 * const program = Effect.gen(function* () {
 *   const journal = yield* Journal.Journal
 *   const { turn } = yield* journal.openTurn
 *   const outcome = yield* Executor.modelStep(config, { task, turn, step: 1 }, History.make([Model.text("user", "Hi.")]))
 *   yield* journal.closeTurn
 *   return outcome.response.text // "Hello."
 * }).pipe(
 *   Effect.provide(
 *     Layer.merge(
 *       ScriptedModel.layer([Model.response({ text: "Hello." })]),
 *       Journal.layer({ folder: "/tmp/tessera-journals", task })
 *     )
 *   )
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category pieces
 */
export const modelStep = <E = never, R = never>(
  config: TurnConfig<E, R>,
  context: StepContext,
  history: History.History
): Effect.Effect<ModelStepOutcome, ModelError | JournalIoError | JournalSequenceError | E, Model | Journal | R> =>
  modelStepBody(config, context, history, false, undefined).pipe(modelStepSpan(context))

const modelStepSpan = (context: StepContext) =>
  Observability.withSpan("Executor.modelStep", () => ({
    kind: "client",
    attributes: {
      ...Observability.operation("chat", context.task),
      "tessera.task": context.task,
      "tessera.turn": context.turn,
      "tessera.step": context.step
    }
  }))

// The step bodies are generator functions defined once. Written inline (`Effect.gen(function* () {...})`
// inside the step function) each step would create a new generator function, and V8 keeps every such
// function's prototype alive until a full collection: in a long turn that alone grew the young generation.
const modelStepBody = Effect.fnUntraced(function* <E, R>(
  config: TurnConfig<E, R>,
  context: StepContext,
  history: History.History,
  // The history is the one a lost request was built from: the hooks already ran on it.
  prepared: boolean,
  // The turn's request chain, when its loop keeps one: a step then hashes only the parts its history added.
  chain: RequestChain | undefined
): Effect.fn.Return<ModelStepOutcome, ModelError | JournalIoError | JournalSequenceError | E, Model | Journal | R> {
  const journal = yield* Journal
  const model = yield* Model
  const hooks = config.hooks ?? {}
  const { step, turn } = context
  const onEvent = config.onEvent
  if (onEvent !== undefined) yield* onEvent({ _tag: "StepStarted", turn, step })
  const current =
    hooks.beforeModelStep === undefined || prepared
      ? history
      : yield* hooks.beforeModelStep(context, history).pipe(Timeouts.limitModel(config.timeouts))
  const recorder = config.recorder
  const rewrite =
    recorder === undefined || current === history ? undefined : yield* recorder.rewritten(history, current)
  const request: ModelRequest = { parts: History.toParts(current), tools: config.tools.specs }
  const measured = yield* measureRequest(request, chain)
  yield* Observability.annotate({
    "tessera.request.parts": request.parts.length,
    "tessera.request.size": measured.size
  })
  yield* journal.append({
    _tag: "RequestDispatched",
    turn,
    step,
    parts: request.parts.length,
    size: measured.size,
    sha256: measured.sha256,
    ...recordedFields(rewrite)
  })
  const call =
    onEvent === undefined
      ? model.generate(request)
      : collect(model.stream(request), (event) => forwardModelEvent(onEvent, context, event))
  const response = yield* Timeouts.limitModelCall(config.timeouts, call).pipe(
    timeStepRequest,
    Effect.flatMap(checkResponse),
    Effect.catch((error) =>
      Effect.flatMap(scrubModelError(error), (scrubbed) =>
        journal
          .append({ _tag: "ModelFailed", turn, step, reason: scrubbed.reason, detail: scrubbed.detail })
          .pipe(Effect.andThen(Effect.fail(scrubbed)))
      )
    )
  )
  yield* Observability.recordUsage("step", Observability.usageOf(response))
  const responseRecord = recorder === undefined ? undefined : yield* recorder.responded(response)
  const answer = yield* measureText(response.text)
  yield* Observability.annotate({
    "tessera.response.size": answer.size,
    "tessera.response.toolCalls": response.toolCalls.length
  })
  yield* journal.append({
    _tag: "ResponseReceived",
    turn,
    step,
    textSize: answer.size,
    textSha256: answer.sha256,
    toolCalls: response.toolCalls.map((call) => ({ callId: call.id, name: call.name })),
    ...(response.usage === undefined ? {} : { usage: response.usage }),
    ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason }),
    ...recordedFields(responseRecord)
  })
  if (onEvent !== undefined) {
    yield* onEvent({
      _tag: "StepFinished",
      turn,
      step,
      toolCalls: response.toolCalls.length,
      ...(response.usage === undefined ? {} : { usage: response.usage }),
      ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason })
    })
  }
  const outcome: ModelStepOutcome = {
    request,
    response,
    history: History.append(current, History.responseParts(response))
  }
  if (hooks.afterModelStep !== undefined) yield* hooks.afterModelStep(context, outcome)
  return outcome
})

// Completed calls, usage and the finish reason reach the observer through the step's own events
// (`ToolCalled` when dispatched, `StepFinished`), once the response is checked.
const forwardModelEvent = (
  onEvent: (event: TurnEvent) => Effect.Effect<void>,
  context: StepContext,
  event: ModelStreamEvent
): Effect.Effect<void> => {
  switch (event._tag) {
    case "TextDelta":
    case "ReasoningDelta":
      return onEvent({ _tag: event._tag, turn: context.turn, step: context.step, delta: event.delta })
    case "ToolCallDelta":
      return onEvent({
        _tag: "ToolCallDelta",
        turn: context.turn,
        step: context.step,
        callId: event.id,
        name: event.name,
        inputDelta: event.inputDelta
      })
    default:
      return Effect.void
  }
}

/**
 * A provider's error text often echoes the request (and so secrets): the
 * error is scrubbed by the host's redactor, when one is provided, before it
 * is journaled or handed back, deeply (its detail, stack and anything else
 * it carries; see `ForeignLoop.scrubThrown`, the one scrub). A redactor
 * that fails on a text withholds it.
 */
const scrubModelError: (error: ModelError) => Effect.Effect<ModelError> = scrubError

const dispatchOne = <E, R>(
  journal: JournalService,
  config: TurnConfig<E, R>,
  context: ToolContext
): Effect.Effect<ToolResultPart, JournalIoError | JournalSequenceError | E, R> =>
  dispatchOneBody(journal, config, context).pipe(
    Observability.withSpan("Executor.toolCall", () => ({
      attributes: {
        ...Observability.operation("execute_tool", context.task),
        ...Observability.toolAttributes(context.call.name, context.call.id),
        "tessera.task": context.task,
        "tessera.turn": context.turn,
        "tessera.step": context.step,
        "tessera.tool.name": context.call.name,
        "tessera.tool.callId": context.call.id
      }
    }))
  )

const dispatchOneBody = Effect.fnUntraced(function* <E, R>(
  journal: JournalService,
  config: TurnConfig<E, R>,
  context: ToolContext
): Effect.fn.Return<ToolResultPart, JournalIoError | JournalSequenceError | E, R> {
  const { call, step, turn } = context
  const input = yield* measureJson(call.input)
  yield* Observability.annotate("tessera.tool.input.size", input.size)
  yield* journal.append({
    _tag: "ToolCalled",
    turn,
    step,
    callId: call.id,
    name: call.name,
    inputSize: input.size,
    inputSha256: input.sha256
  })
  // Under group commit a tool that must not run twice starts only once its call is durable: a crash after this
  // point finds the call in flight and asks before running it again.
  if (!Tool.isIdempotent(config.tools, call.name)) yield* journal.sync
  if (config.onEvent !== undefined) yield* config.onEvent({ _tag: "ToolCalled", turn, step, call })
  const outcome = yield* Timeouts.limitToolCall(config.timeouts, call.name, Tool.run(config.tools, call)).pipe(
    Observability.timeToolCall(call.name)
  )
  const produced = toolResult({
    callId: call.id,
    name: call.name,
    content: outcome.content,
    isError: Option.isSome(outcome.failure)
  })
  const replaced =
    config.hooks?.onToolResult === undefined ? produced : yield* config.hooks.onToolResult(context, produced)
  const result =
    replaced.callId === call.id && replaced.name === call.name
      ? replaced
      : { ...replaced, callId: call.id, name: call.name }
  const measured = yield* measureText(result.content)
  rememberBody(result, measured)
  yield* Observability.annotate({
    "tessera.tool.result.size": measured.size,
    "tessera.tool.isError": result.isError
  })
  const failure = result.isError ? outcome.failure : Option.none()
  const record = config.recorder === undefined ? undefined : yield* config.recorder.resulted(result)
  yield* journal.append({
    _tag: "ToolResulted",
    turn,
    step,
    callId: call.id,
    name: call.name,
    isError: result.isError,
    ...(Option.isSome(failure) ? { failure: failure.value } : {}),
    size: measured.size,
    sha256: measured.sha256,
    ...recordedFields(record)
  })
  if (config.onEvent !== undefined) yield* config.onEvent({ _tag: "ToolResulted", turn, step, result })
  return result
})

/**
 * Runs the calls of one step, one after the other in the model's order:
 * journals `ToolCalled`, runs the tool (a failure, or outliving its limit
 * in `config.timeouts`, becomes a tool-error result), runs `onToolResult`,
 * journals `ToolResulted`. Returns the results
 * in call order, ready to append to the history. This raw piece does not
 * ask for approvals: a harness driving its own loop with tools that declare
 * `needsApproval` dispatches through {@link dispatchStep}, as the turn does.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { Executor, History, Journal, Model, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("custom-loop")
 * const readFile = Tool.make({
 *   name: "read_file",
 *   description: "Reads a file",
 *   input: Schema.Struct({ path: Schema.String }),
 *   handler: ({ path }) => Effect.succeed(`// ${path}`)
 * })
 * const config: Executor.TurnConfig = { tools: Tool.registry(readFile), maxSteps: 4 }
 *
 * // A loop of your own from the stock pieces: each call is journaled (`ToolCalled`, `ToolResulted`), an unknown
 * // tool or a failing handler becomes an error result the model sees.
 * const program = Effect.gen(function* () {
 *   const journal = yield* Journal.Journal
 *   const { turn } = yield* journal.openTurn
 *   let history = History.make([Model.text("user", "What is in src/turn.ts?")])
 *   for (let step = 1; step <= config.maxSteps; step++) {
 *     const outcome = yield* Executor.modelStep(config, { task, turn, step }, history)
 *     history = outcome.history
 *     if (outcome.response.toolCalls.length === 0) {
 *       yield* journal.closeTurn
 *       return outcome.response.text
 *     }
 *     const results = yield* Executor.dispatchTools(config, { task, turn, step }, outcome.response.toolCalls)
 *     history = History.append(history, results)
 *   }
 *   yield* journal.abandonTurn(`no answer within ${config.maxSteps} steps`)
 *   return "(abandoned)"
 * }).pipe(
 *   Effect.provide(
 *     Layer.merge(
 *       ScriptedModel.layer([
 *         Model.response({ toolCalls: [Model.toolCall("c1", "read_file", { path: "src/turn.ts" })] }),
 *         Model.response({ text: "It holds the turn loop." })
 *       ]),
 *       Journal.layer({ folder: "/tmp/tessera-journals", task })
 *     )
 *   )
 * )
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category pieces
 */
export const dispatchTools = <E = never, R = never>(
  config: TurnConfig<E, R>,
  context: StepContext,
  calls: ReadonlyArray<ToolCallPart>
): Effect.Effect<ReadonlyArray<ToolResultPart>, JournalIoError | JournalSequenceError | E, Journal | R> =>
  Journal.use((journal) =>
    // Most steps make one call: no collection machinery for it.
    calls.length === 1
      ? Effect.map(dispatchOne(journal, config, { ...context, call: calls[0] as ToolCallPart }), (result) => [result])
      : Effect.forEach(calls, (call) => dispatchOne(journal, config, { ...context, call }))
  )

/**
 * Closes `turn` as abandoned (reason {@link interruptedReason}) when the
 * effect is interrupted while the turn is still open. Finalizers run
 * uninterruptibly, so the entry is written even though the fiber is being
 * interrupted; a failure to write it is left for the next turn to report
 * (`TurnAlreadyOpen`), never raised over the interruption.
 */
const abandonOnInterrupt =
  (journal: JournalService, turn: number) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.onInterrupt(self, () =>
      Effect.flatMap(journal.state, (state) => {
        const open = openTurn(state)
        return Option.isSome(open) && open.value.turn === turn
          ? Effect.ignore(journal.abandonTurn(interruptedReason))
          : Effect.void
      })
    )

const lastAssistantText = (history: History.History): string => {
  const last = history.parts.at(-1)
  return last !== undefined && last._tag === "Text" && last.role === "assistant" ? last.text : ""
}

/**
 * The text of the error result a rejected call receives: who rejected it and
 * why, so the model can act on it (ask, choose another way, give up).
 *
 * @since 0.1.0
 * @category approvals
 */
export const rejectionText = (call: ToolCallPart, approval: Pick<OwedCall, "approval">["approval"]): string => {
  const by = approval?.by === undefined ? "" : ` by ${approval.by}`
  const note = approval?.note === undefined || approval.note.length === 0 ? "" : `: ${approval.note}`
  return approval?.reason === "InFlight"
    ? `tool "${call.name}" was running when the process stopped; running it again was rejected${by}${note}`
    : `the call to tool "${call.name}" was rejected${by}${note}; it did not run`
}

/** Journals the error result of a rejected call (the tool never ran, or did not run again). */
const rejectOne = Effect.fnUntraced(function* <E, R>(
  journal: JournalService,
  config: TurnConfig<E, R>,
  context: ToolContext,
  owed: OwedCall
) {
  const { call, step, turn } = context
  const result = toolResult({
    callId: call.id,
    name: call.name,
    content: rejectionText(call, owed.approval),
    isError: true
  })
  const measured = yield* measureText(result.content)
  rememberBody(result, measured)
  const record = config.recorder === undefined ? undefined : yield* config.recorder.resulted(result)
  yield* journal.append({
    _tag: "ToolResulted",
    turn,
    step,
    callId: call.id,
    name: call.name,
    isError: true,
    failure: "Rejected",
    size: measured.size,
    sha256: measured.sha256,
    ...recordedFields(record)
  })
  if (config.onEvent !== undefined) yield* config.onEvent({ _tag: "ToolResulted", turn, step, result })
  return result
})

/**
 * What dispatching a step's calls under approvals gave: their results, or
 * the calls that wait for the host's decision (nothing ran).
 *
 * @since 0.1.0
 * @category pieces
 */
export type StepDispatch =
  | { readonly _tag: "Results"; readonly results: ReadonlyArray<ToolResultPart> }
  | { readonly _tag: "Awaiting"; readonly awaiting: ReadonlyArray<PendingApproval> }

/**
 * Runs the calls of the open turn's current step that still owe a result,
 * honouring approvals (see the journal's `ApprovalRequested` and
 * `ApprovalDecided`):
 *
 * - a call whose tool needs approval for its input (`Tool.needsApproval`)
 *   and that has no decision yet is journaled `ApprovalRequested`
 *   (`Tool`);
 * - a call that was called but has no result (it was running when the
 *   process died) runs again only when its tool is declared idempotent;
 *   otherwise it is journaled `ApprovalRequested` (`InFlight`); an approved
 *   call that was called after its approval is such a call too (the
 *   approval covered one run);
 * - an approved call runs only with the input the host approved (the
 *   digest journaled with its `ApprovalRequested`), else
 *   {@link ApprovalInputMismatch} before anything runs;
 * - when any call waits, nothing runs and the calls waiting are returned;
 * - otherwise every call runs in the model's order: an approved or
 *   unrestricted one through the tool ({@link dispatchTools}' steps), a
 *   rejected one as an error result naming who rejected it
 *   ({@link rejectionText}, failure `Rejected`) without running.
 *
 * Calls that already have a result are skipped (their results are in the
 * history).
 *
 * @since 0.1.0
 * @category pieces
 */
export const dispatchStep = Effect.fnUntraced(function* <E = never, R = never>(
  config: TurnConfig<E, R>,
  context: StepContext,
  calls: ReadonlyArray<ToolCallPart>
): Effect.fn.Return<StepDispatch, JournalIoError | JournalSequenceError | ApprovalInputMismatch | E, Journal | R> {
  const journal = yield* Journal
  const state = yield* journal.state
  const open = openTurn(state)
  const owedById = new Map<string, OwedCall>()
  if (Option.isSome(open)) for (const owed of open.value.owedCalls) owedById.set(owed.callId, owed)
  // The host approved one input: an approved call runs with that input or not at all.
  yield* checkApprovedInputs(context, Option.isSome(open) ? open.value.owedCalls : [], calls)
  const awaiting: Array<PendingApproval> = []
  for (const call of calls) {
    const owed = owedById.get(call.id)
    if (owed === undefined) continue
    const status = owed.approval?.status
    if (status === "Requested") {
      awaiting.push({ call, reason: owed.approval?.reason ?? "Tool" })
      continue
    }
    if (status === "Rejected") continue
    if (status === "Approved" && owed.approval?.spent === false) continue
    // A spent approval (the call ran after it and no result followed) is in flight like any other call.
    const reason: JournalEntry.ApprovalReason | undefined = owed.called
      ? Tool.isIdempotent(config.tools, call.name)
        ? undefined
        : "InFlight"
      : (yield* Tool.needsApproval(config.tools, call))
        ? "Tool"
        : undefined
    if (reason === undefined) continue
    const input = yield* measureJson(call.input)
    yield* journal.append({
      _tag: "ApprovalRequested",
      turn: context.turn,
      step: context.step,
      callId: call.id,
      name: call.name,
      inputSize: input.size,
      inputSha256: input.sha256,
      reason
    })
    awaiting.push({ call, reason })
  }
  if (awaiting.length > 0) return { _tag: "Awaiting", awaiting } as const
  const results: Array<ToolResultPart> = []
  for (const call of calls) {
    const owed = owedById.get(call.id)
    if (owed === undefined) continue
    results.push(
      owed.approval?.status === "Rejected"
        ? yield* rejectOne(journal, config, { ...context, call }, owed)
        : yield* dispatchOne(journal, config, { ...context, call })
    )
  }
  return { _tag: "Results", results } as const
})

/**
 * The loop shared by {@link runTurn} and {@link resumeTurn}: model steps
 * from `firstStep` on, tools after each (under approvals:
 * {@link dispatchStep}), until an answer (the turn is then closed), calls
 * awaiting approval (the turn stays open), or the step limit. With
 * `prepared`, the first step sends its history as it is (it is the history
 * a lost request was built from; the hooks already ran on it).
 *
 * @since 0.1.0
 * @category pieces
 */
export const continueTurn = <E = never, R = never>(
  config: TurnConfig<E, R>,
  context: {
    readonly task: Ids.TaskId
    readonly turn: number
    readonly firstStep: number
    readonly prepared?: boolean
  },
  history: History.History
): Effect.Effect<TurnOutcome, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    const journal = yield* Journal
    const chain = makeRequestChain()
    let current = history
    for (let step = context.firstStep; ; step++) {
      if (step > config.maxSteps) {
        return yield* new StepLimitExceeded({ task: context.task, turn: context.turn, maxSteps: config.maxSteps })
      }
      const stepContext: StepContext = { task: context.task, turn: context.turn, step }
      const prepared = context.prepared === true && step === context.firstStep
      const outcome = yield* modelStepBody(config, stepContext, current, prepared, chain).pipe(
        modelStepSpan(stepContext)
      )
      current = outcome.history
      if (outcome.response.toolCalls.length === 0) {
        yield* journal.closeTurn
        const closed: TurnAnswered = {
          _tag: "Answered",
          turn: context.turn,
          steps: step,
          history: current,
          text: outcome.response.text
        }
        if (config.onEvent !== undefined) yield* config.onEvent({ _tag: "TurnClosed", outcome: closed })
        return closed
      }
      // A fresh step's calls are all owed and uncalled: without tools that declare approval, nothing can wait.
      const dispatched: StepDispatch = Tool.anyNeedsApproval(config.tools)
        ? yield* dispatchStep(config, stepContext, outcome.response.toolCalls)
        : { _tag: "Results", results: yield* dispatchTools(config, stepContext, outcome.response.toolCalls) }
      if (dispatched._tag === "Awaiting") {
        return yield* awaitingOutcome(config, {
          turn: context.turn,
          steps: step,
          history: current,
          text: outcome.response.text,
          awaiting: dispatched.awaiting
        })
      }
      current = History.append(current, dispatched.results)
    }
  })

const awaitingOutcome = <E, R>(
  config: TurnConfig<E, R>,
  fields: Omit<TurnAwaitingApproval, "_tag">
): Effect.Effect<TurnAwaitingApproval> => {
  const outcome: TurnAwaitingApproval = { _tag: "AwaitingApproval", ...fields }
  return config.onEvent === undefined
    ? Effect.succeed(outcome)
    : Effect.as(config.onEvent({ _tag: "AwaitingApproval", outcome }), outcome)
}

/**
 * The stock turn: runs the entry gate (`beforeTurn`), opens a turn in the
 * journal, and loops model step / tool dispatch until the model answers
 * without tool calls (the turn is closed: {@link TurnAnswered}), a call
 * waits for the host's approval ({@link TurnAwaitingApproval}, turn left
 * open), or `maxSteps` model steps were taken ({@link StepLimitExceeded},
 * turn left open). A failure mid-turn leaves the turn open for
 * {@link resumeTurn} or `abandonTurn`. With a `recorder`, the history the
 * turn starts from is recorded before `TurnOpened`.
 *
 * @since 0.1.0
 * @category turns
 */
export const runTurn = <E = never, R = never>(
  config: TurnConfig<E, R>,
  history: History.History
): Effect.Effect<TurnOutcome, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    // Checked once per turn, before the entry gate: the loop reads the configuration at every step.
    yield* Effect.fromResult(checkTurn("Executor.runTurn", config, [["history", history]]))
    const journal = yield* Journal
    yield* Observability.annotate({
      ...Observability.operation("invoke_agent", journal.task),
      "tessera.task": journal.task
    })
    if (config.hooks?.beforeTurn !== undefined) {
      yield* config.hooks.beforeTurn({ task: journal.task, resuming: false }, history)
    }
    const opened =
      config.recorder === undefined ? yield* journal.openTurn : yield* openRecorded(journal, config.recorder, history)
    yield* Observability.annotate({ "tessera.turn": opened.turn })
    const outcome = yield* continueTurn(config, { task: journal.task, turn: opened.turn, firstStep: 1 }, history).pipe(
      abandonOnInterrupt(journal, opened.turn)
    )
    yield* Observability.annotate({ "tessera.steps": outcome.steps })
    return outcome
  }).pipe(Observability.withSpan("Executor.runTurn"))

/** Opens a turn whose starting history is recorded first (refused, having written nothing, when one is open). */
const openRecorded = <E, R>(journal: JournalService, recorder: TurnRecorder<E, R>, history: History.History) =>
  Effect.gen(function* () {
    const state = yield* journal.state
    const open = openTurn(state)
    if (Option.isSome(open)) return yield* new TurnAlreadyOpenError({ task: journal.task, turn: open.value.turn })
    const transcript = yield* recorder.opened(history)
    const turn = state.turns.length + 1
    yield* journal.append({ _tag: "TurnOpened", turn, task: journal.task, ...recordedFields(transcript) })
    const after = yield* journal.state
    return after.turns.at(-1) as NonNullable<ReturnType<typeof after.turns.at>>
  })

/**
 * Continues the open turn from the caller's copy of its history (the
 * journal holds no bodies, so the history is the harness's to keep; a
 * durable turn can instead be rebuilt from disk: see {@link resumeRebuilt}).
 *
 * The calls the history leaves unanswered must be exactly the calls the
 * journal still owes ({@link ResumeMismatch} otherwise). The journal records
 * `TurnResumed`; a request that was in flight is counted as lost. Owed calls
 * are dispatched under approvals ({@link dispatchStep}: a call that was
 * running at the crash runs again only if its tool is idempotent, decided
 * calls run or are rejected), then the loop continues with the next step
 * number. If the turn was already answered, it is just closed.
 *
 * @since 0.1.0
 * @category turns
 */
export const resumeTurn = <E = never, R = never>(
  config: TurnConfig<E, R>,
  history: History.History
): Effect.Effect<TurnOutcome, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    yield* Effect.fromResult(checkTurn("Executor.resumeTurn", config, [["history", history]]))
    const journal = yield* Journal
    const task = journal.task
    yield* Observability.annotate({ ...Observability.operation("invoke_agent", task), "tessera.task": task })
    if (config.hooks?.beforeTurn !== undefined) yield* config.hooks.beforeTurn({ task, resuming: true }, history)
    const open = openTurn(yield* journal.state)
    if (Option.isNone(open)) return yield* new NoOpenTurn({ task, operation: "resume" })
    const turn = open.value
    yield* Observability.annotate({ "tessera.turn": turn.turn })
    const pending = History.unansweredCalls(history)
    yield* checkOwedCalls(task, turn, pending)
    yield* journal.resumeTurn
    return yield* continueOpen(
      config,
      { task, turn: turn.turn, steps: turn.steps, answered: turn.answered && !turn.awaitingResponse },
      history,
      pending
    ).pipe(abandonOnInterrupt(journal, turn.turn))
  }).pipe(Observability.withSpan("Executor.resumeTurn"))

/**
 * What a resume checks before it writes anything: the history leaves
 * unanswered exactly the calls the journal owes ({@link ResumeMismatch}),
 * and each approved call still has the input the host approved
 * ({@link ApprovalInputMismatch}).
 */
const checkOwedCalls = (task: Ids.TaskId, turn: TurnState, pending: ReadonlyArray<ToolCallPart>) =>
  Effect.gen(function* () {
    const journalCalls = turn.owedCalls.map((call) => call.callId)
    const historyCalls = pending.map((call) => call.id)
    if (journalCalls.length !== historyCalls.length || journalCalls.some((id) => !historyCalls.includes(id))) {
      return yield* new ResumeMismatch({ task, turn: turn.turn, journalCalls, historyCalls })
    }
    yield* checkApprovedInputs({ task, turn: turn.turn, step: turn.steps }, turn.owedCalls, pending)
  })

/** Every approved call whose approval is unspent runs only with the input whose digest the host was asked about. */
const checkApprovedInputs = (
  context: StepContext,
  owedCalls: ReadonlyArray<OwedCall>,
  calls: ReadonlyArray<ToolCallPart>
): Effect.Effect<void, ApprovalInputMismatch> =>
  Effect.forEach(
    calls,
    (call) => {
      const approval = owedCalls.find((owed) => owed.callId === call.id)?.approval
      if (approval?.status !== "Approved" || approval.spent) return Effect.void
      return Effect.flatMap(measureJson(call.input), (input) =>
        input.sha256 === approval.inputSha256
          ? Effect.void
          : Effect.fail(
              new ApprovalInputMismatch({
                task: context.task,
                turn: context.turn,
                step: context.step,
                callId: call.id,
                approvedSha256: approval.inputSha256,
                foundSha256: input.sha256
              })
            )
      )
    },
    { discard: true }
  )

/** After `TurnResumed`: close an answered turn, or dispatch the owed calls and go on with the next step. */
const continueOpen = <E, R>(
  config: TurnConfig<E, R>,
  turn: { readonly task: Ids.TaskId; readonly turn: number; readonly steps: number; readonly answered: boolean },
  history: History.History,
  pending: ReadonlyArray<ToolCallPart>
): Effect.Effect<TurnOutcome, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    const journal = yield* Journal
    if (turn.answered) {
      yield* journal.closeTurn
      const closed: TurnAnswered = {
        _tag: "Answered",
        turn: turn.turn,
        steps: turn.steps,
        history,
        text: lastAssistantText(history)
      }
      if (config.onEvent !== undefined) yield* config.onEvent({ _tag: "TurnClosed", outcome: closed })
      return closed
    }
    const dispatched = yield* dispatchStep(config, { task: turn.task, turn: turn.turn, step: turn.steps }, pending)
    if (dispatched._tag === "Awaiting") {
      return yield* awaitingOutcome(config, {
        turn: turn.turn,
        steps: turn.steps,
        history,
        text: lastAssistantText(history),
        awaiting: dispatched.awaiting
      })
    }
    return yield* continueTurn(
      config,
      { task: turn.task, turn: turn.turn, firstStep: turn.steps + 1 },
      History.append(history, dispatched.results)
    )
  })

/**
 * A call that was running when the process died: its id and tool, and
 * whether the resume runs it again (its tool is declared idempotent) or
 * asks the host first (an `InFlight` approval).
 *
 * @since 0.1.0
 * @category turns
 */
export interface InFlightCall {
  readonly callId: string
  readonly name: string
  readonly rerun: boolean
}

/**
 * What {@link resumeRebuilt} did: how the turn went on, and the calls that
 * were in flight when the process died.
 *
 * @since 0.1.0
 * @category turns
 */
export interface Resumed {
  readonly outcome: TurnOutcome
  readonly inFlight: ReadonlyArray<InFlightCall>
}

/**
 * Continues the open turn from a history rebuilt from disk (see
 * `Transcript.rebuild`): `history` is the turn's history after its last
 * recorded content, and `lostRequest`, when the last request was
 * dispatched and never answered, the history that request was built from.
 *
 * A request that got no response (lost to a crash, or failed) is sent
 * again under its own step number (`TurnResumed` with `retryStep`), from
 * that very history, without running
 * `beforeModelStep` again: a resumed turn sends the requests the
 * uninterrupted run would have sent. Otherwise the turn goes on as
 * {@link resumeTurn} does after its check. The calls in flight at the crash
 * (called, no result) are reported in {@link Resumed.inFlight}.
 *
 * @since 0.1.0
 * @category turns
 */
export const resumeRebuilt = <E = never, R = never>(
  config: TurnConfig<E, R>,
  rebuilt: {
    readonly turn: number
    readonly history: History.History
    readonly lostRequest: Option.Option<{ readonly step: number; readonly history: History.History }>
  }
): Effect.Effect<Resumed, ExecutorError | E, Model | Journal | R> =>
  Effect.gen(function* () {
    yield* Effect.fromResult(
      checkTurn(
        "Executor.resumeRebuilt",
        config,
        Option.isSome(rebuilt.lostRequest)
          ? [
              ["rebuilt.history", rebuilt.history],
              ["rebuilt.lostRequest.history", rebuilt.lostRequest.value.history]
            ]
          : [["rebuilt.history", rebuilt.history]]
      )
    )
    const journal = yield* Journal
    const task = journal.task
    yield* Observability.annotate({ ...Observability.operation("invoke_agent", task), "tessera.task": task })
    if (config.hooks?.beforeTurn !== undefined)
      yield* config.hooks.beforeTurn({ task, resuming: true }, rebuilt.history)
    const open = openTurn(yield* journal.state)
    if (Option.isNone(open) || open.value.turn !== rebuilt.turn) {
      return yield* new NoOpenTurn({ task, operation: `resume turn ${rebuilt.turn}` })
    }
    const turn = open.value
    yield* Observability.annotate({ "tessera.turn": turn.turn })
    const inFlight = turn.owedCalls
      .filter((call) => call.called && call.approval?.status !== "Rejected")
      .map((call) => ({ callId: call.callId, name: call.name, rerun: Tool.isIdempotent(config.tools, call.name) }))
    const lost = rebuilt.lostRequest
    if (
      (turn.awaitingResponse || turn.failedStep === turn.steps) &&
      Option.isSome(lost) &&
      lost.value.step === turn.steps
    ) {
      yield* journal.append({ _tag: "TurnResumed", turn: turn.turn, retryStep: lost.value.step })
      const outcome = yield* continueTurn(
        config,
        { task, turn: turn.turn, firstStep: lost.value.step, prepared: true },
        lost.value.history
      ).pipe(abandonOnInterrupt(journal, turn.turn))
      return { outcome, inFlight }
    }
    if (
      Option.isSome(lost) &&
      lost.value.step === turn.steps + 1 &&
      !turn.awaitingResponse &&
      !turn.answered &&
      turn.owedCalls.length === 0
    ) {
      // An earlier resume journaled the retry and stopped before sending it: send it now, from the same history.
      yield* journal.resumeTurn
      const outcome = yield* continueTurn(
        config,
        { task, turn: turn.turn, firstStep: lost.value.step, prepared: true },
        lost.value.history
      ).pipe(abandonOnInterrupt(journal, turn.turn))
      return { outcome, inFlight }
    }
    const pending = History.unansweredCalls(rebuilt.history)
    yield* checkOwedCalls(task, turn, pending)
    yield* journal.resumeTurn
    const outcome = yield* continueOpen(
      config,
      { task, turn: turn.turn, steps: turn.steps, answered: turn.answered && !turn.awaitingResponse },
      rebuilt.history,
      pending
    ).pipe(abandonOnInterrupt(journal, turn.turn))
    return { outcome, inFlight }
  }).pipe(Observability.withSpan("Executor.resumeRebuilt"))
