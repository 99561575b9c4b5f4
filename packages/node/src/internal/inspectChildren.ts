/**
 * A task's delegated children as its journal records them (`ChildDelegated`,
 * `ChildAnswered`): each child task, its agent, where it stands and what it
 * spent. The inspector's tree of a task.
 *
 * @internal
 */
import type * as Ids from "@tessera/core/Ids"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import type * as Model from "@tessera/runtime/Model"

/** A child of a task: answered, waiting for an approval of its own, out of time, failed (a host that runs it as a
 * task of its own: the workflow engine), or started and not (yet) done. */
export interface ChildReport {
  readonly task: Ids.TaskId
  readonly agent: Ids.AgentId
  readonly status: "Answered" | "AwaitingApproval" | "TimedOut" | "Failed" | "Unfinished"
  readonly usage: Model.Usage
  /** The files it published that reached the parent (by name), as its last `ChildAnswered` says. */
  readonly published: ReadonlyArray<string>
}

/** The children of a journal's task, in the order they were first delegated; the last record of each stands. */
export const childrenOf = (entries: Iterable<JournalEntry.Entry>): ReadonlyArray<ChildReport> => {
  const children = new Map<Ids.TaskId, ChildReport>()
  for (const entry of entries) {
    if (entry._tag === "ChildDelegated") {
      const known = children.get(entry.task)
      children.set(entry.task, {
        task: entry.task,
        agent: entry.agent,
        status: "Unfinished",
        usage: known?.usage ?? {},
        published: known?.published ?? []
      })
    } else if (entry._tag === "ChildAnswered") {
      const known = children.get(entry.task)
      if (known === undefined) continue
      children.set(entry.task, {
        ...known,
        status: entry.outcome,
        usage: entry.usage ?? {},
        published: (entry.published ?? []).map((file) => file.name)
      })
    }
  }
  return [...children.values()]
}
