/**
 * The local harness: a state namespace on this machine with the standard
 * volumes, and a runtime whose private volume is the agent's scratch volume.
 *
 * Opening a harness (see {@link open}):
 *
 * 1. takes the namespace's lock for the scope (see `StateNamespace` and
 *    `NamespaceLock`): one runtime per namespace at a time, a typed
 *    `NamespaceInUse` naming the holder otherwise; a lock a crashed
 *    process of this machine left is replaced and reported as
 *    `lock.recovered` (with `recoverStaleLock: false`, a typed
 *    `StaleNamespaceLock` instead);
 * 2. removes the temporary names a crash left in the store
 *    (`DurableFiles.isTemporaryName`: writes cut short, never content);
 * 3. makes sure the standard volumes exist: `<agent>-scratch`
 *    (`AgentPrivate`, owned by the agent), `journal` (`Journal`, owned by the
 *    host) and `output` (`Output`, owned by the host);
 * 4. issues the runtime's scope (read and write on scratch and output; never
 *    on the journal, which only the host writes) and opens
 *    `FilesystemTaskRuntime.fromHost` with the scratch volume as its private
 *    volume, so compaction has an owner-bound writer by default.
 *
 * Each task's journal is then written under a lock of its own
 * (`task-locks/<task>.lock`): one writer per task journal, whether the second
 * would be another fiber or another process (`Journal.TaskInUse`).
 *
 * The harness's `durability` reaches every reader of its journals, not only
 * the journal `withTask` opens: the body of `withTask` runs under it (so
 * `Journal.readEntries`, `TaskExecution.restoreHistory` and
 * `TaskExecution.resume` read a memory-only journal from its store), and so
 * do `repairJournal` and {@link LocalHarnessService.readEntries}, which reads
 * a task's journal after its scope closed. Transcripts, summaries and
 * artifacts are private or public content on the volumes, on disk under every
 * durability: the choice is the journal's lines only.
 *
 * Everything lives in the namespace folder, so removing that folder removes
 * the harness's state. Tests always pass `stateDir`.
 *
 * @since 0.1.0
 */
import * as ArtifactPathPolicy from "@tessera/artifacts/ArtifactPathPolicy"
import type * as Grant from "@tessera/core/Grant"
import * as HostAuthority from "@tessera/core/HostAuthority"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Volume from "@tessera/core/Volume"
import * as FilesystemTaskRuntime from "@tessera/runtime/FilesystemTaskRuntime"
import type * as JournalStorage from "@tessera/runtime/JournalStorage"
import type * as TaskHost from "@tessera/runtime/TaskHost"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { type HostTasks, makeHostTasks } from "./internal/hostTasks.ts"
import type * as NamespaceLock from "./NamespaceLock.ts"
import * as StateNamespace from "./StateNamespace.ts"

/**
 * Options of {@link open}.
 *
 * - `namespace`: the state namespace (an identifier; also the store id).
 * - `agent`: the agent whose scratch volume becomes the private volume.
 * - `stateDir`: where namespaces live; defaults to
 *   `StateNamespace.defaultStateDir`.
 * - `recoverStaleLock`: replace a lock left by a dead process of this host
 *   (`true`, the default) or refuse it with `StaleNamespaceLock` (`false`);
 *   see `StateNamespace.OpenOptions`.
 * - `authority`: the host's authority; defaults to `HostAuthority.permissive`
 *   (the harness only ever grants its tasks scratch and output).
 * - `runtimeTask`: the task id the runtime's own scope is issued to;
 *   defaults to `harness`.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions extends StateNamespace.OpenOptions {
  readonly agent: Ids.AgentId
  readonly authority?: Layer.Layer<HostAuthority.HostAuthority>
  readonly runtimeTask?: Ids.TaskId
  /**
   * When the tasks' journal entries become durable (`JournalStorage.JournalDurability`):
   * every entry (the default), each step's entries together, or in memory
   * only.
   */
  readonly durability?: JournalStorage.Durability
}

/**
 * The standard volumes of a harness.
 *
 * @since 0.1.0
 * @category models
 */
export interface HarnessVolumes {
  /** `AgentPrivate`, owned by the agent: the runtime's private volume. */
  readonly scratch: Volume.VolumeRef
  /** `Journal`, owned by the host: task journals, written by the host only. */
  readonly journal: Volume.VolumeRef
  /** `Output`, owned by the host: the tasks' public results. */
  readonly output: Volume.VolumeRef
}

