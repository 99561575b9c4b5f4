/**
 * A store that several runners share: one folder (a volume every runner
 * mounts at its own path) holding the volumes, their metadata, the task
 * journals, the staged summaries and the offloaded artifacts.
 *
 * Any runner may run any task: the workflow engine moves a task to another
 * runner when its runner dies, and that runner finds the task's journal,
 * summaries and artifacts in the same folder. What the shared file system
 * must guarantee, because the runtime's guarantees are built on it (each is
 * exercised by `test/SharedStore.test.ts` on a local folder):
 *
 * | operation                    | used for                                                                 | required semantics                                                                                                            |
 * | ---------------------------- | ------------------------------------------------------------------------ | ----------------------------------------------------------------------------------------------------------------------------- |
 * | exclusive create (`O_EXCL`)  | the store manifest, volume metadata, temporary names                     | of two runners creating one name, exactly one succeeds, the other sees `EEXIST`                                              |
 * | hard link (`link`)           | publishing a staged summary or an artifact under its final name, once    | atomic, fails `EEXIST` when the final name exists: write-once staging has exactly one winner across runners                   |
 * | `fsync` of files and folders | every journal line, every published file and its folder entry            | once it returns, the bytes and the name survive the runner's crash and are visible to every other runner                      |
 * | `rename`                     | replacing an artifact an interrupted attempt left with other bytes; repair | atomic replacement: a reader sees the old file or the new one, never a mix                                                     |
 * | close-to-open consistency    | a runner taking over a task reads what the dead runner synced            | a file opened after another runner's `fsync` returned sees those bytes (NFSv4 gives it; a local or block-shared FS trivially) |
 *
 * NFSv4 (with `sync` exports), CephFS and a clustered block device with a
 * cluster file system meet these; object storage does not (no link, no
 * exclusive create): the storage seam for it is `DurableFiles` (core) plus
 * `JournalStorage.JournalFile` (runtime), the two services every write goes through, which
 * an object-store platform would implement with conditional puts
 * (`If-None-Match: *`) instead of links. This module only opens the store;
 * it takes no lock of its own: one writer per task journal comes from the
 * workflow engine, which runs a task on one runner at a time, and from
 * `TaskLock`, which every activity holds.
 *
 * @since 0.1.0
 */
import * as ArtifactPathPolicy from "@tessera/artifacts/ArtifactPathPolicy"
import * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as LocalHarness from "@tessera/node/LocalHarness"
import * as StateNamespace from "@tessera/node/StateNamespace"
import type * as Delegation from "@tessera/runtime/Delegation"
import * as EntryGate from "@tessera/runtime/EntryGate"
import * as FilesystemTaskRuntime from "@tessera/runtime/FilesystemTaskRuntime"
import type * as Model from "@tessera/runtime/Model"
import type * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as TaskHost from "@tessera/runtime/TaskHost"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import { TaskHosting } from "./TaskHosting.ts"

/**
 * How a runner opens the shared store.
 *
 * - `root`: where this runner mounts the shared folder.
 * - `storeId`: the store's id; given, a folder holding another store fails
 *   `StoreIdMismatch` (a runner that mounted the wrong volume), and a new
 *   store gets this id.
 * - `agent`: the agent the tasks run for; its private volume
 *   (`<agent>-private`, `AgentPrivate`, owned by the agent) holds the
 *   summaries and the private artifacts of every task.
 * - `config`: the turn configuration of every task.
 * - `gate`: the entry gate's options (compaction policy); by default
 *   `Threshold` wherever the private writer resolves.
 * - `privateVolume`: `false` opens the runtime without a private volume
 *   (no summaries then; `Threshold` is refused at the gate).
 * - `children`, `delegation`: the child agents every task may delegate to
 *   and the host's limits (see `TaskHosting`); each child's private and
 *   output volumes are created in the store on first use.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly root: string
  readonly storeId?: Ids.StoreId
  readonly agent: Ids.AgentId
  readonly config: TaskExecution.ExecutionConfig
  readonly gate?: EntryGate.BindOptions
  readonly privateVolume?: boolean
  readonly system?: ReadonlyArray<Model.Part>
  readonly children?: ReadonlyArray<Delegation.ChildAgent>
  readonly delegation?: Delegation.Limits
}

/**
 * The store as a runner sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SharedStore {
  readonly root: string
  readonly host: TaskHost.TaskHost
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly volumes: {
    readonly private: Volume.VolumeRef
    readonly journal: Volume.VolumeRef
    readonly output: Volume.VolumeRef
  }
  readonly journalFolder: string
  /** The folder of the agent's private volume (summaries, private artifacts). */
  readonly privateFolder: string
  readonly outputFolder: string
  readonly hosting: TaskHosting["Service"]
  readonly pathPolicy: ArtifactPathPolicy.ArtifactPathPolicyShape
}

