/**
 * The task helpers both local hosts share: issue a task's scope, bind it to
 * the host's runtime behind the entry gate, and run it with its journal.
 *
 * @internal
 */

import { ArtifactPathPolicy } from "@tessera/artifacts"
import type { Ids, Volume } from "@tessera/core"
import type { FilesystemTaskRuntime } from "@tessera/runtime"
import { EntryGate, Journal } from "@tessera/runtime"
import type { FileSystem, Path } from "effect"
import { Effect, Layer } from "effect"
import * as NodeDigest from "../NodeDigest.ts"
import * as NodeJournalFile from "../NodeJournalFile.ts"

/** What a host's task helpers need. */
export interface HostTasksInput {
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly agent: Ids.AgentId
  /** Volumes every task gets read and write grants on. */
  readonly taskVolumes: ReadonlyArray<Volume.VolumeRef>
  readonly journalFolder: string
  readonly pathPolicy: ArtifactPathPolicy.ArtifactPathPolicyShape
}

/** The helpers, documented on the public hosts that expose them. */
export interface HostTasks {
  readonly bindTask: (
    task: Ids.TaskId,
    options?: EntryGate.BindOptions
  ) => Effect.Effect<EntryGate.TaskBinding, FilesystemTaskRuntime.BindError>
  readonly journalLayer: (
    task: Ids.TaskId
  ) => Layer.Layer<Journal.Journal, Journal.JournalCorrupt | Journal.JournalIOError, FileSystem.FileSystem | Path.Path>
  readonly withTask: <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    options?: EntryGate.BindOptions
  ) => Effect.Effect<
    A,
    E | FilesystemTaskRuntime.BindError | Journal.JournalCorrupt | Journal.JournalIOError,
    Exclude<R, Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy> | FileSystem.FileSystem | Path.Path
  >
}

export const makeHostTasks = (input: HostTasksInput): HostTasks => {
  const bindTask = (task: Ids.TaskId, options: EntryGate.BindOptions = {}) =>
    input.runtime.host
      .issueScope(
        task,
        input.taskVolumes.map((volume) => ({ volume, access: ["read", "write"] as const })),
        input.agent
      )
      .pipe(
        Effect.flatMap((scope) => input.runtime.bindTask({ scope })),
        Effect.flatMap((context) => EntryGate.bind(context, options))
      )
  // One task per process at a time: a blocking sync costs less than a worker round trip.
  const journalLayer = (task: Ids.TaskId) =>
    Journal.layer({ folder: input.journalFolder, task }).pipe(Layer.provide(NodeJournalFile.layer))
  const withTask = <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    options: EntryGate.BindOptions = {}
  ) =>
    // Bind first: a refused binding must not even create the journal file.
    bindTask(task, options).pipe(
      Effect.flatMap((binding) =>
        body(binding).pipe(
          Effect.provide(
            Layer.mergeAll(journalLayer(task), ArtifactPathPolicy.layer(input.pathPolicy), NodeDigest.layer)
          )
        )
      )
    )
  return { bindTask, journalLayer, withTask }
}
