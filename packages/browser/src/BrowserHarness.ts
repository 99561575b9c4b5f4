/**
 * The browser harness: a namespace in the origin's private file system with
 * the standard volumes, and a runtime whose private volume is the agent's
 * scratch volume; the browser counterpart of the local harness.
 *
 * Opening one (see {@link open}):
 *
 * 1. takes the namespace's Web Lock (`WebLockNamespace`): one runtime per
 *    namespace across every tab and worker of the origin, a typed
 *    `NamespaceInUse` otherwise;
 * 2. removes the temporary names a closed tab or a crash left in the
 *    namespace (`DurableFiles.isTemporaryName`: writes cut short, never
 *    content; only the lock holder may, so none is anyone's write in progress);
 * 3. opens the store at `<root>/<namespace>` (default root `/tessera`) and
 *    makes sure the standard volumes exist: `<agent>-scratch`
 *    (`AgentPrivate`, owned by the agent), `journal` and `output` (owned by
 *    the host);
 * 4. issues the runtime's scope (read and write on scratch and output) and
 *    opens `FilesystemTaskRuntime.fromHost` with the scratch volume as its
 *    private volume. {@link BrowserHarnessService.openRuntime} opens further
 *    runtimes on the same host with any `private: Option<VolumeRef>`
 *    decision, checked by the same verdicts as everywhere else.
 *
 * Each task's journal is written under a Web Lock of its own
 * (`tessera-task:<namespace>/<task>`): one writer per task journal across
 * the origin's tabs and workers (`Journal.TaskInUse` otherwise).
 *
 * The harness is a child harness for delegation
 * ({@link BrowserHarnessService.withChild}): each child task of a
 * delegation is bound by `Delegation.bindChild` (its own scope for the child
 * agent, its own agent-private volume, its own output volume) and writes its
 * own journal on the journal volume under its own Web Lock, as on Node.
 *
 * It needs the browser platform (`BrowserPlatform.layer`) in its context.
 *
 * @since 0.1.0
 */
import * as ArtifactPathPolicy from "@tessera/artifacts/ArtifactPathPolicy"
import * as DurableFiles from "@tessera/core/DurableFiles"
import type * as Grant from "@tessera/core/Grant"
import * as HostAuthority from "@tessera/core/HostAuthority"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Volume from "@tessera/core/Volume"
import * as Delegation from "@tessera/runtime/Delegation"
import * as EntryGate from "@tessera/runtime/EntryGate"
import * as FilesystemTaskRuntime from "@tessera/runtime/FilesystemTaskRuntime"
import * as Journal from "@tessera/runtime/Journal"
import * as TaskHost from "@tessera/runtime/TaskHost"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as WebLockNamespace from "./WebLockNamespace.ts"

/**
 * Options of {@link open}.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions {
  /** The namespace (an identifier; also the store id). */
  readonly namespace: string
  /** The agent whose scratch volume becomes the private volume. */
  readonly agent: Ids.AgentId
  /** The OPFS folder namespaces live in; defaults to `/tessera`. */
  readonly root?: string
  /** The host's authority; defaults to `HostAuthority.permissive`. */
  readonly authority?: Layer.Layer<HostAuthority.HostAuthority>
  /** The task the runtime's own scope is issued to; defaults to `harness`. */
  readonly runtimeTask?: Ids.TaskId
}

/**
 * The standard volumes.
 *
 * @since 0.1.0
 * @category models
 */
export interface HarnessVolumes {
  readonly scratch: Volume.VolumeRef
  readonly journal: Volume.VolumeRef
  readonly output: Volume.VolumeRef
}

/**
 * An open browser harness, valid until its scope closes (which releases
 * the namespace). As a child harness (`Delegation.ChildHarness`) it binds
 * the child tasks of its tasks' delegations; its `withChild` needs the
 * parent's journal, since delegating is one of the parent's gated entries.
 *
 * @since 0.1.0
 * @category models
 */
