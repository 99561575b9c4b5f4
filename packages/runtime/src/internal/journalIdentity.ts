/**
 * The one test of "one task identity per turn": whether a journal is the
 * record of a task on a store. A journal of another task, or one outside
 * the store's root, never is. The entry gate, capability admission and
 * offload targets all ask this.
 */
import * as DurableFiles from "@tessera/core/DurableFiles"

export const isRecordOf = (
  journal: { readonly task: string; readonly file: string },
  task: string,
  storeRoot: string,
  path: DurableFiles.PathRules
): boolean => journal.task === task && DurableFiles.relativeWithin(storeRoot, journal.file, path) !== undefined
