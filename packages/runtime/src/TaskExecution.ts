/**
 * Running a bound task: the stock executor behind the entry gate, with
 * compaction when the policy arms it, and the public summary entries.
 *
 * Every function here runs {@link EntryGate.verify} (or resolves the
 * private writer, for summaries) before it sends a model request or writes
 * a journal entry, so a task that needs a writer and has none fails
 * `Unauthorized` having cost nothing.
 *
 * @since 0.1.0
 */
import * as Digest from "@tessera/core/Digest"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Unauthorized from "@tessera/core/Unauthorized"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Compaction from "./Compaction.ts"
import * as EntryGate from "./EntryGate.ts"
import * as Executor from "./Executor.ts"
import * as History from "./History.ts"
import { warnTaskOverLimit } from "./internal/compacting.ts"
import { decodePolicy } from "./internal/compactionPolicy.ts"
import { measureRequest } from "./internal/digest.ts"
import type { EntryTurnEvent } from "./internal/entryFacts.ts"
import { JournalTap } from "./internal/journalTap.ts"
import { targetFor } from "./internal/offload.ts"
import { summarySession } from "./internal/summarySession.ts"
import { checkExecution, checkHooks } from "./internal/turnConfig.ts"
import type { JournalIoError, JournalSequenceError } from "./Journal.ts"
import { awaitingApproval, Journal, NoOpenTurn, openTurn, readEntries } from "./Journal.ts"
import type { Entry } from "./JournalEntry.ts"
import type { ToolCallPart, ToolSpec } from "./Model.ts"
import * as Observability from "./Observability.ts"
import * as PrivateStaging from "./PrivateStaging.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"
import * as ToolResults from "./ToolResults.ts"
import * as Transcript from "./Transcript.ts"

const decodeOperation = Schema.decodeUnknownSync(Ids.OperationId)

/**
 * The summary operation of a turn: `<task>-<kind><turn>`, so summaries of
 * different tasks and turns sharing one private volume never collide. One
 * to one over task, kind and turn: a task id longer than 100 characters
 * (the whole would not be an identifier) keeps its first 80 characters
 * followed by `_` and 16 hex digits of its SHA-256, never just a prefix
 * that another task may share.
 *
 * @since 0.1.0
 * @category naming
 */
export const turnOperation = (task: Ids.TaskId, turn: number, kind = "t"): Effect.Effect<Ids.OperationId> =>
  task.length <= 100
    ? Effect.succeed(decodeOperation(`${task}-${kind}${turn}`))
    : Effect.map(Digest.sha256(new TextEncoder().encode(task)), (digest) =>
        decodeOperation(`${task.slice(0, 80)}_${digest.slice(0, 16)}-${kind}${turn}`)
      )

/**
 * What compaction can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type CompactionError = Effect.Error<ReturnType<typeof Compaction.compact>>

/**
 * What compaction needs besides the capability it is given.
 *
 * @since 0.1.0
 * @category models
 */
export type CompactionRequirements = Exclude<
  Effect.Services<ReturnType<typeof Compaction.compact>>,
  PrivateSummaries.PrivateSummaries
>

/**
 * Options of {@link compactionHooks}.
 *
 * @since 0.1.0
 * @category hooks
 */
export interface CompactionHooksOptions {
  /**
   * The tool specs the turn's requests carry. With them, hooks made for a
   * turn that already has answered requests (a resume, or a fresh set of
   * hooks mid-turn) read the provider's count from the journal under
   * `reportedTokens`; without them they estimate until the provider
   * reports again. A function is asked when the hooks first need them (a
   * foreign loop learns its tools request by request); `undefined` from it
   * means not known yet.
   */
  readonly tools?: ReadonlyArray<ToolSpec> | (() => ReadonlyArray<ToolSpec> | undefined) | undefined
}

