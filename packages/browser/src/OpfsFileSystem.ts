/**
 * Effect's `FileSystem` over the Origin Private File System, so the
 * runtime's volume store, journals and staging run in a page or a worker
 * exactly as they run on Node, on the same absolute, `/`-separated paths
 * (the origin's root folder is `/`).
 *
 * What OPFS gives and what this layer promises:
 *
 * - Writes go through OPFS writable streams, which write to a swap file and
 *   replace the file's content when the stream closes. `File.sync` closes
 *   the pending stream: once it returns, the bytes written so far are the
 *   file's committed content, visible to every tab and worker of the origin.
 *   A write never committed (a tab closed mid-write) leaves the previous
 *   content, never a mix. OPFS says nothing about the device's own caches;
 *   "durable" here means committed to the browser's storage, which is what
 *   the browser itself can promise.
 * - Exclusive creation (`wx`, `link`) is made under an origin-wide Web Lock
 *   on the target path, so of several tabs or workers creating one name,
 *   exactly one succeeds and the others fail `AlreadyExists`. OPFS has no
 *   exclusive create of its own; only writers through this package are
 *   serialized.
 * - OPFS has no symbolic or hard links: `link` makes an exclusive copy (the
 *   runtime links only fully written temporary files, so a copy under the
 *   lock publishes the same bytes once), `realPath` is the normalized path
 *   of something that exists, `symlink` and `readLink` fail.
 * - Permissions, owners and times do not exist in OPFS: `chmod`, `chown`
 *   and `utimes` fail `BadArgument` rather than pretend.
 *
 * @since 0.1.0
 */
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as PlatformError from "effect/PlatformError"
import * as Stream from "effect/Stream"
import {
  directoryAt,
  fileAt,
  kindAt,
  nameOf,
  normalize,
  parentOf,
  platformError,
  readBytes,
  segmentsOf,
  withPathLock,
  writeWhole
} from "./internal/opfs.ts"

const attempt = <A>(
  method: string,
  path: string,
  body: () => Promise<A>
): Effect.Effect<A, PlatformError.PlatformError> =>
  Effect.tryPromise({ try: body, catch: (error) => platformError(method, path, error) })

const unsupported = (method: string, why: string) =>
  Effect.fail(PlatformError.badArgument({ module: "FileSystem", method, description: `not available on OPFS: ${why}` }))

const notFound = (path: string) => new DOMException(`${path} does not exist`, "NotFoundError")
const alreadyExists = (path: string) => new DOMException(`${path} already exists`, "InvalidModificationError")

const info = (type: FileSystem.File.Type, size: number, modified: number | undefined): FileSystem.File.Info => ({
  type,
  mtime: modified === undefined ? Option.none() : Option.some(new Date(modified)),
  atime: Option.none(),
  birthtime: Option.none(),
  dev: 0n,
  ino: Option.none(),
  mode: type === "Directory" ? 0o700 : 0o600,
  nlink: Option.some(1n),
  uid: Option.none(),
  gid: Option.none(),
  rdev: Option.none(),
  size: ByteSize.bytes(size),
  blksize: Option.none(),
  blocks: Option.none()
})

const statAt = async (path: string): Promise<FileSystem.File.Info> => {
  const kind = await kindAt(path)
  if (kind === undefined) throw notFound(path)
  if (kind === "directory") return info("Directory", 0, undefined)
  const file = await (await fileAt(path)).getFile()
  return info("File", file.size, file.lastModified)
}

const makeDirectoryAt = async (path: string, recursive: boolean): Promise<void> => {
  const segments = segmentsOf(path)
  if (recursive) {
    await directoryAt(segments, true)
    return
  }
  const kind = await kindAt(path)
  if (kind !== undefined) throw alreadyExists(path)
  await directoryAt(segments.slice(0, -1), false)
  await directoryAt(segments, true)
}

const listAt = async (path: string, recursive: boolean): Promise<Array<string>> => {
  const names: Array<string> = []
  const walk = async (folder: FileSystemDirectoryHandle, prefix: string): Promise<void> => {
    for await (const [name, handle] of folder.entries()) {
      names.push(`${prefix}${name}`)
      if (recursive && handle.kind === "directory") await walk(handle as FileSystemDirectoryHandle, `${prefix}${name}/`)
    }
  }
  await walk(await directoryAt(segmentsOf(path), false), "")
  return names
}

const removeAt = async (path: string, recursive: boolean, force: boolean): Promise<void> => {
  try {
    const { folder, name } = await parentOf(path)
    await folder.removeEntry(name, { recursive })
  } catch (error) {
    if (force && nameOf(error) === "NotFoundError") return
    throw error
  }
}

/** Copies `from` to the new name `to` under `to`'s lock; fails `AlreadyExists` when `to` exists. */
const copyExclusive = (from: string, to: string): Promise<void> =>
  withPathLock(to, async () => {
    const bytes = await readBytes(await fileAt(from))
    if ((await kindAt(to)) !== undefined) throw alreadyExists(to)
    await writeWhole(await fileAt(to, true), bytes)
  })

