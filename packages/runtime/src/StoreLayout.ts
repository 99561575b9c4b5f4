/**
 * Where everything lives on disk: the one statement of a store's layout.
 * The store, the task journal, summary staging, artifact offload, the hosts
 * and the inspector all take their paths from here.
 *
 * ```
 * <store root>/
 *   store.json                       the store's id and format version
 *   meta/volumes/<volume>.json       kind and owner of each volume
 *   volumes/<volume>/                a volume's data
 *     summaries/<op>/<step>.txt      staged summaries (agent-private volumes)
 *     artifacts/tool-results/...     offloaded tool results
 *     transcripts/<task>/<sha256>.json   a task's transcript records (agent-private volumes)
 *   volumes/<journal volume>/<task>.jsonl   a task's journal
 * ```
 *
 * A local host's namespace folder is a store root that also holds its
 * `namespace.lock` and `task-locks/<task>.lock` (stated in the node
 * package's `StateNamespace`). Any file of the store may briefly exist
 * under a temporary name (`DurableFiles.isTemporaryName`), which is never
 * content.
 *
 * Every name that comes from an id is built from a decoded identifier
 * (`[A-Za-z0-9][A-Za-z0-9_-]*`), so it is always one plain path segment.
 *
 * @since 0.1.0
 */
import type * as Ids from "@tessera/core/Ids"
import type * as Path from "effect/Path"

/**
 * The store manifest's file name, at the store root.
 *
 * @since 0.1.0
 * @category layout
 */
export const manifestFile = "store.json"

/**
 * The folder at the store root that holds the store's metadata.
 *
 * @since 0.1.0
 * @category layout
 */
export const metaRoot = "meta"

/**
 * The folder of volume metadata, relative to the store root (segments).
 *
 * @since 0.1.0
 * @category layout
 */
export const metaFolder: ReadonlyArray<string> = [metaRoot, "volumes"]

/**
 * The folder that holds every volume's data folder, relative to the store root.
 *
 * @since 0.1.0
 * @category layout
 */
export const volumesFolder = "volumes"

/**
 * Where a volume's data folder is under a store root. This is layout
 * arithmetic and grants nothing: writing private content still needs the
 * private-summaries capability, and `VolumeStore.folderOf` refuses
 * agent-private volumes. Hosts use it to describe their own state (path
 * policies) and the inspector to read.
 *
 * @since 0.1.0
 * @category layout
 */
export const dataFolder = (path: Path.Path, root: string, volume: Ids.VolumeId): string =>
  path.join(root, volumesFolder, volume)

/**
 * A volume's metadata file name inside {@link metaFolder}.
 *
 * @since 0.1.0
 * @category layout
 */
export const metaFileName = (volume: Ids.VolumeId): string => `${volume}.json`

/**
 * A task's journal file name at the top of a journal volume.
 *
 * @since 0.1.0
 * @category layout
 */
export const journalFileName = (task: Ids.TaskId): string => `${task}.jsonl`

/**
 * The extension of journal files.
 *
 * @since 0.1.0
 * @category layout
 */
export const journalExtension = ".jsonl"

/**
 * The folder of staged summaries inside an agent-private volume.
 *
 * @since 0.1.0
 * @category layout
 */
export const summariesFolder = "summaries"

/**
 * A staged summary's path relative to its volume.
 *
 * @since 0.1.0
 * @category layout
 */
export const summaryPath = (operation: Ids.OperationId, step: number): string =>
  `${summariesFolder}/${operation}/${step}.txt`

/**
 * The folder below a volume's data folder that holds artifacts.
 *
 * @since 0.1.0
 * @category layout
 */
export const artifactFolder = "artifacts"

/**
 * The folder of transcripts inside an agent-private volume: one folder per
 * task, holding that task's transcript records (see `Transcript`).
 *
 * @since 0.1.0
 * @category layout
 */
export const transcriptsFolder = "transcripts"

/**
 * A transcript record's path relative to its volume: named by the SHA-256
 * of its bytes, so a name says what the file holds and is written once.
 *
 * @since 0.1.0
 * @category layout
 */
export const transcriptPath = (task: Ids.TaskId, sha256: string): string =>
  `${transcriptsFolder}/${task}/${sha256}.json`