/**
 * The hooks that compact history before every model step (mid-turn too)
 * under a `Threshold` policy, publishing through `capability`. The
 * capability is admitted against `journal` when the hooks are made (minted,
 * minted for the journal's task on its store, volume unchanged), so a
 * foreign capability is refused before the turn sends anything.
 *
 * They remember the last request the model answered: no tool result it did
 * not carry is summarized (see `Compaction.compact`), whatever was queued after
 * the result. Under the `reportedTokens` measure they keep the input tokens
 * the provider reported for it and measure the next request from it. Hooks
 * made for a turn that already has answered requests (a resume, durable or
 * with the caller's own history; a fresh set of hooks mid-turn) take that
 * count from the journal when `options.tools` is given: the last answered
 * request's `ResponseReceived.usage.inputTokens`, applied to the prefix of
 * the history they are first handed whose digest, with `options.tools`, is
 * that request's `RequestDispatched.sha256` (the very parts it covered, so
 * the count is used exactly where the uninterrupted turn used it). When no
 * prefix has that digest (a caller's history that differs from what was
 * sent, a durable turn whose records the redactor changed, a journal
 * written before bodies were measured on their own) or the journal cannot
 * be read, the request is estimated, as it is when the provider reports
 * nothing.
 *
 * @since 0.1.0
 * @category hooks
 */
export const compactionHooks = (
  policy: Compaction.Threshold,
  capability: PrivateSummaries.PrivateWriterCapability,
  journal: Journal["Service"],
  options: CompactionHooksOptions = {}
): Effect.Effect<Executor.Hooks<CompactionError, CompactionRequirements>, PrivateSummaries.ResolveError, Path.Path> =>
  PrivateSummaries.admit("TaskExecution.compactionHooks", Option.some(journal)).pipe(
    PrivateSummaries.provide(capability),
    Effect.map((admitted) => {
      const warn = warnTaskOverLimit(journal, policy)
      // The last request of these hooks' turn the model answered, and the provider's count for it.
      let sent: Compaction.SentRequest | undefined
      let reported: Compaction.ReportedInput | undefined
      // Whether the journal was consulted, or a step answered here made it unnecessary.
      let known = policy.measure !== "reportedTokens" || options.tools === undefined
      const specs = options.tools
      const toolsNow = typeof specs === "function" ? specs : () => specs
      const recall = (history: History.History): Effect.Effect<void, never, CompactionRequirements> => {
        const tools = known ? undefined : toolsNow()
        return tools === undefined
          ? Effect.void
          : Effect.map(journaledReport(journal, history, tools), (found) => {
              known = true
              if (found === undefined) return
              reported = found
              sent = { parts: found.parts }
            })
      }
      const hooks: Executor.Hooks<CompactionError, CompactionRequirements> = {
        afterModelStep: (_context, outcome) =>
          Effect.sync(() => {
            known = true
            sent = { parts: outcome.request.parts }
            const inputTokens = outcome.response.usage?.inputTokens
            reported = inputTokens === undefined ? undefined : { parts: outcome.request.parts, inputTokens }
          }),
        beforeModelStep: (context, history) =>
          Effect.andThen(
            Effect.andThen(recall(history), warn(history, context)),
            Effect.flatMap(turnOperation(context.task, context.turn), (operation) =>
              Compaction.compact({
                history,
                policy,
                operation,
                step: context.step,
                journal: Option.some(journal),
                turn: context.turn,
                ...(reported === undefined ? {} : { reported }),
                ...(sent === undefined ? {} : { sent })
              })
            )
          ).pipe(PrivateSummaries.provide(admitted))
      }
      return hooks
    })
  )

/**
 * The provider's count for the open turn's last answered request, from the
 * journal, with the prefix of `history` it covered: the prefix whose digest
 * (sent with `tools`) is the one `RequestDispatched` recorded. `undefined`
 * when the turn has no answered request, that answer reported no input
 * tokens, no prefix has that digest, or the journal cannot be read (the
 * estimate is the fallback, and the journal's next append reports a broken
 * journal).
 */
