/**
 * The durable file primitives (`DurableFiles` from `@tessera/core`) on the
 * Origin Private File System.
 *
 * OPFS has no symbolic links and no hard links, and its paths are chains of
 * directory handles from the origin's root. So the containment checks the
 * Node layer makes on what it opened are made here on the normalized path:
 * `a/../b` is resolved lexically (exact, since nothing can redirect a
 * component), and a path that leaves `within` is refused before anything is
 * opened. `SymlinkRefused` and the hard-link case of `NotPlainFile` cannot
 * arise; a folder where a file is expected is `NotPlainFile`.
 *
 * Exclusivity and publication:
 *
 * - `writeNewFile` checks and creates under the origin-wide Web Lock of the
 *   path (see `OpfsFileSystem`), so of several tabs or workers creating one
 *   name exactly one succeeds; the content is written through a writable
 *   stream and committed when it closes.
 * - `publishOnce` copies the temporary file to the final name under the
 *   final name's lock (there is no hard link to make), so exactly one of
 *   several publishers wins and the others fail `AlreadyExists` with their
 *   temporary file untouched; the final name appears with its whole content
 *   (a writable stream commits all or nothing).
 * - `publishReplacing` moves the temporary file over the final name.
 * - `syncDirectory` has nothing to do: OPFS commits a name when it is created.
 *
 * What "durable" means here is what OPFS promises: committed to the
 * browser's storage for the origin once the call returns, visible to every
 * tab and worker. Whether the browser flushes the device's cache is the
 * browser's business; no web API exposes it.
 *
 * @since 0.1.0
 */
import type { DurableFileOperation, DurableFilesShape } from "@tessera/core/DurableFiles"
import {
  AlreadyExists,
  DurableFileFailure,
  DurableFiles,
  NotPlainFile,
  OutsideWithin,
  relativeWithin
} from "@tessera/core/DurableFiles"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import {
  codeOf,
  directoryAt,
  fileAt,
  kindAt,
  normalize,
  parentOf,
  readBytes,
  segmentsOf,
  withPathLock,
  writeWhole
} from "./internal/opfs.ts"

const posix = {
  sep: "/",
  relative: () => {
    throw new Error("unused with the / separator")
  },
  isAbsolute: (path: string) => path.startsWith("/")
}

type Refusal = AlreadyExists | OutsideWithin | NotPlainFile | DurableFileFailure

const failure = (operation: DurableFileOperation, path: string, error: unknown): Refusal =>
  error instanceof AlreadyExists ||
  error instanceof OutsideWithin ||
  error instanceof NotPlainFile ||
  error instanceof DurableFileFailure
    ? error
    : new DurableFileFailure({
        operation,
        path,
        code: codeOf(error),
        detail: error instanceof Error ? error.message : String(error)
      })

const run = <A, E extends Refusal>(operation: DurableFileOperation, path: string, body: () => Promise<A>) =>
  Effect.tryPromise({ try: body, catch: (error) => failure(operation, path, error) as E })

/** `path` normalized, refused with `OutsideWithin` unless it lies strictly below `within`. */
const inside = (operation: DurableFileOperation, path: string, within: string): string => {
  const target = normalize(path)
  const root = normalize(within)
  const relative = relativeWithin(root, target, posix)
  if (relative === undefined || relative === "")
    throw new OutsideWithin({ operation, path, within: root, actual: target })
  return target
}

const existingFolder = async (operation: DurableFileOperation, path: string): Promise<void> => {
  const kind = await kindAt(path)
  if (kind === undefined) {
    throw new DurableFileFailure({ operation, path, code: "ENOENT", detail: `${path} does not exist` })
  }
  if (kind !== "directory") throw new NotPlainFile({ operation, path, found: "a file where a folder is needed" })
}

/**
 * The OPFS implementation.
 *
 * @since 0.1.0
 * @category implementations
 */
export const opfs: DurableFilesShape = DurableFiles.of({
  realPath: (path) =>
    run("realPath", path, async () => {
      if ((await kindAt(path)) === undefined) {
        throw new DurableFileFailure({ operation: "realPath", path, code: "ENOENT", detail: `${path} does not exist` })
      }
      return normalize(path)
    }) as Effect.Effect<string, DurableFileFailure>,

  makeDirectories: (path, { within }) =>
    run("makeDirectories", path, async () => {
      await existingFolder("makeDirectories", within)
      const target = normalize(path)
      if (target !== normalize(within)) inside("makeDirectories", target, within)
      await directoryAt(segmentsOf(target), true)
    }) as Effect.Effect<void, OutsideWithin | DurableFileFailure>,

  writeNewFile: (path, bytes, options) =>
    run("writeNewFile", path, async () => {
      await existingFolder("writeNewFile", options.within)
      const target = inside("writeNewFile", path, options.within)
      const created = await withPathLock(target, async () => {
        if ((await kindAt(target)) !== undefined) throw new AlreadyExists({ operation: "writeNewFile", path })
        const { folder, name } = await parentOf(target, options.createFolders === true)
        return folder.getFileHandle(name, { create: true })
      })
      try {
        await writeWhole(created, bytes)
      } catch (error) {
        const { folder, name } = await parentOf(target)
        await folder.removeEntry(name).catch(() => undefined)
        throw error
      }
    }) as Effect.Effect<void, AlreadyExists | OutsideWithin | DurableFileFailure>,

  publishOnce: (tempPath, finalPath) =>
    run("publishOnce", finalPath, async () => {
      const bytes = await readBytes(await fileAt(tempPath))
      await withPathLock(finalPath, async () => {
        if ((await kindAt(finalPath)) !== undefined)
          throw new AlreadyExists({ operation: "publishOnce", path: finalPath })
        await writeWhole(await fileAt(finalPath, true), bytes)
      })
      const { folder, name } = await parentOf(tempPath)
      await folder.removeEntry(name)
    }) as Effect.Effect<void, AlreadyExists | DurableFileFailure>,

  publishReplacing: (tempPath, finalPath) =>
    run("publishReplacing", finalPath, async () => {
      const bytes = await readBytes(await fileAt(tempPath))
      await withPathLock(finalPath, async () => writeWhole(await fileAt(finalPath, true), bytes))
      const { folder, name } = await parentOf(tempPath)
      await folder.removeEntry(name)
    }) as Effect.Effect<void, DurableFileFailure>,

  syncDirectory: (path) =>
    run("syncDirectory", path, () => existingFolder("syncDirectory", path)) as Effect.Effect<void, DurableFileFailure>,

  readFile: (path, { maxBytes, offset = 0, within }) =>
    run("readFile", path, async () => {
      await existingFolder("readFile", within)
      const target = inside("readFile", path, within)
      const kind = await kindAt(target)
      if (kind === undefined)
        throw new DurableFileFailure({ operation: "readFile", path, code: "ENOENT", detail: `${path} does not exist` })
      if (kind === "directory") throw new NotPlainFile({ operation: "readFile", path, found: "a folder" })
      const file = await (await fileAt(target)).getFile()
      const end = maxBytes === undefined ? file.size : Math.min(file.size, offset + maxBytes)
      const bytes =
        offset >= file.size ? new Uint8Array(0) : new Uint8Array(await file.slice(offset, end).arrayBuffer())
      return { bytes, size: file.size, location: target }
    }) as Effect.Effect<
      { readonly bytes: Uint8Array; readonly size: number; readonly location: string },
      OutsideWithin | NotPlainFile | DurableFileFailure
    >
})

/**
 * Provides {@link opfs} as the `DurableFiles` service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<DurableFiles> = Layer.succeed(DurableFiles)(opfs)
