/**
 * Everything the runtime needs from a browser, as one layer: Effect's
 * `FileSystem` and `Path` on the Origin Private File System
 * (`OpfsFileSystem`), the durable file primitives (`OpfsDurableFiles`) and
 * the journal writer (`OpfsJournalFile`). The digest needs nothing here:
 * the runtime's default `Digest` is WebCrypto, which every browser has.
 *
 * With it, the runtime's own modules (`FilesystemTaskRuntime`, `TaskHost`,
 * `Journal`, `TaskExecution`, ...) run in a page or a worker unchanged, with
 * the same checks and the same guarantees as on Node: there is one runtime,
 * and this is its browser platform.
 *
 * @since 0.1.0
 */
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Path from "effect/Path"
import * as OpfsDurableFiles from "./OpfsDurableFiles.ts"
import * as OpfsFileSystem from "./OpfsFileSystem.ts"
import * as OpfsJournalFile from "./OpfsJournalFile.ts"

/**
 * The browser platform.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles> = Layer.mergeAll(
  OpfsFileSystem.layer,
  OpfsDurableFiles.layer,
  OpfsJournalFile.layer
)
