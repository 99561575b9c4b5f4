/**
 * Where and when a journal's lines are kept: its storage, in one module.
 *
 * - **Durability**: when a journal's entries become durable, a choice a
 *   host states once, for every journal it opens ({@link Durability},
 *   provided with {@link layer}). The journal's format, its checks and its
 *   replay are the same under all three; only the moment an entry survives
 *   a crash differs.
 * - **The file**: how a journal writes its file ({@link JournalFile}, the
 *   one open, append-only descriptor behind `Journal.open`), a
 *   `Context.Reference` a platform may replace.
 * - **Memory**: the journals of a {@link memoryOnly} choice
 *   ({@link MemoryJournals}), which are never written to a file.
 *
 * The durability choices:
 *
 * - {@link perEntry} (the default): every append is written and synced
 *   before it returns. A crash loses nothing that was appended.
 * - {@link groupCommit}: the entries of one model step are written as they
 *   come and synced together, once, when the next step dispatches its
 *   request; at once after every sync point, an entry something outside the
 *   journal waits on or acts on at once (one that ends a turn or the
 *   journal's use, one a host acts on, a recovery record: the kinds the
 *   table of entry facts, `internal/entryFacts.ts`, marks `syncPoint`);
 *   before a tool that is not declared idempotent starts (the executor
 *   syncs, so such a tool still runs at most once across a crash); and when
 *   the journal's scope closes. A crash loses at most the unsynced entries
 *   of the step in progress; the task resumes from its last synced step and
 *   redoes that step (its model request again, its idempotent tools again).
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
 * `JournalIoError` saying so instead of reading no entries.
 *
 * The choice covers the journal's lines only. Transcripts, summaries and
 * artifacts are content on the volumes, written there under every choice:
 * a memory-only task's transcript records are on disk, named by their
 * digests, and read back from there by the journal's entries in this process.
 *
 * The file: {@link JournalFile} needs no layer and adds no requirement of
 * its own. The default ({@link fileSystem}) goes through Effect's
 * `FileSystem`, which runs every write and every sync on the platform's
 * worker threads, so the process keeps serving other fibers while the
 * device works, at the cost of two thread round trips per append. A host
 * may provide another implementation; `@tessera/node` has a blocking one
 * (`NodeJournalFile`) that writes and syncs on the calling thread, which is
 * faster whenever nothing else in the process needs to run during an
 * append. Every implementation keeps the same contract, so the journal's
 * guarantees (durable appends, a failed append rolled back to the last
 * complete line) do not depend on the choice.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
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

/**
 * A journal file operation failed. `operation` says which (`open`, `read`,
 * `append`, `sync`, `truncate`) and `detail` carries the platform's message.
 *
 * @since 0.1.0
 * @category errors
 */
export class JournalFileError extends Schema.TaggedError<JournalFileError>()("JournalFileError", {
  operation: Schema.Literals(["open", "read", "append", "sync", "truncate"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.operation} failed: ${this.detail}`
  }
}

/**
 * An open journal file.
 *
 * @since 0.1.0
 * @category models
 */
export interface AppendHandle {
  /**
   * Writes the UTF-8 encoding of `line` at the end of the file and syncs the
   * file before succeeding. On failure some of its bytes may have been
   * written; the journal truncates them away. A line, not bytes: a platform
   * can write a short text without first copying it into a buffer of its own
   * (in Node, `TextEncoder.encode` of a 250-character line costs more than
   * everything else the journal does for it).
   */
  readonly append: (line: string) => Effect.Effect<void, JournalFileError>
  /**
   * Writes `line` as {@link append} does, without syncing: the bytes are the
   * platform's until the next {@link sync}. Group commit
   * ({@link groupCommit}) writes with it.
   */
  readonly write: (line: string) => Effect.Effect<void, JournalFileError>
  /** Makes every byte written so far durable. */
  readonly sync: Effect.Effect<void, JournalFileError>
  /** Cuts the file to `size` bytes and syncs it. */
  readonly truncate: (size: number) => Effect.Effect<void, JournalFileError>
  /**
   * The same operations as blocking calls that throw the
   * {@link JournalFileError}, for a platform whose appends block anyway.
   * With them the journal makes each append, and the cut-back after a failed
   * one, in a single synchronous step: no other fiber can run in between, so
   * appends need no lock and cost a few effects less.
   */
  readonly blocking?: {
    readonly append: (line: string) => void
    readonly write: (line: string) => void
    readonly sync: () => void
    readonly truncate: (size: number) => void
  }
}

/**
 * What an implementation provides: opening a file for appending (creating
 * it if missing) for the lifetime of a scope. The file is closed when the
 * scope closes.
 *
 * @since 0.1.0
 * @category models
 */
export interface JournalFileShape {
  readonly openAppend: (
    file: string
  ) => Effect.Effect<AppendHandle, JournalFileError, FileSystem.FileSystem | Scope.Scope>
  /**
   * Reads the whole file, `None` when it does not exist. Optional: without
   * it the journal reads through `FileSystem`. A platform provides it when
   * it reads a large file faster (reopening a journal reads all of it).
   */
  readonly readAll?: (file: string) => Effect.Effect<Option.Option<Uint8Array>, JournalFileError>
}

const encoder = new TextEncoder()

const fail = (operation: JournalFileError["operation"]) => (error: { readonly message: string }) =>
  new JournalFileError({ operation, detail: error.message })

/**
 * The portable implementation on Effect's `FileSystem`: the write and the
 * sync of an append each run on a worker thread.
 *
 * @since 0.1.0
 * @category implementations
 */
export const fileSystem: JournalFileShape = {
  openAppend: (file) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const handle = yield* fs.open(file, { flag: "a" }).pipe(Effect.mapError(fail("open")))
      const write = (line: string) => handle.writeAll(encoder.encode(line))
      return {
        append: (line) => write(line).pipe(Effect.andThen(handle.sync), Effect.mapError(fail("append"))),
        write: (line) => write(line).pipe(Effect.mapError(fail("append"))),
        sync: handle.sync.pipe(Effect.mapError(fail("sync"))),
        truncate: (size) => handle.truncate(size).pipe(Effect.andThen(handle.sync), Effect.mapError(fail("truncate")))
      }
    })
}

/**
 * The journal file implementation in use; {@link fileSystem} unless a host
 * provides another (`Layer.succeed(JournalFile)(implementation)`).
 *
 * @since 0.1.0
 * @category services
 */
export const JournalFile: Context.Reference<JournalFileShape> = Context.Reference<JournalFileShape>(
  "@tessera/runtime/JournalFile",
  { defaultValue: () => fileSystem }
)
