/**
 * Tessera's context handling for a model loop another library runs (the
 * Vercel AI SDK's `generateText`/`streamText`, Effect AI's `LanguageModel`
 * and `Chat`, ...). The adapter hands over each request it is about to send,
 * as a `History`, and gets back the parts to send instead; it reports the
 * dispatch, the answer or the failure. The guarantees are the executor's:
 *
 * - A hosted loop is made only from a bound task (an `EntryGate.TaskBinding`),
 *   never from a folder: {@link make} runs the entry gate, and a summary or a
 *   private offload happens only through the capability resolved from that
 *   binding. A task that needs a writer and has none fails `Unauthorized` in
 *   {@link make}, so an adapter built on it refuses before its first model
 *   request, journal byte or file.
 * - Every request is journaled as the stock executor journals a turn
 *   (`TurnOpened`, `ToolCalled`/`ToolResulted` for the previous step's calls,
 *   `ArtifactOffloaded`, `SummaryStarted`/`SummaryStaged`, `RequestDispatched`,
 *   `ResponseReceived` or `ModelFailed`, `TurnClosed`).
 * - Offloaded bodies, staged summaries and failure details pass the host's
 *   `ArtifactRedactor` (when one is in the context of {@link make}) before
 *   they touch disk; {@link HostedLoop.scrub} gives adapters the same
 *   redaction for what they hand back to their caller.
 * - Summary requests are counted ({@link HostedLoop.takeSummaryUsage}) so
 *   the adapter reports them to its host with the step they preceded.
 *
 * The foreign loop sends the caller's whole history on every step; the
 * hosted loop remembers (per call id) what it offloaded and (per covered
 * prefix) what it summarized, so each step's request is the compacted one,
 * and an offloaded payload is never sent again.
 *
 * @since 0.3.0
 */
import { ArtifactRedactor } from "@tessera/artifacts"
import { Digest, type DurableFiles, type Ids, Unauthorized } from "@tessera/core"
import { Effect, type FileSystem, Option, type Path } from "effect"
import * as EntryGate from "./EntryGate.ts"
import type * as Executor from "./Executor.ts"
import type * as History from "./History.ts"
import * as Journal from "./Journal.ts"
import * as Model from "./Model.ts"
import * as PrivateSummaries from "./PrivateSummaries.ts"
import * as TaskExecution from "./TaskExecution.ts"
import * as ToolResultOffload from "./ToolResultOffload.ts"

/**
 * How a hosted loop treats a task's requests. `offload` is the runtime's
 * own `ToolResultOffload.OffloadConfig` (threshold, read tool named in the
 * pointer, destination); without it no result is offloaded. Compaction
 * follows the binding's policy.
 *
 * @since 0.3.0
 * @category models
 */
export interface Options {
  readonly offload?: ToolResultOffload.OffloadConfig
}

/**
 * What summary requests cost: how many were sent, and the input and output
 * tokens their responses reported (0 when a response reported none).
 *
 * @since 0.3.0
 * @category models
 */
export interface SummaryUsage {
  readonly requests: number
  readonly inputTokens: number
  readonly outputTokens: number
}

/**
 * No summary request.
 *
 * @since 0.3.0
 * @category models
 */
export const noSummaryUsage: SummaryUsage = { requests: 0, inputTokens: 0, outputTokens: 0 }

/**
 * Where a request sits in the journal: its turn and its step in that turn.
 *
 * @since 0.3.0
 * @category models
 */
export interface Step {
  readonly turn: number
  readonly step: number
}

/**
 * What the platform must provide to {@link make}: the bound task's journal,
 * and the files the runtime writes through. They are captured once; the
 * loop's members need nothing.
 *
 * @since 0.3.0
 * @category models
 */
export type Requirements = Journal.Journal | FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles

/**
 * Why preparing a request failed: the binding no longer admits a step, the
 * journal refused an entry, an offload or a summary failed.
 *
 * @since 0.3.0
 * @category errors
 */
