/**
 * The stock executor's turn and steps behind the gate: a whole turn (run,
 * streamed, resumed with the caller's history or abandoned), and one model
 * step or tool dispatch for harnesses that drive steps themselves.
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as EntryGate from "../EntryGate.ts"
import * as Executor from "../Executor.ts"
import type * as History from "../History.ts"
import { Journal } from "../Journal.ts"
import type { ToolCallPart } from "../Model.ts"
import * as Observability from "../Observability.ts"
import {
  type ExecutionConfig,
  gatedRun,
  gatedStep,
  type StepArguments,
  type TurnError,
  type TurnRequirements
} from "./gatedTurn.ts"

/**
 * The turn entries as their bodies infer them. The public entries below
 * state their types with the named aliases ({@link TurnError},
 * {@link TurnRequirements}) and call these; `typetest/EntrySignatures.typetest.ts`
 * pins each alias to the inferred type, so naming them changed no caller's
 * types.
 */
export const inferred = {
  runTurn: <E = never, R = never>(
    binding: EntryGate.TaskBinding,
    history: History.History,
    config: ExecutionConfig<E, R>
  ) => gatedRun(binding, "Turn", config, "TaskExecution.runTurn", (gated) => Executor.runTurn(gated, history)),
  resumeTurn: <E = never, R = never>(
    binding: EntryGate.TaskBinding,
    history: History.History,
    config: ExecutionConfig<E, R>
  ) =>
    gatedRun(binding, "ResumeTurn", config, "TaskExecution.resumeTurn", (gated) => Executor.resumeTurn(gated, history))
}

/**
 * Runs a turn for a bound task: the gate first, then the stock turn, with
 * compaction hooks when the policy is `Threshold`. It fails with
 * {@link TurnError} and needs {@link TurnRequirements} (the `Model` among
 * them), each with the host's own `E` and `R`.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * const fetchReport = Tool.make({
 *   name: "fetch_report",
 *   description: "Fetches a report by name",
 *   input: Schema.Struct({ name: Schema.String }),
 *   handler: ({ name }) => Effect.succeed(`Report ${name}\n${"measurement 42.0 within tolerance\n".repeat(2_000)}`)
 * })
 *
 * const script = [
 *   Model.response({ toolCalls: [Model.toolCall("call-1", "fetch_report", { name: "north" })] }),
 *   Model.response({ text: "Every north measurement is within tolerance." })
 * ]
 *
 * const program = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     namespace: "reports",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *   })
 *   return yield* harness.withTask(Schema.decodeUnknownSync(Ids.TaskId)("north"), (binding) =>
 *     // Behind the entry gate: the large result goes to the private volume, the model gets a pointer.
 *     TaskExecution.runTurn(binding, History.make([Model.text("user", "Summarize the north report.")]), {
 *       tools: Tool.registry(fetchReport),
 *       maxSteps: 8,
 *       offload: { threshold: 8_192, readTool: "read_artifact", destination: "Private" }
 *     }).pipe(Effect.provide(ScriptedModel.layer(script)))
 *   )
 * })
 *
 * Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(NodeTessera.layer))).then((outcome) => {
 *   if (outcome._tag === "Answered") console.log(outcome.text)
 * })
 * ```
 *
 * @since 0.1.0
 * @category entries
 */
export const runTurn = <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>
): Effect.Effect<Executor.TurnOutcome, TurnError<E>, TurnRequirements<R>> => inferred.runTurn(binding, history, config)

/**
 * Options of {@link streamTurn}.
 *
 * @since 0.1.0
 * @category models
 */
export interface StreamOptions {
  /**
   * How many events may wait for the consumer (default
   * {@link defaultStreamBuffer}); the turn pauses while they do.
   */
  readonly bufferSize?: number
}

/**
 * How many turn events {@link streamTurn} holds for a consumer by default:
 * room for the events of several steps, so a consumer that keeps up takes
 * them in batches and the turn rarely waits for it to be scheduled. Still a
 * bound: a slow consumer holds the turn at 256 events.
 *
 * @since 0.1.0
 * @category models
 */
export const defaultStreamBuffer = 256

const decodeBufferSize = InvalidInput.decode(
  Schema.Number.check(
    Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= 1, { expected: "an integer >= 1" })
  ),
  "TaskExecution.streamTurn",
  "bufferSize"
)

