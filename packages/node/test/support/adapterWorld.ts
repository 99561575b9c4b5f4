/**
 * The world every adapter's tests run in (packages/ai-sdk, effect-ai, pi):
 * a real store in a fresh temporary folder, the researcher's private volume
 * and the host's journal volume on it, task-1 bound on it, and the Node
 * layers. It lives here, with the Node package's tests, because it needs
 * real durable files (adapters' tests may depend on the Node package, never
 * on one another); each adapter's `test/support/world.ts` re-exports it
 * beside its own scripted model, and its `tsconfig.test.json` includes this
 * one file.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { type Compaction, EntryGate, FilesystemTaskRuntime, Journal, TaskHost, VolumeStore } from "@tessera/runtime"
import { Effect, Layer, Option, Schema } from "effect"

export const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
export const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

export const platformLayer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

export const taskText = "Collect the reports and tell me what they say."

export interface World {
  readonly root: string
  readonly host: TaskHost.TaskHost
  readonly privateRef: Volume.VolumeRef
  readonly journalFolder: string
}

export const privateFolder = (world: World): string =>
  path.join(world.host.store.root, VolumeStore.volumesFolder, world.privateRef.volume)

/** Binds task-1 with (or without) its agent-private volume, under `policy` (default: the gate's). */
export const bindTask = (world: World, withWriter: boolean, policy?: Compaction.Policy) =>
  Effect.gen(function* () {
    const scope = yield* world.host.issueScope(
      task,
      withWriter ? [{ volume: world.privateRef, access: ["read", "write"] as const }] : [],
      agent
    )
    const runtime = yield* FilesystemTaskRuntime.fromHost(world.host, {
      private: withWriter ? Option.some(world.privateRef) : Option.none(),
      scope
    })
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return yield* EntryGate.bind(context, policy === undefined ? {} : { policy })
  })

/**
 * Runs `body` in a fresh store with the task's journal in scope; the
 * folder is removed afterwards.
 */
export const inWorld = async <A, E>(
  body: (world: World) => Effect.Effect<A, E, Layer.Success<typeof platformLayer> | Journal.Journal>
): Promise<A> => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-adapter-"))
  try {
    const program = Effect.gen(function* () {
      const host = yield* TaskHost.open({ root })
      const privateRef = yield* host.store.create({
        id: volumeId("researcher-private"),
        kind: "AgentPrivate",
        owner: Volume.agentOwner(agent)
      })
      const journalRef = yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
      const journalFolder = yield* host.store.folderOf(journalRef)
      const world: World = { root, host, privateRef, journalFolder }
      return yield* body(world).pipe(Effect.provide(Journal.layer({ folder: journalFolder, task })))
    })
    return await Effect.runPromise(program.pipe(Effect.provide(platformLayer)) as Effect.Effect<A>)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

/** The task's journal file as text (empty before its first entry). */
export const journalText = (world: World): string => {
  const file = path.join(world.journalFolder, Journal.fileName(task))
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
}
