/**
 * The table of per-entry facts: for every kind of journal entry, stated once,
 * what the rest of the runtime treats it as. Every place that needs one of
 * these facts looks it up here instead of keeping a list of its own, so a
 * new entry kind is one row (and the compiler refuses a kind without one).
 *
 * - `syncPoint`: under group commit (`JournalStorage.groupCommit`) the
 *   journal syncs right after writing it, because something outside the
 *   journal waits on it or acts on it at once: an entry that ends a turn or
 *   the journal's use, one a host acts on (approvals), a recovery record.
 *   Every other kind waits for its step's commit point. (Separately, a
 *   `RequestDispatched` starts a new group: what the step before it left
 *   unsynced is synced before its line is written.)
 * - `turnEvent`: a turn's `onEvent` hears of it as the `Executor.TurnEvent`
 *   of the same tag carrying the entry, whichever hook writes it: the
 *   journal offers these entries to the tap of the writing fiber
 *   (`journalTap.ts`).
 * - `scrubbed`: the fields that carry provider or tool text, which the
 *   writer passes through the host's redactor before journaling the entry.
 *
 * Tested by `packages/runtime/test/EntryFacts.test.ts`.
 */
import type { Entry } from "../JournalEntry.ts"

/** The tag of an entry kind. */
export type EntryTag = Entry["_tag"]

/** The entry of kind `K`. */
export type EntryOf<K extends EntryTag> = Extract<Entry, { readonly _tag: K }>

/** The text fields of the entry of kind `K` (its `_tag` aside). */
export type TextField<K extends EntryTag> = {
  readonly [F in Exclude<keyof EntryOf<K>, "_tag">]-?: NonNullable<EntryOf<K>[F]> extends string ? F : never
}[Exclude<keyof EntryOf<K>, "_tag">]

/** The facts of one entry kind (see the module's description). */
export interface EntryFacts<K extends EntryTag = EntryTag> {
  readonly syncPoint: boolean
  readonly turnEvent: boolean
  readonly scrubbed: ReadonlyArray<TextField<K>>
}

/** Every entry kind's facts; the type requires exactly one row per kind of the `Entry` union. */
export type FactsTable = { readonly [K in EntryTag]: EntryFacts<K> }

const row = <const S extends boolean, const T extends boolean>(syncPoint: S, turnEvent: T) =>
  ({ syncPoint, turnEvent, scrubbed: [] }) as const

/** The table. */
export const entryFacts = {
  TurnOpened: row(false, false),
  TurnResumed: row(false, false),
  RequestDispatched: row(false, false),
  ResponseReceived: row(false, false),
  ModelFailed: { syncPoint: true, turnEvent: false, scrubbed: ["detail"] },
  ToolCalled: row(false, false),
  ToolResulted: row(false, false),
  TurnClosed: row(true, false),
  TurnAbandoned: row(true, false),
  TruncationRecovered: row(true, false),
  Admission: row(false, false),
  Rejection: row(true, false),
  SummaryStaged: row(false, true),
  ArtifactOffloaded: row(false, true),
  CompactionWarning: row(false, false),
  SummaryStarted: row(false, false),
  SummarySuperseded: row(false, false),
  JournalRepaired: row(true, false),
  SummaryRequestAnswered: row(false, true),
  ApprovalRequested: row(true, false),
  ApprovalDecided: row(true, false),
  ChildDelegated: row(false, false),
  ChildAnswered: row(false, false)
} as const satisfies FactsTable

/** The kinds whose row says `turnEvent`, as a type: what `Executor.TurnEvent` carries as journal entries. */
export type TurnEventTag = {
  readonly [K in EntryTag]: (typeof entryFacts)[K]["turnEvent"] extends true ? K : never
}[EntryTag]

/** An entry that becomes a turn event. */
export type TurnEventEntry = EntryOf<TurnEventTag>

/** A turn event made of a journal entry: the entry under its own tag. */
export type EntryTurnEvent = {
  readonly [K in TurnEventTag]: { readonly _tag: K; readonly entry: EntryOf<K> }
}[TurnEventTag]

/** Whether group commit syncs right after an entry of kind `tag`. */
export const isSyncPoint = (tag: EntryTag): boolean => entryFacts[tag].syncPoint

/** Whether an entry of kind `tag` becomes a turn event. */
export const isTurnEvent = (tag: EntryTag): tag is TurnEventTag => entryFacts[tag].turnEvent
