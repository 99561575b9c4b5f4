/**
 * Durable turns from disk alone: resuming the open turn from the journal
 * and the transcript, and restoring a task's conversation for its next
 * turn.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as EntryGate from "../EntryGate.ts"
import * as Executor from "../Executor.ts"
import type * as History from "../History.ts"
import { Journal, type JournalCorrupt, type JournalNotRecognized, NoOpenTurn, openTurn } from "../Journal.ts"
import * as Observability from "../Observability.ts"
import * as Transcript from "../Transcript.ts"
import {
  type ExecutionConfig,
  gate,
  type TurnError,
  type TurnRequirements,
  transcriptOf,
  withJournalEvents
} from "./gatedTurn.ts"
import { entriesOf } from "./journalWriter.ts"

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
export const resume = <E = never, R = never>(
  binding: EntryGate.TaskBinding,
  config: ExecutionConfig<E, R>
): Effect.Effect<Resumed, ResumeError<E>, TurnRequirements<R>> => inferred.resume(binding, config)

/**
 * Every way {@link resume} can fail: what a turn fails with
 * ({@link TurnError}), and what reading the open turn back from disk adds:
 * a journal that is not one, or is corrupt (`JournalNotRecognized`,
 * `JournalCorrupt`), a turn that did not run durably
 * (`Transcript.TranscriptMissing`), or a record or rebuilt request that is
 * not what the journal recorded (`Transcript.TranscriptRecordMismatch`,
 * `Transcript.TranscriptMismatch`).
 *
 * @since 0.1.0
 * @category models
 */
export type ResumeError<E = never> =
  | TurnError<E>
  | JournalCorrupt
  | JournalNotRecognized
  | Transcript.TranscriptMissing
  | Transcript.TranscriptRecordMismatch
  | Transcript.TranscriptMismatch

/**
 * The durable entries as their bodies infer them; `resume` states its type
 * with the named aliases and `typetest/EntrySignatures.typetest.ts` pins them
 * to this.
 */
export const inferred = {
  resume: Effect.fnUntraced(function* <E = never, R = never>(
    binding: EntryGate.TaskBinding,
    config: ExecutionConfig<E, R>
  ) {
    const gated = yield* gate(binding, "ResumeTurn", { ...config, durable: true })
    const transcript = Option.getOrThrow(gated.transcript)
    const journal = yield* Journal
    const open = openTurn(yield* journal.state)
    if (Option.isNone(open)) return yield* new NoOpenTurn({ task: journal.task, operation: "resume" })
    const entries = yield* entriesOf(journal)
    const rebuilt = yield* Transcript.rebuild(transcript, entries, open.value.turn)
    const verifiedRequests = yield* Transcript.verify(journal.task, rebuilt, gated.config.tools.specs)
    const resumed = yield* Executor.resumeRebuilt(gated.config, rebuilt).pipe(withJournalEvents(config.onEvent))
    const outcome: Resumed = { ...resumed, verifiedRequests }
    return outcome
  }, Observability.withSpan("TaskExecution.resume"))
}

/**
 * The task's conversation as the model last saw it, from disk alone: the
 * history after the last recorded content of its latest turn (closed,
 * abandoned or open), rebuilt from the journal and the transcript. `None`
 * when the task has no turn yet. To start a new turn, append the user's
 * next parts and call `TaskExecution.runTurn` with `durable: true`. Needs the
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
  const entries = yield* entriesOf(journal)
  const rebuilt = yield* Transcript.rebuild(transcript, entries, last.turn)
  return Option.some(rebuilt.history)
}, Observability.withSpan("TaskExecution.restoreHistory"))
