/**
 * A bound task driven by another framework's agent loop: the loop's
 * members, what it remembers between requests (the results reported
 * through it, the prefix its last summary covers, the summary requests'
 * cost), and its hooks, which come from the one assembly
 * (`taskHooks.ts`) as the stock executor's entries' do.
 */
import * as Digest from "@tessera/core/Digest"
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Ids from "@tessera/core/Ids"
import type * as InvalidInput from "@tessera/core/InvalidInput"
import type * as Unauthorized from "@tessera/core/Unauthorized"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import * as EntryGate from "../EntryGate.ts"
import type * as Executor from "../Executor.ts"
import type * as History from "../History.ts"
import {
  Journal,
  type JournalIoError,
  type JournalSequenceError,
  type NoOpenTurn,
  openTurn,
  type TurnAlreadyOpen,
  type TurnState,
  type TurnUnfinished
} from "../Journal.ts"
import * as Model from "../Model.ts"
import * as Observability from "../Observability.ts"
import type * as PrivateSummaries from "../PrivateSummaries.ts"
import type * as ToolResults from "../ToolResults.ts"
import type { CompactionError } from "./compactionHooks.ts"
import { makeRequestChain, measureRequest, rememberBody } from "./digest.ts"
import { makeReportedResults } from "./reportedResults.ts"
import * as Scrub from "./scrub.ts"
import { makeSummaryUsageCount, type SummaryUsage } from "./summaryUsage.ts"
import { taskHooks } from "./taskHooks.ts"
import { checkHooks } from "./turnConfig.ts"

/**
 * How a foreign loop treats its task: `offload` is the runtime's own
 * `ToolResults.OffloadConfig` (threshold, read tool named in the
 * pointer, destination; no offload without it); compaction follows the
 * binding's policy. `entry` names the adapter in refusals. The loop's hooks
 * are the stock executor's (the one assembly of a task's hooks):
 * compaction, offload, then the inline limit (`inlineLimit`).
 *
 * @since 0.1.0
 * @category foreign loop
 */
export interface ForeignLoopOptions {
  readonly offload?: ToolResults.OffloadConfig
  /**
   * The most UTF-8 bytes of a tool result kept inline, as
   * `TaskExecution.ExecutionConfig.inlineLimit` (by default the policy's
   * piece limit, none when compaction is disabled).
   */
  readonly inlineLimit?: number
  readonly entry?: string
}

/**
 * The library's read tool (`ToolResults.readTool`) as a foreign loop offers it: `spec` for
 * the adapter's framework, and `run`, which answers one call with the
 * tool's bounded output (a refusal becomes an error result naming why).
 *
 * @since 0.1.0
 * @category foreign loop
 */
export interface ForeignReadTool {
  readonly spec: Model.ToolSpec
  readonly run: (call: Model.ToolCallPart) => Effect.Effect<Model.ToolResultPart>
}

/**
 * A request was dispatched that {@link ForeignLoop.prepare} did not
 * prepare, or, before any request was dispatched, a second request was
 * prepared while the first never was, or a tool result arrived for a call
 * no journaled response asked for: the adapter's loop is wired only in
 * part (for instance Pi's `transformContext` without the `streamFn` that
 * journals the request). Raised before the request or the result is
 * journaled or sent. Once a request was dispatched, a prepared request the
 * loop gave up on (its own conversion failed) is simply replaced by the
 * next one.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export class LoopOutOfOrder extends Schema.TaggedError<LoopOutOfOrder>()("LoopOutOfOrder", {
  task: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `the foreign loop of task ${this.task} is wired in part: ${this.detail}`
  }
}

/**
 * The journal refused an entry.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export type JournalError = JournalIoError | JournalSequenceError

/**
 * What a foreign loop's steps can fail with: the gate's refusal, the
 * journal's errors, compaction's and offload's, and {@link LoopOutOfOrder}.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export type ForeignLoopError =
  | Unauthorized.Unauthorized
  | JournalError
  | TurnAlreadyOpen
  | NoOpenTurn
  | TurnUnfinished
  | CompactionError
  | PrivateSummaries.ResolveError
  | Model.ModelError
  | LoopOutOfOrder

/**
 * What making a foreign loop ({@link foreignLoop}) can fail with: options
 * it refuses (`InvalidInput`), and the gate's refusal or a private writer
 * that does not resolve (`PrivateSummaries.ResolveError`). A loop made
 * fails only in its steps ({@link ForeignLoopError}).
 *
 * @since 0.1.0
 * @category foreign loop
 */
