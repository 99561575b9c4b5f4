/**
 * The Node.js implementation of the durable file primitives.
 *
 * Node has no `openat`/`mkdirat`, so on Linux every name is created relative
 * to an already opened and already checked folder through its descriptor
 * path (`/proc/self/fd/<fd>/<name>`): the kernel resolves that to the folder
 * the descriptor holds, so swapping a folder for a symlink after the check
 * cannot redirect the creation. Where `/proc` is missing the same steps run on
 * path strings and the checks after opening (the opened file's identity
 * against the real path under `within`) still refuse what landed outside, but
 * a swap racing the steps can leave traces there: an empty folder (never
 * removed, since a name reached through a swapped link may not be ours), or a
 * new file whose name was swapped again before the check could find it. Only
 * the descriptor-path variant guarantees nothing is ever created outside.
 *
 * Name operations (resolving, opening, creating, linking, removing) are made
 * with Node's synchronous calls: they are answered from the kernel's caches
 * in less time than a round trip to a worker thread takes, and running
 * them back to back also leaves a racing fiber no turn between a check and
 * the step that relies on it. Writing data and syncing wait for the device,
 * so they run on worker threads and the process keeps running meanwhile (the
 * artifact offload hashes the body while its file is written and synced),
 * and a new file's folder is synced while its data is written: the new name
 * is there from the moment the file is created, and the write reports success
 * only once both are on the device. A folder on a file system held in memory
 * (Linux tmpfs or ramfs) has no device to wait for: there a sync returns at
 * once and a write is a copy, so both run on the calling thread, where a
 * worker would only add its round trip (see
 * `NodeDurableFilesOptions.memoryFileSystems`).
 *
 * @since 0.1.0
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import type {
  DurableFileOperation,
  DurableFilesShape,
  WithinOptions,
  WriteNewFileOptions
} from "@tessera/core/DurableFiles"
import {
  AlreadyExists,
  DurableFileFailure,
  DurableFiles,
  OutsideWithin,
  relativeWithin
} from "@tessera/core/DurableFiles"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { makeReadFile } from "./internal/durableRead.ts"
import { isWithin, makeLocator, type OpenedFolder } from "./internal/fileLocations.ts"
import { closeQuietly, errnoCode, failure, isOurError, realWithin } from "./internal/syscallFailures.ts"
import { fitsIn, syncDescriptor, writeAll } from "./internal/workerWrites.ts"
import { writeAllBlocking } from "./internal/writeAllBlocking.ts"

/**
 * How the implementation locates what it opened.
 *
 * @since 0.1.0
 * @category models
 */
export interface NodeDurableFilesOptions {
  /**
   * Use `/proc/self/fd/<fd>` descriptor paths (race-free creation, exact
   * location of opened files). Defaults to whether `/proc/self/fd` exists;
   * `false` forces the portable path-based variant (used to test it on Linux).
   */
  readonly descriptorPaths?: boolean
  /**
   * Writes of at most this many bytes, and every folder sync, run on the
   * calling thread: no worker round trip (which costs time even where the
   * sync itself costs nothing), but the event loop waits while the device
   * syncs. Defaults to 0: every write and sync runs on a worker, so a
   * process serving many tasks keeps answering. A host that runs one task
   * at a time may set it, as the local hosts block on journal appends;
   * larger writes stay on a worker, where an offload's digest runs while
   * they wait on the device. With the journal blocking too, the event loop
   * then never idles during a turn, so the collector runs less often and the
   * heap grows larger (bench/NOTES.md has the measurements).
   */
  readonly blockingUpTo?: number
  /**
   * Whether a folder on a file system held in memory (Linux tmpfs or ramfs,
   * asked of the opened folder with `statfs`) writes up to 1 MiB and syncs
   * on the calling thread, whatever `blockingUpTo` says. Nothing there waits
   * for a device: a sync returns at once and copying 1 MiB costs about what a
   * worker round trip costs, so the worker would only add latency. Defaults
   * to `true`; `false` keeps such folders on the `blockingUpTo` rule like any
   * other.
   */
  readonly memoryFileSystems?: boolean
}

