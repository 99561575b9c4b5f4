/**
 * The task helpers both local hosts share: issue a task's scope, bind it to
 * the host's runtime behind the entry gate, and run it with its journal.
 *
 * @internal
 */

import * as ArtifactPathPolicy from "@tessera/artifacts/ArtifactPathPolicy"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import type * as Unauthorized from "@tessera/core/Unauthorized"
import * as Volume from "@tessera/core/Volume"
import * as Delegation from "@tessera/runtime/Delegation"
import * as EntryGate from "@tessera/runtime/EntryGate"
import type * as FilesystemTaskRuntime from "@tessera/runtime/FilesystemTaskRuntime"
import * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as JournalStorage from "@tessera/runtime/JournalStorage"
import type * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Semaphore from "effect/Semaphore"
import * as NamespaceLock from "../NamespaceLock.ts"
import * as NodeDigest from "../NodeDigest.ts"
import * as NodeJournalFile from "../NodeJournalFile.ts"
import * as StateNamespace from "../StateNamespace.ts"

/** What a host's task helpers need. */
export interface HostTasksInput {
  /** The opened namespace: its host, its lock, and where the per-task journal locks live. */
  readonly opened: StateNamespace.StateNamespace
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly agent: Ids.AgentId
  /** Volumes every task gets read and write grants on. */
  readonly taskVolumes: ReadonlyArray<Volume.VolumeRef>
  readonly journalFolder: string
  readonly pathPolicy: ArtifactPathPolicy.ArtifactPathPolicyShape
  /** The journals' durability; the caller's `JournalStorage.JournalDurability` (by default per entry) when absent. */
  readonly durability?: JournalStorage.Durability | undefined
}

/** What both local hosts expose of their namespace and runtime, documented on the public hosts. */
export interface HostFacts {
  readonly namespace: Ids.StoreId
  readonly agent: Ids.AgentId
  readonly folder: string
  readonly lock: NamespaceLock.HeldLock
  readonly host: StateNamespace.StateNamespace["host"]
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly journalFolder: string
  readonly pathPolicy: ArtifactPathPolicy.ArtifactPathPolicyShape
}

/**
 * How a host binds a task: the entry gate's options, plus `createPrivate`:
 * when `true`, the task gets its own agent-private scratch volume
 * (`<task>-scratch`, created on first use, owned by the host's agent, read
 * and write granted to the task) as private content it created, the first
 * candidate of the private-summaries resolution. The task can then compact
 * into it even where the runtime has no private volume.
 */
export interface TaskOptions extends EntryGate.BindOptions {
  readonly createPrivate?: boolean
}

/** What binding a host's task can fail with. */
export type TaskBindError =
  | FilesystemTaskRuntime.BindError
  | StateNamespace.VolumeConflict
  | VolumeStore.VolumeMetadataInvalid
  | VolumeStore.StoreIoError

/** Every way taking a task's journal for writing can fail. */
export type TaskJournalError =
  | InvalidInput.InvalidInput
  | Journal.JournalCorrupt
  | Journal.JournalNotRecognized
  | Journal.JournalIoError
  | Journal.TaskInUse
  | NamespaceLock.StaleNamespaceLock
  | NamespaceLock.NamespaceLockInvalid
  | NamespaceLock.NamespaceLockIoError

/**
 * The helpers, documented on the public hosts that expose them. As a child harness, a host binds the children
 * of its tasks' delegations (its `withChild` needs the parent's journal: delegation is one of the parent's gated
 * entries).
 */
export interface HostTasks
  extends Delegation.ChildHarness<
    TaskBindError | TaskJournalError | Unauthorized.Unauthorized,
    Journal.Journal | FileSystem.FileSystem | Path.Path,
    Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy
  > {
  readonly bindTask: (task: Ids.TaskId, options?: TaskOptions) => Effect.Effect<EntryGate.TaskBinding, TaskBindError>
  readonly journalLayer: (
    task: Ids.TaskId
  ) => Layer.Layer<Journal.Journal, TaskJournalError, FileSystem.FileSystem | Path.Path>
  readonly repairJournal: (
    task: Ids.TaskId
  ) => Effect.Effect<
    Option.Option<Journal.Repaired>,
    Exclude<TaskJournalError, Journal.JournalCorrupt | Journal.JournalNotRecognized> | InvalidInput.InvalidInput,
    FileSystem.FileSystem | Path.Path
  >
  readonly withTask: <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    options?: TaskOptions
  ) => Effect.Effect<
    A,
    E | TaskBindError | TaskJournalError,
    Exclude<R, Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy> | FileSystem.FileSystem | Path.Path
  >
  readonly readEntries: (
    task: Ids.TaskId
  ) => Effect.Effect<
    ReadonlyArray<JournalEntry.Entry>,
    Journal.JournalCorrupt | Journal.JournalNotRecognized | Journal.JournalIoError | InvalidInput.InvalidInput,
    FileSystem.FileSystem | Path.Path
  >
}

/** The agent-private scratch volume a task creates for itself: named as a delegation's child names its own. */
export const taskScratchId = (task: Ids.TaskId): Ids.VolumeId => Delegation.childVolumes(task).private

const decodeTask = InvalidInput.decode(Ids.TaskId, "withTask", "task")

