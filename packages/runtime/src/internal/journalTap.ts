/**
 * Where a streamed turn hears of the journal entries its hooks write
 * (offloads, staged summaries, summary requests): hooks hold the journal
 * service itself, captured before the turn starts, so the turn cannot wrap
 * it; the journal instead offers those entries to the tap found in the
 * writing fiber's context. No tap (every non-streamed turn): nothing runs.
 */

import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { Entry } from "../JournalEntry.ts"

export const JournalTap = Context.Reference<((entry: Entry) => Effect.Effect<void>) | undefined>(
  "@tessera/runtime/internal/JournalTap",
  { defaultValue: () => undefined }
)

/** The entry kinds offered to the tap. */
export const tapped = (tag: Entry["_tag"]): boolean =>
  tag === "ArtifactOffloaded" || tag === "SummaryStaged" || tag === "SummaryRequestAnswered"
