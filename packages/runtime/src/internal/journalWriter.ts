/**
 * The journal's writer: {@link openJournal} claims a task's journal for its
 * scope, replays it, recovers a cut tail, and hands out the appends that keep
 * the contract `Journal` states (durable appends, refusal before any write,
 * rollback of a failed append, group commit's sync points from the table of
 * entry facts). Also where every reader and writer resolves the medium a
 * journal lives on, and the one-writer-per-journal claim.
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import type { Entry, EntryInput } from "../JournalEntry.ts"
import * as JournalStorage from "../JournalStorage.ts"
import * as VolumeStore from "../VolumeStore.ts"
import { sha256Bytes } from "./digest.ts"
import { isSyncPoint, type TurnEventEntry } from "./entryFacts.ts"
import { absentHere, heldMedium, holdMedium, journalMedium, type MediumFailure } from "./journalMedium.ts"
import { encodeEntry, newline, replay } from "./journalReplay.ts"
import {
  type JournalCorrupt,
  JournalIoError,
  type JournalLocation,
  type JournalNotRecognized,
  JournalSequenceError,
  type JournalService,
  NoOpenTurn,
  TaskInUse,
  TurnAlreadyOpen,
  TurnUnfinished
} from "./journalService.ts"
import { advance, emptyState, type JournalState, openTurn, type TurnState } from "./journalState.ts"
import { JournalTap, tapped } from "./journalTap.ts"

/** The task id of a location, decoded (`InvalidInput` naming `task`): it becomes a file name. */
export const decodeTask = InvalidInput.decode(Ids.TaskId, "Journal", "task")

/** The journal file of a task inside a folder. */
export const fileName: (task: Ids.TaskId) => string = VolumeStore.journalFileName

/** A medium failure as the journal reports it. */
export const mediumError = (file: string) => (failure: MediumFailure) =>
  new JournalIoError({ file, operation: failure.operation, detail: failure.detail })

/**
 * Where the journal at `file` lives: the medium its writer in this process
 * opened it on, while one has it open (the writer's durability decided where
 * the lines are); otherwise the medium of the durability in use. Every
 * reader and writer of a journal resolves it here.
 */
export const mediumAt = (folder: string, file: string) =>
  Effect.suspend(() => {
    const held = heldMedium(file)
    if (held !== undefined) return Effect.succeed(held)
    return Effect.flatMap(
      Effect.all([JournalStorage.JournalDurability, JournalStorage.JournalFile]),
      ([durability, journalFile]) =>
        journalMedium(durability, journalFile, folder, file).pipe(Effect.mapError(mediumError(file)))
    )
  })

/** The medium the writer that claimed `file` opens it on; every reader of `file` reads it until the scope closes. */
export const writerMediumAt = (folder: string, file: string) =>
  Effect.tap(mediumAt(folder, file), (medium) => holdMedium(file, medium))

// The journals open for writing in this process, by absolute file: one writer per journal.
const writers = new Set<string>()

/** Registers this scope as the only writer of `file` in the process, until the scope closes. */
export const claimWriter = (task: Ids.TaskId, file: string): Effect.Effect<void, TaskInUse, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      if (writers.has(file)) return Effect.fail(new TaskInUse({ task, file, holder: "this process" }))
      writers.add(file)
      return Effect.void
    }),
    () => Effect.sync(() => writers.delete(file))
  )