const journaledReport = (
  journal: Journal["Service"],
  history: History.History,
  tools: ReadonlyArray<ToolSpec>
): Effect.Effect<Compaction.ReportedInput | undefined, never, CompactionRequirements> =>
  Effect.gen(function* () {
    const open = openTurn(yield* journal.state)
    if (Option.isNone(open) || open.value.steps === 0) return undefined
    const path = yield* Path.Path
    const entries = yield* readEntries({ folder: path.dirname(journal.file), task: journal.task })
    let dispatched: Extract<Entry, { readonly _tag: "RequestDispatched" }> | undefined
    let answered: { readonly parts: number; readonly sha256: string; readonly inputTokens?: number } | undefined
    for (const entry of entries) {
      if (!("turn" in entry) || entry.turn !== open.value.turn) continue
      if (entry._tag === "RequestDispatched") dispatched = entry
      else if (entry._tag === "ResponseReceived" && dispatched !== undefined && dispatched.step === entry.step) {
        const inputTokens = entry.usage?.inputTokens
        answered = {
          parts: dispatched.parts,
          sha256: dispatched.sha256,
          ...(inputTokens === undefined ? {} : { inputTokens })
        }
      }
    }
    if (answered?.inputTokens === undefined) return undefined
    const parts = History.toParts(history)
    if (parts.length < answered.parts) return undefined
    const prefix = parts.slice(0, answered.parts)
    const measured = yield* measureRequest({ parts: prefix, tools })
    return measured.sha256 === answered.sha256 ? { parts: prefix, inputTokens: answered.inputTokens } : undefined
  }).pipe(Effect.catch(() => Effect.succeed(undefined)))

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
   * a next turn started, from disk alone ({@link resume},
   * {@link restoreHistory}). Needs the task's private writer, resolved at
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
const transcriptOf = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  armed: Option.Option<PrivateSummaries.PrivateWriterCapability>
) {
  const capability = Option.isSome(armed)
    ? armed.value
    : yield* PrivateSummaries.resolve(binding.context).pipe(
        Effect.mapError((error) =>
          error._tag === "Unauthorized"
            ? new Unauthorized.Unauthorized({
                reason: error.reason,
                detail: `${entry}: a durable turn stores its transcript with the private writer, but ${error.detail}`,
                task: binding.context.task
              })
            : error
        )
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
 * What the gate's own hooks add to a turn's requirements.
 *
 * @since 0.1.0
 * @category models
 */
export type GatedRequirements = CompactionRequirements | ToolResults.OffloadRequirements

const withGate = <E, R>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  config: ExecutionConfig<E, R>,
  resolved: Option.Option<PrivateSummaries.PrivateWriterCapability> = Option.none()
) => Effect.map(gate(binding, entry, config, resolved), (gated) => gated.config)

/**
 * What {@link gatedHooks} assembles a turn's hooks from, besides the
 * binding's policy: `offload`, `inlineLimit` and `hooks` as in
 * {@link ExecutionConfig}; `tools`, the specs the turn's requests carry (so
 * hooks made mid-turn find the provider's last count, see
 * {@link CompactionHooksOptions}); `readBy`, which calls the library's own
 * `ToolResults.readTool` answered (offload leaves their results alone, see
 * `ToolResults.sparing`); `name`, the caller named in refusals.
 *
 * @since 0.1.0
 * @category hooks
 */
export interface GatedHooksOptions<E = never, R = never> {
  readonly offload?: ToolResults.OffloadConfig | undefined
  readonly inlineLimit?: number | undefined
  readonly hooks?: Executor.Hooks<E, R> | undefined
  readonly tools?: CompactionHooksOptions["tools"]
  readonly readBy?: ((context: Executor.ToolContext) => boolean) | undefined
  readonly name?: string | undefined
}

/**
 * What the hooks {@link gatedHooks} assembles can fail with, besides the
 * caller's own hooks' errors: compaction's, offload's and the journal's.
 *
 * @since 0.1.0
 * @category hooks
 */
export type GatedHooksError = CompactionError | JournalIoError | JournalSequenceError | PrivateSummaries.ResolveError

/**
 * A turn's hooks as the gate assembles them, with the private writer the
 * gate resolved (none when the binding needs none).
 *
 * @since 0.1.0
 * @category hooks
 */
export interface GatedHooks<E = never, R = never> {
  readonly hooks: Executor.Hooks<E | GatedHooksError, R | GatedRequirements>
  readonly capability: Option.Option<PrivateSummaries.PrivateWriterCapability>
}

/**
 * The one assembly of a bound task's hooks, for every door: the stock
 * executor's entries here and every adapter's foreign loop get their hooks
 * from it, so what holds for one holds for all. The gate runs first
 * (`EntryGate.verify` for `entry`: a forged or unarmed binding is refused
 * `Unauthorized` having sent and written nothing); then, in order,
 * compaction under a `Threshold` policy (its capability admitted against
 * the task's journal), offload when `offload` is given (its target resolved
 * and admitted; results `readBy` answered are left alone), the caller's
 * `hooks`, and last the inline limit (`inlineLimit`, by default
 * `ToolResults.defaultInlineBytes` of the policy), so the limit holds for whatever
 * offload and the caller's hooks leave inline. Before anything, `offload`
 * and `inlineLimit` are checked as {@link ExecutionConfig}'s are
 * (`InvalidInput` naming the field).
 *
 * @since 0.1.0
 * @category hooks
 */
export const gatedHooks = <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  options: GatedHooksOptions<E, R> = {}
) =>
  Effect.andThen(
    // Before the gate: a door handing in the wrong shape (plain JavaScript) is named here, not mid-turn.
    Effect.fromResult(checkHooks(options.name ?? `TaskExecution.gatedHooks (${entry} entry)`, options)),
    Effect.flatMap(EntryGate.verify(binding, entry), (capability) =>
      assembleHooks(binding, options.name ?? entry, capability, options)
    )
  )

