/**
 * One model step of a turn (`Executor.modelStep`, and each step of the
 * turn loop): the request built from the history, journaled, sent (or
 * streamed to `onEvent`), the response checked and journaled, the hooks
 * around it, all in the `Executor.modelStep` span.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as History from "../History.ts"
import type { JournalIoError, JournalSequenceError } from "../Journal.ts"
import { Journal } from "../Journal.ts"
import type { ModelRequest, ModelResponse, ModelStreamEvent } from "../Model.ts"
import { collect, Model, ModelError } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as Timeouts from "../Timeouts.ts"
import * as Tool from "../Tool.ts"
import { measureRequest, measureText, type RequestChain } from "./digest.ts"
import { type ModelStepOutcome, recordedFields, type StepContext, type TurnConfig } from "./executorConfig.ts"
import type { TurnEvent } from "./executorEvents.ts"
import { scrubError } from "./scrub.ts"

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
 * One model step in its span. With `prepared`, the history is the one a
 * lost request was built from: the hooks already ran on it and it is sent
 * as it is. With the turn's request `chain`, the step hashes only the parts
 * its history added since the last request.
 */
export const modelStep = <E, R>(
  config: TurnConfig<E, R>,
  context: StepContext,
  history: History.History,
  prepared: boolean,
  chain: RequestChain | undefined
): Effect.Effect<ModelStepOutcome, ModelError | JournalIoError | JournalSequenceError | E, Model | Journal | R> =>
  modelStepBody(config, context, history, prepared, chain).pipe(
    Observability.withSpan("Executor.modelStep", () => ({
      kind: "client",
      attributes: {
        ...Observability.operation("chat", context.task),
        "tessera.task": context.task,
        "tessera.turn": context.turn,
        "tessera.step": context.step
      }
    }))
  )

// The step bodies are generator functions defined once. Written inline (`Effect.gen(function* () {...})`
// inside the step function) each step would create a new generator function, and V8 keeps every such
// function's prototype alive until a full collection: in a long turn that alone grew the young generation.
const modelStepBody = Effect.fnUntraced(function* <E, R>(
  config: TurnConfig<E, R>,
  context: StepContext,
  history: History.History,
  prepared: boolean,
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
 * it carries; see `TaskExecution.scrubThrown`, the one scrub). A redactor
 * that fails on a text withholds it.
 */
const scrubModelError: (error: ModelError) => Effect.Effect<ModelError> = scrubError
