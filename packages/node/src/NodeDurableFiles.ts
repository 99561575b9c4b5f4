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
 * in microseconds, less than a round trip to a worker thread, and running
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
  ReadFileOptions,
  WithinOptions,
  WriteNewFileOptions
} from "@tessera/core/DurableFiles"
import {
  AlreadyExists,
  DurableFileFailure,
  DurableFiles,
  NotPlainFile,
  OutsideWithin,
  relativeWithin,
  SymlinkRefused
} from "@tessera/core/DurableFiles"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
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
   * calling thread: no worker round trip (on this kind of machine about 0.1
   * to 0.3 ms each, even where the sync itself costs nothing), but the event
   * loop waits while the device syncs. Defaults to 0: every write and sync
   * runs on a worker, so a process serving many tasks keeps answering. A host
   * that runs one task at a time may set it, as the local hosts block on
   * journal appends; larger writes stay on a worker, where an offload's
   * digest runs while they wait on the device. With the journal blocking
   * too, the event loop then never idles during a turn, and the collector
   * sizes the heap larger (in this repository's context benchmark, about
   * 50 MiB more peak memory over 10,000 steps).
   */
  readonly blockingUpTo?: number
  /**
   * Whether a folder on a file system held in memory (Linux tmpfs or ramfs,
   * asked of the opened folder with `statfs`) writes up to 1 MiB and syncs
   * on the calling thread, whatever `blockingUpTo` says. Nothing there waits
   * for a device: a sync returns at once and copying 1 MiB costs about what a
   * worker round trip costs (0.1 to 0.3 ms on this kind of machine), so the
   * worker would only add latency. Defaults to `true`; `false` keeps such
   * folders on the `blockingUpTo` rule like any other.
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
// Reading follows no link at any step, and a FIFO planted where a file was expected must not block the open.
const O_NONBLOCK = fs.constants.O_NONBLOCK ?? 0
const readFolderFlags = directoryFlags | O_NOFOLLOW
const readFileFlags = fs.constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK

/**
 * Reads of at most this many bytes run on the calling thread. What they read
 * is small and read often (a volume's registration at every admission of a
 * private writer, a staged summary), so it is in the kernel's page cache and
 * a read is a copy of microseconds, where a worker round trip costs 0.1 to
 * 0.3 ms; larger reads (an artifact read back) stay on a worker.
 */
const blockingReadUpTo = 64 * 1024

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

const errnoCode = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code
  }
  return "UNKNOWN"
}

const isOurError = (error: unknown): error is AlreadyExists | OutsideWithin | DurableFileFailure =>
  error instanceof AlreadyExists || error instanceof OutsideWithin || error instanceof DurableFileFailure

const failure = (operation: DurableFileOperation, path: string, error: unknown): DurableFileFailure =>
  new DurableFileFailure({
    operation,
    path,
    code: errnoCode(error),
    detail: error instanceof Error ? error.message : String(error)
  })

const isWithin = (root: string, candidate: string): boolean => relativeWithin(root, candidate, nodePath) !== undefined