const decodeVolumeId = Schema.decodeUnknownSync(Ids.VolumeId)

/**
 * The id of the agent's private volume in a shared store.
 *
 * @since 0.1.0
 * @category naming
 */
export const privateVolumeId = (agent: Ids.AgentId): Ids.VolumeId => decodeVolumeId(`${agent.slice(0, 100)}-private`)

/** The task id the runtime's own scope is issued for. */
const runtimeTask: Ids.TaskId = Ids.TaskId.make("runner")

/**
 * Opens (creating on first use, by whichever runner comes first) the store
 * at `options.root` and its volumes: the agent's private volume, the
 * journal volume and the output volume. Safe to run on several runners at
 * once: the manifest and every volume are created exclusively, and a
 * runner that loses a race checks the winner's facts (`VolumeConflict` when
 * they differ). A volume's metadata file read while another runner is
 * publishing it has two names for a moment (its temporary name and its
 * final one); the store reads such a file by its name.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function* (options: Options) {
  const path = yield* Path.Path
  const root = path.resolve(options.root)
  const host = yield* TaskHost.open(options.storeId === undefined ? { root } : { root, storeId: options.storeId })
  const store = host.store
  const agent = options.agent
  const privateVolume = yield* StateNamespace.ensureVolume(store, {
    id: privateVolumeId(agent),
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const { journal, output } = yield* LocalHarness.ensureHostVolumes(store)
  const taskVolumes = [privateVolume, output]
  const grants = taskVolumes.map((volume) => ({ volume, access: ["read", "write"] as const }))
  const scope = yield* host.issueScope(runtimeTask, grants, agent)
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, {
    private: options.privateVolume === false ? Option.none() : Option.some(privateVolume),
    scope,
    output: Option.some(output)
  })
  const journalFolder = yield* store.folderOf(journal)
  const outputFolder = yield* store.folderOf(output)
  const privateFolder = VolumeStore.dataFolder(path, root, privateVolume.volume)
  const bindTask = (task: Ids.TaskId) =>
    Effect.gen(function* () {
      const taskScope = yield* host.issueScope(task, grants, agent)
      const context = yield* runtime.bindTask({ scope: taskScope, createdPrivate: [] })
      return yield* EntryGate.bind(context, options.gate ?? {})
    })
  const stateLocations = [
    path.join(root, VolumeStore.manifestFile),
    path.join(root, VolumeStore.metaRoot),
    journalFolder
  ]
  // Every volume's data folder is exempt, the children's private and output volumes of delegations included
  // (which of them a task may write is its capability's and its grants' question); the journals stay state.
  const pathPolicy = ArtifactPathPolicy.internalExcept({
    roots: [root],
    exempt: [path.join(root, VolumeStore.volumesFolder)],
    stateLocations
  })
  const shared: SharedStore = {
    root,
    host,
    runtime,
    volumes: { private: privateVolume, journal, output },
    journalFolder,
    privateFolder,
    outputFolder,
    hosting: TaskHosting.of({
      bindTask,
      journalFolder,
      config: options.config,
      ...(options.system === undefined ? {} : { system: options.system }),
      ...(options.children === undefined ? {} : { children: options.children }),
      ...(options.delegation === undefined ? {} : { delegation: options.delegation })
    }),
    pathPolicy
  }
  return shared
})

/**
 * `TaskHosting` and the store's `ArtifactPathPolicy` for a runner, from
 * {@link open}. Needs the platform (`FileSystem`, `Path`, `DurableFiles`)
 * and the host's `HostAuthority`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options) =>
  Layer.effectContext(
    Effect.map(open(options), (shared) =>
      Context.make(TaskHosting, shared.hosting).pipe(
        Context.add(ArtifactPathPolicy.ArtifactPathPolicy, shared.pathPolicy)
      )
    )
  )
