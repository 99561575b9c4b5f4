/**
 * A step's tool calls: each call run in its `Executor.toolCall` span and
 * journaled (`ToolCalled`, `ToolResulted`), and the approval-aware dispatch
 * of a step's owed calls (`ApprovalRequested`, rejected calls answered with
 * an error result, approved inputs checked against their digest).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { JournalIoError, JournalSequenceError, JournalService, OwedCall } from "../Journal.ts"
import { Journal, openTurn } from "../Journal.ts"
import type * as JournalEntry from "../JournalEntry.ts"
import type { ToolCallPart, ToolResultPart } from "../Model.ts"
import { toolResult } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as Timeouts from "../Timeouts.ts"
import * as Tool from "../Tool.ts"
import { type CallAwaiting, CurrentCall, CurrentCallAwaiting } from "./currentCall.ts"
import { type Measure, measureJson, measureText, rememberBody } from "./digest.ts"
import { recordedFields, type StepContext, type ToolContext, type TurnConfig } from "./executorConfig.ts"
import { ApprovalInputMismatch } from "./executorErrors.ts"
import type { PendingApproval, StepDispatch } from "./executorOutcomes.ts"

/** Runs one call in its span: `ToolCalled`, the tool, `onToolResult`, `ToolResulted`. */
const dispatchOne = <E, R>(
  journal: JournalService,
  config: TurnConfig<E, R>,
  context: ToolContext,
  awaiting: Option.Option<CallAwaiting> = Option.none()
): Effect.Effect<ToolResultPart, JournalIoError | JournalSequenceError | E, R> =>
  dispatchOneBody(journal, config, context, awaiting).pipe(
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

// Defined once rather than as a generator function created per call (see `modelStepBody` in `executorStep.ts`).
const dispatchOneBody = Effect.fnUntraced(function* <E, R>(
  journal: JournalService,
  config: TurnConfig<E, R>,
  context: ToolContext,
  awaiting: Option.Option<CallAwaiting>
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
    Effect.provideService(CurrentCall, Option.some({ task: context.task, turn, step, callId: call.id })),
    Effect.provideService(CurrentCallAwaiting, awaiting),
    Observability.timeToolCall(call.name)
  )
  // A call whose delegated children wait for the host waits with them: no result yet, the step awaits approval.
  const children = Option.isSome(awaiting) ? awaiting.value.children : undefined
  if (children !== undefined) {
    yield* journal.append({
      _tag: "ApprovalRequested",
      turn,
      step,
      callId: call.id,
      name: call.name,
      inputSize: input.size,
      inputSha256: input.sha256,
      reason: "Delegated",
      children
    })
    return toolResult({ callId: call.id, name: call.name, content: outcome.content, isError: false })
  }
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
  return yield* journalResult(
    journal,
    config,
    context,
    result,
    measured,
    result.isError ? outcome.failure : Option.none()
  )
})

/**
 * The end of every call, run or rejected: the result recorded (with a
 * recorder), journaled as `ToolResulted` and handed to `onEvent`.
 */
const journalResult = Effect.fnUntraced(function* <E, R>(
  journal: JournalService,
  config: TurnConfig<E, R>,
  context: ToolContext,
  result: ToolResultPart,
  measured: Measure,
  failure: Option.Option<Tool.ToolFailure>
): Effect.fn.Return<ToolResultPart, JournalIoError | JournalSequenceError | E, R> {
  const { call, step, turn } = context
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

/** The calls of one step, one after the other in the model's order (see `Executor.dispatchTools`). */
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

/** The text of the error result a rejected call receives (see `Executor.rejectionText`). */
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
  const { call } = context
  const result = toolResult({
    callId: call.id,
    name: call.name,
    content: rejectionText(call, owed.approval),
    isError: true
  })
  const measured = yield* measureText(result.content)
  rememberBody(result, measured)
  return yield* journalResult(journal, config, context, result, measured, Option.some("Rejected"))
})

/** The open turn's owed calls of a step, under approvals (see `Executor.dispatchStep`). */
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
    // A rejected delegation runs again all the same: it hands the rejection to the children that asked.
    if (owed.approval?.status === "Rejected" && owed.approval.reason !== "Delegated") {
      results.push(yield* rejectOne(journal, config, { ...context, call }, owed))
      continue
    }
    const waits: CallAwaiting = { children: undefined }
    const result = yield* dispatchOne(journal, config, { ...context, call }, Option.some(waits))
    if (waits.children === undefined) results.push(result)
    else awaiting.push({ call, reason: "Delegated" })
  }
  if (awaiting.length > 0) return { _tag: "Awaiting", awaiting } as const
  return { _tag: "Results", results } as const
})

/** Every approved call whose approval is unspent runs only with the input whose digest the host was asked about. */
export const checkApprovedInputs = (
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