export const openJournal = Effect.fnUntraced(function* (
  location: JournalLocation
): Effect.fn.Return<
  JournalService,
  JournalCorrupt | JournalNotRecognized | JournalIoError | TaskInUse | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path | Scope.Scope
> {
  const path = yield* Path.Path
  const task = yield* decodeTask(location.task)
  const file = path.resolve(location.folder, fileName(task))
  const ioError = (operation: string) => (error: { readonly message: string }) =>
    new JournalIoError({ file, operation, detail: error.message })
  yield* claimWriter(task, file)

  const durability = yield* JournalStorage.JournalDurability
  const grouped = durability._tag === "GroupCommit"
  const medium = yield* writerMediumAt(location.folder, file)
  const existing = yield* medium.read.pipe(Effect.mapError(mediumError(file)))
  const replayed = Option.isSome(existing)
    ? yield* Effect.fromResult(replay(file, task, existing.value, false))
    : {
        state: emptyState(task),
        entries: [],
        completeBytes: 0,
        blankBytes: 0,
        tail: new Uint8Array(0),
        tailIsEntry: false
      }

  const scope = yield* Scope.Scope
  // Appends run one at a time (under `lock`, or as one synchronous step with a
  // blocking handle), and only they replace these; a reader always sees a
  // complete value.
  let state = replayed.state
  let size = replayed.completeBytes
  let broken = false
  // Group commit: lines written since the last sync.
  let unsynced = false
  const lock = yield* Semaphore.make(1)

  const syncFailed = (error: { readonly message: string }) => {
    // After a failed sync nothing says which written bytes reached the device; only a reopen knows.
    broken = true
    return ioError("sync")(error)
  }
  /** Syncs what group commit left unsynced, if anything. */
  const syncWith = (opened: JournalStorage.AppendHandle): Effect.Effect<void, JournalIoError> =>
    Effect.suspend(() => {
      if (!unsynced) return Effect.void
      if (opened.blocking !== undefined) {
        try {
          opened.blocking.sync()
        } catch (error) {
          return Effect.fail(syncFailed(error instanceof Error ? error : { message: String(error) }))
        }
        unsynced = false
        return Effect.void
      }
      return opened.sync.pipe(
        Effect.matchEffect({
          onSuccess: () =>
            Effect.sync(() => {
              unsynced = false
            }),
          onFailure: (error) => Effect.fail(syncFailed(error))
        }),
        Effect.uninterruptible,
        lock.withPermit
      )
    })

  // A journal that does not exist yet is created by its first entry, not by
  // opening it: an entry refused before anything was journaled leaves no file.
  // Whatever group commit left unsynced is synced before the handle closes.
  const opened = (handle: Effect.Effect<JournalStorage.AppendHandle, MediumFailure>) =>
    handle.pipe(
      Effect.mapError(mediumError(file)),
      Effect.tap((handle) => (grouped ? Scope.addFinalizer(scope, Effect.ignore(syncWith(handle))) : Effect.void))
    )
  let handle: JournalStorage.AppendHandle | undefined = Option.isSome(existing)
    ? yield* opened(medium.open(scope))
    : undefined

  /** The entry, the state after it and its line, or why it cannot be appended; no I/O. */
  const prepare = (
    input: EntryInput,
    at: number
  ): Result.Result<
    {
      readonly entry: Entry
      readonly next: JournalState
      readonly line: string
      readonly bytes: number
      /** Group commit: sync what is unsynced before writing the line, and whether to sync after it. */
      readonly syncBefore: boolean
      readonly syncAfter: boolean
    },
    JournalIoError | JournalSequenceError
  > => {
    if (broken) {
      return Result.fail(
        new JournalIoError({
          file,
          operation: "append",
          detail: "an earlier append or sync failed and could not be rolled back; reopen the journal"
        })
      )
    }
    const entry = { ...input, seq: state.entries, at } as Entry
    const next = advance(state, entry)
    if (Result.isFailure(next)) {
      return Result.fail(new JournalSequenceError({ file, entry: entry._tag, detail: next.failure }))
    }
    const encoded = encodeEntry(entry)
    if (Result.isFailure(encoded)) {
      return Result.fail(
        new JournalSequenceError({
          file,
          entry: entry._tag,
          detail: `the entry does not match its Schema: ${encoded.failure.message}`
        })
      )
    }
    const line = `${JSON.stringify(encoded.success)}\n`
    // A step's request starts the next group: the step before it is synced first.
    const syncBefore = grouped && unsynced && entry._tag === "RequestDispatched"
    const syncAfter = grouped && isSyncPoint(entry._tag)
    return Result.succeed({
      entry,
      next: next.success,
      line,
      bytes: ArtifactPointer.utf8Length(line),
      syncBefore,
      syncAfter
    })
  }

  /** Records a written entry: the file grew by its line, and the state is the one after it. */
  const commit = (written: { readonly bytes: number; readonly entry: Entry; readonly next: JournalState }): Entry => {
    size += written.bytes
    state = written.next
    return written.entry
  }

  const effectfulWrite =
    (handle: JournalStorage.AppendHandle) =>
    (input: EntryInput): Effect.Effect<Entry, JournalIoError | JournalSequenceError> =>
      Clock.clockWith((clock) => {
        const prepared = prepare(input, clock.currentTimeMillisUnsafe())
        if (Result.isFailure(prepared)) return Effect.fail(prepared.failure)
        const { line, syncBefore, syncAfter } = prepared.success
        const syncFirst = syncBefore
          ? handle.sync.pipe(
              Effect.mapError(syncFailed),
              Effect.tap(() =>
                Effect.sync(() => {
                  unsynced = false
                })
              )
            )
          : Effect.void
        const written = grouped
          ? handle.write(line).pipe(Effect.tap(() => (syncAfter ? handle.sync : Effect.void)))
          : handle.append(line)
        return syncFirst.pipe(
          Effect.andThen(
            written.pipe(
              Effect.matchEffect({
                onSuccess: () =>
                  Effect.sync(() => {
                    unsynced = grouped && !syncAfter
                    return commit(prepared.success)
                  }),
                onFailure: (error) =>
                  // Leave no partial line behind a failed append: later appends would land after it. The cut syncs
                  // the file, and with it whatever group commit had not synced yet.
                  handle.truncate(size).pipe(
                    Effect.matchEffect({
                      onSuccess: () =>
                        Effect.sync(() => {
                          unsynced = false
                        }),
                      onFailure: () =>
                        Effect.sync(() => {
                          broken = true
                        })
                    }),
                    Effect.andThen(Effect.fail(ioError("append")(error)))
                  )
              })
            )
          )
        )
      }).pipe(Effect.uninterruptible, lock.withPermit)

  // A blocking handle makes the whole append one synchronous step: nothing else runs until it ends,
  // so it needs neither the lock nor the effects around the write.
  const blockingWrite =
    (file: NonNullable<JournalStorage.AppendHandle["blocking"]>) =>
    (input: EntryInput): Effect.Effect<Entry, JournalIoError | JournalSequenceError> =>
      Clock.clockWith((clock) => {
        const prepared = prepare(input, clock.currentTimeMillisUnsafe())
        if (Result.isFailure(prepared)) return Effect.fail(prepared.failure)
        const { line, syncBefore, syncAfter } = prepared.success
        if (syncBefore) {
          try {
            file.sync()
          } catch (error) {
            return Effect.fail(syncFailed(error instanceof Error ? error : { message: String(error) }))
          }
          unsynced = false
        }
        try {
          if (grouped) {
            file.write(line)
            if (syncAfter) file.sync()
          } else file.append(line)
        } catch (error) {
          // Leave no partial line behind a failed append: later appends would land after it. The cut syncs the
          // file, and with it whatever group commit had not synced yet.
          try {
            file.truncate(size)
            unsynced = false
          } catch {
            broken = true
          }
          return Effect.fail(ioError("append")(error instanceof Error ? error : { message: String(error) }))
        }
        unsynced = grouped && !syncAfter
        return Effect.succeed(commit(prepared.success))
      })

  const writerOf = (opened: JournalStorage.AppendHandle) =>
    opened.blocking === undefined ? effectfulWrite(opened) : blockingWrite(opened.blocking)
  let writeTo = handle === undefined ? undefined : writerOf(handle)
  const firstWrite = lock.withPermit(
    Effect.suspend(() =>
      handle === undefined
        ? Effect.map(opened(medium.create(scope)), (created) => {
            handle = created
            return created
          })
        : Effect.succeed(handle)
    )
  )
  // The agent a gate admitted before the journal recorded one; the next turn opened records it.
  let claimedAgent: Ids.AgentId | undefined
  const stamp = (input: EntryInput): EntryInput =>
    input._tag === "TurnOpened" && input.agent === undefined && claimedAgent !== undefined
      ? { ...input, agent: claimedAgent }
      : input
  const claimAgent = (agent: Ids.AgentId) =>
    Effect.sync(() => {
      const owner = state.agent ?? claimedAgent
      if (owner !== undefined && owner !== agent) return Option.some(owner)
      claimedAgent = agent
      return Option.none<Ids.AgentId>()
    })
  // The turn's redaction decision is whether the host provided a redactor to the fiber opening it (see `redactionOf`).
  const decided = (given: EntryInput): Effect.Effect<EntryInput> =>
    given._tag !== "TurnOpened" || given.redaction !== undefined
      ? Effect.succeed(given)
      : Effect.map(ArtifactRedactor.provided, (redactor) => ({ ...given, redaction: redactionOf(redactor) }))
  const write = (given: EntryInput): Effect.Effect<Entry, JournalIoError | JournalSequenceError> =>
    given._tag === "TurnOpened" ? Effect.flatMap(decided(given), writeStamped) : writeStamped(given)
  const writeStamped = (given: EntryInput): Effect.Effect<Entry, JournalIoError | JournalSequenceError> => {
    const input = stamp(given)
    return writeTo !== undefined
      ? writeTo(input)
      : Effect.flatMap(firstWrite, (opened) => {
          writeTo ??= writerOf(opened)
          return writeTo(input)
        })
  }

  // Only a file that existed can end in a cut or unterminated line.
  const reopened = handle
  if (reopened !== undefined && replayed.tailIsEntry) {
    // The last entry is whole and only lacks its newline: finish its line, losing nothing.
    yield* reopened.append("\n").pipe(Effect.mapError(ioError("finish the last line")))
    size = replayed.completeBytes + replayed.tail.length + 1
  } else if (reopened !== undefined && (replayed.tail.length > 0 || replayed.blankBytes > 0)) {
    // A cut line (or blank lines ending the file) is cut back, and the cut is recorded, never hidden.
    const dropped = replayed.tail.length > 0 ? replayed.tail : new Uint8Array(replayed.blankBytes).fill(newline)
    yield* reopened.truncate(replayed.completeBytes).pipe(Effect.mapError(ioError("truncate cut tail")))
    const droppedSha256 = yield* sha256Bytes(dropped)
    yield* write({
      _tag: "TruncationRecovered",
      line: replayed.state.entries + 1,
      keptBytes: replayed.completeBytes,
      droppedBytes: dropped.length,
      droppedSha256
    }).pipe(
      Effect.catchTag("JournalSequenceError", (error) =>
        Effect.fail(new JournalIoError({ file, operation: "record cut tail", detail: error.message }))
      )
    )
  }

  const currentState = Effect.sync(() => state)
  const current = (operation: string) =>
    Effect.suspend(() =>
      Option.match(openTurn(state), {
        onNone: () => Effect.fail(new NoOpenTurn({ task, operation })),
        onSome: Effect.succeed
      })
    )
  const turnAfter = (turn: number) =>
    Effect.sync(() => state.turns.find((candidate) => candidate.turn === turn) as TurnState)

  const openTurnEffect = Effect.gen(function* () {
    const open = openTurn(state)
    if (Option.isSome(open)) return yield* new TurnAlreadyOpen({ task, turn: open.value.turn })
    const turn = state.turns.length + 1
    yield* write({ _tag: "TurnOpened", turn, task })
    return yield* turnAfter(turn)
  })

  const resumeTurn = Effect.gen(function* () {
    const open = yield* current("resume")
    yield* write({ _tag: "TurnResumed", turn: open.turn })
    return yield* turnAfter(open.turn)
  })

  const closeTurn = Effect.gen(function* () {
    const open = yield* current("close")
    const unfinished = (reason: TurnUnfinished["reason"]) =>
      new TurnUnfinished({ task, turn: open.turn, reason, pendingCalls: open.owedCalls.map((call) => call.callId) })
    if (open.awaitingResponse) return yield* unfinished("AwaitingResponse")
    if (open.owedCalls.length > 0) return yield* unfinished("ToolResultsMissing")
    if (!open.answered) return yield* unfinished("NoFinalAnswer")
    yield* write({ _tag: "TurnClosed", turn: open.turn, steps: open.steps })
    return yield* turnAfter(open.turn)
  })

  const abandonTurn = (reason: string) =>
    Effect.gen(function* () {
      const open = yield* current("abandon")
      yield* write({ _tag: "TurnAbandoned", turn: open.turn, steps: open.steps, reason })
      return yield* turnAfter(open.turn)
    })

  return {
    task,
    file,
    state: currentState,
    append: (input: EntryInput) =>
      tapped(input._tag)
        ? Effect.tap(write(input), (entry) =>
            Effect.flatMap(Effect.service(JournalTap), (tap) =>
              // `tapped` passed exactly the table's turn events, and the entry written is of the input's kind.
              tap === undefined ? Effect.void : tap(entry as TurnEventEntry)
            )
          )
        : write(input),
    sync: Effect.suspend(() => (handle === undefined ? Effect.void : syncWith(handle))),
    openTurn: openTurnEffect,
    resumeTurn,
    closeTurn,
    abandonTurn,
    claimAgent
  }
})