const assembleHooks = Effect.fnUntraced(function* <E, R>(
  binding: EntryGate.TaskBinding,
  name: string,
  capability: Option.Option<PrivateSummaries.PrivateWriterCapability>,
  options: GatedHooksOptions<E, R>
) {
  const journal = yield* Journal
  const target =
    options.offload === undefined
      ? Option.none()
      : Option.some(yield* targetFor(binding.context, name, options.offload, capability))
  const hooks: Array<Executor.Hooks<E | GatedHooksError, R | GatedRequirements>> = []
  if (binding.policy._tag === "Threshold" && Option.isSome(capability)) {
    hooks.push(
      yield* compactionHooks(
        binding.policy,
        capability.value,
        journal,
        options.tools === undefined ? {} : { tools: options.tools }
      )
    )
  }
  if (options.offload !== undefined && Option.isSome(target)) {
    const offload = yield* ToolResults.offloadHooks(options.offload, target.value, journal)
    hooks.push(options.readBy === undefined ? offload : ToolResults.sparing(offload, options.readBy))
  }
  if (options.hooks !== undefined) hooks.push(options.hooks)
  const inlineBytes = options.inlineLimit ?? ToolResults.defaultInlineBytes(binding.policy)
  if (inlineBytes !== undefined) hooks.push(ToolResults.inlineLimitHooks(inlineBytes))
  const gated: GatedHooks<E, R> = { hooks: Executor.composeHooks(...hooks), capability }
  return gated
})

