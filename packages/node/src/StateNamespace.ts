/**
 * A state namespace: one volume-store folder on this machine, held by one
 * process at a time.
 *
 * Layout: `<stateDir>/<namespace>/` is the store root (`store.json`,
 * `volumes/`, `meta/`, see `VolumeStore`), plus `namespace.lock` while a
 * process holds it (see {@link NamespaceLock}). The store's id is the
 * namespace, so two namespaces never share volume references.
 *
 * Hosts built on it (`LocalHarness`, `JournalForbiddingHost`) open the
 * namespace, make sure their standard volumes exist, and bind a runtime.
 *
 * @since 0.1.0
 */
import * as nodeFs from "node:fs"
import { homedir } from "node:os"
import * as nodePath from "node:path"
import * as DurableFiles from "@tessera/core/DurableFiles"
import type * as HostAuthority from "@tessera/core/HostAuthority"
import * as Ids from "@tessera/core/Ids"
import * as TaskHost from "@tessera/runtime/TaskHost"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import type * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as NamespaceLock from "./NamespaceLock.ts"

/**
 * Where state lives when no folder is given: `$XDG_STATE_HOME/tessera` when
 * `XDG_STATE_HOME` is set to an absolute path (the XDG Base Directory rule:
 * a relative value is ignored), else `<home>/.local/state/tessera`. A pure
 * function of its inputs; {@link defaultStateDir} feeds it this process's.
 *
 * @since 0.1.0
 * @category locations
 */
export const stateDirFor = (input: { readonly xdgStateHome: string | undefined; readonly home: string }): string =>
  input.xdgStateHome !== undefined && nodePath.isAbsolute(input.xdgStateHome)
    ? nodePath.join(input.xdgStateHome, "tessera")
    : nodePath.join(input.home, ".local", "state", "tessera")

/**
 * {@link stateDirFor} for this process's environment and home folder. Only
 * used when a caller passes no `stateDir`.
 *
 * @since 0.1.0
 * @category locations
 */
export const defaultStateDir: Effect.Effect<string> = Effect.sync(() =>
  stateDirFor({ xdgStateHome: process.env.XDG_STATE_HOME, home: homedir() })
)

/**
 * The lock file's name inside the namespace folder.
 *
 * @since 0.1.0
 * @category locations
 */
export const lockFileName = "namespace.lock"

/**
 * The folder inside the namespace folder that holds one lock file per task
 * journal open for writing (`<task>.lock`, see `NamespaceLock`).
 *
 * @since 0.1.0
 * @category locations
 */
export const taskLockFolderName = "task-locks"

/**
 * Removes every temporary name (`DurableFiles.isTemporaryName`) below
 * `folder`: writes a crash cut short, which never were content. Only the
 * holder of the namespace calls it, before any task runs, so no write of
 * its own is in progress. Returns how many names were removed.
 *
 * @since 0.1.0
 * @category cleanup
 */
export const removeTemporaryNames = (folder: string): Effect.Effect<number> =>
  Effect.sync(() => {
    let removed = 0
    let names: ReadonlyArray<string>
    try {
      names = nodeFs.readdirSync(folder, { recursive: true, encoding: "utf8" })
    } catch {
      return 0
    }
    for (const name of names) {
      if (!DurableFiles.isTemporaryName(nodePath.basename(name))) continue
      try {
        nodeFs.unlinkSync(nodePath.join(folder, name))
        removed += 1
      } catch {
        // Gone already, or a folder by that name: nothing of a write to remove.
      }
    }
    return removed
  })

/**
 * A namespace name that cannot be a folder name: it must be an identifier
 * (letters, digits, `_`, `-`; at most 128; not starting with `.`).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidNamespace extends Schema.TaggedError<InvalidNamespace>()("InvalidNamespace", {
  namespace: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `invalid namespace ${JSON.stringify(this.namespace)}: ${this.problem}`
  }
}

/**
 * A standard volume already exists with another kind or owner than the host
 * needs; its metadata was left untouched. The runtime's
 * `VolumeStore.VolumeConflict`.
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

/**
 * Options of {@link open}.
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions {
  /** The namespace; also the store id. */
  readonly namespace: string
  /** The state folder; defaults to {@link defaultStateDir}. */
  readonly stateDir?: string
  /**
   * What to do with a lock a process of this machine left when it died (a
   * crash, a SIGKILL; see `NamespaceLock` for how "died" is judged). `true`,
   * the default: replace it atomically, log a warning and report the dead
   * holder as `lock.recovered`; the same holds for the task journal locks
   * under the namespace. `false`: refuse with `StaleNamespaceLock` naming
   * the holder and this option, and change nothing. A lock of a live
   * process, or of another host, boot or container, is never replaced
   * (`NamespaceInUse`).
   */
  readonly recoverStaleLock?: boolean
}