/** `Journal.readEntries` (see its contract). */
export const readJournalEntries = Effect.fnUntraced(function* (
  location: JournalLocation
): Effect.fn.Return<
  ReadonlyArray<Entry>,
  JournalCorrupt | JournalNotRecognized | JournalIoError | InvalidInput.InvalidInput,
  FileSystem.FileSystem | Path.Path
> {
  const path = yield* Path.Path
  const task = yield* decodeTask(location.task)
  const file = path.resolve(location.folder, fileName(task))
  const medium = yield* mediumAt(location.folder, file)
  const bytes = yield* medium.read.pipe(Effect.mapError(mediumError(file)))
  if (Option.isNone(bytes)) {
    const elsewhere = absentHere(yield* JournalStorage.JournalDurability, file)
    return elsewhere === undefined ? [] : yield* Effect.fail(mediumError(file)(elsewhere))
  }
  const replayed = replay(file, task, bytes.value, true)
  if (Result.isFailure(replayed)) return yield* replayed.failure
  return replayed.success.entries
})

/** The entries of the journal in hand (its file, read back as `Journal.readEntries` reads it). */
export const entriesOf = Effect.fnUntraced(function* (journal: { readonly file: string; readonly task: Ids.TaskId }) {
  const path = yield* Path.Path
  return yield* readJournalEntries({ folder: path.dirname(journal.file), task: journal.task })
})

/** A redaction decision as the journal records it (`TurnOpened.redaction`): whether a redactor is provided. */
export const redactionOf = (redactor: Option.Option<unknown>): "Scrubbed" | "Verbatim" =>
  Option.isSome(redactor) ? "Scrubbed" : "Verbatim"
