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
 * @since 0.1.0
 */
import { constants, existsSync } from "node:fs"
import type { FileHandle } from "node:fs/promises"
import * as fsp from "node:fs/promises"
import * as nodePath from "node:path"
import type {
  DurableFileOperation,
  DurableFilesShape,
  WithinOptions,
  WriteNewFileOptions
} from "@tessera/core/DurableFiles"
import { AlreadyExists, DurableFileFailure, DurableFiles, OutsideWithin } from "@tessera/core/DurableFiles"
import { Effect, Layer } from "effect"

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
}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0
const O_DIRECTORY = constants.O_DIRECTORY ?? 0
const createFlags = constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | O_NOFOLLOW
const directoryFlags = constants.O_RDONLY | O_DIRECTORY

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

const isWithin = (root: string, candidate: string): boolean => {
  const relative = nodePath.relative(root, candidate)
  return (
    relative === "" ||
    (relative !== ".." && !relative.startsWith(`..${nodePath.sep}`) && !nodePath.isAbsolute(relative))
  )
}

const closeQuietly = (handle: FileHandle): Promise<void> => handle.close().catch(() => undefined)

/**
 * Builds the primitives.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: NodeDurableFilesOptions = {}): DurableFilesShape => {
  const descriptorPaths = options.descriptorPaths ?? existsSync("/proc/self/fd")

  const descriptorPath = (handle: FileHandle): string => `/proc/self/fd/${handle.fd}`

  /** The path to use for creating `name` inside an opened folder. */
  const childOf = (folder: FileHandle, folderPath: string, name: string): string =>
    descriptorPaths ? `${descriptorPath(folder)}/${name}` : nodePath.join(folderPath, name)

  /** Where an opened folder really is. */
  const folderLocation = (folder: FileHandle, folderPath: string): Promise<string> =>
    descriptorPaths ? fsp.readlink(descriptorPath(folder)) : fsp.realpath(folderPath)

  /**
   * Where an opened file really is: its descriptor's link on Linux; elsewhere
   * the real path of its name, accepted only if that name still denotes the
   * very file we hold open (same device and inode).
   */
  const fileLocation = async (file: FileHandle, path: string): Promise<string | undefined> => {
    if (descriptorPaths) return fsp.readlink(descriptorPath(file))
    const candidate = nodePath.join(await fsp.realpath(nodePath.dirname(path)), nodePath.basename(path))
    const [held, named] = await Promise.all([file.stat(), fsp.lstat(candidate)])
    return held.dev === named.dev && held.ino === named.ino ? candidate : undefined
  }

  const run = <A>(
    operation: DurableFileOperation,
    path: string,
    body: () => Promise<A>
  ): Effect.Effect<A, AlreadyExists | OutsideWithin | DurableFileFailure> =>
    Effect.tryPromise({
      try: body,
      catch: (error) => (isOurError(error) ? error : failure(operation, path, error))
    })

  const realWithin = async (operation: DurableFileOperation, within: string): Promise<string> => {
    try {
      return await fsp.realpath(within)
    } catch (error) {
      throw failure(operation, within, error)
    }
  }

  const syncFolder = async (path: string): Promise<void> => {
    const handle = await fsp.open(path, directoryFlags)
    try {
      await handle.sync()
    } finally {
      await closeQuietly(handle)
    }
  }

  const realPath: DurableFilesShape["realPath"] = (path) =>
    Effect.tryPromise({ try: () => fsp.realpath(path), catch: (error) => failure("realPath", path, error) })

  const makeDirectories: DurableFilesShape["makeDirectories"] = (path, { within }: WithinOptions) =>
    run("makeDirectories", path, async () => {
      const root = await realWithin("makeDirectories", within)
      const target = nodePath.resolve(path)
      // The caller may name the target through `within` as given or through its real path.
      const relativeTo = (base: string) => (isWithin(base, target) ? nodePath.relative(base, target) : undefined)
      const relative = relativeTo(nodePath.resolve(within)) ?? relativeTo(root)
      if (relative === undefined) {
        throw new OutsideWithin({ operation: "makeDirectories", path, within: root, actual: target })
      }
      let folder = await fsp.open(root, directoryFlags)
      let folderPath = root
      try {
        for (const name of relative.split(nodePath.sep).filter((part) => part !== "")) {
          const child = childOf(folder, folderPath, name)
          await fsp.mkdir(child).catch((error: unknown) => {
            if (errnoCode(error) !== "EEXIST") throw error
          })
          const next = await fsp.open(child, directoryFlags)
          const location = await folderLocation(next, nodePath.join(folderPath, name)).catch(async (error: unknown) => {
            await closeQuietly(next)
            throw error
          })
          if (!isWithin(root, location)) {
            await closeQuietly(next)
            throw new OutsideWithin({ operation: "makeDirectories", path, within: root, actual: location })
          }
          await closeQuietly(folder)
          folder = next
          folderPath = location
        }
      } finally {
        await closeQuietly(folder)
      }
    }).pipe(Effect.catchTag("AlreadyExists", (error) => Effect.fail(failure("makeDirectories", path, error))))

  const writeNewFile: DurableFilesShape["writeNewFile"] = (
    path,
    bytes,
    { mode = 0o600, within }: WriteNewFileOptions
  ) =>
    run("writeNewFile", path, async () => {
      const root = await realWithin("writeNewFile", within)
      const folderPath = nodePath.dirname(path)
      const name = nodePath.basename(path)
      const folder = await fsp.open(folderPath, directoryFlags)
      try {
        const folderReal = await folderLocation(folder, folderPath)
        if (!isWithin(root, folderReal)) {
          throw new OutsideWithin({
            operation: "writeNewFile",
            path,
            within: root,
            actual: nodePath.join(folderReal, name)
          })
        }
        const target = childOf(folder, folderPath, name)
        let file: FileHandle
        try {
          file = await fsp.open(target, createFlags, mode)
        } catch (error) {
          // O_EXCL reports any existing name, a symlink included, as EEXIST.
          if (errnoCode(error) === "EEXIST") throw new AlreadyExists({ operation: "writeNewFile", path })
          throw error
        }
        try {
          const actual = await fileLocation(file, path)
          if (actual === undefined || !isWithin(root, actual)) {
            if (actual !== undefined) await removeIfSame(file, actual)
            throw new OutsideWithin({ operation: "writeNewFile", path, within: root, actual: actual ?? "(moved)" })
          }
          let offset = 0
          while (offset < bytes.byteLength) {
            const { bytesWritten } = await file.write(bytes, offset, bytes.byteLength - offset, null)
            offset += bytesWritten
          }
          await file.sync()
        } catch (error) {
          // Remove the partial file, but only while its name still denotes it.
          if (!(error instanceof OutsideWithin)) await removeIfSame(file, target)
          await closeQuietly(file)
          throw error
        }
        await file.close()
        await folder.sync()
      } finally {
        await closeQuietly(folder)
      }
    })

  /** Removes `location` only if it still names the file we hold open, so a swapped-in file is never deleted. */
  const removeIfSame = async (file: FileHandle, location: string): Promise<void> => {
    const [held, named] = await Promise.all([file.stat(), fsp.lstat(location).catch(() => undefined)])
    if (named !== undefined && held.dev === named.dev && held.ino === named.ino) {
      await fsp.unlink(location).catch(() => undefined)
    }
  }

  const publishOnce: DurableFilesShape["publishOnce"] = (tempPath, finalPath) =>
    run("publishOnce", finalPath, async () => {
      try {
        await fsp.link(tempPath, finalPath)
      } catch (error) {
        if (errnoCode(error) === "EEXIST") throw new AlreadyExists({ operation: "publishOnce", path: finalPath })
        throw error
      }
      await fsp.unlink(tempPath)
      const finalFolder = nodePath.dirname(finalPath)
      const tempFolder = nodePath.dirname(tempPath)
      await syncFolder(finalFolder)
      if (nodePath.resolve(tempFolder) !== nodePath.resolve(finalFolder)) await syncFolder(tempFolder)
    }).pipe(Effect.catchTag("OutsideWithin", (error) => Effect.fail(failure("publishOnce", finalPath, error))))

  const syncDirectory: DurableFilesShape["syncDirectory"] = (path) =>
    Effect.tryPromise({ try: () => syncFolder(path), catch: (error) => failure("syncDirectory", path, error) })

  return DurableFiles.of({ realPath, makeDirectories, writeNewFile, publishOnce, syncDirectory })
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