/**
 * An open harness. Valid until the scope it was opened in closes (which
 * releases the namespace).
 *
 * @since 0.1.0
 * @category models
 */
export interface LocalHarnessService extends HostTasks {
  readonly namespace: Ids.StoreId
  readonly agent: Ids.AgentId
  /** The state folder, absolute. */
  readonly stateDir: string
  /** The namespace folder (the store root), absolute; what the inspector reads. */
  readonly folder: string
  readonly lock: NamespaceLock.HeldLock
  readonly host: TaskHost.TaskHost
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly volumes: HarnessVolumes
  /** The journal volume's data folder: `Journal.layer({ folder: journalFolder, task })`. */
  readonly journalFolder: string
  /**
   * The artifact path policy of this harness: the namespace folder is the
   * internal root, except the volumes' data folders (where artifacts
   * belong: scratch, output, and the private volumes tasks and delegated
   * children create); the store's manifest and metadata, the locks and the
   * journal folder are internal state. `withTask` provides it.
   */
  readonly pathPolicy: ArtifactPathPolicy.ArtifactPathPolicyShape
  /**
   * Issues `task` (running for the harness's agent) read and write grants
   * on scratch and output, binds it to the runtime, and passes it through
   * the entry gate (`EntryGate.bind`; default policy: `Threshold`, since the
   * scratch volume resolves as private writer).
   */
  readonly bindTask: HostTasks["bindTask"]
  /**
   * The task's journal on the journal volume, written with the blocking
   * `NodeJournalFile`, under the task's lock (`task-locks/<task>.lock` in the
   * namespace folder): one writer per task journal, in this process and
   * across processes; a live holder fails `Journal.TaskInUse`, a lock a dead
   * process left is replaced, or fails `StaleNamespaceLock` when the harness
   * was opened with `recoverStaleLock: false`.
   */
  readonly journalLayer: HostTasks["journalLayer"]
  /**
   * Repairs the task's journal under its lock (`Journal.repair`), where the
   * harness's durability keeps it: the explicit, journaled way back from a
   * journal another writer corrupted.
   */
  readonly repairJournal: HostTasks["repairJournal"]
  /**
   * Every entry of the task's journal (`Journal.readEntries`), read where the
   * harness's durability keeps it: a memory-only harness's journals are read
   * from its store, in this process, also after the task's scope closed.
   */
  readonly readEntries: HostTasks["readEntries"]
  /**
   * Binds `task` and runs `body` with the task's `Journal` (written with the
   * blocking `NodeJournalFile`), the harness's `ArtifactPathPolicy`, the
   * `node:crypto` digest and the harness's `JournalStorage.JournalDurability` provided. A
   * refused binding fails before the journal file is opened.
   */
  readonly withTask: HostTasks["withTask"]
  /**
   * Binds and runs a child task of a delegation (`Delegation.ChildHarness`):
   * behind the parent's entry gate (its journal in scope), for the child
   * agent, with a scope of its own (read and write on its own agent-private
   * volume `<child task>-scratch`, created on first use and owned by the
   * child agent; nothing of the parent's) and no output binding, and its
   * own journal under its own task lock.
   */
  readonly withChild: HostTasks["withChild"]
}

/**
 * The harness as a service, for programs that receive it from a layer.
 *
 * @since 0.1.0
 * @category services
 */
export class LocalHarness extends Context.Service<LocalHarness, LocalHarnessService>()("@tessera/node/LocalHarness") {}

/**
 * Everything {@link open} can fail with. `InvalidInput`: the options, checked
 * before anything is locked or created, have a field of the wrong shape.
 *
 * @since 0.1.0
 * @category errors
 */
export type OpenError =
  | InvalidInput.InvalidInput
  | StateNamespace.OpenError
  | StateNamespace.VolumeConflict
  | VolumeStore.VolumeMetadataInvalid
  | VolumeStore.StoreIoError
  | FilesystemTaskRuntime.BindError

const decodeVolumeId = Schema.decodeUnknownSync(Ids.VolumeId)
const decodeTaskId = Schema.decodeUnknownSync(Ids.TaskId)

/**
 * The scratch volume's id for an agent: `<agent>-scratch` (the agent id cut
 * to 100 characters so the result stays an identifier).
 *
 * @since 0.1.0
 * @category naming
 */
export const scratchVolumeId = (agent: Ids.AgentId): Ids.VolumeId => decodeVolumeId(`${agent.slice(0, 100)}-scratch`)

