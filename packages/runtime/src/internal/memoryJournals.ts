import type { MemoryJournals } from "../JournalDurability.ts"

// The lines behind each store, by the store object: only a store this package made has any, so a hand-built
// `MemoryJournals` is recognised as not one.
const storeLines = new WeakMap<MemoryJournals, Map<string, Array<string>>>()

/** A new, empty store of memory-only journals. */
export const makeMemoryJournals = (): MemoryJournals => {
  const texts = new Map<string, Array<string>>()
  const journals: MemoryJournals = Object.freeze({
    files: () => [...texts.keys()],
    bytes: (file: string) => {
      const lines = texts.get(file)
      return lines === undefined ? undefined : new TextEncoder().encode(lines.join(""))
    }
  })
  storeLines.set(journals, texts)
  return journals
}

/** The mutable lines of a store made by {@link makeMemoryJournals}; `undefined` for any other object. */
export const linesOf = (journals: MemoryJournals): Map<string, Array<string>> | undefined => storeLines.get(journals)