const O_NOFOLLOW = fs.constants.O_NOFOLLOW ?? 0
const O_DIRECTORY = fs.constants.O_DIRECTORY ?? 0
// Where the platform has O_SYNC, a write returns only once its data and the
// file's metadata are on the device (what a write followed by fsync gives),
// so writing and syncing a new file is one worker-thread job, not two.
const O_SYNC = fs.constants.O_SYNC ?? 0
const createFlags = fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | O_NOFOLLOW | O_SYNC
const directoryFlags = fs.constants.O_RDONLY | O_DIRECTORY

/** `statfs` magic numbers of Linux file systems that live in memory: tmpfs and ramfs. */
const memoryFileSystemTypes: ReadonlySet<number> = new Set([0x01021994, 0x858458f6])
/** Writes up to this size block on a memory file system: copying them costs about a worker round trip. */
const memoryFileSystemBlockingUpTo = 1024 * 1024

/** Whether `folder` lies on a file system held in memory. Any doubt (no `statfs`, an error) answers no. */
const heldInMemory = (folder: string): boolean => {
  if (process.platform !== "linux") return false
  try {
    return memoryFileSystemTypes.has(fs.statfsSync(folder).type)
  } catch {
    return false
  }
}

/**
 * Opens a folder, creating it first when it is missing. The folders usually
 * exist, so it tries the open first: a `mkdir` that fails with `EEXIST`
 * costs a thrown error every time.
 */
const openOrCreateFolder = (path: string): number => {
  try {
    return fs.openSync(path, directoryFlags)
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error
  }
  try {
    fs.mkdirSync(path)
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error
  }
  return fs.openSync(path, directoryFlags)
}