export type ForeignLoopOpenError = InvalidInput.InvalidInput | PrivateSummaries.ResolveError

/**
 * What the platform must provide to {@link foreignLoop}: the bound task's journal,
 * and the files the runtime writes through. They are captured once; the
 * loop's members need nothing.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export type ForeignLoopRequirements = Journal | FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles

/**
 * One task's foreign loop: a bound task driven by another framework's agent
 * loop (the Vercel AI SDK's `generateText`/`streamText`, Effect AI's
 * `LanguageModel` and `Chat`, Pi's agent core): the loop is theirs, the
 * guarantees are Tessera's. An adapter makes one per task
 * ({@link foreignLoop}) and calls it at the points every such loop has:
 * before a model request ({@link ForeignLoop.prepare}, then
 * {@link ForeignLoop.dispatch}), when the answer or the failure arrives
 * ({@link ForeignLoop.receive}, {@link ForeignLoop.fail}), and when a tool
 * result comes back ({@link ForeignLoop.toolResult}).
 *
 * - It is made only from a bound task (`EntryGate.TaskBinding`), never from
 *   a folder: {@link foreignLoop} runs the gate for `Turn`, resolves the private
 *   writer when compaction or private offload needs it and admits it
 *   against the journal. A binding that needs a writer and has none fails
 *   `Unauthorized` in {@link foreignLoop}, so an adapter refuses before its loop
 *   can send a request, write a journal byte or a file.
 * - The journal gets what the stock executor writes for a turn:
 *   `TurnOpened` (or `TurnResumed` when the turn's last request never got
 *   an answer: a crash, an abandoned stream), `RequestDispatched` (the
 *   request measured as the executor measures it), `ResponseReceived`
 *   (usage and finish reason included) or `ModelFailed`,
 *   `ToolCalled`/`ToolResulted` (and `ArtifactOffloaded`) for each call,
 *   the summary entries of compaction, and `TurnClosed` once a response
 *   asks for no tool.
 * - Offloaded bodies, staged summaries and failure details pass the host's
 *   `ArtifactRedactor` (when one is in the context of {@link foreignLoop}) before
 *   they touch disk; {@link ForeignLoop.scrub} and
 *   {@link ForeignLoop.scrubThrown} give adapters the same redaction for
 *   what they hand back to their caller.
 * - Summary requests are counted ({@link ForeignLoop.takeSummaryUsage}) so
 *   an adapter reports them to its host with the step they preceded.
 * - Foreign loops hand over their whole history on every request and never
 *   shrink it themselves. The loop remembers, per call id and original
 *   body, what it offloaded (the pointer replaces that body in every later
 *   request; a later call reusing the id with another body is not
 *   confused with it) and which prefix its last summary covers (that
 *   prefix is replaced by the summary again without a new summary
 *   request), so each request is the compacted one. Call ids are provider
 *   text (Pi's contain `:`): they are only ever map keys here, and become
 *   file names only through `ToolResults.callIdSegment`.
 * - A loop wired only in part (a request sent that was not prepared, a
 *   result of a call no journaled response asked for) is refused
 *   ({@link LoopOutOfOrder}) before the request or the result is journaled.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export interface ForeignLoop {
  readonly task: Ids.TaskId
  readonly binding: EntryGate.TaskBinding
  /**
   * Before a request: the gate (`ModelStep`), the task's open turn (opened
   * when none is, resumed with `TurnResumed` when its last request never
   * got an answer), the results of the previous step's calls that the loop
   * did not report through {@link toolResult} (journaled and offloaded
   * now), offloaded results replaced by their pointers, the remembered
   * summary restored, and compaction under a `Threshold` policy, its
   * summary requests sent to `summaryModel` (and counted). Returns the
   * history to send (`History.toParts` gives its parts in order). Unchanged
   * parts are the very objects of `history`, so adapters may map them back
   * to their originals by identity. `tools`, the specs the request will
   * carry, when the adapter knows them here: with them a loop made for a
   * turn already under way (a new process after a crash) measures under
   * `reportedTokens` from the provider's last count in the journal, as the
   * uninterrupted loop would; without them it estimates until the provider
   * reports again.
   */
  readonly prepare: (
    history: History.History,
    summaryModel: Model.Model["Service"],
    tools?: ReadonlyArray<Model.ToolSpec>
  ) => Effect.Effect<History.History, ForeignLoopError>
  /**
   * Journals `RequestDispatched` for the request {@link prepare} made, just
   * before it is sent, measured as the executor measures its requests;
   * returns where it is. Fails {@link LoopOutOfOrder} when no request was
   * prepared since the last dispatch.
   */
  readonly dispatch: (request: Model.ModelRequest) => Effect.Effect<Executor.StepContext, ForeignLoopError>
  /**
   * Journals the answer (`ResponseReceived`, with its usage and finish
   * reason) and shows it to compaction (a `reportedTokens` policy measures
   * the next request from it); closes the turn when it asks for no tool.
   */
  readonly receive: (
    step: Executor.StepContext,
    request: Model.ModelRequest,
    response: Model.ModelResponse
  ) => Effect.Effect<void, ForeignLoopError>
  /**
   * Journals `ModelFailed` with `detail` scrubbed (see {@link scrub});
   * returns the scrubbed detail.
   */
  readonly fail: (step: Executor.StepContext, reason: string, detail: string) => Effect.Effect<string, JournalError>
  /**
   * A result of a call of the open turn, as soon as the loop's tool
   * produced it: `ToolCalled` (unless already written), offload when over
   * the threshold, `ToolResulted`. Returns the result to keep (the pointer
   * when offloaded). A call already reported returns what it returned the
   * first time and journals nothing; a call no journaled response asked
   * for fails {@link LoopOutOfOrder}.
   */
  readonly toolResult: (
    call: Model.ToolCallPart,
    result: Model.ToolResultPart
  ) => Effect.Effect<Model.ToolResultPart, ForeignLoopError>
  /** `text` through the host's redactor (unchanged without one; withheld when the redactor fails). */
  readonly scrub: (text: string) => Effect.Effect<string>
  /**
   * A copy of a thrown value with every text in it scrubbed by the host's
   * redactor (see `TaskExecution.scrubThrown`), for an adapter that hands a
   * provider's error back to its caller; the value itself when the host
   * provided no redactor.
   */
  readonly scrubThrown: (error: unknown) => Effect.Effect<unknown>
  /** The summary usage since the last call, then counted from zero again. */
  readonly takeSummaryUsage: () => SummaryUsage
  /** Every summary request's cost so far. */
  readonly summaryUsage: () => SummaryUsage
  /** The pointer each offloaded call id was replaced by (the latest call of that id). */
  readonly offloaded: ReadonlyMap<string, string>
  /**
   * The tool the pointers name (`offload.readTool`), when the loop offloads
   * and `registerReadTool` is not `false`: an adapter offers it to its
   * framework. A result `run` produced, reported through
   * {@link toolResult}, is never offloaded again (it is bounded by the
   * read tool's cap; the inline limit still holds); the result of any
   * other tool of that name is treated as every tool's.
   */
  readonly readTool: Option.Option<ForeignReadTool>
}

