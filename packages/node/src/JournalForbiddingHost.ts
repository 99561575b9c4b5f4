/**
 * A host whose authority forbids task grants on journal storage
 * (`HostAuthority.forbidJournalGrants`), and which therefore runs without a
 * private volume and without compaction.
 *
 * Such a host keeps nothing of an agent's private content: its runtime is
 * opened with `private: Option.none()`, so the private-summaries capability
 * never resolves for its tasks. What follows by construction:
 *
 * - the default compaction policy of its tasks is `Disabled`: turns run
 *   without compaction and complete;
 * - arming compaction explicitly (`EntryGate.bind(context, { policy:
 *   Compaction.threshold(...) })`) is refused at entry with
 *   `Unauthorized`, before any model request and before the journal file is
 *   even opened;
 * - issuing any task a grant on the journal volume fails `Unauthorized` with
 *   reason `GrantForbidden`: the host writes its journal itself;
 * - a task may create its own agent-private scratch volume
 *   (`bindTask(task, { createPrivate: true })`, also through `withTask`):
 *   that volume is private content the task created, the first candidate of
 *   the private-summaries resolution, so such a task compacts into it (its
 *   default policy is then `Threshold`), while the host still keeps nothing
 *   of its own for the agent.
 *
 * It lives in a state namespace like the local harness (locked the same
 * way), with two volumes: `journal` (`Journal`, host) and `output`
 * (`Output`, host).
 *
 * @since 0.1.0
 */
import type * as ArtifactPathPolicy from "@tessera/artifacts/ArtifactPathPolicy"
import type * as Grant from "@tessera/core/Grant"
import * as HostAuthority from "@tessera/core/HostAuthority"
import type * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import * as FilesystemTaskRuntime from "@tessera/runtime/FilesystemTaskRuntime"
import type * as JournalStorage from "@tessera/runtime/JournalStorage"
import type * as TaskHost from "@tessera/runtime/TaskHost"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type * as Scope from "effect/Scope"
import { type HostTasks, makeHostTasks } from "./internal/hostTasks.ts"
import type { OpenError } from "./LocalHarness.ts"
import { defaultRuntimeTask, ensureHostVolumes, makePathPolicy } from "./LocalHarness.ts"
import type * as NamespaceLock from "./NamespaceLock.ts"
import * as StateNamespace from "./StateNamespace.ts"

/**
 * Options of {@link open}: the namespace, the agent its tasks run for, and
 * optionally the state folder, stale-lock recovery and the runtime's task id
 * (defaults to `harness`). The authority is not an option: it is always
 * `HostAuthority.forbidJournalGrants`.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions extends StateNamespace.OpenOptions {
  readonly agent: Ids.AgentId
  readonly runtimeTask?: Ids.TaskId
  /**
   * When the tasks' journal entries become durable (`JournalStorage.JournalDurability`):
   * every entry (the default), each step's entries together, or in memory
   * only.
   */
  readonly durability?: JournalStorage.Durability
}

/**
 * An open journal-forbidding host.
 *
 * @since 0.1.0
 * @category models
 */
export interface JournalForbiddingHostService extends HostTasks {
  readonly namespace: Ids.StoreId
  readonly agent: Ids.AgentId
  readonly folder: string
  readonly lock: NamespaceLock.HeldLock
  /** The host, with the journal-forbidding authority. */
  readonly host: TaskHost.TaskHost
  /** The runtime, opened with no private volume (`privateVolume` is `None`). */
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly volumes: { readonly journal: Volume.VolumeRef; readonly output: Volume.VolumeRef }
  readonly journalFolder: string
  /** Internal root: the namespace folder except the volumes' data folders (output, and the private volumes tasks and delegated children create). */
  readonly pathPolicy: ArtifactPathPolicy.ArtifactPathPolicyShape
  /**
   * Issues `task` read and write on the output volume (and nothing on the
   * journal), binds it, and passes the entry gate: the default policy is
   * `Disabled`; an explicit `Threshold` fails `Unauthorized`. With
   * `createPrivate: true` the task also gets its own agent-private scratch
   * volume, and compacts into it.
   */
  readonly bindTask: HostTasks["bindTask"]
  /** The task's journal on the journal volume, written by the host. */
  readonly journalLayer: HostTasks["journalLayer"]
  /**
   * Binds `task` (refusals fail before the journal is opened) and runs `body`
   * with its journal, under the host's `durability`: every reader `body`
   * runs (`Journal.readEntries`, `TaskExecution.restoreHistory`, `resume`)
   * finds the journal where that choice keeps it.
   */
  readonly withTask: HostTasks["withTask"]
  /** Repairs the task's journal under its lock (`Journal.repair`), under the host's durability. */
  readonly repairJournal: HostTasks["repairJournal"]
  /**
   * Every entry of the task's journal (`Journal.readEntries`), read where the
   * host's durability keeps it (a memory-only host's journals in this
   * process, also after the task's scope closed).
   */
  readonly readEntries: HostTasks["readEntries"]
}

/**
 * The host as a service.
 *
 * @since 0.1.0
 * @category services
 */
export class JournalForbiddingHost extends Context.Service<JournalForbiddingHost, JournalForbiddingHostService>()(
  "@tessera/node/JournalForbiddingHost"
) {}

/**
 * Opens the host for the current scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function* (
  options: OpenOptions
): Effect.fn.Return<JournalForbiddingHostService, OpenError, FileSystem.FileSystem | Path.Path | Scope.Scope> {
  const opened = yield* StateNamespace.open(options, HostAuthority.forbidJournalGrants)
  const { host } = opened
  const { journal, output } = yield* ensureHostVolumes(host.store)
  const grants: ReadonlyArray<Grant.Capability> = [{ volume: output, access: ["read", "write"] }]
  const scope = yield* host.issueScope(options.runtimeTask ?? defaultRuntimeTask, grants, options.agent)
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, {
    private: Option.none(),
    scope,
    output: Option.some(output)
  })
  const journalFolder = yield* host.store.folderOf(journal)
  const path = yield* Path.Path
  const pathPolicy = yield* makePathPolicy(opened, {
    // Every volume's data folder, as the local harness's: the private volumes tasks and delegated children create
    // are where their artifacts belong; the journal folder stays host state.
    artifactFolders: [path.join(host.store.root, VolumeStore.volumesFolder)],
    journalFolder
  })
  const service: JournalForbiddingHostService = {
    ...makeHostTasks({
      opened,
      runtime,
      agent: options.agent,
      taskVolumes: [output],
      journalFolder,
      pathPolicy,
      durability: options.durability
    }),
    volumes: { journal, output }
  }
  return service
})

/**
 * The host as a layer (namespace released when the layer is torn down).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: OpenOptions
): Layer.Layer<JournalForbiddingHost, OpenError, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(JournalForbiddingHost, open(options))
