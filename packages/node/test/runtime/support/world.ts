/**
 * A small, real world for runtime tests: a store in a fresh temporary folder,
 * a host, an agent-private volume, a journal volume, a scratch volume and an
 * output volume, and helpers to open runtimes and bind tasks on them.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { type Grant, HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { FilesystemTaskRuntime, TaskHost, VolumeStore } from "@tessera/runtime"
import { Effect, Layer, Option, Schema } from "effect"

export const agentId = Schema.decodeUnknownSync(Ids.AgentId)
export const taskId = Schema.decodeUnknownSync(Ids.TaskId)
export const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)
export const operationId = Schema.decodeUnknownSync(Ids.OperationId)

export const agent = agentId("researcher")
export const task = taskId("task-1")

/** Node file system, durable files, and a permissive host authority. */
export const platformLayer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

/** A fresh temporary folder for one test, removed when the test is done. */
export const withTempDir = async <A>(body: (dir: string) => Promise<A>): Promise<A> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-"))
  try {
    return await body(dir)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

export interface World {
  readonly root: string
  readonly host: TaskHost.TaskHost
  readonly privateRef: Volume.VolumeRef
  readonly otherPrivateRef: Volume.VolumeRef
  readonly journalRef: Volume.VolumeRef
  readonly scratchRef: Volume.VolumeRef
  readonly outputRef: Volume.VolumeRef
  /** Issues the task a scope with write (and read) on the given volumes. */
  readonly scopeFor: (
    volumes: ReadonlyArray<Volume.VolumeRef>,
    task?: Ids.TaskId
  ) => Effect.Effect<Grant.Scope, unknown>
  /** Opens a runtime with the given private choice and write grants on `volumes`. */
  readonly openRuntime: (
    privateVolume: Option.Option<Volume.VolumeRef>,
    volumes?: ReadonlyArray<Volume.VolumeRef>
  ) => Effect.Effect<FilesystemTaskRuntime.FilesystemTaskRuntime, unknown>
}

/**
 * A volume's data folder, located by the store layout (`folderOf` hands out
 * no agent-private folder): for tests that look at what was written.
 */
export const dataFolderOf = (world: World, ref: Volume.VolumeRef): string =>
  path.join(world.host.store.root, VolumeStore.volumesFolder, ref.volume)

/** Builds the world in `root`. */
export const makeWorld = Effect.fnUntraced(function* (root: string) {
  const host = yield* TaskHost.open({ root })
  const create = (id: string, kind: Volume.VolumeKind, owner: Volume.Owner) =>
    host.store.create({ id: volumeId(id), kind, owner })
  const privateRef = yield* create("researcher-private", "AgentPrivate", Volume.agentOwner(agent))
  const otherPrivateRef = yield* create("reviewer-private", "AgentPrivate", Volume.agentOwner(agentId("reviewer")))
  const journalRef = yield* create("journal", "Journal", Volume.hostOwner)
  const scratchRef = yield* create("scratch", "Scratch", Volume.hostOwner)
  const outputRef = yield* create("output", "Output", Volume.hostOwner)
  const scopeFor = (volumes: ReadonlyArray<Volume.VolumeRef>, forTask: Ids.TaskId = task) =>
    host.issueScope(
      forTask,
      volumes.map((volume) => ({ volume, access: ["read", "write"] as const })),
      agent
    )
  const openRuntime = (privateVolume: Option.Option<Volume.VolumeRef>, volumes?: ReadonlyArray<Volume.VolumeRef>) =>
    Effect.flatMap(scopeFor(volumes ?? Option.toArray(privateVolume)), (scope) =>
      FilesystemTaskRuntime.fromHost(host, { private: privateVolume, scope })
    )
  const world: World = {
    root,
    host,
    privateRef,
    otherPrivateRef,
    journalRef,
    scratchRef,
    outputRef,
    scopeFor,
    openRuntime
  }
  return world
})

/** Runs an effect that needs the platform layer and a world in a fresh folder. */
export const runInWorld = <A, E>(body: (world: World) => Effect.Effect<A, E, Layer.Success<typeof platformLayer>>) =>
  withTempDir((dir) =>
    Effect.runPromise(makeWorld(dir).pipe(Effect.flatMap(body), Effect.provide(platformLayer)) as Effect.Effect<A>)
  )