const closeQuietly = (fd: number): void => {
  try {
    fs.closeSync(fd)
  } catch {
    // Closing can only fail for a descriptor that is already gone.
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

/** Runs a callback-style call on a worker thread. */
const onWorker = (start: (done: (error: NodeJS.ErrnoException | null) => void) => void): Promise<void> =>
  new Promise((resolve, reject) => start((error) => (error === null ? resolve() : reject(error))))

const writeAll = async (fd: number, content: Uint8Array | string): Promise<void> => {
  const writeFrom = (bytes: Uint8Array, offset: number) =>
    new Promise<number>((resolve, reject) =>
      fs.write(fd, bytes, offset, bytes.byteLength - offset, null, (error, written) =>
        error === null ? resolve(written) : reject(error)
      )
    )
  let bytes: Uint8Array
  let offset = 0
  if (typeof content === "string") {
    // Node encodes a string outside the JavaScript heap; only a short write needs the bytes here.
    const written = new Promise<number>((resolve, reject) =>
      fs.write(fd, content, null, "utf8", (error, count) => (error === null ? resolve(count) : reject(error)))
    )
    // Counted while the device writes, not after: issuing the write has flattened a text made of many
    // pieces (a redacted body), so this is one pass over contiguous characters (about 0.2 ms per MiB of ASCII),
    // where counting before the write is issued would walk the pieces (about 5 ms per MiB).
    const total = Buffer.byteLength(content, "utf8")
    offset = await written
    if (offset === total) return
    bytes = Buffer.from(content, "utf8")
  } else {
    bytes = content
  }
  while (offset < bytes.byteLength) offset += await writeFrom(bytes, offset)
}

/** Whether `content` takes at most `limit` bytes, without counting a text that is clearly larger. */
const fitsIn = (content: Uint8Array | string, limit: number): boolean =>
  typeof content === "string"
    ? content.length <= limit && (content.length * 3 <= limit || Buffer.byteLength(content, "utf8") <= limit)
    : content.byteLength <= limit

const syncDescriptor = async (fd: number, blocking: boolean): Promise<void> => {
  if (blocking) fs.fsyncSync(fd)
  else await onWorker((done) => fs.fsync(fd, done))
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

  const descriptorPath = (fd: number): string => `/proc/self/fd/${fd}`

  /** Up to how many bytes a write into the opened folder blocks (0: none), and whether its syncs block. */
  const blockingIn = (folder: number, folderPath: string): number =>
    memoryFileSystems && heldInMemory(descriptorPaths ? descriptorPath(folder) : folderPath)
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

  /** The path to use for creating `name` inside an opened folder. */
  const childOf = (folder: number, folderPath: string, name: string): string =>
    descriptorPaths ? `${descriptorPath(folder)}/${name}` : nodePath.join(folderPath, name)

  /** Where an opened folder really is. */
  const folderLocation = (folder: number, folderPath: string): string =>
    descriptorPaths ? fs.readlinkSync(descriptorPath(folder)) : fs.realpathSync.native(folderPath)

  /**
   * Where an opened file really is: its descriptor's link on Linux; elsewhere
   * the real path of its name, accepted only if that name still denotes the
   * very file we hold open (same device and inode).
   */
  const fileLocation = (file: number, path: string): string | undefined => {
    if (descriptorPaths) return fs.readlinkSync(descriptorPath(file))
    const candidate = nodePath.join(fs.realpathSync.native(nodePath.dirname(path)), nodePath.basename(path))
    const held = fs.fstatSync(file)
    const named = fs.lstatSync(candidate)
    return held.dev === named.dev && held.ino === named.ino ? candidate : undefined
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

  const realWithin = (operation: DurableFileOperation, within: string): string => {
    try {
      return fs.realpathSync.native(within)
    } catch (error) {
      throw failure(operation, within, error)
    }
  }

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
  ): { readonly folder: number; readonly location: string } => {
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
  const openFolderOf = (path: string, root: string): { readonly folder: number; readonly location: string } => {
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

  /**
   * Opens `name` inside an opened folder without following it. A component
   * that is a link fails the open (`ELOOP`; `ENOTDIR` for a link to a file
   * opened as a folder), so the failure is told apart from a plain one by
   * asking the name itself, after the fact: only the error's wording depends
   * on that question, never what is opened.
   */
  const openNoFollow = (folder: number, folderPath: string, name: string, flags: number, path: string): number => {
    const child = childOf(folder, folderPath, name)
    try {
      return fs.openSync(child, flags)
    } catch (error) {
      const code = errnoCode(error)
      if (
        (code === "ELOOP" || code === "ENOTDIR" || code === "EMLINK") &&
        fs.lstatSync(child, { throwIfNoEntry: false })?.isSymbolicLink()
      ) {
        throw new SymlinkRefused({ operation: "readFile", path, link: nodePath.join(folderPath, name) })
      }
      throw error
    }
  }

  const readFailure = (path: string, error: unknown) =>
    error instanceof OutsideWithin ||
    error instanceof SymlinkRefused ||
    error instanceof NotPlainFile ||
    error instanceof DurableFileFailure
      ? error
      : failure("readFile", path, error)

  /** Reads `length` bytes of an opened file from `start`, stopping early if it shrank; the caller closes it. */
  const readSpan = (file: number, start: number, length: number): Uint8Array => {
    const bytes = Buffer.alloc(length)
    let read = 0
    while (read < length) {
      const count = fs.readSync(file, bytes, read, length - read, start + read)
      // The file shrank since fstat: what is there is all there is.
      if (count === 0) break
      read += count
    }
    return new Uint8Array(bytes.buffer, bytes.byteOffset, read)
  }

  const readSpanOnWorker = async (file: number, start: number, length: number): Promise<Uint8Array> => {
    const bytes = Buffer.alloc(length)
    let read = 0
    while (read < length) {
      const count = await new Promise<number>((resolve, reject) =>
        fs.read(file, bytes, read, length - read, start + read, (error, n) =>
          error === null ? resolve(n) : reject(error)
        )
      )
      if (count === 0) break
      read += count
    }
    return new Uint8Array(bytes.buffer, bytes.byteOffset, read)
  }

  const readFile: DurableFilesShape["readFile"] = (path, { maxBytes, offset = 0, within }: ReadFileOptions) =>
    Effect.suspend(() => {
      let file: number | undefined
      try {
        const root = realWithin("readFile", within)
        const target = nodePath.resolve(path)
        const relative =
          relativeWithin(nodePath.resolve(within), target, nodePath) ?? relativeWithin(root, target, nodePath)
        if (relative === undefined || relative === "") {
          throw new OutsideWithin({ operation: "readFile", path, within: root, actual: target })
        }
        const names = relative.split(nodePath.sep).filter((part) => part !== "")
        const fileName = names.pop() ?? ""
        // Every opened component must really be where its name says: with no link followed, the real path of
        // each is the real root joined with the names so far. Anything else (a rename racing the walk) is refused.
        let folder = fs.openSync(root, readFolderFlags)
        let folderPath = root
        try {
          for (const name of names) {
            const next = openNoFollow(folder, folderPath, name, readFolderFlags, path)
            const expected = nodePath.join(folderPath, name)
            let location: string
            try {
              location = folderLocation(next, expected)
            } catch (error) {
              closeQuietly(next)
              throw error
            }
            closeQuietly(folder)
            folder = next
            if (location !== expected) {
              throw new OutsideWithin({ operation: "readFile", path, within: root, actual: location })
            }
            folderPath = location
          }
          file = openNoFollow(folder, folderPath, fileName, readFileFlags, path)
        } finally {
          closeQuietly(folder)
        }
        try {
          const stat = fs.fstatSync(file)
          if (!stat.isFile()) {
            throw new NotPlainFile({
              operation: "readFile",
              path,
              found: stat.isDirectory() ? "a folder" : "a special file"
            })
          }
          if (stat.nlink !== 1) {
            throw new NotPlainFile({
              operation: "readFile",
              path,
              found: `a file with ${stat.nlink} hard links`,
              hardLinks: stat.nlink
            })
          }
          const expected = nodePath.join(folderPath, fileName)
          const location = fileLocation(file, expected)
          if (location !== expected) {
            throw new OutsideWithin({ operation: "readFile", path, within: root, actual: location ?? "(moved)" })
          }
          const start = Math.min(Math.max(0, offset), stat.size)
          const length = Math.min(stat.size - start, maxBytes ?? stat.size)
          const size = stat.size
          if (length <= blockingReadUpTo) {
            return Effect.succeed({ bytes: readSpan(file, start, length), size, location })
          }
          // Handed over to the worker's read, which closes it.
          const held = file
          file = undefined
          return Effect.tryPromise({
            try: () => readSpanOnWorker(held, start, length).finally(() => closeQuietly(held)),
            catch: (error) => readFailure(path, error)
          }).pipe(Effect.map((bytes) => ({ bytes, size, location })))
        } finally {
          if (file !== undefined) closeQuietly(file)
        }
      } catch (error) {
        return Effect.fail(readFailure(path, error))
      }
    })

  return DurableFiles.of({
    realPath,
    makeDirectories,
    writeNewFile,
    publishOnce,
    publishReplacing,
    syncDirectory,
    readFile
  })
}

/**
 * The Node.js layer, using descriptor paths where the platform has them.
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
