/**
 * A delegation's approvals: the host's decision on a `delegate` call whose
 * children waited for approvals (read back from the parent's journal), and
 * its hand-over to exactly the child calls it was for. `Delegation` states
 * the contract.
 */
import type * as Ids from "@tessera/core/Ids"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as EntryGate from "../EntryGate.ts"
import { awaitingApproval, Journal, openTurn } from "../Journal.ts"
import { decide } from "./approvals.ts"
import { entriesOf } from "./journalWriter.ts"

/** The host's decision on a delegation that waited for its children, and the children's calls it is for. */
export interface DelegatedDecision {
  readonly approved: boolean
  readonly by: string
  readonly note: string | undefined
  readonly children: ReadonlyArray<{ readonly task: Ids.TaskId; readonly callId: string }>
}

/**
 * The decision on the call at `position`, when its last wait for its children (`ApprovalRequested`, reason
 * `Delegated`) was decided: read from the parent's own journal, so a run after a restart hands it on the same.
 */
export const delegatedDecision = Effect.fnUntraced(function* (
  parentJournal: Journal["Service"],
  position: { readonly turn: number; readonly step: number; readonly callId: string }
) {
  const entries = yield* entriesOf(parentJournal)
  const at = (entry: { readonly turn: number; readonly step: number; readonly callId: string }) =>
    entry.turn === position.turn && entry.step === position.step && entry.callId === position.callId
  let decision: DelegatedDecision | undefined
  let children: DelegatedDecision["children"] | undefined
  for (const entry of entries) {
    if (entry._tag === "ApprovalRequested" && entry.reason === "Delegated" && at(entry)) {
      children = entry.children ?? []
      decision = undefined
    } else if (entry._tag === "ApprovalDecided" && at(entry) && children !== undefined) {
      decision = { approved: entry.approved, by: entry.by, note: entry.note, children }
    }
  }
  return Option.fromUndefinedOr(decision)
})

/**
 * Hands the host's decision on to the child's calls it was for that still wait (each decided once: a call
 * decided already, by an earlier run cut short, is left alone).
 */
export const forward = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  decision: Option.Option<DelegatedDecision>
) {
  if (Option.isNone(decision)) return
  const journal = yield* Journal
  const open = openTurn(yield* journal.state)
  if (Option.isNone(open)) return
  const waiting = new Set(awaitingApproval(open.value).map((call) => call.callId))
  for (const call of decision.value.children) {
    if (call.task !== binding.context.task || !waiting.has(call.callId)) continue
    const { approved, by, note } = decision.value
    yield* decide(binding, { callId: call.callId, approved, by, ...(note === undefined ? {} : { note }) })
  }
})
