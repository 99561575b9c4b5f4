/**
 * A task's redaction decision as the inspector reports it: the one its
 * last turn recorded (`TurnOpened.redaction`), `Unknown` when the journal
 * has no turn or predates the record.
 *
 * @internal
 */
import type * as JournalEntry from "@tessera/runtime/JournalEntry"

/** `Scrubbed` (a redactor ran before bodies were stored), `Verbatim` (none did), or `Unknown`. */
export type Redaction = "Scrubbed" | "Verbatim" | "Unknown"

/** The decision of the last `TurnOpened` among `entries` (all of a journal's, not a filtered few). */
export const redactionOf = (entries: ReadonlyArray<JournalEntry.Entry>): Redaction => {
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index] as JournalEntry.Entry
    if (entry._tag === "TurnOpened") return entry.redaction ?? "Unknown"
  }
  return "Unknown"
}

/**
 * The decision as one text line. `Verbatim` is marked so it stands out in a
 * long report: bodies (offloaded results, summaries, transcript records)
 * were stored as the tools and the model wrote them, secrets included.
 */
export const redactionLine = (redaction: Redaction): string => {
  switch (redaction) {
    case "Scrubbed":
      return "  redaction: scrubbed (a host redactor ran before bodies were stored)"
    case "Verbatim":
      return "  !! redaction: none (bodies stored verbatim): the last turn ran without a redactor, so offloaded results, summaries and transcript records hold what the tools and the model wrote, secrets included"
    case "Unknown":
      return "  redaction: unknown (no turn recorded a decision; journals written before the record have none)"
  }
}