const renameAt = async (from: string, to: string): Promise<void> => {
  const kind = await kindAt(from)
  if (kind === undefined) throw notFound(from)
  if (kind === "directory") throw new DOMException(`renaming the folder ${from} is not supported`, "NotSupportedError")
  await withPathLock(to, async () => {
    const source = await fileAt(from)
    const { folder, name } = await parentOf(to)
    const move = (source as { move?: (folder: FileSystemDirectoryHandle, name: string) => Promise<void> }).move
    if (typeof move === "function") {
      // `move` replaces the target in one step, as a rename does.
      await move.call(source, folder, name)
      return
    }
    await writeWhole(await folder.getFileHandle(name, { create: true }), await readBytes(source))
    await removeAt(from, false, false)
  })
}

interface OpenState {
  readonly path: string
  readonly handle: FileSystemFileHandle
  readonly append: boolean
  position: number
  size: number
  writable: FileSystemWritableFileStream | undefined
}

const openState = (path: string, flag: FileSystem.OpenFlag): Effect.Effect<OpenState, PlatformError.PlatformError> =>
  attempt("open", path, async (): Promise<OpenState> => {
    const exclusive = flag.includes("x")
    const creates = flag !== "r" && flag !== "r+"
    const handle = exclusive
      ? await withPathLock(path, async () => {
          if ((await kindAt(path)) !== undefined) throw alreadyExists(path)
          return fileAt(path, true)
        })
      : await fileAt(path, creates)
    const truncates = flag.startsWith("w")
    const state: OpenState = {
      path,
      handle,
      append: flag.startsWith("a"),
      position: 0,
      size: truncates ? 0 : (await handle.getFile()).size,
      writable: undefined
    }
    if (truncates) {
      state.writable = await handle.createWritable({ keepExistingData: false })
    }
    return state
  })

const writableOf = async (state: OpenState): Promise<FileSystemWritableFileStream> => {
  if (state.writable === undefined) state.writable = await state.handle.createWritable({ keepExistingData: true })
  return state.writable
}

const commit = async (state: OpenState): Promise<void> => {
  const writable = state.writable
  state.writable = undefined
  if (writable !== undefined) await writable.close()
}

const fileOf = (state: OpenState): FileSystem.File => {
  const write = (buffer: Uint8Array) =>
    attempt("write", state.path, async () => {
      const writable = await writableOf(state)
      const at = state.append ? state.size : state.position
      await writable.write({ type: "write", position: at, data: buffer as Uint8Array<ArrayBuffer> })
      state.position = at + buffer.length
      state.size = Math.max(state.size, state.position)
      return buffer.length
    })
  const read = (buffer: Uint8Array, options?: FileSystem.File.ReadOptions) =>
    attempt("read", state.path, async () => {
      // Reads see committed content: commit what this handle wrote first.
      await commit(state)
      const at = options?.position === undefined ? state.position : Number(options.position)
      const bytes = new Uint8Array(await (await state.handle.getFile()).slice(at, at + buffer.length).arrayBuffer())
      buffer.set(bytes)
      if (options?.position === undefined) state.position = at + bytes.length
      return bytes.length
    })
  return {
    [FileSystem.FileTypeId]: FileSystem.FileTypeId,
    stat: Effect.sync(() => info("File", state.size, Date.now())),
    seek: (offset, from) =>
      Effect.sync(() => {
        state.position = from === "start" ? Number(offset) : state.position + Number(offset)
        return BigInt(state.position)
      }),
    sync: attempt("sync", state.path, () => commit(state)),
    read,
    readAlloc: (size, options) => {
      const buffer = new Uint8Array(size)
      return Effect.map(read(buffer, options), (n) => (n === 0 ? Option.none() : Option.some(buffer.subarray(0, n))))
    },
    truncate: (length = 0) =>
      attempt("truncate", state.path, async () => {
        await (await writableOf(state)).truncate(length)
        state.size = length
        state.position = Math.min(state.position, length)
      }),
    write,
    writeAll: (buffer) => Effect.asVoid(write(buffer))
  }
}

/** A new folder of a fresh random name in `directory` (`/tmp` by default), its parents created. */
const makeTempDirectoryAt = (options?: {
  readonly directory?: string | undefined
  readonly prefix?: string | undefined
}): Effect.Effect<string, PlatformError.PlatformError> =>
  attempt("makeTempDirectory", options?.directory ?? "/tmp", async () => {
    const path = normalize(`${options?.directory ?? "/tmp"}/${options?.prefix ?? ""}${crypto.randomUUID()}`)
    await directoryAt(segmentsOf(path), true)
    return path
  })

/** A new empty file of a fresh random name in `directory` (`/tmp` by default), the folder created. */
const makeTempFileAt = (options?: {
  readonly directory?: string | undefined
  readonly prefix?: string | undefined
  readonly suffix?: string | undefined
}): Effect.Effect<string, PlatformError.PlatformError> =>
  attempt("makeTempFile", options?.directory ?? "/tmp", async () => {
    const folder = options?.directory ?? "/tmp"
    const path = normalize(`${folder}/${options?.prefix ?? ""}${crypto.randomUUID()}${options?.suffix ?? ""}`)
    await directoryAt(segmentsOf(folder), true)
    await fileAt(path, true)
    return path
  })

