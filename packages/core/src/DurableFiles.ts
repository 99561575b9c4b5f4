/**
 * Durable, containment-checked file primitives that Effect's `FileSystem`
 * does not offer: exclusive creation that never follows a final symlink and
 * checks where the opened file really lives, write-once publication by hard
 * link, folder syncs, and a read that follows no symlink at all.
 *
 * Artifact offload and write-once summary staging write agent content into
 * folders an agent can influence (it may plant symlinks), so every write
 * names the folder it must stay `within`, and the check is made on what was
 * actually opened, not on a path string that can change underneath.
 *
 * The service is platform-neutral; `@tessera/node` provides the Node.js layer.
 *
 * @since 0.1.0
 */

import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * Which primitive failed, so a log reader can tell a failed publish from a
 * failed write without parsing the message.
 *
 * @since 0.1.0
 * @category models
 */
export const DurableFileOperation = Schema.Literals([
  "realPath",
  "makeDirectories",
  "writeNewFile",
  "publishOnce",
  "publishReplacing",
  "syncDirectory",
  "readFile"
])
/**
 * @since 0.1.0
 * @category models
 */
export type DurableFileOperation = typeof DurableFileOperation.Type

/**
 * The target already exists. Nothing was replaced: exclusive creation and
 * publication never overwrite, and a symlink at the target counts as existing.
 *
 * @since 0.1.0
 * @category errors
 */
export class AlreadyExists extends Schema.TaggedError<AlreadyExists>()("AlreadyExists", {
  operation: DurableFileOperation,
  path: Schema.String
}) {
  override get message(): string {
    return `${this.operation}: ${this.path} already exists and was left untouched`
  }
}

/**
 * What was opened or would be created does not really live under the folder
 * it had to stay within (typically a symlinked folder pointing elsewhere).
 * Anything this operation had created outside was removed before failing.
 *
 * @since 0.1.0
 * @category errors
 */
export class OutsideWithin extends Schema.TaggedError<OutsideWithin>()("OutsideWithin", {
  operation: DurableFileOperation,
  path: Schema.String,
  within: Schema.String,
  actual: Schema.String
}) {
  override get message(): string {
    return `${this.operation}: ${this.path} resolves to ${this.actual}, which is outside ${this.within}`
  }
}

/**
 * The operating system refused an operation. `code` is the errno code
 * (`ENOENT`, `EACCES`, `ELOOP`, ...) or `UNKNOWN` when the platform gave none.
 *
 * @since 0.1.0
 * @category errors
 */
