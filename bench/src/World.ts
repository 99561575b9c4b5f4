/**
 * A real task world for the benchmarks, assembled through the public API the
 * way a host does it: a volume store in a folder, an agent-private volume and
 * a journal volume, a runtime opened with the private volume, a bound task,
 * the task's journal, and a scripted model.
 *
 * The model is scripted through `Model.layerFromGenerate` rather than the
 * stock `ScriptedModel` layer because the latter records every request it
 * receives (it exists for tests that assert on them); over 10,000 steps that
 * record is memory the runtime would not hold in production. The script
 * function is the same kind `ScriptedModel` takes.
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDigest, NodeDurableFiles, NodeJournalFile, type NodeTessera } from "@tessera/node"
import type { Compaction } from "@tessera/runtime"
import {
  type EntryGate,
  FilesystemTaskRuntime,
  EntryGate as Gate,
  History,
  Journal,
  Model,
  TaskHost,
  Tool,
  VolumeStore
} from "@tessera/runtime"
import { Effect, Layer, Option, Path, Schema } from "effect"

export const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
export const task = Schema.decodeUnknownSync(Ids.TaskId)("bench-task")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

/**
 * What a Node host that runs one task at a time provides, as the local hosts
 * do: Node file system and paths, the `node:crypto` digest (without it the
 * runtime measures with WebCrypto), journal appends that block on their sync
 * (`NodeJournalFile`), the default durable files (on disk every write and
 * folder sync on a worker thread, on tmpfs on the calling thread), and a host
 * authority that allows every grant.
 */
export const platformLayer = Layer.mergeAll(
  NodeServices.layer,
  NodeDurableFiles.layer,
  NodeDigest.layer,
  NodeJournalFile.layer,
  HostAuthority.permissive
)

export type Platform = Layer.Success<typeof platformLayer>

/** A bound task and the folders the benchmark reads back. */
export interface World {
  readonly binding: EntryGate.TaskBinding
  readonly journalFolder: string
  readonly privateFolder: string
}

/** Builds the store in `root` and binds the task with `policy` (its private volume resolves the writer). */
export const makeWorld = Effect.fnUntraced(function* (root: string, policy: Compaction.Policy) {
  const host = yield* TaskHost.open({ root })
  const privateRef = yield* host.store.create({
    id: volumeId("researcher-private"),
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const journalRef = yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
  const scope = yield* host.issueScope(task, [{ volume: privateRef, access: ["read", "write"] }], agent)
  const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(privateRef), scope })
  const context = yield* runtime.bindTask({ scope, output: Option.none() })
  const binding = yield* Gate.bind(context, { policy })
  const world: World = {
    binding,
    journalFolder: yield* host.store.folderOf(journalRef),
    privateFolder: VolumeStore.dataFolder(yield* Path.Path, host.store.root, privateRef.volume)
  }
  return world
})

/**
 * The task's journal and a scripted model, over the platform. `journalFile`
 * replaces the platform's journal file for the journal only.
 */
export const turnLayer = (
  journalFolder: string,
  generate: Parameters<typeof Model.layerFromGenerate>[0],
  journalFile: Layer.Layer<never> = Layer.empty
) => turnLayerOver(platformLayer, journalFolder, generate, journalFile)

/** {@link turnLayer} over another platform (one that provides at least what the journal needs). */
export const turnLayerOver = <P extends Layer.Success<typeof NodeTessera.layer>>(
  platform: Layer.Layer<P>,
  journalFolder: string,
  generate: Parameters<typeof Model.layerFromGenerate>[0],
  journalFile: Layer.Layer<never> = Layer.empty
) =>
  Layer.merge(
    Model.layerFromGenerate(generate),
    Journal.layer({ folder: journalFolder, task }).pipe(Layer.provide(journalFile))
  ).pipe(Layer.provideMerge(platform))

/** A tool whose result is `size` characters of log-like text, different for every call. */
export const produce = (body: (call: number, size: number) => string) => {
  let calls = 0
  return Tool.make({
    name: "produce",
    description: "Produces a result of the given size",
    input: Schema.Struct({ size: Schema.Int }),
    handler: ({ size }) => Effect.sync(() => body(++calls, size))
  })
}

export const taskParts: ReadonlyArray<Model.Part> = [
  Model.text("user", "Work through the batches one by one with the produce tool and report when done.")
]
export const start = History.make(taskParts)

/** Whether a request is a compaction summary request (it opens with the summary instruction). */
export const isSummaryRequest = (request: Model.ModelRequest): boolean => {
  const first = request.parts[0]
  return first?._tag === "Text" && first.role === "system" && first.text.startsWith("Summarize the work so far")
}

export { summaryText } from "./Scenario.ts"