export interface BrowserHarnessService
  extends Delegation.ChildHarness<
    ChildError,
    Journal.Journal | FileSystem.FileSystem | Path.Path,
    Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy
  > {
  readonly namespace: Ids.StoreId
  readonly agent: Ids.AgentId
  /** The namespace's folder in OPFS (the store root). */
  readonly folder: string
  readonly lock: WebLockNamespace.HeldNamespace
  readonly host: TaskHost.TaskHost
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly volumes: HarnessVolumes
  /** The journal volume's folder: `Journal.layer({ folder: journalFolder, task })`. */
  readonly journalFolder: string
  /**
   * The artifact path policy: the namespace folder is internal, except the
   * volumes' folders (where artifacts belong: the agent's scratch, the
   * output, and the private and output volumes of delegated children; which
   * of them a task may write is its grants' question); the store's manifest
   * and metadata and the journal folder are internal state.
   */
  readonly pathPolicy: ArtifactPathPolicy.ArtifactPathPolicyShape
  /**
   * Issues `task` (running for the agent) read and write on scratch and
   * output, binds it to the runtime and passes it through the entry gate.
   */
  readonly bindTask: (
    task: Ids.TaskId,
    options?: EntryGate.BindOptions
  ) => Effect.Effect<EntryGate.TaskBinding, TaskError>
  /** The task's journal on the journal volume, under the task's Web Lock. */
  readonly journalLayer: (
    task: Ids.TaskId
  ) => Layer.Layer<Journal.Journal, TaskError, FileSystem.FileSystem | Path.Path>
  /** Runs `body` with the task bound, its journal and the path policy provided. */
  readonly withTask: <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    options?: EntryGate.BindOptions
  ) => Effect.Effect<
    A,
    E | TaskError,
    Exclude<R, Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy> | FileSystem.FileSystem | Path.Path
  >
  /**
   * Runs `body` with the child task of a delegation bound
   * (`Delegation.bindChild`: after the parent's gate admits `Delegate`, a
   * scope issued to `child.agent` with read and write on its own
   * agent-private volume and write on its output volume, nothing of the
   * parent's), its own journal (under its own Web Lock, `Journal.TaskInUse`
   * while another client holds it) and the path policy provided.
   */
  readonly withChild: <A, E, R>(
    parent: EntryGate.TaskBinding,
    child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId },
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>
  ) => Effect.Effect<
    A,
    E | ChildError,
    | Exclude<R, Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy>
    | Journal.Journal
    | FileSystem.FileSystem
    | Path.Path
  >
  /** Opens another runtime on this harness's host, with the same checks as `FilesystemTaskRuntime.fromHost`. */
  readonly openRuntime: (
    options: FilesystemTaskRuntime.Options
  ) => Effect.Effect<FilesystemTaskRuntime.FilesystemTaskRuntime, FilesystemTaskRuntime.BindError>
}

/**
 * What binding a task or opening its journal can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type TaskError =
  | FilesystemTaskRuntime.BindError
  | Effect.Error<ReturnType<typeof EntryGate.bind>>
  | WebLockNamespace.LocksUnavailable
  | Effect.Error<ReturnType<typeof Journal.open>>

/**
 * What binding a delegation's child task or opening its journal can fail
 * with: {@link TaskError}, and what `Delegation.bindChild` fails with (the
 * parent's binding refused, a child volume in conflict, the store).
 *
 * @since 0.1.0
 * @category errors
 */
export type ChildError = TaskError | Effect.Error<ReturnType<typeof Delegation.bindChild>>

/**
 * A volume of the namespace already exists with other facts than the
 * harness needs (another kind or owner); nothing was changed. The
 * runtime's `VolumeStore.VolumeConflict`.
 *
 * @since 0.1.0
 * @category errors
 */
export const VolumeConflict = VolumeStore.VolumeConflict

/**
 * See {@link VolumeConflict}.
 *
 * @since 0.1.0
 * @category errors
 */
export type VolumeConflict = VolumeStore.VolumeConflict

/** Removes every temporary name below `folder` (nothing when the folder does not exist yet). */
const removeLeftovers = (folder: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(folder))) return
    const names = yield* fs.readDirectory(folder, { recursive: true })
    const leftovers = names.filter((name) => DurableFiles.isTemporaryName(name.split("/").at(-1) ?? ""))
    yield* Effect.forEach(leftovers, (name) => fs.remove(`${folder}/${name}`), { discard: true })
  }).pipe(
    Effect.mapError(
      (error) => new VolumeStore.StoreIoError({ operation: "remove leftovers", path: folder, detail: error.message })
    )
  )

const decodeNamespace = InvalidInput.decode(Ids.StoreId, "BrowserHarness.open", "namespace")
const decodeAgent = InvalidInput.decode(Ids.AgentId, "BrowserHarness.open", "agent")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)
const harnessTask = Schema.decodeUnknownSync(Ids.TaskId)("harness")

