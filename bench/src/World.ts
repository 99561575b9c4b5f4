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
import { NodeServices } from "@effect/platform-node"
import { type DurableFiles, HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDigest, NodeDurableFiles, NodeJournalFile } from "@tessera/node"
import type { CompactionPolicy } from "@tessera/runtime"
import {
  type EntryGate,
  FilesystemTaskRuntime,
  EntryGate as Gate,
  History,
  Journal,
  Model,
  TaskHost,
  Tool
} from "@tessera/runtime"
import { Effect, Layer, Option, Schema } from "effect"

export const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
export const task = Schema.decodeUnknownSync(Ids.TaskId)("bench-task")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

const platformWith = (durableFiles: Layer.Layer<DurableFiles.DurableFiles>) =>
  Layer.mergeAll(NodeServices.layer, durableFiles, NodeDigest.layer, NodeJournalFile.layer, HostAuthority.permissive)

/**
 * What a Node host that runs one task at a time provides, as the local hosts
 * do: Node file system and paths, the `node:crypto` digest (without it the
 * runtime measures with WebCrypto), journal appends that block on their sync
 * (`NodeJournalFile`), the default durable files (every write and folder
 * sync on a worker thread), and a host authority that allows every grant.
 */
export const platformLayer = platformWith(NodeDurableFiles.layer)

/** The size up to which {@link blockingWritesPlatformLayer} writes on the calling thread. */
export const blockingWritesUpTo = 64 * 1024

/** {@link platformLayer} with durable writes up to {@link blockingWritesUpTo}, and folder syncs, on the calling thread. */
export const blockingWritesPlatformLayer = platformWith(
  NodeDurableFiles.layerWith({ blockingUpTo: blockingWritesUpTo })
)

export type Platform = Layer.Success<typeof platformLayer>

/** A bound task and the folders the benchmark reads back. */
export interface World {
  readonly binding: EntryGate.TaskBinding
  readonly journalFolder: string
  readonly privateFolder: string
}

/** Builds the store in `root` and binds the task with `policy` (its private volume resolves the writer). */
export const makeWorld = Effect.fnUntraced(function* (root: string, policy: CompactionPolicy.CompactionPolicy) {
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
    privateFolder: yield* host.store.folderOf(privateRef)
  }
  return world
})

/** The task's journal and a scripted model, over the platform. */
export const turnLayer = (
  journalFolder: string,
  generate: Parameters<typeof Model.layerFromGenerate>[0],
  platform: typeof platformLayer = platformLayer
) =>
  Layer.merge(Model.layerFromGenerate(generate), Journal.layer({ folder: journalFolder, task })).pipe(
    Layer.provideMerge(platform)
  )

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

const logLine = (i: number): string =>
  `2026-11-29T12:${String(i % 60).padStart(2, "0")}:00Z INFO worker-${i % 7} processed batch ${i} ok items=${(i * 37) % 1000}\n`

/** `size` characters of log-like ASCII text (so UTF-8 bytes equal characters). */
export const logText = (size: number, seed = 0): string => {
  let out = ""
  for (let i = seed; out.length < size; i++) out += logLine(i)
  return out.slice(0, size)
}

/** A result body for call `n`: a shared body with a per-call header, so no two results are equal. */
export const resultBody =
  (base: string) =>
  (call: number, size: number): string => {
    const header = `result of call ${call}\n`
    return header + base.slice(header.length, size)
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

/** A summary of roughly `size` characters that names the request it answers. */
export const summaryText = (index: number, size: number): string =>
  `Summary ${index}: batches processed so far are all ok; continue with the next batch. `.padEnd(size, ".")