const gate = Effect.fnUntraced(function* <E, R>(
  binding: EntryGate.TaskBinding,
  entry: EntryGate.EntryPoint,
  config: ExecutionConfig<E, R>,
  resolved: Option.Option<PrivateSummaries.PrivateWriterCapability> = Option.none()
) {
  // Before the gate: a wrong shape is named here instead of dying where the hooks are built or mid-turn.
  yield* Effect.fromResult(checkExecution(`TaskExecution (${entry} entry)`, config))
  // An entry that already resolved the writer has passed the gate's question.
  const capability =
    Option.isSome(resolved) && binding.policy._tag === "Threshold"
      ? yield* Effect.as(EntryGate.admitBinding(binding, entry), resolved)
      : yield* EntryGate.verify(binding, entry)
  const readTool =
    config.offload !== undefined &&
    config.offload.registerReadTool !== false &&
    !config.tools.tools.has(config.offload.readTool)
      ? Option.some(ToolResults.readTool(binding.context, { name: config.offload.readTool }))
      : Option.none()
  // Pointers name `readTool`; unless the host opts out, the turn offers a tool of that name (the host's own wins).
  const tools = Option.isSome(readTool) ? ToolResults.registerUnlessNamed(config.tools, readTool.value) : config.tools
  const { hooks } = yield* assembleHooks(binding, entry, capability, {
    offload: config.offload,
    inlineLimit: config.inlineLimit,
    hooks: config.hooks,
    tools: tools.specs,
    // Every call of that name is the library's tool: the registry holds no other under it.
    readBy: Option.isSome(readTool) ? (context) => context.call.name === readTool.value.name : undefined
  })
  const transcript =
    config.durable === true ? Option.some(yield* transcriptOf(binding, entry, capability)) : Option.none()
  const gated: Executor.TurnConfig<E | GatedError, R | GatedRequirements> = {
    tools,
    maxSteps: config.maxSteps,
    hooks,
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

/**
 * Runs a turn for a bound task: the gate first, then the stock turn, with
 * compaction hooks when the policy is `Threshold`.
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
export const runTurn = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>
) {
  const gated = yield* withGate(binding, "Turn", config)
  return yield* Executor.runTurn(gated, history).pipe(withJournalEvents(config.onEvent))
}, Observability.withSpan("TaskExecution.runTurn"))

/**
 * Hands `onEvent` the journal entries that become turn events (the table of
 * entry facts says which) as the hooks write them, so every gated entry's
 * `onEvent` sees every event, not only a streamed turn's.
 */
const withJournalEvents =
  (onEvent: Executor.TurnConfig["onEvent"]) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    onEvent === undefined
      ? self
      : Effect.provideService(self, JournalTap, (entry) => onEvent({ _tag: entry._tag, entry } as EntryTurnEvent))

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
 * them in batches and the turn rarely waits for it to be scheduled (with 16,
 * a consumer reading every event added about 7% per step to the benchmark's
 * streamed turn, against the same turn observed without a buffer). Still a
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
): Stream.Stream<
  Executor.TurnEvent,
  Effect.Error<ReturnType<typeof runTurn<E, R>>> | InvalidInput.InvalidInput,
  Effect.Services<ReturnType<typeof runTurn<E, R>>>
> =>
  Stream.unwrap(
    Effect.map(decodeBufferSize(options.bufferSize ?? defaultStreamBuffer), (bufferSize) =>
      Stream.callback<
        Executor.TurnEvent,
        Effect.Error<ReturnType<typeof runTurn<E, R>>>,
        Effect.Services<ReturnType<typeof runTurn<E, R>>>
      >(
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
export const resumeTurn = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>
) {
  const gated = yield* withGate(binding, "ResumeTurn", config)
  return yield* Executor.resumeTurn(gated, history).pipe(withJournalEvents(config.onEvent))
}, Observability.withSpan("TaskExecution.resumeTurn"))

/**
 * What {@link resume} did: how the turn went on (answered, or awaiting
 * approvals), the calls that were in flight when the process died (run
 * again only when their tool is idempotent; otherwise awaiting the host's
 * approval, reason `InFlight`), and how many of the turn's earlier requests
 * were rebuilt and checked byte for byte against the journal's digests
 * (0 when redaction changed a record: see `Transcript`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Resumed extends Executor.Resumed {
  readonly verifiedRequests: number
}

/**
 * Resumes the task's open turn from disk alone: behind the gate (a durable
 * turn needs the private writer), reads the journal and the transcript,
 * rebuilds the turn's history (`Transcript.rebuild`, which checks every
 * response and result record against the journal's digests:
 * {@link Transcript.TranscriptRecordMismatch} otherwise), checks that every
 * request rebuilt for it has the digest the journal recorded
 * (`Transcript.verify`: {@link Transcript.TranscriptMismatch} otherwise),
 * both before anything is sent or written, and continues
 * (`Executor.resumeRebuilt`): a lost request is sent again from the
 * history it was built from, a call whose result was journaled never runs
 * again, a call in flight at the crash runs again only if its tool is
 * idempotent, and decided approvals take effect. The turn goes on durably
 * (`config.durable` is implied). Fails `NoOpenTurn` when no turn is open,
 * `TranscriptMissing` when the turn was not run durably.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { Compaction, History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("reports")
 *
 * const fetchReport = Tool.make({
 *   name: "fetch_report",
 *   description: "Fetches a report by name",
 *   input: Schema.Struct({ name: Schema.String }),
 *   handler: ({ name }) => Effect.succeed(`Report ${name}: all systems nominal`)
 * })
 * const config: TaskExecution.ExecutionConfig = { tools: Tool.registry(fetchReport), maxSteps: 6, durable: true }
 *
 * // One "process": the harness on the state folder, nothing kept in memory from an earlier one.
 * const inProcess = <A, E, R>(body: (binding: Parameters<typeof TaskExecution.resume>[0]) => Effect.Effect<A, E, R>) =>
 *   Effect.scoped(
 *     Effect.flatMap(LocalHarness.open({ stateDir: "/tmp/tessera-state", namespace: "durable", agent }), (harness) =>
 *       harness.withTask(task, body, { policy: Compaction.disabled })
 *     )
 *   )
 *
 * const program = Effect.gen(function* () {
 *   // Process 1: the second request fails; the turn stays open in the journal.
 *   yield* inProcess((binding) =>
 *     Effect.flip(TaskExecution.runTurn(binding, History.make([Model.text("user", "Check the report.")]), config)).pipe(
 *       Effect.provide(
 *         ScriptedModel.layer([
 *           Model.response({ toolCalls: [Model.toolCall("c1", "fetch_report", { name: "north" })] }),
 *           new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503" })
 *         ])
 *       )
 *     )
 *   )
 *   // Process 2: the turn is rebuilt from the journal and the transcript, checked, and continued.
 *   const resumed = yield* inProcess((binding) =>
 *     TaskExecution.resume(binding, config).pipe(
 *       Effect.provide(ScriptedModel.layer([Model.response({ text: "North: all systems nominal." })]))
 *     )
 *   )
 *   console.log(`${resumed.verifiedRequests} earlier request(s) checked; answer: ${resumed.outcome.text}`)
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category entries
 */
export const resume = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  config: ExecutionConfig<E, R>
) {
  const gated = yield* gate(binding, "ResumeTurn", { ...config, durable: true })
  const transcript = Option.getOrThrow(gated.transcript)
  const journal = yield* Journal
  const open = openTurn(yield* journal.state)
  if (Option.isNone(open)) return yield* new NoOpenTurn({ task: journal.task, operation: "resume" })
  const path = yield* Path.Path
  const entries = yield* readEntries({ folder: path.dirname(journal.file), task: journal.task })
  const rebuilt = yield* Transcript.rebuild(transcript, entries, open.value.turn)
  const verifiedRequests = yield* Transcript.verify(journal.task, rebuilt, gated.config.tools.specs)
  const resumed = yield* Executor.resumeRebuilt(gated.config, rebuilt).pipe(withJournalEvents(config.onEvent))
  const outcome: Resumed = { ...resumed, verifiedRequests }
  return outcome
}, Observability.withSpan("TaskExecution.resume"))

/**
 * The task's conversation as the model last saw it, from disk alone: the
 * history after the last recorded content of its latest turn (closed,
 * abandoned or open), rebuilt from the journal and the transcript. `None`
 * when the task has no turn yet. To start a new turn, append the user's
 * next parts and call {@link runTurn} with `durable: true`. Needs the
 * private writer (read under the same capability that writes); sends and
 * writes nothing.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Option, Schema } from "effect"
 *
 * const noTools = Tool.make({
 *   name: "noop",
 *   description: "Does nothing",
 *   input: Schema.Struct({}),
 *   handler: () => Effect.succeed("")
 * })
 *
 * // A new process continues a task's conversation from the disk alone.
 * const nextTurn = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     stateDir: "/tmp/tessera-state",
 *     namespace: "durable",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *   })
 *   return yield* harness.withTask(Schema.decodeUnknownSync(Ids.TaskId)("reports"), (binding) =>
 *     Effect.gen(function* () {
 *       // `None` when the task has no turn yet.
 *       const earlier = yield* TaskExecution.restoreHistory(binding)
 *       const question = Model.text("user", "And the south report?")
 *       const history = Option.match(earlier, {
 *         onNone: () => History.make([question]),
 *         onSome: (restored) => History.append(restored, [question])
 *       })
 *       return yield* TaskExecution.runTurn(binding, history, { tools: Tool.registry(noTools), maxSteps: 4, durable: true })
 *     }).pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: "South: all systems nominal." })])))
 *   )
 * })
 *
 * Effect.runPromise(Effect.scoped(nextTurn).pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category entries
 */
export const restoreHistory = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding) {
  yield* EntryGate.admitBinding(binding, "ResumeTurn")
  const transcript = yield* transcriptOf(binding, "ResumeTurn", Option.none())
  const journal = yield* Journal
  const state = yield* journal.state
  const last = state.turns.at(-1)
  if (last === undefined) return Option.none<History.History>()
  const path = yield* Path.Path
  const entries = yield* readEntries({ folder: path.dirname(journal.file), task: journal.task })
  const rebuilt = yield* Transcript.rebuild(transcript, entries, last.turn)
  return Option.some(rebuilt.history)
}, Observability.withSpan("TaskExecution.restoreHistory"))

