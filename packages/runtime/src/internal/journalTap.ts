/**
 * Where a turn's `onEvent` hears of the journal entries its hooks write
 * (offloads, staged summaries, summary requests): hooks hold the journal
 * service itself, captured before the turn starts, so the turn cannot wrap
 * it; the journal instead offers those entries to the tap found in the
 * writing fiber's context. Every gated entry with an `onEvent` sets the
 * tap (`TaskExecution`); without one, nothing runs.
 */

import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { Entry } from "../JournalEntry.ts"

export const JournalTap = Context.Reference<((entry: Entry) => Effect.Effect<void>) | undefined>(
  "@tessera/runtime/internal/JournalTap",
  { defaultValue: () => undefined }
)

/** The entry kinds that become turn events, stated once: the journal offers exactly these to the tap. */
export const tappedKinds = ["ArtifactOffloaded", "SummaryStaged", "SummaryRequestAnswered"] as const

/** An entry the tap receives. */
export type TappedEntry = Extract<Entry, { readonly _tag: (typeof tappedKinds)[number] }>

export const tapped = (tag: Entry["_tag"]): boolean => (tappedKinds as ReadonlyArray<string>).includes(tag)