/**
 * Opens the harness for the lifetime of the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function* (options: OpenOptions) {
  const namespace = yield* decodeNamespace(options.namespace)
  const agent = yield* decodeAgent(options.agent)
  const scratchId = yield* InvalidInput.decode(Ids.VolumeId, "BrowserHarness.open", "agent")(`${agent}-scratch`)
  const path = yield* Path.Path
  const lock = yield* WebLockNamespace.acquire(namespace)
  const folder = `${options.root ?? "/tessera"}/${namespace}`
  yield* removeLeftovers(folder)
  const authority = options.authority ?? HostAuthority.permissive
  const host = yield* TaskHost.open({ root: folder, storeId: namespace }).pipe(Effect.provide(authority))
  const scratch = yield* VolumeStore.ensure(host.store, {
    id: scratchId,
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const journal = yield* VolumeStore.ensure(host.store, {
    id: volumeId("journal"),
    kind: "Journal",
    owner: Volume.hostOwner
  })
  const output = yield* VolumeStore.ensure(host.store, {
    id: volumeId("output"),
    kind: "Output",
    owner: Volume.hostOwner
  })
  const capabilities: ReadonlyArray<Grant.Capability> = [
    { volume: scratch, access: ["read", "write"] },
    { volume: output, access: ["read", "write"] }
  ]
  const scope = yield* host.issueScope(options.runtimeTask ?? harnessTask, capabilities, agent)
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(scratch), scope })
  const journalFolder = yield* host.store.folderOf(journal)
  const root = host.store.root
  // Every volume's folder, located by the layout: the scratch, the output, and the volumes delegated children
  // create later; the journal folder among them stays internal state.
  const artifactFolders = [path.join(root, VolumeStore.volumesFolder)]
  const stateLocations = [
    path.join(root, VolumeStore.manifestFile),
    path.join(root, VolumeStore.metaRoot),
    journalFolder
  ]
  const pathPolicy = ArtifactPathPolicy.internalExcept({ roots: [root], exempt: artifactFolders, stateLocations })
  const decodeTask = InvalidInput.decode(Ids.TaskId, "BrowserHarness", "task")
  const bindTask = (given: Ids.TaskId, gate: EntryGate.BindOptions = {}) =>
    Effect.gen(function* () {
      const task = yield* decodeTask(given)
      const taskScope = yield* host.issueScope(task, capabilities, agent)
      const context = yield* runtime.bindTask({ scope: taskScope })
      return yield* EntryGate.bind(context, gate)
    })
  const journalLayer = (given: Ids.TaskId) =>
    Layer.effect(
      Journal.Journal,
      Effect.gen(function* () {
        const task = yield* decodeTask(given)
        const held = yield* WebLockNamespace.holdIfAvailable(`tessera-task:${namespace}/${task}`)
        if (Result.isFailure(held)) {
          return yield* new Journal.TaskInUse({
            task,
            file: path.join(journalFolder, Journal.fileName(task)),
            holder: held.failure.length === 0 ? "another client of this origin" : `client ${held.failure.join(", ")}`
          })
        }
        return yield* Journal.open({ folder: journalFolder, task })
      })
    )
  const withTask = <A, E, R>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>,
    gate: EntryGate.BindOptions = {}
  ) =>
    Effect.flatMap(bindTask(task, gate), (binding) =>
      body(binding).pipe(Effect.provide(Layer.merge(journalLayer(task), ArtifactPathPolicy.layer(pathPolicy))))
    )
  // A child task of a delegation, bound by the runtime's one child binder, and run with its own journal.
  const withChild = <A, E, R>(
    parent: EntryGate.TaskBinding,
    child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId },
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>
  ) =>
    Effect.flatMap(Delegation.bindChild(parent, child), (binding) =>
      body(binding).pipe(
        Effect.provide(Layer.merge(journalLayer(binding.context.task), ArtifactPathPolicy.layer(pathPolicy)))
      )
    )
  const service: BrowserHarnessService = {
    namespace,
    agent,
    folder: host.store.root,
    lock,
    host,
    runtime,
    volumes: { scratch, journal, output },
    journalFolder,
    pathPolicy,
    bindTask,
    journalLayer,
    withTask,
    withChild,
    openRuntime: (runtimeOptions) => FilesystemTaskRuntime.fromHost(host, runtimeOptions)
  }
  return service
}) as (
  options: OpenOptions
) => Effect.Effect<
  BrowserHarnessService,
  | WebLockNamespace.NamespaceInUse
  | WebLockNamespace.LocksUnavailable
  | VolumeConflict
  | InvalidInput.InvalidInput
  | FilesystemTaskRuntime.BindError
  | VolumeStore.OpenError
  | VolumeStore.VolumeMetadataInvalid
  | VolumeStore.StoreIoError,
  FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles | Scope.Scope
>
