import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import type { ArtifactOffload } from "@tessera/artifacts"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, Layer, Option } from "effect"

/** A fresh temporary folder (real path), removed when the test's scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** A fresh temporary folder for synchronous (fast-check) code; call the returned cleanup. */
export const tempDirSync = (): { readonly dir: string; readonly cleanup: () => void } => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-")))
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

/** Node file system, path and durable file primitives. */
export const nodeLayer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer)

/** Every file (not folder) below `dir`, relative, sorted. */
export const listFiles = (dir: string): ReadonlyArray<string> =>
  fs.existsSync(dir)
    ? (fs.readdirSync(dir, { recursive: true, encoding: "utf8" }) as Array<string>)
        .filter((entry) => fs.lstatSync(path.join(dir, entry)).isFile())
        .sort()
    : []

/** Every entry (files, folders, links) below `dir`. */
export const listEntries = (dir: string): ReadonlyArray<string> =>
  fs.existsSync(dir) ? (fs.readdirSync(dir, { recursive: true, encoding: "utf8" }) as Array<string>).sort() : []

/** The refusal of an inline result, or a failure when the result is not a refused inline. */
export const refusalOf = (result: ArtifactOffload.OffloadResult): ArtifactOffload.OffloadRefusal => {
  if (result._tag !== "Inline" || Option.isNone(result.reason)) {
    throw new Error(`expected a refused offload, got ${result._tag}`)
  }
  return result.reason.value
}

/** The offloaded fields, or a failure naming the refusal. */
export const offloadedOf = (result: ArtifactOffload.OffloadResult) => {
  if (result._tag !== "Offloaded") {
    const reason = Option.getOrUndefined(result.reason)
    throw new Error(`expected an offload, got Inline (${reason?._tag ?? "below threshold"}: ${reason?.message ?? ""})`)
  }
  return result
}
