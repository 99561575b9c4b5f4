/**
 * Where a turn's `onEvent` hears of the journal entries its hooks write
 * (offloads, staged summaries, summary requests): hooks hold the journal
 * service itself, captured before the turn starts, so the turn cannot wrap
 * it; the journal instead offers those entries to the tap found in the
 * writing fiber's context. Every gated entry with an `onEvent` sets the
 * tap (`TaskExecution`); without one, nothing runs. Which entries those are
 * is the `turnEvent` column of the table of entry facts (`entryFacts.ts`).
 */

import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import { isTurnEvent, type TurnEventEntry } from "./entryFacts.ts"

export const JournalTap = Context.Reference<((entry: TurnEventEntry) => Effect.Effect<void>) | undefined>(
  "@tessera/runtime/internal/JournalTap",
  { defaultValue: () => undefined }
)

/** Whether the journal offers an entry of kind `tag` to the tap: exactly the table's turn events. */
export const tapped = isTurnEvent