/**
 * The journal volume's id: `journal` (`Journal`, owned by the host), where
 * the tasks' journals live. The harness grants no task access to it.
 *
 * @since 0.1.0
 * @category naming
 */
export const journalVolumeId: Ids.VolumeId = decodeVolumeId("journal")

/**
 * The output volume's id: `output` (`Output`, owned by the host), where the
 * tasks write their public results.
 *
 * @since 0.1.0
 * @category naming
 */
export const outputVolumeId: Ids.VolumeId = decodeVolumeId("output")

/**
 * Ensures the host-owned volumes every local host keeps: the `Journal`
 * volume and the `Output` volume (created when missing, checked when
 * present).
 *
 * @since 0.1.0
 * @category volumes
 */
export const ensureHostVolumes = Effect.fnUntraced(function* (store: VolumeStore.VolumeStore) {
  const journal = yield* StateNamespace.ensureVolume(store, {
    id: journalVolumeId,
    kind: "Journal",
    owner: Volume.hostOwner
  })
  const output = yield* StateNamespace.ensureVolume(store, {
    id: outputVolumeId,
    kind: "Output",
    owner: Volume.hostOwner
  })
  return { journal, output }
})

/**
 * The task the runtime's own scope is issued to when {@link OpenOptions}
 * names none: `harness`.
 *
 * @since 0.1.0
 * @category naming
 */
export const defaultRuntimeTask: Ids.TaskId = decodeTaskId("harness")

const openEntry = "LocalHarness.open"
const decodeAgent = InvalidInput.decodeResult(Ids.AgentId, openEntry, "agent")
const decodeRuntimeTask = InvalidInput.decodeResult(Ids.TaskId, openEntry, "runtimeTask")

const refuseOption = (field: string, value: unknown, detail: string) =>
  Result.fail(
    new InvalidInput.InvalidInput({ entry: openEntry, field, value: InvalidInput.renderValue(value), detail })
  )

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const durabilityTags: ReadonlyArray<unknown> = ["PerEntry", "GroupCommit", "MemoryOnly"]

/**
 * The options of {@link open} as a JavaScript caller may pass them, checked
 * field by field: the agent and the runtime task are identifiers (they
 * become folder and volume names), the state folder a path, the authority a
 * layer, the durability one of `JournalStorage`'s durability choices. The namespace
 * only needs to be a string here: `StateNamespace.open` names a bad one
 * (`InvalidNamespace`).
 */
const decodeOpenOptions = (options: OpenOptions): Result.Result<OpenOptions, InvalidInput.InvalidInput> => {
  const given: unknown = options
  if (!isRecord(given)) return refuseOption("options", given, "expected an object")
  if (typeof given.namespace !== "string") return refuseOption("namespace", given.namespace, "expected a string")
  const agent = decodeAgent(given.agent)
  if (Result.isFailure(agent)) return Result.fail(agent.failure)
  if (given.runtimeTask !== undefined) {
    const runtimeTask = decodeRuntimeTask(given.runtimeTask)
    if (Result.isFailure(runtimeTask)) return Result.fail(runtimeTask.failure)
  }
  const { authority, durability, recoverStaleLock, stateDir } = given
  if (stateDir !== undefined && (typeof stateDir !== "string" || stateDir.length === 0 || stateDir.includes("\0"))) {
    return refuseOption("stateDir", stateDir, "expected a non-empty path without NUL")
  }
  if (recoverStaleLock !== undefined && typeof recoverStaleLock !== "boolean") {
    return refuseOption("recoverStaleLock", recoverStaleLock, "expected a boolean")
  }
  if (authority !== undefined && !Layer.isLayer(authority)) {
    return refuseOption("authority", authority, "expected a Layer providing HostAuthority")
  }
  if (durability !== undefined) {
    if (!isRecord(durability) || !durabilityTags.includes(durability._tag)) {
      return refuseOption("durability", durability, "expected JournalStorage.perEntry, groupCommit or memoryOnly()")
    }
    const journals = durability.journals
    if (
      durability._tag === "MemoryOnly" &&
      (!isRecord(journals) || typeof journals.files !== "function" || typeof journals.bytes !== "function")
    ) {
      return refuseOption("durability.journals", journals, "expected the store of JournalStorage.memoryOnly()")
    }
  }
  return Result.succeed(options)
}

