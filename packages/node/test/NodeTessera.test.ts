import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { Digest, DurableFiles } from "@tessera/core"
import { NodeDigest, NodeJournalFile, NodeTessera } from "@tessera/node"
import { JournalStorage } from "@tessera/runtime"
import { Effect, FileSystem, Layer, Path } from "effect"

/** Which implementations a layer leaves in the context for the services the runtime looks up. */
const wiring = Effect.gen(function* () {
  yield* FileSystem.FileSystem
  yield* Path.Path
  const durable = yield* Effect.serviceOption(DurableFiles.DurableFiles)
  return {
    fastDigest: (yield* Digest.Digest) === NodeDigest.nodeCrypto,
    blockingJournal: (yield* JournalStorage.JournalFile) === NodeJournalFile.blocking,
    durableFiles: durable._tag === "Some"
  }
})

describe("NodeTessera", () => {
  it.effect(
    "node_tessera_fast_wiring: the one layer provides the platform, durable files, the node:crypto digest and blocking appends",
    () =>
      Effect.gen(function* () {
        const fast = yield* wiring.pipe(Effect.provide(NodeTessera.layer))
        assert.deepStrictEqual(fast, { fastDigest: true, blockingJournal: true, durableFiles: true })
        const concurrent = yield* wiring.pipe(Effect.provide(NodeTessera.layerConcurrent))
        assert.deepStrictEqual(concurrent, { fastDigest: true, blockingJournal: false, durableFiles: true })
      })
  )

  it.effect(
    "negative control: the platform layer alone leaves the WebCrypto digest and worker-thread appends in place",
    () =>
      Effect.gen(function* () {
        const plain = yield* wiring.pipe(Effect.provide(Layer.empty), Effect.provide(NodeServices.layer))
        assert.deepStrictEqual(plain, { fastDigest: false, blockingJournal: false, durableFiles: false })
      })
  )
})
