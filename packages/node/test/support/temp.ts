/**
 * Hermetic folders and the Node layers for the node package's tests.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { Ids } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, Layer, Schema } from "effect"

/** A fresh temporary folder (real path), removed when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Node file system, path, and durable files. */
export const nodeLayer = Layer.merge(NodeServices.layer, NodeDurableFiles.layer)

/** A fresh temporary folder (real path) for a promise-based test, removed when `body` settles. */
export const withRoot = async <A>(prefix: string, body: (root: string) => Promise<A>): Promise<A> => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))
  try {
    return await body(root)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

export const agentId = Schema.decodeUnknownSync(Ids.AgentId)
export const taskId = Schema.decodeUnknownSync(Ids.TaskId)
