// Declared here and re-exported by `JournalStorage` under the same name: the public module imports its
// internals, never the reverse.
/**
 * The journals of a memory-only choice (`JournalStorage.memoryOnly`):
 * each journal's text, by its absolute file path. The store is the only
 * place the lines exist; every journal opened under the same choice shares
 * it, so a task reopened in this process finds its entries.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryJournals {
  /** The journal files the store holds. */
  readonly files: () => ReadonlyArray<string>
  /** The UTF-8 bytes of one journal, as the file would hold them; `undefined` when there is none. */
  readonly bytes: (file: string) => Uint8Array | undefined
}

// The lines behind each store, by the store object: only a store this package made has any, so a hand-built
// `MemoryJournals` is recognised as not one.
const storeLines = new WeakMap<MemoryJournals, Map<string, Array<string>>>()

// Every store made in this process, held weakly: a store nothing references any more holds no journal anyone
// could read, so it must not keep the lines alive nor make a reader refuse to answer.
const madeStores = new Set<WeakRef<Map<string, Array<string>>>>()

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
  madeStores.add(new WeakRef(texts))
  return journals
}

/** Whether a store of this process that is still reachable holds a journal at `file` (an absolute path). */
export const heldInMemory = (file: string): boolean => {
  for (const made of madeStores) {
    const texts = made.deref()
    if (texts === undefined) madeStores.delete(made)
    else if (texts.has(file)) return true
  }
  return false
}

/** The mutable lines of a store made by {@link makeMemoryJournals}; `undefined` for any other object. */
export const linesOf = (journals: MemoryJournals): Map<string, Array<string>> | undefined => storeLines.get(journals)
