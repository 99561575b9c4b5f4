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
 * (`JournalDurability` in `@tessera/runtime`: per entry by default, group
 * commit, memory-only); a host states it by merging
 * `JournalDurability.layer(choice)` beside this layer, or provides it to the
 * layer that opens its journals.
 *
 * Without the digest and the blocking journal the runtime works the same and
 * writes the same bytes; it is slower: about 3 ms more per model step on
 * this repository's benchmark machine (docs/performance.md).
 *
 * @since 0.3.0
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
 * @since 0.3.0
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
 * @since 0.3.0
 * @category layers
 */
export const layer: Layer.Layer<Services> = Layer.merge(platform, NodeJournalFile.layer)

/**
 * {@link layer} with the runtime's default journal file (appends and syncs
 * on worker threads), for a process that serves many tasks at once and must
 * not stall while one of them syncs.
 *
 * @since 0.3.0
 * @category layers
 */
export const layerConcurrent: Layer.Layer<Services> = platform