/**
 * The host's decision on a call awaiting approval: who or what decided
 * (`by`, a non-empty text), approved or not, and an optional note (a
 * rejection's note reaches the model in the call's error result).
 *
 * @since 0.1.0
 * @category models
 */
export interface Decision {
  readonly callId: string
  readonly approved: boolean
  readonly by: string
  readonly note?: string
}

const decodeDecision = InvalidInput.decode(
  Schema.Struct({
    callId: Schema.String,
    approved: Schema.Boolean,
    by: Schema.String.check(Schema.makeFilter((text: string) => text.length > 0, { expected: "a non-empty string" })),
    note: Schema.optionalKey(Schema.String)
  }),
  "TaskExecution.decide",
  "decision"
)

/**
 * The call is not awaiting approval in the task's open turn (no turn is
 * open, the id is unknown, or it was decided already). Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotAwaitingApproval extends Schema.TaggedError<NotAwaitingApproval>()("NotAwaitingApproval", {
  task: Schema.String,
  callId: Schema.String,
  awaiting: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `call ${this.callId} of task ${this.task} is not awaiting approval (awaiting: [${this.awaiting.join(", ")}])`
  }
}

/**
 * Records the host's decision on a call awaiting approval
 * (`ApprovalDecided`, with `by` and `note`), behind the gate. It takes
 * effect when the turn continues ({@link resume}, or {@link resumeTurn}
 * with the caller's history): an approved call runs, a rejected one gives
 * the model an error result saying who rejected it and why. Works in the
 * same process or after a restart (the journal holds the pending calls).
 * Fails `InvalidInput` (field `decision`) for a malformed decision and
 * {@link NotAwaitingApproval} for a call that is not waiting, having
 * written nothing.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * const deploy = Tool.make({
 *   name: "deploy",
 *   description: "Deploys a release to an environment",
 *   input: Schema.Struct({ environment: Schema.String }),
 *   // Staging deploys run at once; anything else waits for a person.
 *   needsApproval: ({ environment }) => environment !== "staging",
 *   handler: ({ environment }) => Effect.succeed(`deployed to ${environment}`)
 * })
 * const config: TaskExecution.ExecutionConfig = { tools: Tool.registry(deploy), maxSteps: 4, durable: true }
 *
 * const program = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     namespace: "release",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("deployer")
 *   })
 *   yield* harness.withTask(Schema.decodeUnknownSync(Ids.TaskId)("release-7"), (binding) =>
 *     Effect.gen(function* () {
 *       const paused = yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "Ship it.")]), config)
 *       if (paused._tag !== "AwaitingApproval") return paused.text
 *       // The decision is journaled with who made it; the next resume runs (or rejects) the call.
 *       yield* TaskExecution.decide(binding, { callId: "d1", approved: false, by: "bob", note: "release freeze" })
 *       const done = yield* TaskExecution.resume(binding, config)
 *       return done.outcome.text
 *     }).pipe(
 *       Effect.provide(
 *         ScriptedModel.layer([
 *           Model.response({ toolCalls: [Model.toolCall("d1", "deploy", { environment: "production" })] }),
 *           Model.response({ text: "The production deploy was rejected (release freeze); nothing was deployed." })
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
export const decide = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding, decision: Decision) {
  yield* EntryGate.admitBinding(binding, "Approve")
  const decoded = yield* decodeDecision(decision)
  const journal = yield* Journal
  const open = openTurn(yield* journal.state)
  const awaiting = Option.isSome(open) ? awaitingApproval(open.value) : []
  if (Option.isNone(open) || !awaiting.some((call) => call.callId === decoded.callId)) {
    return yield* new NotAwaitingApproval({
      task: journal.task,
      callId: decoded.callId,
      awaiting: awaiting.map((call) => call.callId)
    })
  }
  return yield* journal.append({
    _tag: "ApprovalDecided",
    turn: open.value.turn,
    step: open.value.steps,
    callId: decoded.callId,
    approved: decoded.approved,
    by: decoded.by,
    ...(decoded.note === undefined ? {} : { note: decoded.note })
  })
}, Observability.withSpan("TaskExecution.decide"))

/**
 * One model step behind the gate, for harnesses that drive steps themselves.
 *
 * @since 0.1.0
 * @category entries
 */