/**
 * Opens the harness for the current scope (see the module documentation).
 * The options are checked first: a field of the wrong shape fails
 * `InvalidInput` naming it, before the namespace is locked or anything is
 * created.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *
 * const fetchReport = Tool.make({
 *   name: "fetch_report",
 *   description: "Fetches a report by name",
 *   input: Schema.Struct({ name: Schema.String }),
 *   handler: ({ name }) => Effect.succeed(`Report ${name}: all systems nominal`)
 * })
 *
 * const program = Effect.gen(function* () {
 *   // Holds the namespace until the scope closes: a second open fails NamespaceInUse meanwhile.
 *   const harness = yield* LocalHarness.open({ stateDir: "/tmp/tessera-state", namespace: "research", agent })
 *   const busy = yield* Effect.flip(LocalHarness.open({ stateDir: "/tmp/tessera-state", namespace: "research", agent }))
 *   console.log(busy._tag) // "NamespaceInUse"
 *   // `withTask` binds the task (its journal, the harness's path policy) and runs the body.
 *   return yield* harness.withTask(Schema.decodeUnknownSync(Ids.TaskId)("survey-1"), (binding) =>
 *     TaskExecution.runTurn(binding, History.make([Model.text("user", "Summarize the north report.")]), {
 *       tools: Tool.registry(fetchReport),
 *       maxSteps: 4
 *     }).pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: "All systems nominal." })])))
 *   )
 * })
 *
 * Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function* (
  options: OpenOptions
): Effect.fn.Return<LocalHarnessService, OpenError, FileSystem.FileSystem | Path.Path | Scope.Scope> {
  yield* Effect.fromResult(decodeOpenOptions(options))
  const opened = yield* StateNamespace.open(options, options.authority ?? HostAuthority.permissive)
  const { host } = opened
  const agent = options.agent
  const scratch = yield* StateNamespace.ensureVolume(host.store, {
    id: scratchVolumeId(agent),
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const { journal, output } = yield* ensureHostVolumes(host.store)
  const grants: ReadonlyArray<Grant.Capability> = [
    { volume: scratch, access: ["read", "write"] },
    { volume: output, access: ["read", "write"] }
  ]
  const scope = yield* host.issueScope(options.runtimeTask ?? defaultRuntimeTask, grants, agent)
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, {
    private: Option.some(scratch),
    scope,
    output: Option.some(output)
  })
  const journalFolder = yield* host.store.folderOf(journal)
  const path = yield* Path.Path
  const pathPolicy = yield* makePathPolicy(opened, {
    // Every volume's data folder, located by the layout: the agent's scratch, the output, and the private
    // volumes tasks and delegated children create later. Which of them a task may write is its capability's
    // and its grants' question; the journal folder stays host state.
    artifactFolders: [path.join(host.store.root, VolumeStore.volumesFolder)],
    journalFolder
  })
  const harness: LocalHarnessService = {
    ...makeHostTasks({
      opened,
      runtime,
      agent,
      taskVolumes: [scratch, output],
      journalFolder,
      pathPolicy,
      durability: options.durability
    }),
    stateDir: opened.stateDir,
    volumes: { scratch, journal, output }
  }
  return harness
})

/**
 * The harness as a layer: opened when the layer is built, released (the
 * namespace unlocked) when it is torn down.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: OpenOptions): Layer.Layer<LocalHarness, OpenError, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(LocalHarness, open(options))

/**
 * The artifact path policy of a namespace: the namespace folder is internal
 * except below `artifactFolders`; the manifest, metadata, lock and journal
 * folder are internal state. Both the lexical and the real form of every
 * location are checked, since the offload asks with both.
 *
 * @since 0.1.0
 * @category policies
 */
export const makePathPolicy = Effect.fnUntraced(function* (
  opened: StateNamespace.StateNamespace,
  locations: { readonly artifactFolders: ReadonlyArray<string>; readonly journalFolder: string }
) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const both = (location: string) =>
    fs.realPath(location).pipe(
      Effect.map((real) => (real === location ? [location] : [location, real])),
      Effect.orElseSucceed(() => [location])
    )
  const roots = yield* both(opened.folder)
  const exempt = (yield* Effect.forEach(locations.artifactFolders, both)).flat()
  const state = (yield* Effect.forEach(
    [
      path.join(opened.folder, VolumeStore.manifestFile),
      path.join(opened.folder, VolumeStore.metaRoot),
      opened.lock.file,
      `${opened.lock.file}.recovery`,
      opened.taskLocks.folder,
      locations.journalFolder
    ],
    (location) => both(location)
  )).flat()
  return ArtifactPathPolicy.internalExcept({ roots, exempt, stateLocations: state })
})
