/**
 * What a journal's entries say its task's model requests cost, its
 * delegated children's itemized beside them. `JournalEntry.totalUsage`
 * documents it.
 */
import type * as Ids from "@tessera/core/Ids"
import { addUsage, type Usage } from "../Model.ts"

/** See `JournalEntry.ChildUsage`. */
export interface ChildUsage {
  readonly task: Ids.TaskId
  readonly usage: Usage
}

/** See `JournalEntry.UsageTotal`. */
export interface UsageTotal {
  readonly responses: number
  readonly reported: number
  readonly usage: Usage
  readonly children: ReadonlyArray<ChildUsage>
  readonly withChildren: Usage
}

/**
 * An entry as a total reads it (not `JournalEntry.Entry`, whose module builds on this one): a response's or a
 * summary answer's usage, a child's last record; any other kind is passed over.
 */
interface CostEntry {
  readonly _tag: string
  readonly usage?: Usage | undefined
  readonly task?: Ids.TaskId | undefined
}

/** See `JournalEntry.totalUsage`. */
export const sumUsage = (entries: Iterable<CostEntry>): UsageTotal => {
  let responses = 0
  let reported = 0
  let usage: Usage = {}
  // A call run again on resume records its child again: the last record of a child stands.
  const children = new Map<Ids.TaskId, Usage>()
  for (const entry of entries) {
    if (entry._tag === "ChildAnswered") {
      if (entry.task !== undefined) children.set(entry.task, entry.usage ?? {})
      continue
    }
    if (entry._tag !== "ResponseReceived" && entry._tag !== "SummaryRequestAnswered") continue
    responses++
    if (entry.usage === undefined) continue
    reported++
    usage = addUsage(usage, entry.usage)
  }
  const itemized = [...children].map(([task, spent]) => ({ task, usage: spent }))
  const withChildren = itemized.reduce((sum, child) => addUsage(sum, child.usage), usage)
  return { responses, reported, usage, children: itemized, withChildren }
}