const unsupportedFlags: ReadonlyArray<FileSystem.OpenFlag> = ["r+", "w+", "wx+", "a+", "ax+"]

/**
 * The `FileSystem` over OPFS. Every path must be absolute (`/` is the
 * origin's root); `..` and `.` are resolved lexically, which is exact on
 * OPFS since it has no links.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): FileSystem.FileSystem =>
  FileSystem.make({
    access: (path) => attempt("access", path, () => statAt(path)).pipe(Effect.asVoid),
    copy: (from, to, options) =>
      attempt("copy", to, async () => {
        if (options?.overwrite === true) await writeWhole(await fileAt(to, true), await readBytes(await fileAt(from)))
        else await copyExclusive(from, to)
      }),
    copyFile: (from, to) =>
      attempt("copyFile", to, async () => writeWhole(await fileAt(to, true), await readBytes(await fileAt(from)))),
    chmod: () => unsupported("chmod", "OPFS has no permissions"),
    chown: () => unsupported("chown", "OPFS has no owners"),
    link: (from, to) => attempt("link", to, () => copyExclusive(from, to)),
    lstat: (path) => attempt("lstat", path, () => statAt(path)),
    makeDirectory: (path, options) =>
      attempt("makeDirectory", path, () => makeDirectoryAt(path, options?.recursive === true)),
    makeTempDirectory: makeTempDirectoryAt,
    makeTempDirectoryScoped: (options) =>
      Effect.acquireRelease(makeTempDirectoryAt(options), (path) =>
        Effect.promise(() => removeAt(path, true, true).catch(() => undefined))
      ),
    makeTempFile: makeTempFileAt,
    makeTempFileScoped: (options) =>
      Effect.acquireRelease(makeTempFileAt(options), (path) =>
        Effect.promise(() => removeAt(path, false, true).catch(() => undefined))
      ),
    open: (path, options) => {
      const flag = options?.flag ?? "r"
      if (unsupportedFlags.includes(flag))
        return unsupported("open", `the flag "${flag}" (read and write on one handle)`)
      return Effect.acquireRelease(openState(path, flag), (state) =>
        Effect.promise(() => commit(state).catch(() => undefined))
      ).pipe(Effect.map(fileOf))
    },
    readDirectory: (path, options) => attempt("readDirectory", path, () => listAt(path, options?.recursive === true)),
    readDirectoryEntries: (path) =>
      attempt("readDirectoryEntries", path, async () => {
        const entries: Array<FileSystem.DirectoryEntry> = []
        for await (const [name, handle] of (await directoryAt(segmentsOf(path), false)).entries()) {
          entries.push({ name, type: handle.kind === "directory" ? "Directory" : "File" })
        }
        return entries
      }),
    readFile: (path) => attempt("readFile", path, async () => readBytes(await fileAt(path))),
    readLink: () => unsupported("readLink", "OPFS has no links"),
    realPath: (path) =>
      attempt("realPath", path, async () => {
        if ((await kindAt(path)) === undefined) throw notFound(path)
        return normalize(path)
      }),
    remove: (path, options) =>
      attempt("remove", path, () => removeAt(path, options?.recursive === true, options?.force === true)),
    rename: (from, to) => attempt("rename", to, () => renameAt(from, to)),
    stat: (path) => attempt("stat", path, () => statAt(path)),
    symlink: () => unsupported("symlink", "OPFS has no links"),
    truncate: (path, length) =>
      attempt("truncate", path, async () => {
        const writable = await (await fileAt(path)).createWritable({ keepExistingData: true })
        await writable.truncate(length ?? 0)
        await writable.close()
      }),
    utimes: () => unsupported("utimes", "OPFS keeps no times a caller can set"),
    watch: () =>
      Stream.fail(
        PlatformError.badArgument({ module: "FileSystem", method: "watch", description: "not available on OPFS" })
      ),
    writeFile: (path, data, options) => {
      const flag = options?.flag ?? "w"
      if (flag === "w") return attempt("writeFile", path, async () => writeWhole(await fileAt(path, true), data))
      return Effect.scoped(
        Effect.flatMap(
          Effect.acquireRelease(openState(path, flag), (state) =>
            Effect.promise(() => commit(state).catch(() => undefined))
          ),
          (state) =>
            Effect.andThen(
              fileOf(state).writeAll(data),
              attempt("writeFile", path, () => commit(state))
            )
        )
      )
    }
  })

/**
 * `FileSystem` on OPFS and Effect's POSIX `Path`: what the runtime's
 * store, journal and staging need from the platform.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<FileSystem.FileSystem | Path.Path> = Layer.merge(
  Layer.sync(FileSystem.FileSystem, make),
  Path.layer
)