interface Compacted {
  readonly covered: number
  readonly lastKey: string
  readonly summary: History.HistorySummary
}

/**
 * A part's identity across requests, as one unambiguous text: a JSON array,
 * so a call id holding `:` or `"` cannot make two parts share a key.
 */
const keyOf = (part: Model.Part): string => {
  switch (part._tag) {
    case "ToolCall":
      return JSON.stringify(["call", part.id])
    case "ToolResult":
      return JSON.stringify(["result", part.callId])
    case "Text":
      return JSON.stringify(["text", part.role, part.text.length, part.text.slice(0, 64)])
    case "Media":
      return JSON.stringify(["media", part.role, part.mediaType])
    case "FileReference":
      return JSON.stringify(["file", part.role, part.path])
  }
}

// What a hook would meet if it asked for a model before the loop's first prepare: none was handed over yet.
const unpreparedModel: Model.Model["Service"] = Model.fromGenerate(() =>
  Effect.fail(
    new Model.ModelError({
      reason: "ProviderFailure",
      detail: "no model was handed to the foreign loop yet (prepare is called before the first request)"
    })
  )
)

/**
 * Makes the foreign loop of a bound task (see {@link ForeignLoop}). Runs the gate for `Turn` first (the
 * binding must be one `EntryGate.bind` made, the journal in scope the
 * task's own); with a `Threshold` policy, or with `Private` offload, the
 * private writer must resolve and is admitted against the journal. Any
 * refusal is `Unauthorized` here, having journaled and sent nothing. The
 * journal, the platform and the host's `ArtifactRedactor` (if any) are
 * taken from the context here, once.
 *
 * @since 0.1.0
 * @category foreign loop
 */