/**
 * An opened, locked namespace. `lock.recovered` is the holder whose stale
 * lock this open replaced (a crashed process), `None` when the namespace was
 * free.
 *
 * @since 0.1.0
 * @category models
 */
export interface StateNamespace {
  readonly namespace: Ids.StoreId
  /** The state folder, absolute. */
  readonly stateDir: string
  /** The namespace folder (the store root), absolute. */
  readonly folder: string
  readonly lock: NamespaceLock.HeldLock
  readonly host: TaskHost.TaskHost
  /**
   * Where task journal locks live, and whether a task lock a dead process of
   * this host left is replaced (the namespace's own `recoverStaleLock`, on
   * by default).
   */
  readonly taskLocks: { readonly folder: string; readonly recoverStale: boolean }
}

/**
 * The `hint` of a `StaleNamespaceLock` that {@link open} (and the task locks
 * under it) refused because `recoverStaleLock` is `false`: it names the
 * option that replaces the lock.
 *
 * @since 0.1.0
 * @category errors
 */
export const staleLockHint =
  "kept because recoverStaleLock is false; open with recoverStaleLock: true (the default) to replace it"

/**
 * Everything {@link open} can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type OpenError = InvalidNamespace | NamespaceLock.LockError | VolumeStore.OpenError

/**
 * Takes the namespace's lock for the current scope, then opens (creating when
 * needed) its store and a host over it with `authority`. The lock is taken
 * before the store is touched, so a second process never reads or writes a
 * store another one holds. A lock a crashed process of this machine left is
 * replaced unless `recoverStaleLock` is `false` (see {@link OpenOptions}).
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = Effect.fnUntraced(function* (
  options: OpenOptions,
  authority: Layer.Layer<HostAuthority.HostAuthority>
): Effect.fn.Return<StateNamespace, OpenError, FileSystem.FileSystem | Path.Path | Scope.Scope> {
  const namespace = yield* Schema.decodeUnknownEffect(Ids.StoreId)(options.namespace).pipe(
    Effect.mapError((error) => new InvalidNamespace({ namespace: options.namespace, problem: error.message }))
  )
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const stateDir = path.resolve(options.stateDir ?? (yield* defaultStateDir))
  const folder = path.join(stateDir, namespace)
  yield* fs
    .makeDirectory(folder, { recursive: true })
    .pipe(
      Effect.mapError(
        (error) => new NamespaceLock.NamespaceLockIoError({ file: folder, operation: "create", detail: error.message })
      )
    )
  const recoverStale = options.recoverStaleLock !== false
  const lock = yield* NamespaceLock.acquire(path.join(folder, lockFileName), {
    recoverStale,
    staleHint: staleLockHint
  })
  // Holding the namespace, no write of anyone's is in progress: every temporary name is a crash's leftover.
  for (const inside of [VolumeStore.volumesFolder, VolumeStore.metaRoot, taskLockFolderName]) {
    yield* removeTemporaryNames(path.join(folder, inside))
  }
  // Made here, not by a task's first lock, so that binding and refusing tasks changes nothing on disk.
  const taskLocksFolder = path.join(folder, taskLockFolderName)
  yield* fs
    .makeDirectory(taskLocksFolder, { recursive: true })
    .pipe(
      Effect.mapError(
        (error) =>
          new NamespaceLock.NamespaceLockIoError({ file: taskLocksFolder, operation: "create", detail: error.message })
      )
    )
  const host = yield* TaskHost.open({ root: folder, storeId: namespace }).pipe(Effect.provide(authority))
  const opened: StateNamespace = {
    namespace,
    stateDir,
    folder,
    lock,
    host,
    taskLocks: { folder: taskLocksFolder, recoverStale }
  }
  return opened
})

/**
 * Makes sure the store holds `volume` with exactly this kind and owner:
 * creates it when missing, accepts it when it matches, and fails
 * {@link VolumeConflict} otherwise (`VolumeStore.ensure`).
 *
 * @since 0.1.0
 * @category volumes
 */
export const ensureVolume = VolumeStore.ensure
