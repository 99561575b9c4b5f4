/**
 * Views of a task's journal that let an activity run again without writing
 * a record twice or out of order.
 *
 * @internal
 */
import type * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** A result the engine must hold before the journal may record it. */
export interface Deferred {
  readonly view: Journal.JournalService
  readonly taken: () => Option.Option<JournalEntry.Entry>
}

/**
 * The journal as the model-step activity sees it: `ResponseReceived` is
 * captured instead of written. The activity returns the entry with the
 * response, and the next activity writes it once the engine stored both, so
 * a runner that dies between the response and the engine's record of it
 * leaves the request unanswered in the journal (counted as lost by
 * `TurnResumed`), never a response whose body nobody kept.
 */
export const deferResponse = (journal: Journal.JournalService): Deferred => {
  let captured: Option.Option<JournalEntry.Entry> = Option.none()
  const view: Journal.JournalService = {
    ...journal,
    append: (input) =>
      input._tag === "ResponseReceived"
        ? Effect.map(journal.state, (state) => {
            const entry = { ...input, seq: state.entries, at: Date.now() } as JournalEntry.Entry
            captured = Option.some(entry)
            return entry
          })
        : journal.append(input)
  }
  return { view, taken: () => captured }
}

/**
 * The journal as a tool activity sees it.
 *
 * - An offload that found other bytes under the call's artifact name (left
 *   by an earlier attempt of the same call) fails `onChanged` before it is
 *   recorded: a re-run of a call must produce what the first attempt did.
 * - When `recorded` is `Some` (an earlier attempt already recorded the
 *   call's result, and the engine lost the activity's own record), the
 *   call's `ToolCalled`, `ArtifactOffloaded` and `ToolResulted` are not
 *   written again, and the re-run result's digest must equal the recorded
 *   one, else `onChanged`.
 * - A delegation record of the call (`ChildDelegated`, `ChildAnswered`)
 *   equal to one in `children` (what earlier attempts wrote) is not written
 *   again: a delegate call run again finds its children and answers anew,
 *   and the parent's journal records each once. One that differs (a child
 *   that answered otherwise) is written: the last one counts.
 */
export const toolView = <E>(
  journal: Journal.JournalService,
  callId: string,
  recorded: Option.Option<string>,
  children: ReadonlyArray<JournalEntry.Entry>,
  onChanged: (detail: string) => E
): Journal.JournalService => ({
  ...journal,
  append: (input) => {
    if ((input._tag === "ChildDelegated" || input._tag === "ChildAnswered") && input.callId === callId) {
      const written = children.find((entry) => canonical(recordOf(entry)) === canonical(input))
      if (written !== undefined) return Effect.succeed(written)
      return journal.append(input)
    }
    const ours =
      (input._tag === "ToolCalled" || input._tag === "ToolResulted" || input._tag === "ArtifactOffloaded") &&
      input.callId === callId
    if (!ours) return journal.append(input)
    if (input._tag === "ArtifactOffloaded" && input.disposition === "Replaced") {
      return Effect.die(
        onChanged(
          `an earlier attempt of call ${callId} offloaded other bytes to ${input.path}; the tool is not idempotent`
        )
      )
    }
    if (Option.isNone(recorded)) return journal.append(input)
    if (input._tag === "ToolResulted" && input.sha256 !== recorded.value) {
      return Effect.die(
        onChanged(
          `call ${callId} was recorded with result sha256 ${recorded.value}, its re-run gave ${input.sha256}; the tool is not idempotent`
        )
      )
    }
    return Effect.map(
      journal.state,
      (state) => ({ ...input, seq: state.entries, at: Date.now() }) as JournalEntry.Entry
    )
  }
})

/** An entry without its place in the journal (`seq`, `at`): what an append's input holds. */
const recordOf = (entry: JournalEntry.Entry): unknown => {
  const { at: _at, seq: _seq, ...rest } = entry
  return rest
}

/** JSON with keys in order and absent fields dropped: two records with the same facts render alike. */
const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner
  )

/**
 * The journal as the approvals activity sees it: it may only ask for
 * approvals (`ApprovalRequested`). Anything else (a call starting to run, a
 * result) dies with `onOther`: the activity that asks never runs a call.
 */
export const approvalsOnly = <E>(
  journal: Journal.JournalService,
  onOther: (detail: string) => E
): Journal.JournalService => ({
  ...journal,
  append: (input) =>
    input._tag === "ApprovalRequested"
      ? journal.append(input)
      : Effect.die(onOther(`the approvals activity may only ask for approvals, not write ${input._tag}`))
})