export class DurableFileFailure extends Schema.TaggedError<DurableFileFailure>()("DurableFileFailure", {
  operation: DurableFileOperation,
  path: Schema.String,
  code: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.operation}: ${this.path} failed with ${this.code}: ${this.detail}`
  }
}

/**
 * A component of the path below the folder it had to stay within is a
 * symbolic link. Nothing was read through it: the link was refused, not
 * followed, whether it points inside or outside.
 *
 * @since 0.1.0
 * @category errors
 */
export class SymlinkRefused extends Schema.TaggedError<SymlinkRefused>()("SymlinkRefused", {
  operation: DurableFileOperation,
  path: Schema.String,
  /** The component that is a link, as a path below the real `within`. */
  link: Schema.String
}) {
  override get message(): string {
    return `${this.operation}: ${this.path} passes through the symbolic link ${this.link}, which is never followed`
  }
}

/**
 * The path names something other than a plain file: a folder, a device, a
 * FIFO, a socket, or a file with more than one hard link (a second name can
 * make a file from elsewhere appear inside the folder without a symlink).
 * Nothing was read.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotPlainFile extends Schema.TaggedError<NotPlainFile>()("NotPlainFile", {
  operation: DurableFileOperation,
  path: Schema.String,
  /** What was found instead, for example `a folder` or `a file with 2 hard links`. */
  found: Schema.String,
  /** For a plain file refused because it has more than one name: how many it has. */
  hardLinks: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    return `${this.operation}: ${this.path} is ${this.found}, not a plain file`
  }
}

/**
 * Options for operations that must stay inside one folder.
 *
 * @since 0.1.0
 * @category models
 */
export interface WithinOptions {
  /** The folder the result must really live under (resolved to its real path by the operation). */
  readonly within: string
}

/**
 * Options for {@link DurableFilesShape.writeNewFile}.
 *
 * @since 0.1.0
 * @category models
 */
export interface WriteNewFileOptions extends WithinOptions {
  /** Permission bits for the new file; defaults to `0o600` because the content is usually private. */
  readonly mode?: number
  /**
   * Whether to sync the folder so the new name itself survives a crash;
   * defaults to `true`. Only a temporary name that is published right after
   * (by {@link DurableFilesShape.publishOnce}, which syncs the final folder)
   * can skip it: the content is synced either way.
   */
  readonly syncFolder?: boolean
  /**
   * Whether to create the missing folders between `within` and the file
   * first, exactly as {@link DurableFilesShape.makeDirectories} does (each
   * created only inside a folder already checked to be within); defaults to
   * `false`, when the folder must exist. The file is then created in the
   * folder the walk opened, with one resolution of `within` for both.
   */
  readonly createFolders?: boolean
}

/**
 * Options for {@link DurableFilesShape.readFile}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadFileOptions extends WithinOptions {
  /** The first byte to read; defaults to 0. Past the end, nothing is read. */
  readonly offset?: number
  /** The most bytes to read; defaults to the rest of the file. */
  readonly maxBytes?: number
}

/**
 * What {@link DurableFilesShape.readFile} read.
 *
 * @since 0.1.0
 * @category models
 */
export interface FileRead {
  /** The bytes read, from `offset`, at most `maxBytes` of them. */
  readonly bytes: Uint8Array
  /** The whole file's size in bytes, as the opened file reported it. */
  readonly size: number
  /** Where the opened file really lives (absolute, every symlink resolved). */
  readonly location: string
}

/**
 * The primitives.
 *
 * @since 0.1.0
 * @category models
 */
export interface DurableFilesShape {
  /** The canonical path with every symlink resolved; the path must exist. */
  readonly realPath: (path: string) => Effect.Effect<string, DurableFileFailure>
  /**
   * Creates every missing folder of `path` below `options.within` (which must
   * exist), and fails with {@link OutsideWithin} when an existing component
   * leads out of `within`. A folder is only ever created inside a folder that
   * was already checked to be within, so nothing is created outside.
   */
  readonly makeDirectories: (
    path: string,
    options: WithinOptions
  ) => Effect.Effect<void, OutsideWithin | DurableFileFailure>
  /**
   * Creates `path` exclusively (never replaces, never follows a final
   * symlink), checks that the opened file really lives under
   * `options.within` (removing it and failing otherwise), writes all bytes
   * (a string is written as its UTF-8 encoding, which spares the caller a
   * copy of a large text), flushes them to disk, closes the file and syncs
   * its folder (unless `options.syncFolder` is `false`). On any failure
   * after creation the partial file is removed.
   */
  readonly writeNewFile: (
    path: string,
    bytes: Uint8Array | string,
    options: WriteNewFileOptions
  ) => Effect.Effect<void, AlreadyExists | OutsideWithin | DurableFileFailure>
  /**
   * Publishes a fully written `tempPath` at `finalPath` by hard link, so the
   * final name appears atomically with complete content, and never replaces
   * an existing final file: of several concurrent publishers exactly one
   * wins, the others fail with {@link AlreadyExists} and their temp file is
   * left untouched for them to inspect or remove. On success the temp name is
   * removed and the final folder is synced.
   */
  readonly publishOnce: (tempPath: string, finalPath: string) => Effect.Effect<void, AlreadyExists | DurableFileFailure>
  /**
   * Publishes a fully written `tempPath` at `finalPath` by rename, replacing
   * whatever file the final name held in one atomic step (a reader sees the
   * old file or the new one, never a mix), then syncs the folder. Both names
   * must be in the same folder. For callers that have decided the existing
   * file must go (an artifact an interrupted attempt left with other bytes);
   * write-once content uses {@link publishOnce}.
   */
  readonly publishReplacing: (tempPath: string, finalPath: string) => Effect.Effect<void, DurableFileFailure>
  /** Flushes a folder's entries (new, renamed or removed names) to disk. */
  readonly syncDirectory: (path: string) => Effect.Effect<void, DurableFileFailure>
  /**
   * Reads part or all of the existing file `path`, which must lie below
   * `options.within` (which must exist). Every component below `within`,
   * the file included, is opened without following a symlink: a link
   * anywhere on the way fails {@link SymlinkRefused}, and nothing is read
   * through it, whether it points inside or outside. The opened file must be
   * a plain file with one name ({@link NotPlainFile} otherwise; opening
   * never blocks on a FIFO), and where it really lives is checked through
   * its descriptor against the real `within` ({@link OutsideWithin}
   * otherwise) before a byte is read. A missing file fails
   * {@link DurableFileFailure} with code `ENOENT`.
   */
  readonly readFile: (
    path: string,
    options: ReadFileOptions
  ) => Effect.Effect<FileRead, OutsideWithin | SymlinkRefused | NotPlainFile | DurableFileFailure>
}

/**
 * The durable file primitives, provided by a platform package.
 *
 * @since 0.1.0
 * @category services
 */
export class DurableFiles extends Context.Service<DurableFiles, DurableFilesShape>()("@tessera/core/DurableFiles") {}

/**
 * What marks a temporary name: every durable file is written under
 * `.<final name>.<token>` followed by this suffix, in its final folder, and
 * only then linked or renamed to its final name.
 *
 * @since 0.1.0
 * @category temporary names
 */
export const temporarySuffix = ".tessera-partial"

/**
 * The temporary name for a file that will be published as `finalName`
 * (a bare name, no folder): hidden (a leading dot), unique through `token`
 * (by default a fresh random UUID, see {@link temporaryToken}), and
 * recognisable by {@link isTemporaryName}. A temporary name is never
 * content: listings skip it, and hosts remove the ones a crash left behind
 * when they open their folders.
 *
 * @since 0.1.0
 * @category temporary names
 */
export const temporaryName = (finalName: string, token: string = temporaryToken()): string =>
  `.${finalName}.${token}${temporarySuffix}`

/**
 * A fresh random UUID for a temporary name, from the platform's
 * `crypto.randomUUID` (Node and every browser with OPFS have it). Node
 * serves it from entropy drawn in batches, which costs less than drawing
 * bytes with `getRandomValues` for each name (bench/NOTES.md has the
 * measurement).
 *
 * @since 0.1.0
 * @category temporary names
 */
export const temporaryToken = (): string => globalThis.crypto.randomUUID()

/**
 * Whether a bare file name is a temporary name made by {@link temporaryName}.
 *
 * @since 0.1.0
 * @category temporary names
 */
export const isTemporaryName = (name: string): boolean =>
  name.startsWith(".") && name.endsWith(temporarySuffix) && name.length > temporarySuffix.length + 2

/**
 * The few path operations {@link relativeWithin} needs; Node's `path` module
 * and Effect's `Path` service both provide them.
 *
 * @since 0.1.0
 * @category paths
 */
export interface PathRules {
  readonly sep: string
  readonly relative: (from: string, to: string) => string
  readonly isAbsolute: (path: string) => boolean
}

/**
 * Where `candidate` lies below `root`: the relative path (`""` for `root`
 * itself), or `undefined` when it lies anywhere else. Both must be absolute
 * and normalized, as real paths are. The answer is the platform's
 * `relative(root, candidate)` whenever that does not climb out; with `/` as
 * the separator it is found by comparing the strings, which allocates
 * nothing (the containment checks run several times for every durable write).
 *
 * @since 0.1.0
 * @category paths
 */
export const relativeWithin = (root: string, candidate: string, rules: PathRules): string | undefined => {
  if (rules.sep === "/") {
    if (candidate === root) return ""
    const prefix = root.endsWith("/") ? root : `${root}/`
    return candidate.startsWith(prefix) ? candidate.slice(prefix.length) : undefined
  }
  const relative = rules.relative(root, candidate)
  return relative === "" || (relative !== ".." && !relative.startsWith(`..${rules.sep}`) && !rules.isAbsolute(relative))
    ? relative
    : undefined
}
