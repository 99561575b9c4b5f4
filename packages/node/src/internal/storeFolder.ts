/**
 * The folder the inspector reads, read without writing: checked to be a
 * complete store before the store is opened (opening one on any other
 * folder would create it), and the files of a volume listed.
 *
 * @internal
 */
import * as DurableFiles from "@tessera/core/DurableFiles"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Effect from "effect/Effect"
import type * as FileSystemNs from "effect/FileSystem"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"

/** The folder is not (completely) a store; documented where `Inspector` exports it. */
export class NotAStoreFolder extends Schema.TaggedError<NotAStoreFolder>()("NotAStoreFolder", {
  path: Schema.String,
  problem: Schema.String,
  /** The namespaces (stores) found directly inside the folder, when it is their parent. */
  namespaces: Schema.optionalKey(Schema.Array(Schema.String))
}) {
  override get message(): string {
    return `${this.path}: ${this.problem}`
  }
}

/** Reading a file below a volume's data folder failed; documented where `Inspector` exports it. */
export class InspectIoError extends Schema.TaggedError<InspectIoError>()("InspectIoError", {
  path: Schema.String,
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.path}: could not ${this.operation}: ${this.detail}`
  }
}

/**
 * Succeeds only when `root` is a folder holding a store's manifest and its
 * meta and volumes folders; otherwise {@link NotAStoreFolder} says which is
 * missing, and, when `root` is the parent of stores, names them.
 */
export const checkStoreFolder = Effect.fnUntraced(function* (root: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const kindOf = (target: string) =>
    fs.stat(target).pipe(
      Effect.map((info) => Option.some(info.type)),
      Effect.catchIf(
        (error) => error.reason._tag === "NotFound",
        () => Effect.succeed(Option.none<FileSystemNs.File.Type>())
      ),
      Effect.mapError((error) => new InspectIoError({ path: target, operation: "stat", detail: error.message }))
    )

  const rootKind = yield* kindOf(root)
  if (Option.isNone(rootKind)) return yield* new NotAStoreFolder({ path: root, problem: "no such folder" })
  if (rootKind.value !== "Directory") {
    return yield* new NotAStoreFolder({ path: root, problem: `not a folder (it is a ${rootKind.value})` })
  }
  const manifest = path.join(root, VolumeStore.manifestFile)
  if (Option.isNone(yield* kindOf(manifest))) {
    const namespaces: Array<string> = []
    for (const name of yield* fs.readDirectory(root).pipe(Effect.orElseSucceed(() => []))) {
      const inside = yield* kindOf(path.join(root, name, VolumeStore.manifestFile)).pipe(
        Effect.orElseSucceed(() => Option.none())
      )
      if (Option.isSome(inside)) namespaces.push(name)
    }
    namespaces.sort()
    return yield* new NotAStoreFolder(
      namespaces.length === 0
        ? {
            path: manifest,
            problem: `missing: the folder is not a Tessera store (expected ${VolumeStore.manifestFile}, ${VolumeStore.volumesFolder}/ and ${VolumeStore.metaFolder.join("/")}/)`
          }
        : {
            path: manifest,
            problem: `missing: the folder is not a Tessera store, but it holds the namespace${namespaces.length === 1 ? "" : "s"} ${namespaces.join(", ")}; inspect one of them, for example ${path.join(root, namespaces[0] as string)}`,
            namespaces
          }
    )
  }
  for (const required of [path.join(root, ...VolumeStore.metaFolder), path.join(root, VolumeStore.volumesFolder)]) {
    const kind = yield* kindOf(required)
    if (Option.isNone(kind) || kind.value !== "Directory") {
      return yield* new NotAStoreFolder({
        path: required,
        problem: "missing or not a folder: the store is incomplete"
      })
    }
  }
})

/** Every regular file below `folder` (symlinks are listed, never followed), sorted by path. */
export const listFiles = Effect.fnUntraced(function* (folder: string) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const io = (target: string, operation: string) => (error: { readonly message: string }) =>
    new InspectIoError({ path: target, operation, detail: error.message })
  const names = yield* fs.readDirectory(folder, { recursive: true }).pipe(Effect.mapError(io(folder, "list")))
  const found: Array<{ readonly path: string; readonly size: number }> = []
  for (const name of [...names].sort()) {
    const full = path.join(folder, name)
    const info = yield* fs.lstat(full).pipe(Effect.mapError(io(full, "stat")))
    // A temporary name is a write in progress or one a crash cut short: never content.
    if (info.type === "Directory" || DurableFiles.isTemporaryName(path.basename(name))) continue
    found.push({ path: name.split(path.sep).join("/"), size: Number(info.size) })
  }
  return found
})
