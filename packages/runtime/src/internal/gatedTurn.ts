/**
 * The gate of the stock executor's entries: a turn's configuration checked,
 * the binding verified, the hooks assembled (the one assembly,
 * `taskHooks.ts`), the library's read tool registered, and, for a durable
 * turn, the transcript store made; then every gated entry runs the
 * executor's own step with the journal's events handed to `onEvent`.
 */
import type * as Unauthorized from "@tessera/core/Unauthorized"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as EntryGate from "../EntryGate.ts"
import type * as Executor from "../Executor.ts"
import { Journal, type JournalIoError, type JournalSequenceError } from "../Journal.ts"
import type { Model } from "../Model.ts"
import * as Observability from "../Observability.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import type * as ToolResults from "../ToolResults.ts"
import * as Transcript from "../Transcript.ts"
import type { CompactionError } from "./compactionHooks.ts"
import type { EntryTurnEvent } from "./entryFacts.ts"
import { JournalTap } from "./journalTap.ts"
import { writerFor } from "./offload.ts"
import { type GatedRequirements, taskHooks } from "./taskHooks.ts"
import { checkExecution } from "./turnConfig.ts"

/**
 * A turn's configuration: the stock executor's, plus optional offload of
 * large tool results, and the hard limit on a result kept inline (UTF-8
 * bytes; see `ToolResults`). The limit defaults to
 * `ToolResults.defaultInlineBytes` of the binding's policy (none when compaction
 * is disabled). With offload, the turn's tools also offer the
 * `ToolResults.readTool` under `offload.readTool` (see
 * `ToolResults.OffloadConfig.registerReadTool`), so the tool a pointer
 * names exists; a tool of that name in `tools` is kept instead.
 *
 * Every entry of this module checks it first, as `Executor.TurnConfig`
 * says, and also fails `InvalidInput` for an `offload` that is not an
 * `OffloadConfig` (a negative or non-numeric `threshold`, an empty
 * `readTool`, a `destination` other than `Private` or `Output`), an
 * `inlineLimit` that is not an integer of at least 0, or a `durable` that is
 * not a boolean.
 *
 * @example
 * ```ts
 * import { TaskExecution, Tool } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * const fetchReport = Tool.make({
 *   name: "fetch_report",
 *   description: "Fetches a report by name",
 *   input: Schema.Struct({ name: Schema.String }),
 *   handler: ({ name }) => Effect.succeed(`Report ${name}: all systems nominal`)
 * })
 *
 * export const config: TaskExecution.ExecutionConfig = {
 *   tools: Tool.registry(fetchReport),
 *   maxSteps: 6,
 *   // Store the transcript, so the turn can be resumed from disk alone (needs the private writer).
 *   durable: true,
 *   // Results over 4 KiB go to the private volume; the model reads them back with `read_artifact`.
 *   offload: { threshold: 4_096, readTool: "read_artifact", destination: "Private" }
 * }
 * ```
 *
 * @since 0.1.0
 * @category models
 */
export interface ExecutionConfig<E = never, R = never> extends Executor.TurnConfig<E, R> {
  readonly offload?: ToolResults.OffloadConfig
  readonly inlineLimit?: number
  /**
   * Store the turn's transcript (see `Transcript`) so it can be resumed, or
   * a next turn started, from disk alone (`TaskExecution.resume`,
   * `TaskExecution.restoreHistory`). Needs the task's private writer, resolved at
   * the gate (`Unauthorized` before anything is sent or written when there
   * is none). Costs one durable record write per response and per tool
   * result, plus one per history rewrite. Default `false`.
   */
  readonly durable?: boolean
}

const recorderOf = (transcript: Transcript.TranscriptStore): Executor.TurnRecorder<Transcript.TranscriptError> => ({
  opened: (history) =>
    Effect.flatMap(transcript.store(history), (stored) =>
      transcript.writeBody({ _tag: "Opened", history: stored, redacted: false })
    ),
  rewritten: (before, after) =>
    Effect.flatMap(Transcript.rewriteRecord(transcript, before, after), transcript.writeBody),
  // `writeBody`: a record the redactor changed is journaled with its stored digest, which a resume checks it against.
  responded: (response) =>
    transcript.writeBody({ _tag: "Responded", text: response.text, toolCalls: response.toolCalls, redacted: false }),
  resulted: (result) => transcript.writeBody({ _tag: "Resulted", result, redacted: false })
})

/** The transcript store of a bound task, on its private writer's volume (admitted for the journal in scope). */
export const transcriptOf = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  armed: Option.Option<PrivateSummaries.PrivateWriterCapability>
) {
  const capability = yield* writerFor(
    binding.context,
    entry,
    "a durable turn stores its transcript with the private writer",
    armed
  )
  const journal = yield* Journal
  return yield* Transcript.make(Option.some(journal)).pipe(PrivateSummaries.provide(capability))
})

/**
 * What the gate's own hooks (compaction, offload) add to a turn's errors.
 *
 * @since 0.1.0
 * @category models
 */