/**
 * {@link runTurn} as a `Stream` of its `Executor.TurnEvent`s, for a host to
 * forward: step started, text, reasoning and tool-call deltas as the model
 * streams them (before the step ends), tool called and resulted, artifacts
 * offloaded, summary requests answered and summaries staged, step finished
 * (with usage and finish reason), and last the turn closed with its
 * outcome. The stream fails with what `runTurn` fails with, behind the same
 * gate, with the same journal.
 *
 * Back-pressure: at most `bufferSize` events wait for the consumer; while
 * they do, the turn itself waits (no model stream is pulled, no tool runs),
 * so a slow consumer never makes the runtime buffer without bound. A
 * consumer that stops early (takes a few events, is interrupted) interrupts
 * the turn, which the journal then records as abandoned (see `Executor`),
 * so the next turn can open. A `config.onEvent` of the host's own sees
 * every event first.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema, Stream } from "effect"
 *
 * const clock = Tool.make({
 *   name: "clock",
 *   description: "Tells the time",
 *   input: Schema.Struct({}),
 *   handler: () => Effect.succeed(new Date().toISOString())
 * })
 *
 * const program = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     namespace: "stream",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("assistant")
 *   })
 *   yield* harness.withTask(Schema.decodeUnknownSync(Ids.TaskId)("time-1"), (binding) =>
 *     // The same turn as `runTurn`, as events a host forwards while they happen.
 *     Stream.runForEach(
 *       TaskExecution.streamTurn(binding, History.make([Model.text("user", "What time is it?")]), {
 *         tools: Tool.registry(clock),
 *         maxSteps: 4
 *       }),
 *       (event) =>
 *         Effect.sync(() => {
 *           if (event._tag === "TextDelta") process.stdout.write(event.delta)
 *           if (event._tag === "ToolCalled") console.log(`[tool] ${event.call.name}`)
 *         })
 *     ).pipe(
 *       Effect.provide(
 *         ScriptedModel.layer([
 *           Model.response({ toolCalls: [Model.toolCall("c1", "clock", {})] }),
 *           Model.response({ text: "It is noon." })
 *         ])
 *       )
 *     )
 *   )
 * })
 *
 * Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category entries
 */
export const streamTurn = <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>,
  options: StreamOptions = {}
): Stream.Stream<Executor.TurnEvent, TurnError<E>, TurnRequirements<R>> =>
  Stream.unwrap(
    Effect.map(decodeBufferSize(options.bufferSize ?? defaultStreamBuffer), (bufferSize) =>
      Stream.callback<Executor.TurnEvent, TurnError<E>, TurnRequirements<R>>(
        (queue) => {
          // With room in the buffer an event is handed over at once; a full buffer suspends the turn.
          const offer = (event: Executor.TurnEvent): Effect.Effect<void> =>
            Effect.suspend(() =>
              Queue.offerUnsafe(queue, event) ? Effect.void : Effect.asVoid(Queue.offer(queue, event))
            )
          const own = config.onEvent
          const onEvent =
            own === undefined ? offer : (event: Executor.TurnEvent) => Effect.andThen(own(event), offer(event))
          return runTurn(binding, history, { ...config, onEvent }).pipe(Effect.andThen(Queue.end(queue)))
        },
        { bufferSize, strategy: "suspend" }
      )
    )
  )

/**
 * Gives up on the task's open turn behind the gate (the binding is checked
 * like every entry's; no writer is needed, since nothing private is
 * written): journals `TurnAbandoned` with `reason`, so the next turn can
 * open. Fails `NoOpenTurn` when no turn is open, and `InvalidInput` (field
 * `reason`) when the reason is not a non-empty string.
 *
 * @since 0.1.0
 * @category entries
 */
export const abandonTurn = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding, reason: string) {
  yield* EntryGate.admitBinding(binding, "AbandonTurn")
  const decoded = yield* decodeReason(reason)
  const journal = yield* Journal
  return yield* journal.abandonTurn(decoded)
}, Observability.withSpan("TaskExecution.abandonTurn"))

const decodeReason = InvalidInput.decode(
  Schema.String.check(Schema.makeFilter((text: string) => text.length > 0, { expected: "a non-empty string" })),
  "TaskExecution.abandonTurn",
  "reason"
)

/**
 * Resumes the task's open turn behind the gate.
 *
 * @since 0.1.0
 * @category entries
 */
export const resumeTurn = <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>
): Effect.Effect<Executor.TurnOutcome, TurnError<E>, TurnRequirements<R>> =>
  inferred.resumeTurn(binding, history, config)

/**
 * One model step behind the gate, for harnesses that drive steps themselves.
 *
 * @since 0.1.0
 * @category entries
 */
export const modelStep = <E = never, R = never>(...step: StepArguments<E, R, History.History>) =>
  gatedStep(step, "ModelStep", "TaskExecution.modelStep", Executor.modelStep)

/**
 * One tool dispatch behind the gate, with the same hooks a turn gets
 * (offload of large results included).
 *
 * @since 0.1.0
 * @category entries
 */
export const dispatchTools = <E = never, R = never>(...step: StepArguments<E, R, ReadonlyArray<ToolCallPart>>) =>
  gatedStep(step, "ToolDispatch", "TaskExecution.dispatchTools", Executor.dispatchTools)

/**
 * The calls of one step dispatched under approvals behind the gate, with
 * the hooks a turn gets: `Executor.dispatchStep` (calls that need the
 * host's approval are journaled `ApprovalRequested` and nothing runs until
 * every one is decided; decided calls run, or give the model the `Rejected`
 * error result). For hosts that drive steps themselves and honour approvals,
 * as the task workflow does.
 *
 * @since 0.1.0
 * @category entries
 */
export const dispatchStep = <E = never, R = never>(...step: StepArguments<E, R, ReadonlyArray<ToolCallPart>>) =>
  gatedStep(step, "ToolDispatch", "TaskExecution.dispatchStep", Executor.dispatchStep)