export const modelStep = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  config: ExecutionConfig<E, R>,
  context: Executor.StepContext,
  history: History.History
) {
  const gated = yield* withGate(binding, "ModelStep", config)
  return yield* Executor.modelStep(gated, context, history).pipe(withJournalEvents(config.onEvent))
}, Observability.withSpan("TaskExecution.modelStep"))

/**
 * One tool dispatch behind the gate, with the same hooks a turn gets
 * (offload of large results included).
 *
 * @since 0.1.0
 * @category entries
 */
export const dispatchTools = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  config: ExecutionConfig<E, R>,
  context: Executor.StepContext,
  calls: ReadonlyArray<ToolCallPart>
) {
  const gated = yield* withGate(binding, "ToolDispatch", config)
  return yield* Executor.dispatchTools(gated, context, calls).pipe(withJournalEvents(config.onEvent))
}, Observability.withSpan("TaskExecution.dispatchTools"))

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
export const dispatchStep = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  config: ExecutionConfig<E, R>,
  context: Executor.StepContext,
  calls: ReadonlyArray<ToolCallPart>
) {
  const gated = yield* withGate(binding, "ToolDispatch", config)
  return yield* Executor.dispatchStep(gated, context, calls).pipe(withJournalEvents(config.onEvent))
}, Observability.withSpan("TaskExecution.dispatchStep"))

