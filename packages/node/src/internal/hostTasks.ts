/**
 * The task helpers both local hosts share: issue a task's scope, bind it to
 * the host's runtime behind the entry gate, and run it with its journal.
 *
 * @internal
 */

import { ArtifactPathPolicy } from "@tessera/artifacts"
import { Ids, InvalidInput, Volume } from "@tessera/core"
import type { FilesystemTaskRuntime, VolumeStore } from "@tessera/runtime"
import { EntryGate, Journal } from "@tessera/runtime"
import type { FileSystem, Path } from "effect"
import { Effect, Layer } from "effect"
import * as NodeDigest from "../NodeDigest.ts"
import * as NodeJournalFile from "../NodeJournalFile.ts"
import * as StateNamespace from "../StateNamespace.ts"

/** What a host's task helpers need. */
export interface HostTasksInput {
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly agent: Ids.AgentId
  /** Volumes every task gets read and write grants on. */
  readonly taskVolumes: ReadonlyArray<Volume.VolumeRef>
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

/** The helpers, documented on the public hosts that expose them. */
export interface HostTasks {
  readonly bindTask: (task: Ids.TaskId, options?: TaskOptions) => Effect.Effect<EntryGate.TaskBinding, TaskBindError>
  readonly journalLayer: (
    task: Ids.TaskId
  ) => Layer.Layer<
    Journal.Journal,
    Journal.JournalCorrupt | Journal.JournalIOError | InvalidInput.InvalidInput,
    FileSystem.FileSystem | Path.Path
  >
  readonly withTask: <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    options?: TaskOptions
  ) => Effect.Effect<
    A,
    E | TaskBindError | Journal.JournalCorrupt | Journal.JournalIOError,
    Exclude<R, Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy> | FileSystem.FileSystem | Path.Path
  >
}

/** The agent-private scratch volume a task creates for itself. */
export const taskScratchId = (task: Ids.TaskId): Ids.VolumeId =>
  Ids.VolumeId.make(`${task.slice(0, 128 - "-scratch".length)}-scratch`)

export const makeHostTasks = (input: HostTasksInput): HostTasks => {
  const store = input.runtime.host.store
  const bindTask = (given: Ids.TaskId, options: TaskOptions = {}) =>
    Effect.gen(function* () {
      const task = yield* InvalidInput.decode(Ids.TaskId, "bindTask", "task")(given)
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
  // One task per process at a time: a blocking sync costs less than a worker round trip.
  const journalLayer = (task: Ids.TaskId) =>
    Journal.layer({ folder: input.journalFolder, task }).pipe(Layer.provide(NodeJournalFile.layer))
  const withTask = <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    options: TaskOptions = {}
  ) =>
    // Bind first: a refused binding must not even open the journal (and a
    // journal file is created only by its first entry anyway).
    bindTask(task, options).pipe(
      Effect.flatMap((binding) =>
        body(binding).pipe(
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
  return { bindTask, journalLayer, withTask }
}
