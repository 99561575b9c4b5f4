/**
 * Walking the Origin Private File System by absolute POSIX-style paths.
 *
 * OPFS has no symbolic links, no hard links and no `..` entries: a path is
 * a chain of directory handles from the origin's root, so containment is a
 * property of the normalized path itself. Every path is normalized here,
 * once, and everything above works on the segments.
 */
import * as PlatformError from "effect/PlatformError"

/** Thrown (and mapped by callers) when a path is not absolute. */
export const segmentsOf = (path: string): ReadonlyArray<string> => {
  if (!path.startsWith("/")) throw new TypeError(`OPFS paths are absolute; got "${path}"`)
  const segments: Array<string> = []
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") segments.pop()
    else segments.push(part)
  }
  return segments
}

/** The normalized absolute form of `path` ("/" for the root). */
export const normalize = (path: string): string => `/${segmentsOf(path).join("/")}`

const storage = (): StorageManager => {
  const manager = (globalThis as { navigator?: Navigator }).navigator?.storage
  if (manager === undefined || typeof manager.getDirectory !== "function") {
    throw new DOMException(
      "navigator.storage.getDirectory is missing: OPFS exists only in a secure context (https or a loopback origin)",
      "NotSupportedError"
    )
  }
  return manager
}

/** The directory handle at `segments`, created on the way when `create`. */
export const directoryAt = async (
  segments: ReadonlyArray<string>,
  create: boolean
): Promise<FileSystemDirectoryHandle> => {
  let folder = await storage().getDirectory()
  for (const name of segments) folder = await folder.getDirectoryHandle(name, { create })
  return folder
}

/** The parent folder's handle and the last name of a path (which must not be the root). */
export const parentOf = async (
  path: string,
  create = false
): Promise<{ readonly folder: FileSystemDirectoryHandle; readonly name: string }> => {
  const segments = segmentsOf(path)
  const name = segments.at(-1)
  if (name === undefined) throw new DOMException(`${path} is the root folder`, "TypeMismatchError")
  return { folder: await directoryAt(segments.slice(0, -1), create), name }
}

/** The file handle at `path`; `NotFoundError` when missing, `TypeMismatchError` for a folder. */
export const fileAt = async (path: string, create = false): Promise<FileSystemFileHandle> => {
  const { folder, name } = await parentOf(path)
  return folder.getFileHandle(name, { create })
}

/** What is at `path`: a file, a folder, or nothing. */
export const kindAt = async (path: string): Promise<"file" | "directory" | undefined> => {
  if (segmentsOf(path).length === 0) return "directory"
  try {
    const { folder, name } = await parentOf(path)
    await folder.getFileHandle(name)
    return "file"
  } catch (error) {
    // A folder at the name answers TypeMismatchError; a missing name or parent, NotFoundError.
    if (nameOf(error) === "TypeMismatchError") {
      const { folder, name } = await parentOf(path).catch(() => ({ folder: undefined, name: "" }))
      if (folder === undefined) return undefined
      return folder.getDirectoryHandle(name).then(
        () => "directory" as const,
        () => undefined
      )
    }
    if (nameOf(error) === "NotFoundError") return undefined
    throw error
  }
}

export const nameOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "name" in error ? String((error as { name: unknown }).name) : ""

const tagOf = (error: unknown): PlatformError.SystemErrorTag => {
  switch (nameOf(error)) {
    case "NotFoundError":
      return "NotFound"
    case "TypeMismatchError":
      return "BadResource"
    case "NoModificationAllowedError":
      return "Busy"
    case "InvalidModificationError":
      return "AlreadyExists"
    case "NotAllowedError":
    case "SecurityError":
      return "PermissionDenied"
    case "QuotaExceededError":
      return "WriteZero"
    default:
      return "Unknown"
  }
}

/** A DOM failure as the `PlatformError` Effect's `FileSystem` promises. */
export const platformError = (method: string, path: string, error: unknown): PlatformError.PlatformError =>
  PlatformError.systemError({
    _tag: tagOf(error),
    module: "FileSystem",
    method,
    pathOrDescriptor: path,
    description: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    cause: error
  })

/**
 * The errno-like code `DurableFiles` errors carry for a DOM failure, so a
 * caller that matches `ENOENT` on Node matches it here too.
 */
export const codeOf = (error: unknown): string => {
  switch (nameOf(error)) {
    case "NotFoundError":
      return "ENOENT"
    case "TypeMismatchError":
      return "EISDIR"
    case "NoModificationAllowedError":
      return "EBUSY"
    case "QuotaExceededError":
      return "ENOSPC"
    case "NotAllowedError":
    case "SecurityError":
      return "EACCES"
    default:
      return "UNKNOWN"
  }
}

/**
 * Runs `body` holding the origin-wide Web Lock for a path. Every tab, frame
 * and worker of the origin shares these locks, so a check followed by a
 * create under the same lock is exclusive across all of them. Only writers
 * that go through this package take the lock: OPFS itself has no exclusive
 * create.
 */
export const withPathLock = <A>(path: string, body: () => Promise<A>): Promise<A> =>
  navigator.locks.request(`tessera-opfs:${normalize(path)}`, { mode: "exclusive" }, body) as Promise<A>

/** Reads the committed content of a file. */
export const readBytes = async (handle: FileSystemFileHandle): Promise<Uint8Array> =>
  new Uint8Array(await (await handle.getFile()).arrayBuffer())

/**
 * Writes `bytes` as the whole content of `handle` and commits it. OPFS's
 * writable stream writes to a swap file and replaces the content on `close`,
 * so a reader sees the old content or the new one, never a mix, and a write
 * cut short (a closed tab) leaves the old content.
 */
export const writeWhole = async (handle: FileSystemFileHandle, bytes: Uint8Array | string): Promise<void> => {
  const writable = await handle.createWritable({ keepExistingData: false })
  try {
    await writable.write(typeof bytes === "string" ? bytes : (bytes as Uint8Array<ArrayBuffer>))
  } catch (error) {
    await writable.abort().catch(() => undefined)
    throw error
  }
  await writable.close()
}