/**
 * Options of the summary entries. `policy` only shapes the summary requests
 * (piece size); whatever it is, the private writer is resolved first.
 *
 * @since 0.1.0
 * @category models
 */
export interface SummaryOptions {
  readonly operation?: Ids.OperationId
  readonly step?: number
  readonly policy?: Compaction.Policy
}

const decodeSummaryKey = InvalidInput.decode(
  Schema.Struct({
    operation: Schema.optionalKey(Ids.OperationId),
    step: Schema.optionalKey(PrivateStaging.StagingKey.fields.step)
  }),
  "TaskExecution summary entry",
  "options"
)

/**
 * A direct summary of `history`: resolves the private writer (independent of
 * any compaction policy), then journals its admission, asks the model (in
 * bounded pieces), and stages the scrubbed summary write-once.
 *
 * @since 0.1.0
 * @category entries
 */
export const summarize = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  history: History.History,
  options: SummaryOptions = {}
) {
  yield* EntryGate.admitBinding(binding, "Summary")
  const key = yield* decodeSummaryKey(options)
  const policy =
    options.policy === undefined ? binding.policy : yield* decodePolicy(options.policy, "TaskExecution.summarize")
  const journal = yield* Journal
  const state = yield* journal.state
  return yield* summarySession(binding, history, {
    key: {
      operation: key.operation ?? (yield* turnOperation(binding.context.task, state.entries, "summary")),
      step: key.step ?? 1
    },
    policy,
    entry: "Summary"
  })
}, Observability.withSpan("TaskExecution.summarize"))

/**
 * A summary-file turn paused for approvals: its answer, which would be the
 * summary, does not exist yet, so nothing was staged. The turn stays open:
 * decide the calls, then resume it.
 *
 * @since 0.1.0
 * @category errors
 */
export class SummaryFileTurnAwaitingApproval extends Schema.TaggedError<SummaryFileTurnAwaitingApproval>()(
  "SummaryFileTurnAwaitingApproval",
  { task: Schema.String, turn: Schema.Int, awaiting: Schema.Array(Schema.String) }
) {
  override get message(): string {
    return `the summary-file turn ${this.turn} of task ${this.task} is awaiting approval for [${this.awaiting.join(", ")}]; no summary was staged`
  }
}

/**
 * A summary-file turn: resolves the private writer first, runs a turn behind
 * the gate, and stages the turn's final answer as a summary file.
 *
 * @since 0.1.0
 * @category entries
 */
export const runSummaryFileTurn = Effect.fnUntraced(function* <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  history: History.History,
  config: ExecutionConfig<E, R>,
  options: SummaryOptions = {}
) {
  yield* EntryGate.admitBinding(binding, "SummaryFileTurn")
  const key = yield* decodeSummaryKey(options)
  const capability = yield* PrivateSummaries.resolve(binding.context)
  const gated = yield* withGate(binding, "SummaryFileTurn", config, Option.some(capability))
  const journal = yield* Journal
  const outcome = yield* Executor.runTurn(gated, history).pipe(withJournalEvents(config.onEvent))
  if (outcome._tag === "AwaitingApproval") {
    return yield* new SummaryFileTurnAwaitingApproval({
      task: binding.context.task,
      turn: outcome.turn,
      awaiting: outcome.awaiting.map((pending) => pending.call.id)
    })
  }
  const published = yield* Compaction.publish({
    key: {
      operation: key.operation ?? (yield* turnOperation(binding.context.task, outcome.turn, "file")),
      step: key.step ?? outcome.steps
    },
    summary: outcome.text,
    journal: Option.some(journal),
    turn: outcome.turn
  }).pipe(PrivateSummaries.provide(capability))
  return { outcome, published }
}, Observability.withSpan("TaskExecution.runSummaryFileTurn"))