export type PrepareError =
  | JournalError
  | Journal.TurnAlreadyOpen
  | Journal.NoOpenTurn
  | Unauthorized.Unauthorized
  | PrivateSummaries.ResolveError
  | TaskExecution.CompactionError

/**
 * One bound task's context handling for a foreign loop.
 *
 * @since 0.3.0
 * @category models
 */
export interface HostedLoop {
  readonly task: Ids.TaskId
  /**
   * Before a request: admits the step, opens the turn when none is open
   * (or resumes it, `TurnResumed`, when its last request never got an
   * answer: a crash, an abandoned stream), journals (and offloads) the
   * results of the previous step's calls found in `history`, puts back
   * every result offloaded earlier, and compacts under the binding's
   * policy, asking `summaryModel` for a summary. The parts to send: the
   * system parts, the summary reference, the rest of the task, then the
   * kept history. Unchanged parts are the very objects of `history`
   * (adapters may map them back to their originals by identity).
   */
  readonly prepare: (
    history: History.History,
    summaryModel: Model.Model["Service"]
  ) => Effect.Effect<ReadonlyArray<Model.Part>, PrepareError>
  /**
   * Records one result as soon as the caller's tool produced it, instead of
   * in the next {@link prepare}: journals it (`ToolCalled`, `ToolResulted`)
   * and offloads it when it is large, returning the part to keep in the
   * caller's history (the pointer when it was offloaded). A call the open
   * turn does not owe (already recorded, or unknown) is not journaled again:
   * the part recorded for it, or `result` as given, comes back.
   */
  readonly recordResult: (
    call: Model.ToolCallPart,
    result: Model.ToolResultPart
  ) => Effect.Effect<Model.ToolResultPart, RecordError>
  /**
   * Journals `RequestDispatched` for the request about to go out (`parts`
   * counted and `body` measured as the adapter sends them). Dies when no
   * turn is open: the adapter dispatched without {@link prepare}.
   */
  readonly dispatch: (request: { readonly parts: number; readonly body: string }) => Effect.Effect<Step, JournalError>
  /** Journals `ResponseReceived`; a response without tool calls closes the turn. */
  readonly received: (
    step: Step,
    response: {
      readonly text: string
      readonly toolCalls: ReadonlyArray<{ readonly callId: string; readonly name: string }>
    }
  ) => Effect.Effect<void, JournalError | Journal.NoOpenTurn | Journal.TurnUnfinished>
  /** Journals `ModelFailed` with `detail` scrubbed; returns the scrubbed detail. */
  readonly failed: (step: Step, detail: string) => Effect.Effect<string, JournalError>
  /** `text` through the host's redactor (unchanged without one; withheld when the redactor fails). */
  readonly scrub: (text: string) => Effect.Effect<string>
  /**
   * A copy of a thrown value with every text in it scrubbed (see
   * {@link scrubThrown}), for an adapter that hands a provider's error back
   * to its caller.
   */
  readonly scrubThrown: (error: unknown) => Effect.Effect<unknown>
  /** The summary usage since the last call, then counted from zero again. */
  readonly takeSummaryUsage: () => SummaryUsage
  /** Every summary request's cost so far. */
  readonly summaryUsage: () => SummaryUsage
  /** The pointer each offloaded call id was replaced by. */
  readonly offloaded: ReadonlyMap<string, string>
}

/**
 * Why recording a tool result failed: the journal refused an entry, or the
 * offload failed.
 *
 * @since 0.3.0
 * @category errors
 */
export type RecordError = JournalError | PrivateSummaries.ResolveError

/**
 * The journal refused an entry.
 *
 * @since 0.3.0
 * @category errors
 */
export type JournalError = Journal.JournalIOError | Journal.JournalSequenceError

interface Compacted {
  readonly covered: number
  readonly lastKey: string
  readonly summary: History.HistorySummary
}

