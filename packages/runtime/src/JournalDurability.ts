/**
 * When a journal's entries become durable: a choice a host states once, for
 * every journal it opens. The journal's format, its checks and its replay
 * are the same under all three; only the moment an entry survives a crash
 * differs.
 *
 * - {@link perEntry} (the default): every append is written and synced
 *   before it returns. A crash loses nothing that was appended.
 * - {@link groupCommit}: the entries of one model step are written as they
 *   come and synced together, once, when the next step dispatches its
 *   request, and at once wherever something waits on them: an entry that
 *   ends a turn or the journal's use (`TurnClosed`, `TurnAbandoned`,
 *   `ModelFailed`, `Rejection`), one a host acts on (`ApprovalRequested`,
 *   `ApprovalDecided`), a recovery record, the start of a tool that is not
 *   declared idempotent (the executor syncs before it runs, so such a tool
 *   still runs at most once across a crash), and the journal's scope
 *   closing. A crash loses at most the unsynced entries of the step in
 *   progress; the task resumes from its last synced step and redoes that
 *   step (its model request again, its idempotent tools again).
 * - {@link memoryOnly}: the lines go into a store in this process and are
 *   never written to a file. Nothing survives the process; within it a
 *   journal reopens (and `readEntries` reads) from the store through the
 *   same replay. For tests, and for comparing with loops that keep their
 *   state in memory.
 *
 * Where a journal lives is its writer's choice: while a journal is open,
 * every reader of it in this process (`Journal.readEntries`, and through it
 * `TaskExecution.restoreHistory` and `resume`) reads the medium its writer
 * opened it on, whatever durability the reader was given. After it closed,
 * a reader reads under the durability in use; one that finds no journal
 * where a memory-only store of this process still holds one fails with
 * `JournalIOError` saying so instead of reading no entries.
 *
 * The choice covers the journal's lines only. Transcripts, summaries and
 * artifacts are content on the volumes, written there under every choice:
 * a memory-only task's transcript records are on disk, named by their
 * digests, and read back from there by the journal's entries in this process.
 *
 * Provide it with {@link layer}, next to the host's other services.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import { type MemoryJournals, makeMemoryJournals } from "./internal/memoryJournals.ts"

/**
 * Every append written and synced before it returns.
 *
 * @since 0.1.0
 * @category models
 */
export interface PerEntry {
  readonly _tag: "PerEntry"
}

/**
 * The entries of a step synced together (see the module's description).
 *
 * @since 0.1.0
 * @category models
 */
export interface GroupCommit {
  readonly _tag: "GroupCommit"
}

/**
 * Journals kept in `journals`, in this process only.
 *
 * @since 0.1.0
 * @category models
 */
export interface MemoryOnly {
  readonly _tag: "MemoryOnly"
  readonly journals: MemoryJournals
}

/**
 * The choice.
 *
 * @since 0.1.0
 * @category models
 */
export type Durability = PerEntry | GroupCommit | MemoryOnly

/**
 * The journals of a {@link memoryOnly} choice (declared with the store's
 * constructor, in the package's internals).
 *
 * @since 0.1.0
 * @category models
 */
export type { MemoryJournals }

/**
 * The default.
 *
 * @since 0.1.0
 * @category constructors
 */
export const perEntry: Durability = Object.freeze({ _tag: "PerEntry" })

/**
 * Group commit.
 *
 * @since 0.1.0
 * @category constructors
 */
export const groupCommit: Durability = Object.freeze({ _tag: "GroupCommit" })

/**
 * A memory-only choice with a new, empty store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const memoryOnly = (): MemoryOnly => Object.freeze({ _tag: "MemoryOnly", journals: makeMemoryJournals() })

/**
 * The durability in use; {@link perEntry} unless a host provides another.
 *
 * @since 0.1.0
 * @category services
 */
export const JournalDurability: Context.Reference<Durability> = Context.Reference<Durability>(
  "@tessera/runtime/JournalDurability",
  { defaultValue: () => perEntry }
)

/**
 * Provides `durability` as the {@link JournalDurability} of every journal
 * opened within. Adds no requirement.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (durability: Durability): Layer.Layer<never> => Layer.succeed(JournalDurability)(durability)
