/**
 * A store for the read tool's tests: the researcher's private volume (the
 * runtime's private volume), an output volume, a host volume the task gets
 * no grant on, and the reviewer's private volume, plus files planted inside
 * and outside the artifact folders, each marked `INSIDE-` or `OUTSIDE-`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { ArtifactPath } from "@tessera/artifacts"
import type { Grant } from "@tessera/core"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { FilesystemTaskRuntime, TaskHost, VolumeStore } from "@tessera/runtime"
import { Effect, Layer, Option, Result, Schema } from "effect"

export const agentId = Schema.decodeUnknownSync(Ids.AgentId)
export const taskId = Schema.decodeUnknownSync(Ids.TaskId)
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

export const researcher = agentId("researcher")
export const reviewer = agentId("reviewer")
export const task = taskId("task-1")

export const platformLayer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

export interface ReadWorld {
  readonly root: string
  readonly host: TaskHost.TaskHost
  readonly runtime: FilesystemTaskRuntime.FilesystemTaskRuntime
  readonly mine: Volume.VolumeRef
  readonly output: Volume.VolumeRef
  readonly hidden: Volume.VolumeRef
  readonly theirs: Volume.VolumeRef
  readonly journal: Volume.VolumeRef
  /** Data folders by volume. */
  readonly folders: { readonly mine: string; readonly output: string; readonly hidden: string; readonly theirs: string }
  readonly journalFolder: string
  /** Binds `task` (for `agent`) with the given grants and no output binding. */
  readonly bind: (
    grants: ReadonlyArray<Grant.Capability>,
    agent?: Ids.AgentId
  ) => Effect.Effect<FilesystemTaskRuntime.TaskContext, unknown>
}

export const makeReadWorld = Effect.fnUntraced(function* (root: string) {
  const host = yield* TaskHost.open({ root })
  const create = (id: string, kind: Volume.VolumeKind, owner: Volume.Owner) =>
    host.store.create({ id: volumeId(id), kind, owner })
  const mine = yield* create("researcher-private", "AgentPrivate", Volume.agentOwner(researcher))
  const theirs = yield* create("reviewer-private", "AgentPrivate", Volume.agentOwner(reviewer))
  const output = yield* create("output", "Output", Volume.hostOwner)
  const hidden = yield* create("hidden", "Output", Volume.hostOwner)
  const journal = yield* create("journal", "Journal", Volume.hostOwner)
  const runtimeScope = yield* host.issueScope(
    taskId("runtime"),
    [{ volume: mine, access: ["read", "write"] }],
    researcher
  )
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(mine), scope: runtimeScope })
  // Located by the store layout: `folderOf` hands out no agent-private folder.
  const locate = (ref: Volume.VolumeRef) => path.join(host.store.root, VolumeStore.volumesFolder, ref.volume)
  const folders = {
    mine: locate(mine),
    output: locate(output),
    hidden: locate(hidden),
    theirs: locate(theirs)
  }
  const bind = (grants: ReadonlyArray<Grant.Capability>, agent: Ids.AgentId = researcher) =>
    Effect.flatMap(host.issueScope(task, grants, agent), (scope) => runtime.bindTask({ scope, output: Option.none() }))
  const world: ReadWorld = {
    root,
    host,
    runtime,
    mine,
    output,
    hidden,
    theirs,
    journal,
    folders,
    journalFolder: locate(journal),
    bind
  }
  return world
})

const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
}

/**
 * Plants the marked files and the links:
 *
 * - inside: `tool-results/inside.txt` on the researcher's volume and on output;
 * - outside: the store root, the researcher's volume beside `artifacts/`, the
 *   same artifact path on the ungranted volume and on the reviewer's volume,
 *   and a folder `elsewhere/` in the store root;
 * - links on the researcher's volume: `tool-results/link` to the store root's
 *   file, `lnk/` to `elsewhere/`, `tool-results/inner` to the inside file.
 */
export const plant = (world: ReadWorld): void => {
  const { folders, root } = world
  write(path.join(folders.mine, "artifacts", "tool-results", "inside.txt"), "INSIDE-MINE")
  write(path.join(folders.output, "artifacts", "tool-results", "output.txt"), "INSIDE-OUTPUT")
  write(path.join(root, "outside.txt"), "OUTSIDE-ROOT")
  write(path.join(folders.mine, "secret.txt"), "OUTSIDE-VOLUME")
  write(path.join(folders.hidden, "artifacts", "tool-results", "hidden.txt"), "OUTSIDE-HIDDEN")
  write(path.join(folders.theirs, "artifacts", "tool-results", "theirs.txt"), "OUTSIDE-REVIEWER")
  write(path.join(root, "elsewhere", "inside.txt"), "OUTSIDE-LINKED")
  fs.symlinkSync(path.join(root, "outside.txt"), path.join(folders.mine, "artifacts", "tool-results", "link"))
  fs.symlinkSync(path.join(root, "elsewhere"), path.join(folders.mine, "artifacts", "lnk"))
  fs.symlinkSync(
    path.join(folders.mine, "artifacts", "tool-results", "inside.txt"),
    path.join(folders.mine, "artifacts", "tool-results", "inner")
  )
}

/** Runs `body` on a fresh world in its own temporary folder. */
export const runInReadWorld = <A, E>(
  body: (world: ReadWorld) => Effect.Effect<A, E, Layer.Success<typeof platformLayer>>
): Promise<A> => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-")))
  return Effect.runPromise(
    makeReadWorld(dir).pipe(Effect.flatMap(body), Effect.provide(platformLayer)) as Effect.Effect<A>
  ).finally(() => fs.rmSync(dir, { recursive: true, force: true }))
}

// Deliberately broken readers: the negative controls. Each returns the text it read, or undefined.

const attempt = (file: string): string | undefined => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
}

/** Joins the model's path onto the artifact folder with no check at all (`..` and absolute paths get through). */
export const joiningReader = (artifactFolder: string, target: string): string | undefined =>
  attempt(path.resolve(artifactFolder, target))

/** Checks the path lexically, then reads with the platform's ordinary open, which follows every link. */
export const followingReader = (artifactFolder: string, target: string): string | undefined => {
  const resolved = ArtifactPath.resolveRelative(target)
  return Result.isSuccess(resolved) ? attempt(path.join(artifactFolder, ...resolved.success.segments)) : undefined
}
