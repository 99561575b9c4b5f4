/**
 * The compaction hooks of a bound task's turn: history compacted before
 * every model step under a `Threshold` policy, measured from the provider's
 * last count when the policy says so (recalled from the journal for hooks
 * made mid-turn).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as Compaction from "../Compaction.ts"
import type * as Executor from "../Executor.ts"
import * as History from "../History.ts"
import { type Journal, openTurn } from "../Journal.ts"
import type { Entry } from "../JournalEntry.ts"
import type { ToolSpec } from "../Model.ts"
import * as PrivateSummaries from "../PrivateSummaries.ts"
import { warnTaskOverLimit } from "./compacting.ts"
import { measureRequest } from "./digest.ts"
import { entriesOf } from "./journalWriter.ts"
import { turnOperation } from "./turnOperation.ts"

/**
 * What compaction can fail with.
 *
 * @since 0.1.0
 * @category models
 */
export type CompactionError = Effect.Error<ReturnType<typeof Compaction.compact>>

/**
 * What compaction needs besides the `PrivateSummaries` capability its
 * hooks are made under.
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
 * under a `Threshold` policy, publishing through the `PrivateSummaries`
 * capability in scope. The capability is admitted against `journal` when
 * the hooks are made (minted, minted for the journal's task on its store,
 * volume unchanged), so a foreign capability is refused before the turn
 * sends anything; the hooks then write through the capability they
 * admitted, which every publish admits again.
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
  journal: Journal["Service"],
  options: CompactionHooksOptions = {}
): Effect.Effect<
  Executor.Hooks<CompactionError, CompactionRequirements>,
  PrivateSummaries.ResolveError,
  PrivateSummaries.PrivateSummaries | Path.Path
> =>
  PrivateSummaries.admit("TaskExecution.compactionHooks", Option.some(journal)).pipe(
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
    const entries = yield* entriesOf(journal)
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