const keyOf = (part: Model.Part): string => {
  switch (part._tag) {
    case "ToolCall":
      return `call:${part.id}`
    case "ToolResult":
      return `result:${part.callId}`
    case "Text":
      return `text:${part.role}:${part.text.length}:${part.text.slice(0, 64)}`
    default:
      return part._tag
  }
}

const addUsage = (usage: SummaryUsage, response: Model.ModelResponse): SummaryUsage => ({
  requests: usage.requests + 1,
  inputTokens: usage.inputTokens + (response.usage?.inputTokens ?? 0),
  outputTokens: usage.outputTokens + (response.usage?.outputTokens ?? 0)
})

const withheld = "[detail withheld: the redactor failed on it]"

const isRecord = (value: unknown): value is object => typeof value === "object" && value !== null

/**
 * A copy of a thrown value with every text in it passed through `scrub`,
 * down to `depth` levels: a string is scrubbed; an `Error` (or any object
 * with a prototype other than `Object`'s) is copied with the same prototype
 * (so `instanceof` and marker symbols still hold) and each of its own data
 * properties scrubbed; a plain object or array is scrubbed as JSON text
 * (and withheld whole when the scrubbed text no longer parses). Other
 * values are kept. The original is never changed.
 *
 * @since 0.3.0
 * @category redaction
 */
export const scrubThrown = (
  error: unknown,
  scrub: (text: string) => Effect.Effect<string>,
  depth = 3
): Effect.Effect<unknown> =>
  Effect.suspend((): Effect.Effect<unknown> => {
    if (typeof error === "string") return scrub(error)
    if (!isRecord(error)) return Effect.succeed(error)
    if (depth <= 0) return Effect.succeed(withheld)
    const proto: unknown = Object.getPrototypeOf(error)
    if (proto === Object.prototype || proto === null || Array.isArray(error)) {
      let json: string | undefined
      try {
        json = JSON.stringify(error)
      } catch {
        return Effect.succeed(withheld)
      }
      if (json === undefined) return Effect.succeed(error)
      return Effect.map(scrub(json), (scrubbed) => {
        if (scrubbed === json) return error
        try {
          return JSON.parse(scrubbed) as unknown
        } catch {
          return scrubbed
        }
      })
    }
    const copy = Object.create(proto as object) as Record<PropertyKey, unknown>
    return Effect.as(
      Effect.forEach(
        Reflect.ownKeys(error),
        (key) => {
          const descriptor = Object.getOwnPropertyDescriptor(error, key)
          if (descriptor === undefined) return Effect.void
          if (!("value" in descriptor)) return Effect.sync(() => Object.defineProperty(copy, key, descriptor))
          return Effect.map(scrubThrown(descriptor.value, scrub, depth - 1), (value) => {
            Object.defineProperty(copy, key, { ...descriptor, value })
          })
        },
        { discard: true }
      ),
      copy
    )
  })

const offloadTarget = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  config: ToolResultOffload.OffloadConfig,
  armed: Option.Option<PrivateSummaries.PrivateWriterCapability>
) {
  if (config.destination === "Output") return yield* ToolResultOffload.outputTarget(binding.context, "HostedLoop.make")
  const capability = Option.isSome(armed)
    ? armed.value
    : yield* PrivateSummaries.resolve(binding.context).pipe(
        Effect.mapError((error) =>
          error._tag === "Unauthorized"
            ? new Unauthorized.Unauthorized({
                reason: error.reason,
                detail: `HostedLoop.make: private offload needs a private writer, but ${error.detail}`,
                task: binding.context.task
              })
            : error
        )
      )
  return yield* ToolResultOffload.privateTarget.pipe(PrivateSummaries.provide(capability))
})