/** The task helpers of a host, with the facts of its namespace and runtime it exposes beside them. */
export const makeHostTasks = (input: HostTasksInput): HostTasks & HostFacts => {
  const taskLocks = input.opened.taskLocks
  const store = input.runtime.host.store
  const bindTask = (given: Ids.TaskId, options: TaskOptions = {}) =>
    Effect.gen(function* () {
      const task = yield* decodeTask(given)
      const created =
        options.createPrivate === true
          ? [
              yield* StateNamespace.ensureVolume(store, {
                id: taskScratchId(task),
                kind: "AgentPrivate",
                owner: Volume.agentOwner(input.agent)
              })
            ]
          : []
      const scope = yield* input.runtime.host.issueScope(
        task,
        [...input.taskVolumes, ...created].map((volume) => ({ volume, access: ["read", "write"] as const })),
        input.agent
      )
      const context = yield* input.runtime.bindTask({ scope, createdPrivate: created })
      const { createPrivate: _, ...gate } = options
      return yield* EntryGate.bind(context, gate)
    })
  // Task locks are taken one at a time in this process, and only under the namespace lock, so no other
  // recoverer can run meanwhile: a recovery a kill interrupted can be finished instead of needing a person.
  const taking = Semaphore.makeUnsafe(1)
  const takeOneAtATime = <A, E, R>(effect: Effect.Effect<A, E, R>) => taking.withPermit(effect)
  // The task's journal lock, for the scope: one writer per journal across processes. A live holder (another
  // process, or another fiber of this one) is `TaskInUse`.
  const lockTask = (given: Ids.TaskId) =>
    Effect.gen(function* () {
      // The id becomes a lock file name: decoded first.
      const task = yield* decodeTask(given)
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const file = path.join(taskLocks.folder, `${task}.lock`)
      yield* fs
        .makeDirectory(taskLocks.folder, { recursive: true })
        .pipe(
          Effect.mapError(
            (error) => new NamespaceLock.NamespaceLockIoError({ file, operation: "create", detail: error.message })
          )
        )
      const options = {
        recoverStale: taskLocks.recoverStale,
        recoverInterruptedRecovery: true,
        staleHint: StateNamespace.staleLockHint
      }
      return yield* takeOneAtATime(NamespaceLock.acquire(file, options)).pipe(
        Effect.catchTag("NamespaceInUse", (held) =>
          Effect.fail(
            new Journal.TaskInUse({
              task,
              file: path.join(input.journalFolder, Journal.fileName(task)),
              holder:
                held.pid === process.pid
                  ? "this process"
                  : `process ${held.pid} on ${held.host} since ${held.since} (${held.reason})`
            })
          )
        )
      )
    })
  // One task per process at a time: a blocking sync costs less than a worker round trip.
  const journalLayer = (task: Ids.TaskId) =>
    Layer.effect(
      Journal.Journal,
      lockTask(task).pipe(Effect.andThen(Journal.open({ folder: input.journalFolder, task })))
    ).pipe(
      Layer.provide(
        input.durability === undefined
          ? NodeJournalFile.layer
          : Layer.merge(NodeJournalFile.layer, JournalStorage.layer(input.durability))
      )
    )
  // The host's durability reaches every reader of its journals, not only the journals it opens for writing.
  const durable = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    input.durability === undefined
      ? effect
      : Effect.provideService(effect, JournalStorage.JournalDurability, input.durability)
  const repairJournal = (task: Ids.TaskId) =>
    durable(Effect.scoped(lockTask(task).pipe(Effect.andThen(Journal.repair({ folder: input.journalFolder, task })))))
  const readEntries = (given: Ids.TaskId) =>
    Effect.flatMap(decodeTask(given), (task) => durable(Journal.readEntries({ folder: input.journalFolder, task })))
  const withTask = <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    options: TaskOptions = {}
  ) =>
    // Bind first: a refused binding must not even take the task's lock (and a
    // journal file is created only by its first entry anyway).
    bindTask(task, options).pipe(
      Effect.flatMap((binding) =>
        durable(body(binding)).pipe(
          Effect.provide(
            Layer.mergeAll(
              journalLayer(binding.context.task),
              ArtifactPathPolicy.layer(input.pathPolicy),
              NodeDigest.layer
            )
          )
        )
      )
    )
  // A child task of a delegation, bound by the runtime's one child binder, and run with its journal.
  const withChild = <A, E, R>(
    parent: EntryGate.TaskBinding,
    child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId },
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>
  ) =>
    Delegation.bindChild(parent, child).pipe(
      Effect.flatMap((binding) =>
        durable(body(binding)).pipe(
          Effect.provide(
            Layer.mergeAll(
              journalLayer(binding.context.task),
              ArtifactPathPolicy.layer(input.pathPolicy),
              NodeDigest.layer
            )
          )
        )
      )
    )
  return {
    bindTask,
    journalLayer,
    withChild,
    repairJournal,
    withTask,
    readEntries,
    namespace: input.opened.namespace,
    agent: input.agent,
    folder: input.opened.folder,
    lock: input.opened.lock,
    host: input.opened.host,
    runtime: input.runtime,
    journalFolder: input.journalFolder,
    pathPolicy: input.pathPolicy
  }
}