/**
 * Builds the primitives.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: NodeDurableFilesOptions = {}): DurableFilesShape => {
  const descriptorPaths = options.descriptorPaths ?? fs.existsSync("/proc/self/fd")
  const blockingUpTo = options.blockingUpTo ?? 0
  const memoryFileSystems = options.memoryFileSystems ?? true
  const locator = makeLocator(descriptorPaths)
  const { childOf, folderLocation, fileLocation } = locator

  /** Up to how many bytes a write into the opened folder blocks (0: none), and whether its syncs block. */
  const blockingIn = (folder: number, folderPath: string): number =>
    memoryFileSystems && heldInMemory(descriptorPaths ? locator.descriptorPath(folder) : folderPath)
      ? Math.max(blockingUpTo, memoryFileSystemBlockingUpTo)
      : blockingUpTo

  const syncFolder = async (path: string): Promise<void> => {
    const fd = fs.openSync(path, directoryFlags)
    try {
      await syncDescriptor(fd, blockingIn(fd, path) > 0)
    } finally {
      closeQuietly(fd)
    }
  }

  /** Removes `location` only if it still names the file we hold open, so a swapped-in file is never deleted. */
  const removeIfSame = (file: number, location: string): void => {
    const held = fs.fstatSync(file)
    const named = fs.lstatSync(location, { throwIfNoEntry: false })
    if (named !== undefined && held.dev === named.dev && held.ino === named.ino) {
      try {
        fs.unlinkSync(location)
      } catch {
        // Already gone: nothing of ours is left under that name.
      }
    }
  }

  const run = <A>(
    operation: DurableFileOperation,
    path: string,
    body: () => A | Promise<A>
  ): Effect.Effect<A, AlreadyExists | OutsideWithin | DurableFileFailure> =>
    Effect.tryPromise({
      try: async () => body(),
      catch: (error) => (isOurError(error) ? error : failure(operation, path, error))
    })

  const realPath: DurableFilesShape["realPath"] = (path) =>
    Effect.try({ try: () => fs.realpathSync.native(path), catch: (error) => failure("realPath", path, error) })

  /**
   * Opens the folder `path` one component at a time from the real `root`
   * (`within` resolved), creating the missing ones; each is checked to lie
   * within `root` before anything is created in it. Returns the opened
   * folder, which the caller closes, and where it really is.
   */
  const openFoldersWithin = (
    operation: DurableFileOperation,
    path: string,
    within: string,
    root: string
  ): OpenedFolder => {
    const target = nodePath.resolve(path)
    // The caller may name the target through `within` as given or through its real path.
    const relative =
      relativeWithin(nodePath.resolve(within), target, nodePath) ?? relativeWithin(root, target, nodePath)
    if (relative === undefined) throw new OutsideWithin({ operation, path, within: root, actual: target })
    let folder = fs.openSync(root, directoryFlags)
    let folderPath = root
    try {
      for (const name of relative.split(nodePath.sep).filter((part) => part !== "")) {
        const next = openOrCreateFolder(childOf(folder, folderPath, name))
        let location: string
        try {
          location = folderLocation(next, nodePath.join(folderPath, name))
        } catch (error) {
          closeQuietly(next)
          throw error
        }
        if (!isWithin(root, location)) {
          closeQuietly(next)
          throw new OutsideWithin({ operation, path, within: root, actual: location })
        }
        closeQuietly(folder)
        folder = next
        folderPath = location
      }
    } catch (error) {
      closeQuietly(folder)
      throw error
    }
    return { folder, location: folderPath }
  }

  /** Opens the existing folder of `path` and checks that it really lies within `root`. */
  const openFolderOf = (path: string, root: string): OpenedFolder => {
    const folderPath = nodePath.dirname(path)
    const folder = fs.openSync(folderPath, directoryFlags)
    try {
      const location = folderLocation(folder, folderPath)
      if (!isWithin(root, location)) {
        const actual = nodePath.join(location, nodePath.basename(path))
        throw new OutsideWithin({ operation: "writeNewFile", path, within: root, actual })
      }
      return { folder, location }
    } catch (error) {
      closeQuietly(folder)
      throw error
    }
  }

  const makeDirectories: DurableFilesShape["makeDirectories"] = (path, { within }: WithinOptions) =>
    Effect.try({
      try: () => {
        const { folder } = openFoldersWithin("makeDirectories", path, within, realWithin("makeDirectories", within))
        closeQuietly(folder)
      },
      catch: (error) =>
        error instanceof OutsideWithin || error instanceof DurableFileFailure
          ? error
          : failure("makeDirectories", path, error)
    })

  const writeNewFile: DurableFilesShape["writeNewFile"] = (
    path,
    bytes,
    { createFolders = false, mode = 0o600, syncFolder: syncItsFolder = true, within }: WriteNewFileOptions
  ) =>
    run("writeNewFile", path, async () => {
      // Everything up to the first write is synchronous: no other fiber runs between the checks.
      const root = realWithin("writeNewFile", within)
      const { folder, location } = createFolders
        ? openFoldersWithin("writeNewFile", nodePath.dirname(path), within, root)
        : openFolderOf(path, root)
      let folderSynced: Promise<void> | undefined
      try {
        const target = childOf(folder, location, nodePath.basename(path))
        const folderBlocking = blockingIn(folder, location)
        let file: number
        try {
          file = fs.openSync(target, createFlags, mode)
        } catch (error) {
          // O_EXCL reports any existing name, a symlink included, as EEXIST.
          if (errnoCode(error) === "EEXIST") throw new AlreadyExists({ operation: "writeNewFile", path })
          throw error
        }
        try {
          const actual = fileLocation(file, path)
          if (actual === undefined || !isWithin(root, actual)) {
            if (actual !== undefined) removeIfSame(file, actual)
            throw new OutsideWithin({ operation: "writeNewFile", path, within: root, actual: actual ?? "(moved)" })
          }
          const blocking = folderBlocking > 0 && fitsIn(bytes, folderBlocking)
          if (blocking) writeAllBlocking(file, bytes)
          else {
            // The new name is in the folder already, so a folder sync waiting on a worker can run while the
            // data is written: a crash can leave a partial file under the new name either way, and the caller
            // learns of success only once both are on the device. The sync is asked for first: issuing the
            // write encodes the text on this thread, which for a text of many pieces (a redacted body) takes
            // milliseconds the sync can spend on the device.
            if (syncItsFolder) folderSynced = syncDescriptor(folder, false)
            await writeAll(file, bytes)
          }
          if (O_SYNC === 0) await syncDescriptor(file, blocking)
        } catch (error) {
          // Remove the partial file, but only while its name still denotes it.
          if (!(error instanceof OutsideWithin)) removeIfSame(file, target)
          closeQuietly(file)
          throw error
        }
        fs.closeSync(file)
        if (folderSynced !== undefined) await folderSynced
        else if (syncItsFolder) await syncDescriptor(folder, folderBlocking > 0)
      } finally {
        // The folder stays open until a sync running on it has ended.
        if (folderSynced !== undefined) await folderSynced.catch(() => undefined)
        closeQuietly(folder)
      }
    })

  const publishOnce: DurableFilesShape["publishOnce"] = (tempPath, finalPath) =>
    run("publishOnce", finalPath, async () => {
      try {
        fs.linkSync(tempPath, finalPath)
      } catch (error) {
        if (errnoCode(error) === "EEXIST") throw new AlreadyExists({ operation: "publishOnce", path: finalPath })
        throw error
      }
      fs.unlinkSync(tempPath)
      const finalFolder = nodePath.dirname(finalPath)
      const tempFolder = nodePath.dirname(tempPath)
      await syncFolder(finalFolder)
      if (nodePath.resolve(tempFolder) !== nodePath.resolve(finalFolder)) await syncFolder(tempFolder)
    }).pipe(Effect.catchTag("OutsideWithin", (error) => Effect.fail(failure("publishOnce", finalPath, error))))

  const publishReplacing: DurableFilesShape["publishReplacing"] = (tempPath, finalPath) =>
    Effect.tryPromise({
      try: async () => {
        if (nodePath.resolve(nodePath.dirname(tempPath)) !== nodePath.resolve(nodePath.dirname(finalPath))) {
          throw new Error("the temporary name and the final name must share a folder")
        }
        fs.renameSync(tempPath, finalPath)
        await syncFolder(nodePath.dirname(finalPath))
      },
      catch: (error) => failure("publishReplacing", finalPath, error)
    })

  const syncDirectory: DurableFilesShape["syncDirectory"] = (path) =>
    Effect.tryPromise({ try: () => syncFolder(path), catch: (error) => failure("syncDirectory", path, error) })

  return DurableFiles.of({
    realPath,
    makeDirectories,
    writeNewFile,
    publishOnce,
    publishReplacing,
    syncDirectory,
    readFile: makeReadFile(locator)
  })
}

/**
 * The Node.js layer, using descriptor paths where the platform has them.
 * `NodeTessera.layer` includes it; a program that composes its own platform
 * layer (as for `ArtifactOffload.offload` on its own) provides it beside
 * the file system.
 *
 * @example
 * ```ts
 * import * as NodeServices from "@effect/platform-node/NodeServices"
 * import { DurableFiles } from "@tessera/core"
 * import { NodeDurableFiles } from "@tessera/node"
 * import { Effect, Layer } from "effect"
 *
 * // Publishes a finished temporary file under its final name exactly once: a second publish fails AlreadyExists.
 * const publish = Effect.gen(function* () {
 *   const files = yield* DurableFiles.DurableFiles
 *   yield* files.publishOnce("/tmp/report.txt.tmp", "/tmp/report.txt")
 * })
 *
 * export const published = publish.pipe(Effect.provide(Layer.merge(NodeServices.layer, NodeDurableFiles.layer)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<DurableFiles> = Layer.sync(DurableFiles)(() => make())

/**
 * A layer with explicit options (for example the portable variant on Linux).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options: NodeDurableFilesOptions): Layer.Layer<DurableFiles> =>
  Layer.sync(DurableFiles)(() => make(options))