/**
 * Makes the hosted loop of a bound task. Runs the entry gate first (the
 * binding must be one `EntryGate.bind` made, the journal in scope the
 * task's own); with a `Threshold` policy, or with `Private` offload, the
 * private-summaries capability must resolve. Any refusal is `Unauthorized`
 * here, before the loop exists: no model request, no journal entry.
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = Effect.fn("HostedLoop.make")(function* (binding: EntryGate.TaskBinding, options: Options = {}) {
  const capability = yield* EntryGate.verify(binding, "Turn")
  const journal = yield* Journal.Journal
  const target =
    options.offload === undefined
      ? Option.none()
      : Option.some(yield* offloadTarget(binding, options.offload, capability))
  const compaction =
    binding.policy._tag === "Threshold" && Option.isSome(capability)
      ? Option.some(yield* TaskExecution.compactionHooks(binding.policy, capability.value, journal))
      : Option.none()
  const offload =
    options.offload !== undefined && Option.isSome(target)
      ? Option.some(yield* ToolResultOffload.offloadHooks(options.offload, target.value, journal))
      : Option.none()
  const onToolResult = Option.isSome(offload) ? offload.value.onToolResult : undefined
  const beforeModelStep = Option.isSome(compaction) ? compaction.value.beforeModelStep : undefined
  const services = yield* Effect.context<Requirements>()
  const redactor = yield* Effect.serviceOption(ArtifactRedactor.ArtifactRedactor)
  const task = binding.context.task

  const results = new Map<string, Model.ToolResultPart>()
  const pointers = new Map<string, string>()
  let compacted: Compacted | undefined
  let pending = noSummaryUsage
  let total = noSummaryUsage

  const withRedactor = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Option.isSome(redactor) ? Effect.provideService(effect, ArtifactRedactor.ArtifactRedactor, redactor.value) : effect

  const scrub = (text: string): Effect.Effect<string> =>
    Option.isNone(redactor)
      ? Effect.succeed(text)
      : redactor.value.redact(text).pipe(Effect.orElseSucceed(() => withheld))

  const counted = (model: Model.Model["Service"]): Model.Model["Service"] =>
    Model.fromGenerate((request) =>
      Effect.tap(model.generate(request), (response) =>
        Effect.sync(() => {
          pending = addUsage(pending, response)
          total = addUsage(total, response)
        })
      )
    )

  // One answered call of the turn: journaled, then offloaded, as the executor does.
  const recordOne = Effect.fnUntraced(function* (
    turn: Journal.TurnState,
    owed: Journal.OwedCall,
    call: Model.ToolCallPart,
    result: Model.ToolResultPart
  ) {
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
    const replaced = onToolResult === undefined ? result : yield* onToolResult(context, result)
    const measured = yield* Digest.measureText(replaced.content)
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
    results.set(call.id, replaced)
    if (replaced.content !== result.content) pointers.set(call.id, replaced.content)
    return replaced
  })

  // The turn's previous calls, answered in this request.
  const recordResults = Effect.fnUntraced(function* (turn: Journal.TurnState, history: History.History) {
    const byId = new Map<string, Model.ToolResultPart>()
    const calls = new Map<string, Model.ToolCallPart>()
    for (const part of history.parts) {
      if (part._tag === "ToolResult") byId.set(part.callId, part)
      if (part._tag === "ToolCall") calls.set(part.id, part)
    }
    for (const owed of turn.owedCalls) {
      const result = byId.get(owed.callId)
      const call = calls.get(owed.callId)
      if (result === undefined || call === undefined) continue
      yield* recordOne(turn, owed, call, result)
    }
  })

  const recordResult = Effect.fnUntraced(function* (call: Model.ToolCallPart, result: Model.ToolResultPart) {
    const known = results.get(call.id)
    if (known !== undefined) return known
    const open = Journal.openTurn(yield* journal.state)
    const owed = Option.isSome(open) ? open.value.owedCalls.find((entry) => entry.callId === call.id) : undefined
    if (Option.isNone(open) || owed === undefined) return result
    return yield* recordOne(open.value, owed, call, result)
  })

  const prepare = Effect.fnUntraced(function* (history: History.History, summaryModel: Model.Model["Service"]) {
    yield* EntryGate.admitBinding(binding, "ModelStep")
    const open = Journal.openTurn(yield* journal.state)
    // A request left without an answer (a crash, an abandoned stream) is counted as lost, as the executor's resume does.
    const turn = Option.isNone(open)
      ? yield* journal.openTurn
      : open.value.awaitingResponse
        ? yield* journal.resumeTurn
        : open.value
    yield* recordResults(turn, history)
    // What was offloaded stays offloaded: the foreign loop sends the caller's whole history again on every step.
    const parts = history.parts.map((part) => {
      if (part._tag !== "ToolResult") return part
      const known = results.get(part.callId)
      return known !== undefined && known.content !== part.content ? known : part
    })
    const previous = compacted
    const resumes =
      previous !== undefined &&
      previous.covered <= parts.length &&
      previous.covered > 0 &&
      keyOf(parts[previous.covered - 1] as Model.Part) === previous.lastKey
    const base = resumes ? previous.covered : 0
    const before: History.History =
      resumes && previous !== undefined
        ? { task: history.task, parts: parts.slice(base), summary: previous.summary }
        : { task: history.task, parts }
    const after =
      beforeModelStep === undefined
        ? before
        : yield* beforeModelStep({ task, turn: turn.turn, step: turn.steps + 1 }, before).pipe(
            Effect.provideService(Model.Model, counted(summaryModel)),
            Effect.provideService(Journal.Journal, journal)
          )
    if (after.summary !== undefined && after.summary !== before.summary) {
      const covered = base + (before.parts.length - after.parts.length)
      compacted = { covered, lastKey: keyOf(parts[covered - 1] as Model.Part), summary: after.summary }
    }
    // System parts stay first, before the summary reference.
    const system = after.task.filter((part) => part._tag === "Text" && part.role === "system")
    const rest = after.task.filter((part) => !(part._tag === "Text" && part.role === "system"))
    return [...system, ...(after.summary?.parts ?? []), ...rest, ...after.parts]
  })

  const dispatch = Effect.fnUntraced(function* (request: { readonly parts: number; readonly body: string }) {
    const open = Journal.openTurn(yield* journal.state)
    if (Option.isNone(open)) {
      return yield* Effect.die(new Error(`HostedLoop: a request of task ${task} was dispatched without prepare`))
    }
    const step: Step = { turn: open.value.turn, step: open.value.steps + 1 }
    const measured = yield* Digest.measureText(request.body)
    yield* journal.append({
      _tag: "RequestDispatched",
      ...step,
      parts: request.parts,
      size: measured.size,
      sha256: measured.sha256
    })
    return step
  })

  const received: HostedLoop["received"] = (step, response) =>
    Effect.gen(function* () {
      const text = yield* Digest.measureText(response.text)
      yield* journal.append({
        _tag: "ResponseReceived",
        ...step,
        textSize: text.size,
        textSha256: text.sha256,
        toolCalls: response.toolCalls.map((call) => ({ callId: call.callId, name: call.name }))
      })
      if (response.toolCalls.length === 0) yield* journal.closeTurn
    })

  const failed: HostedLoop["failed"] = (step, detail) =>
    Effect.flatMap(scrub(detail), (scrubbed) =>
      Effect.as(journal.append({ _tag: "ModelFailed", ...step, reason: "ProviderFailure", detail: scrubbed }), scrubbed)
    )

  const loop: HostedLoop = {
    task,
    prepare: (history, summaryModel) =>
      prepare(history, summaryModel).pipe(withRedactor, Effect.provideContext(services)),
    recordResult: (call, result) => recordResult(call, result).pipe(withRedactor, Effect.provideContext(services)),
    dispatch: (request) => dispatch(request).pipe(Effect.provideContext(services)),
    received,
    failed,
    scrub,
    scrubThrown: (error) => scrubThrown(error, scrub),
    takeSummaryUsage: () => {
      const usage = pending
      pending = noSummaryUsage
      return usage
    },
    summaryUsage: () => total,
    offloaded: pointers
  }
  return loop
})
