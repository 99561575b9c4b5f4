/**
 * A store opened with the platform's DurableFiles in context reads volume
 * metadata through them (admissions read it at every private write): the
 * same facts as through FileSystem, None for a missing file, and a metadata
 * file replaced by a symlink is refused instead of followed.
 */
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { VolumeStore } from "@tessera/runtime"
import { Effect, FileSystem, Layer, Option, Path, Schema } from "effect"

const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)
const agentId = Schema.decodeUnknownSync(Ids.AgentId)

const withDurable = Layer.merge(NodeServices.layer, NodeDurableFiles.layer)

const tempRoot = Effect.gen(function* () {
  const files = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  return path.join(yield* files.makeTempDirectoryScoped({ prefix: "tessera-meta-" }), "store")
})

const descriptor: Volume.VolumeDescriptor = {
  id: volumeId("private"),
  kind: "AgentPrivate",
  owner: Volume.agentOwner(agentId("researcher"))
}

describe("VolumeStore metadata through DurableFiles", () => {
  it.effect("custody reads the same facts as through FileSystem, and None for an unregistered volume", () =>
    Effect.gen(function* () {
      const root = yield* tempRoot
      const plain = yield* VolumeStore.open({ root }).pipe(Effect.provide(NodeServices.layer))
      const ref = yield* plain.create(descriptor)
      const durable = yield* VolumeStore.open({ root }).pipe(Effect.provide(withDurable))
      assert.deepStrictEqual(yield* durable.custody(ref), Option.some(descriptor))
      assert.deepStrictEqual(yield* durable.custody(ref), yield* plain.custody(ref))
      assert.isTrue(Option.isNone(yield* durable.custody({ store: durable.id, volume: volumeId("missing") })))
      // A registration changed on disk is what the next read sees (nothing is cached).
      const meta = nodePath.join(root, "meta", "volumes", "private.json")
      fs.writeFileSync(meta, fs.readFileSync(meta, "utf8").replace("researcher", "intruder"))
      const changed = yield* durable.custody(ref)
      assert.isTrue(Option.isSome(changed))
      if (Option.isSome(changed)) {
        assert.deepStrictEqual(changed.value.owner, Volume.agentOwner(agentId("intruder")))
      }
    }).pipe(Effect.provide(NodeServices.layer), Effect.scoped)
  )

  it.effect("a metadata file replaced by a symlink is refused through DurableFiles; FileSystem follows it", () =>
    Effect.gen(function* () {
      const root = yield* tempRoot
      const plain = yield* VolumeStore.open({ root }).pipe(Effect.provide(NodeServices.layer))
      const ref = yield* plain.create(descriptor)
      const meta = nodePath.join(root, "meta", "volumes", "private.json")
      const elsewhere = nodePath.join(nodePath.dirname(root), "elsewhere.json")
      fs.renameSync(meta, elsewhere)
      fs.symlinkSync(elsewhere, meta)
      // Control: the FileSystem read follows the link and finds the facts.
      assert.deepStrictEqual(yield* plain.custody(ref), Option.some(descriptor))
      const durable = yield* VolumeStore.open({ root }).pipe(Effect.provide(withDurable))
      const refused = yield* Effect.flip(durable.custody(ref))
      assert.strictEqual(refused._tag, "StoreIoError")
    }).pipe(Effect.provide(NodeServices.layer), Effect.scoped)
  )

  it.effect(
    "metadata_mid_publication_read: a registration caught with its temporary name still linked is read by name; a folder there is still refused",
    () =>
      Effect.gen(function* () {
        const root = yield* tempRoot
        const plain = yield* VolumeStore.open({ root }).pipe(Effect.provide(NodeServices.layer))
        const ref = yield* plain.create(descriptor)
        const meta = nodePath.join(root, "meta", "volumes", "private.json")
        // What a reader sees between the publishing link and the removal of the temporary name.
        fs.linkSync(meta, nodePath.join(root, "meta", "volumes", ".private.json.0123.tessera-partial"))
        const durable = yield* VolumeStore.open({ root }).pipe(Effect.provide(withDurable))
        assert.deepStrictEqual(yield* durable.custody(ref), Option.some(descriptor))
        // Control: what is not a plain file with a second name stays refused.
        fs.rmSync(meta)
        fs.mkdirSync(meta)
        const refused = yield* Effect.flip(durable.custody(ref))
        assert.strictEqual(refused._tag, "StoreIoError")
      }).pipe(Effect.provide(NodeServices.layer), Effect.scoped)
  )
})