export type GatedError =
  | CompactionError
  | JournalIoError
  | JournalSequenceError
  | Unauthorized.Unauthorized
  | Transcript.TranscriptError

/**
 * Every way a turn entry (`TaskExecution.runTurn`, `streamTurn`,
 * `resumeTurn`) can fail: the stock executor's own errors
 * (`Executor.ExecutorError`: a configuration or history the entry refuses
 * as `InvalidInput`, the model's `ModelError`, the journal's, the step
 * limit), what the gate adds ({@link GatedError}: refusal `Unauthorized`,
 * a writer that does not resolve, compaction's and the transcript's
 * errors), and `E`, what the host's own hooks fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnError<E = never> = Executor.ExecutorError | GatedError | PrivateSummaries.ResolveError | E

/**
 * Every service a turn entry needs: the `Model` it asks, the task's
 * `Journal`, what the gate's own hooks need ({@link GatedRequirements}:
 * compaction's and offload's file system, paths and durable files), and
 * `R`, what the host's tools and hooks need. Providing a harness's layer
 * and a `Model` leaves `R`.
 *
 * @since 0.1.0
 * @category models
 */
export type TurnRequirements<R = never> = Model | Journal | GatedRequirements | R

/**
 * The gated configuration of an entry's turn, and the transcript store of a
 * durable one. Before the gate, `config` is checked (a wrong shape is named
 * here instead of dying where the hooks are built or mid-turn); `admitted`
 * is the gate's admission when the entry ran the gate already.
 */
export const gate = Effect.fnUntraced(function* <E, R>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  config: ExecutionConfig<E, R>,
  admitted?: EntryGate.Admission
) {
  yield* Effect.fromResult(checkExecution(`TaskExecution (${entry} entry)`, config))
  const assembled = yield* taskHooks(binding, entry, {
    name: entry,
    tools: { _tag: "Registry", registry: config.tools },
    offload: config.offload,
    inlineLimit: config.inlineLimit,
    hooks: config.hooks,
    admitted
  })
  const capability = assembled.capability
  const tools = Option.getOrElse(assembled.tools, () => config.tools)
  const transcript =
    config.durable === true ? Option.some(yield* transcriptOf(binding, entry, capability)) : Option.none()
  const gated: Executor.TurnConfig<E | GatedError, R | GatedRequirements> = {
    tools,
    maxSteps: config.maxSteps,
    hooks: assembled.hooks,
    ...(config.timeouts === undefined ? {} : { timeouts: config.timeouts }),
    ...(config.onEvent === undefined ? {} : { onEvent: config.onEvent }),
    ...(Option.isSome(transcript)
      ? { recorder: recorderOf(transcript.value) }
      : config.recorder === undefined
        ? {}
        : { recorder: config.recorder })
  }
  return { config: gated, transcript }
})

/** The gated configuration of an entry's turn (see {@link gate}). */
export const withGate = <E, R>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  config: ExecutionConfig<E, R>,
  admitted?: EntryGate.Admission
) => Effect.map(gate(binding, entry, config, admitted), (gated) => gated.config)

/**
 * Hands `onEvent` the journal entries that become turn events (the table of
 * entry facts says which) as the hooks write them, so every gated entry's
 * `onEvent` sees every event, not only a streamed turn's.
 */
export const withJournalEvents =
  (onEvent: Executor.TurnConfig["onEvent"]) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    onEvent === undefined
      ? self
      : Effect.provideService(self, JournalTap, (entry) => onEvent({ _tag: entry._tag, entry } as EntryTurnEvent))

/**
 * `run` on the gated configuration of `config` for `entry`, with the
 * journal's events handed to `config.onEvent`, as the entry's span `span`:
 * what every turn and step entry of the stock executor does.
 */
export const gatedRun = <E, R, A, RunError, RunRequirements>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  config: ExecutionConfig<E, R>,
  span: string,
  run: (
    gated: Executor.TurnConfig<E | GatedError, R | GatedRequirements>
  ) => Effect.Effect<A, RunError, RunRequirements>
) =>
  Effect.flatMap(withGate(binding, entry, config), (gated) => run(gated).pipe(withJournalEvents(config.onEvent))).pipe(
    Observability.withSpan(span)
  )

/** What a step entry is given: the binding, the turn's configuration, where the step is, and its input. */
export type StepArguments<E, R, Input> = [
  binding: EntryGate.TaskBinding,
  config: ExecutionConfig<E, R>,
  context: Executor.StepContext,
  input: Input
]

/** One of the executor's steps, `run`, as a gated entry (see {@link gatedRun}). */
export const gatedStep = <E, R, Input, A, StepError, StepRequirements>(
  [binding, config, context, input]: StepArguments<E, R, Input>,
  entry: EntryGate.EntryPoint,
  span: string,
  run: (
    gated: Executor.TurnConfig<E | GatedError, R | GatedRequirements>,
    context: Executor.StepContext,
    input: Input
  ) => Effect.Effect<A, StepError, StepRequirements>
) => gatedRun(binding, entry, config, span, (gated) => run(gated, context, input))
