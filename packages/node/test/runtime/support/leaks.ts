/**
 * Measuring a door through which text leaves Tessera (an error handed to a
 * caller, a journal, a span) against the secret corpus: the provider's
 * error text holds every corpus entry, and the door is held to the rate the
 * redactor reaches on that same text.
 *
 * The adapters' test projects load this module by path at run time (their
 * type-check covers only their own folder), so it imports nothing but the
 * corpus and the runtime's `everyText`.
 */
import { everyText } from "../../../../runtime/test/support/everyText.ts"
import { type CorpusEntry, leaked, secretCorpus } from "./secretCorpus.ts"

export type { CorpusEntry }
export { everyText, secretCorpus }

/** What a provider that echoes the request puts in its error: every corpus entry, one per paragraph. */
export const corpusText: string = secretCorpus.map((entry) => entry.text).join("\n\n")

/** The provider's error text of the door scenarios. */
export const providerText = `400 Bad Request: the provider rejected the request, which was:\n${corpusText}`

/** The entries any of `outputs` leaks. */
export const leakedIn = (outputs: ReadonlyArray<string>): ReadonlyArray<CorpusEntry> =>
  secretCorpus.filter((entry) => outputs.some((output) => leaked(output, entry.secret)))

/** What one door let through, measured against what the redactor catches in the provider's text. */
export interface DoorMeasure {
  /** Share of the corpus the door kept back. */
  readonly rate: number
  /** Share of the corpus the redactor catches in the provider's text itself. */
  readonly redactorRate: number
  /** Entries the redactor catches that still leaked through the door: must be none. */
  readonly caughtButLeaked: ReadonlyArray<CorpusEntry>
}

/**
 * Measures a door: `outputs` are every text that reached the caller (and
 * the journal, the spans) through it; `redacted` is the redactor's output
 * on {@link providerText}, the rate every other boundary reaches. Prints
 * the rates and every entry that leaked although the redactor catches it.
 */
export const measureDoor = (place: string, outputs: ReadonlyArray<string>, redacted: string): DoorMeasure => {
  const missedByRedactor = new Set(leakedIn([redacted]))
  const missed = leakedIn(outputs)
  const caughtButLeaked = missed.filter((entry) => !missedByRedactor.has(entry))
  const total = secretCorpus.length
  const rate = 1 - missed.length / total
  const redactorRate = 1 - missedByRedactor.size / total
  console.log(
    `secret corpus, ${place}: ${total - missed.length}/${total} kept back (${(rate * 100).toFixed(1)}%); the redactor on the same text: ${total - missedByRedactor.size}/${total}`
  )
  for (const miss of caughtButLeaked)
    console.log(`  LEAK ${place} [${miss.kind}] ${JSON.stringify(miss.text.slice(0, 160))}`)
  return { rate, redactorRate, caughtButLeaked }
}
