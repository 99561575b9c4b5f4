/**
 * The one layer a Node host provides: every Node service the runtime
 * works with or runs faster with, and nothing else.
 *
 * - `FileSystem` and `Path` from `@effect/platform-node` (the runtime needs
 *   both; the rest of `NodeServices`, child processes and terminals, it does
 *   not, so it is not loaded);
 * - `NodeDurableFiles`: write-once files, publication by hard link, reads
 *   that follow no link;
 * - `NodeDigest`: SHA-256 on `node:crypto`, synchronous. Without it the
 *   runtime measures with WebCrypto, a worker round trip per digest;
 * - a journal file: {@link layer} appends on the calling thread
 *   (`NodeJournalFile`: one `write` and one `fsync` per entry, no worker
 *   round trip), right for a process that drives one task at a time, as the
 *   local hosts do; {@link layerConcurrent} keeps the runtime's default
 *   (appends on worker threads), for a server that must keep answering
 *   while tasks journal.
 *
 * When journal entries become durable is a separate choice
 * (`JournalStorage` in `@tessera/runtime`: per entry by default, group
 * commit, memory-only); a host states it by merging
 * `JournalStorage.layer(choice)` beside this layer, or provides it to the
 * layer that opens its journals.
 *
 * Without the digest and the blocking journal the runtime works the same and
 * writes the same bytes; it is slower, by a worker round trip per digest and
 * per journal append (bench/NOTES.md has the measurements).
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import type * as DurableFiles from "@tessera/core/DurableFiles"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Path from "effect/Path"
import * as NodeDigest from "./NodeDigest.ts"
import * as NodeDurableFiles from "./NodeDurableFiles.ts"
import * as NodeJournalFile from "./NodeJournalFile.ts"

/**
 * What the layers provide.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles

const platform: Layer.Layer<Services> = Layer.mergeAll(
  NodeFileSystem.layer,
  NodePath.layer,
  NodeDurableFiles.layer,
  NodeDigest.layer
)

/**
 * The fast wiring for a process that runs one task at a time: the platform,
 * durable files, the `node:crypto` digest and blocking journal appends.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { Effect, Schema } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     namespace: "research",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *   })
 *   console.log(`namespace ${harness.namespace} at ${harness.folder}`)
 * })
 *
 * // The one layer a Node process that runs one task at a time provides.
 * Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services> = Layer.merge(platform, NodeJournalFile.layer)

/**
 * {@link layer} with the runtime's default journal file (appends and syncs
 * on worker threads), for a process that serves many tasks at once and must
 * not stall while one of them syncs.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * const decodeTask = Schema.decodeUnknownSync(Ids.TaskId)
 *
 * const lookUp = Tool.make({
 *   name: "look_up",
 *   description: "Looks a ticket up",
 *   input: Schema.Struct({ ticket: Schema.String }),
 *   handler: ({ ticket }) => Effect.succeed(`${ticket}: open`)
 * })
 *
 * // Several tasks at once, each under its own journal lock; one task's fsync does not stall the others.
 * const serve = (tasks: ReadonlyArray<string>) =>
 *   Effect.gen(function* () {
 *     const harness = yield* LocalHarness.open({
 *       namespace: "service",
 *       agent: Schema.decodeUnknownSync(Ids.AgentId)("assistant")
 *     })
 *     return yield* Effect.forEach(
 *       tasks,
 *       (task) =>
 *         harness.withTask(decodeTask(task), (binding) =>
 *           TaskExecution.runTurn(binding, History.make([Model.text("user", `Handle ${task}.`)]), {
 *             tools: Tool.registry(lookUp),
 *             maxSteps: 2
 *           }).pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: `${task} handled.` })])))
 *         ),
 *       { concurrency: "unbounded" }
 *     )
 *   })
 *
 * Effect.runPromise(Effect.scoped(serve(["ticket-1", "ticket-2"])).pipe(Effect.provide(NodeTessera.layerConcurrent)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConcurrent: Layer.Layer<Services> = platform