export const foreignLoop = (
  binding: EntryGate.TaskBinding,
  options: ForeignLoopOptions = {}
): Effect.Effect<ForeignLoop, ForeignLoopOpenError, ForeignLoopRequirements> => makeForeignLoop(binding, options)

/** The body of {@link foreignLoop}, whose public signature names its error union. */
const makeForeignLoop = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  options: ForeignLoopOptions
): Effect.fn.Return<ForeignLoop, ForeignLoopOpenError, ForeignLoopRequirements> {
  const entry = options.entry ?? "TaskExecution.foreignLoop"
  // Before the gate: a door handing in the wrong shape (plain JavaScript) is named here, not mid-turn.
  yield* Effect.fromResult(checkHooks(entry, options))
  const offloadConfig = options.offload
  // The calls the library's read tool answered (see `readTool` below): their results are bounded already.
  const readByLibrary = new Set<string>()
  // The tools the request being prepared will carry, as the adapter said: hooks made mid-turn find the
  // provider's last count by the digest of the request it answered, which covers them.
  let requestTools: ReadonlyArray<Model.ToolSpec> | undefined
  // The stock executor's assembly, so every guarantee of its turns holds through this loop.
  const assembled = yield* taskHooks(binding, "Turn", {
    name: entry,
    tools: {
      _tag: "Foreign",
      specs: () => requestTools,
      readBy: (context) => context.call.name === offloadConfig?.readTool && readByLibrary.has(context.call.id)
    },
    offload: offloadConfig,
    inlineLimit: options.inlineLimit
  })
  const readTool = assembled.readTool
  const journal = yield* Journal
  const { onToolResult, beforeModelStep, afterModelStep } = assembled.hooks
  const services = yield* Effect.context<ForeignLoopRequirements>()
  const redactor = yield* Scrub.captureRedactor
  const task = binding.context.task
  const lock = yield* Semaphore.make(1)

  const results = makeReportedResults()
  let compacted: Compacted | undefined
  let prepared: Executor.StepContext | undefined
  // Whether a prepared request was ever dispatched: the adapter's request hook is wired.
  let wired = false
  // The model the last summary requests went to; the compaction hooks' observer runs with it in scope.
  let summaries: Model.Model["Service"] | undefined
  const usage = makeSummaryUsageCount()
  // The loop's requests are one conversation: each is measured from the hash chain of the one before.
  const requests = makeRequestChain()

  /** Runs a member with what {@link foreignLoop} captured: the platform, and the host's redactor for what reaches disk. */
  const captured = <A, E>(effect: Effect.Effect<A, E, ForeignLoopRequirements>): Effect.Effect<A, E> =>
    Effect.provideContext(redactor.provide(effect), services)

  /**
   * A hook runs with the task's journal and the model summary requests go to: the one the last {@link prepare}
   * was given (compaction runs only there and after its answer; a result reported before any prepare of this
   * loop, on a resumed task, never meets compaction, so no model is needed then).
   */
  const withStepServices = <A, E, R>(effect: Effect.Effect<A, E, R>, model: Model.Model["Service"] | undefined) =>
    effect.pipe(Effect.provideService(Model.Model, model ?? unpreparedModel), Effect.provideService(Journal, journal))

  const scrub: Scrub.TextScrub = Option.getOrElse(redactor.scrub, () => Effect.succeed)

  // The open turn; a request left without an answer (a crash, an abandoned stream) is counted as lost, as the executor's resume does.
  const currentTurn = Effect.gen(function* () {
    const open = openTurn(yield* journal.state)
    if (Option.isNone(open)) return yield* journal.openTurn
    return open.value.awaitingResponse ? yield* journal.resumeTurn : open.value
  })

  const reportResult = Effect.fnUntraced(function* (call: Model.ToolCallPart, result: Model.ToolResultPart) {
    const open = openTurn(yield* journal.state)
    const owed = Option.isSome(open) ? open.value.owedCalls.find((item) => item.callId === call.id) : undefined
    if (Option.isNone(open) || owed === undefined) {
      // Reported already (the loop asks again for the same call): the same answer, nothing journaled.
      const known = results.latest(call.id)
      if (known !== undefined) return known
      return yield* new LoopOutOfOrder({
        task,
        detail: `the result of call ${JSON.stringify(call.id)} (${call.name}) arrived, but no journaled response asked for it (is the request journaled through the adapter?)`
      })
    }
    const turn = open.value
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
    const replaced =
      onToolResult === undefined ? result : yield* withStepServices(onToolResult(context, result), summaries)
    const measured = yield* Digest.measureText(replaced.content)
    rememberBody(replaced, measured)
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
    yield* results.remember(call.id, result, replaced, measured)
    return replaced
  })

  const toolResult = (call: Model.ToolCallPart, result: Model.ToolResultPart) =>
    Semaphore.withPermit(lock, reportResult(call, result))

  // The turn's calls the loop did not report, answered in this history: reported now, as the executor would.
  const reportOwed = Effect.fnUntraced(function* (turn: TurnState, history: History.History) {
    if (turn.owedCalls.length === 0) return
    const byId = new Map<string, Model.ToolResultPart>()
    const calls = new Map<string, Model.ToolCallPart>()
    for (const part of history.parts) {
      if (part._tag === "ToolResult") byId.set(part.callId, part)
      if (part._tag === "ToolCall") calls.set(part.id, part)
    }
    for (const owed of turn.owedCalls) {
      const result = byId.get(owed.callId)
      const call = calls.get(owed.callId)
      if (result !== undefined && call !== undefined) yield* toolResult(call, result)
    }
  })

  const prepare = Effect.fnUntraced(function* (
    history: History.History,
    summaryModel: Model.Model["Service"],
    tools?: ReadonlyArray<Model.ToolSpec>
  ) {
    yield* EntryGate.admitBinding(binding, "ModelStep")
    requestTools = tools
    // Before the first dispatch, a second prepare means the request hook is missing; after it, the
    // loop gave up on a prepared request (its own conversion failed, say) and this one replaces it.
    if (prepared !== undefined && !wired) {
      return yield* new LoopOutOfOrder({
        task,
        detail: `the request of step ${prepared.step} was prepared but never journaled as dispatched (is the adapter's request hook wired?)`
      })
    }
    const turn = yield* currentTurn
    yield* reportOwed(turn, history)
    // What was offloaded stays offloaded: the loop hands over its whole history again on every request.
    const parts = yield* Effect.forEach(history.parts, (part) => results.keptFor(part))
    const previous = compacted
    const resumes =
      previous !== undefined &&
      previous.covered > 0 &&
      previous.covered <= parts.length &&
      keyOf(parts[previous.covered - 1] as Model.Part) === previous.lastKey
    const base = resumes ? (previous?.covered ?? 0) : 0
    const before: History.History =
      resumes && previous !== undefined
        ? { task: history.task, parts: parts.slice(base), summary: previous.summary }
        : { task: history.task, parts }
    const step: Executor.StepContext = { task, turn: turn.turn, step: turn.steps + 1 }
    const model = usage.counted(summaryModel)
    const after = beforeModelStep === undefined ? before : yield* withStepServices(beforeModelStep(step, before), model)
    if (after.summary !== undefined && after.summary !== before.summary) {
      const covered = base + (before.parts.length - after.parts.length)
      compacted = { covered, lastKey: keyOf(parts[covered - 1] as Model.Part), summary: after.summary }
    }
    prepared = step
    summaries = model
    return after
  })

  const dispatch = Effect.fnUntraced(function* (request: Model.ModelRequest) {
    const step = prepared
    if (step === undefined) {
      return yield* new LoopOutOfOrder({
        task,
        detail: "a request is being sent that was not prepared (is the adapter's context hook wired?)"
      })
    }
    prepared = undefined
    wired = true
    const measured = yield* measureRequest(request, requests)
    yield* journal.append({
      _tag: "RequestDispatched",
      turn: step.turn,
      step: step.step,
      parts: request.parts.length,
      size: measured.size,
      sha256: measured.sha256
    })
    return step
  })

  const receive = Effect.fnUntraced(function* (
    step: Executor.StepContext,
    request: Model.ModelRequest,
    response: Model.ModelResponse
  ) {
    const text = yield* Digest.measureText(response.text)
    yield* journal.append({
      _tag: "ResponseReceived",
      turn: step.turn,
      step: step.step,
      textSize: text.size,
      textSha256: text.sha256,
      toolCalls: response.toolCalls.map((call) => ({ callId: call.id, name: call.name })),
      ...(response.usage === undefined ? {} : { usage: response.usage }),
      ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason })
    })
    if (afterModelStep !== undefined && summaries !== undefined) {
      yield* withStepServices(
        afterModelStep(step, { request, response, history: { task: [], parts: request.parts } }),
        summaries
      )
    }
    if (response.toolCalls.length === 0) yield* journal.closeTurn
  })

  const fail = (step: Executor.StepContext, reason: string, detail: string): Effect.Effect<string, JournalError> =>
    Effect.flatMap(scrub(detail), (scrubbed) =>
      Effect.as(
        captured(journal.append({ _tag: "ModelFailed", turn: step.turn, step: step.step, reason, detail: scrubbed })),
        scrubbed
      )
    )

  const loop: ForeignLoop = {
    task,
    binding,
    prepare: (history, summaryModel, tools) => captured(prepare(history, summaryModel, tools)),
    dispatch: (request) => captured(dispatch(request)),
    receive: (step, request, response) => captured(receive(step, request, response)),
    fail,
    toolResult: (call, result) => captured(toolResult(call, result)),
    scrub,
    scrubThrown: (error) => (Option.isNone(redactor.scrub) ? Effect.succeed(error) : Scrub.scrubValue(error, scrub)),
    takeSummaryUsage: usage.take,
    summaryUsage: usage.total,
    offloaded: results.pointers,
    readTool: Option.map(readTool, (tool) => ({
      spec: tool.spec,
      run: (call) =>
        captured(
          Effect.map(tool.run(call.input as Schema.Json), (outcome) => {
            readByLibrary.add(call.id)
            return Model.toolResult({
              callId: call.id,
              name: tool.name,
              content: outcome.content,
              isError: Option.isSome(outcome.failure)
            })
          })
        )
    }))
  }
  return loop
}, Observability.withSpan("TaskExecution.foreignLoop"))
