import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Volume } from "@tessera/core"
import { VolumeStore } from "@tessera/runtime"
import { Effect, FileSystem, Option, Path, Result, Schema } from "effect"

const agentId = Schema.decodeUnknownSync(Ids.AgentId)
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)
const storeId = Schema.decodeUnknownSync(Ids.StoreId)

const researcher = agentId("researcher")

const tempRoot = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  return path.join(yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" }), "store")
})

/**
 * Every entry under `root` with its type, inode, mtime and bytes: equal
 * snapshots mean nothing was created, deleted, replaced or rewritten.
 * `folderTimes: false` leaves out folder mtimes, which move when a temporary
 * file comes and goes without any entry changing.
 */
const snapshot = (root: string, options: { readonly folderTimes: boolean } = { folderTimes: true }) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const entries = (yield* fs.readDirectory(root, { recursive: true })).sort()
    return yield* Effect.forEach(entries, (entry) =>
      Effect.gen(function* () {
        const full = path.join(root, entry)
        const info = yield* fs.lstat(full)
        const bytes = info.type === "File" ? Array.from(yield* fs.readFile(full)).join(",") : "-"
        const mtime =
          info.type === "Directory" && !options.folderTimes ? "-" : Option.getOrUndefined(info.mtime)?.getTime()
        return `${entry} ${info.type} ino=${Option.getOrUndefined(info.ino)} mtime=${mtime} bytes=${bytes}`
      })
    )
  })

const metaFile = (root: string, volume: string) =>
  Effect.gen(function* () {
    const path = yield* Path.Path
    return path.join(root, "meta", "volumes", `${volume}.json`)
  })

describe("VolumeStore", () => {
  it.effect("opening a folder writes store.json once; a second store on the folder reads the same id", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = yield* tempRoot
      const first = yield* VolumeStore.open({ root })
      const manifest = JSON.parse(yield* fs.readFileString(path.join(root, "store.json")))
      assert.deepStrictEqual(manifest, { format: VolumeStore.formatVersion, store: first.id })
      const before = yield* snapshot(root)
      const second = yield* VolumeStore.open({ root })
      assert.strictEqual(second.id, first.id)
      assert.deepStrictEqual(yield* snapshot(root), before)
      // Two fresh folders get distinct ids, so custody never confuses them.
      const other = yield* VolumeStore.open({ root: `${root}-other` })
      assert.notStrictEqual(other.id, first.id)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a requested store id names a new store and must match an existing one", () =>
    Effect.gen(function* () {
      const root = yield* tempRoot
      const store = yield* VolumeStore.open({ root, storeId: storeId("local") })
      assert.strictEqual(store.id, "local")
      const mismatch = yield* Effect.flip(VolumeStore.open({ root, storeId: storeId("elsewhere") }))
      assert.strictEqual(mismatch._tag, "StoreIdMismatch")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("reopen: kinds and owners survive a new store instance on the same folder", () =>
    Effect.gen(function* () {
      const root = yield* tempRoot
      const first = yield* VolumeStore.open({ root })
      const created: ReadonlyArray<Volume.VolumeDescriptor> = [
        { id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner },
        { id: volumeId("private"), kind: "AgentPrivate", owner: Volume.agentOwner(researcher) },
        { id: volumeId("scratch"), kind: "Scratch", owner: Volume.agentOwner(agentId("helper")) }
      ]
      for (const descriptor of created) yield* first.create(descriptor)

      const second = yield* VolumeStore.open({ root })
      assert.deepStrictEqual(yield* second.list(), created)
      for (const descriptor of created) {
        const facts = yield* second.custody({ store: second.id, volume: descriptor.id })
        assert.deepStrictEqual(facts, Option.some(descriptor))
      }
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("metadata lives outside the data folder, so a write grant on a volume cannot reach its owner", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = yield* tempRoot
      const store = yield* VolumeStore.open({ root })
      const ref = yield* store.create({
        id: volumeId("private"),
        kind: "AgentPrivate",
        owner: Volume.agentOwner(researcher)
      })
      // An agent-private folder is not handed out without the capability.
      const refused = yield* Effect.flip(store.folderOf(ref))
      assert.isTrue(refused._tag === "Unauthorized" && refused.reason === "CapabilityRequired")
      const folder = VolumeStore.dataFolder(path, store.root, ref.volume)
      assert.strictEqual(folder, path.join(path.resolve(root), "volumes", "private"))
      assert.strictEqual((yield* fs.stat(folder)).type, "Directory")
      assert.deepStrictEqual(yield* fs.readDirectory(folder), [])
      const meta = yield* metaFile(path.resolve(root), "private")
      // The metadata file is reached from the data folder only by leaving it.
      assert.isTrue(path.relative(folder, meta).startsWith(`..${path.sep}`))
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("creating an existing volume id fails VolumeAlreadyExists and leaves the metadata untouched", () =>
    Effect.gen(function* () {
      const root = yield* tempRoot
      const store = yield* VolumeStore.open({ root })
      const ref = yield* store.create({
        id: volumeId("private"),
        kind: "AgentPrivate",
        owner: Volume.agentOwner(researcher)
      })
      const before = yield* snapshot(root, { folderTimes: false })
      const again = yield* Effect.flip(
        store.create({ id: volumeId("private"), kind: "Journal", owner: Volume.hostOwner })
      )
      assert.strictEqual(again._tag, "VolumeAlreadyExists")
      assert.deepStrictEqual(again._tag === "VolumeAlreadyExists" ? again.ref : undefined, ref)
      assert.deepStrictEqual(yield* snapshot(root, { folderTimes: false }), before)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("concurrent creators of one volume id: exactly one wins and its descriptor is what is stored", () =>
    Effect.gen(function* () {
      const root = yield* tempRoot
      const store = yield* VolumeStore.open({ root })
      const contenders = ["a1", "a2", "a3", "a4", "a5", "a6"].map((agent) => ({
        id: volumeId("contested"),
        kind: "AgentPrivate" as const,
        owner: Volume.agentOwner(agentId(agent))
      }))
      const outcomes = yield* Effect.forEach(contenders, (c) => Effect.result(store.create(c)), {
        concurrency: "unbounded"
      })
      const winners = contenders.filter((_, i) => {
        const outcome = outcomes[i]
        return outcome !== undefined && Result.isSuccess(outcome)
      })
      assert.strictEqual(winners.length, 1)
      for (const outcome of outcomes) {
        if (Result.isFailure(outcome)) assert.strictEqual(outcome.failure._tag, "VolumeAlreadyExists")
      }
      const facts = yield* VolumeStore.open({ root }).pipe(
        Effect.flatMap((fresh) => fresh.custody({ store: fresh.id, volume: volumeId("contested") }))
      )
      assert.deepStrictEqual(facts, Option.fromNullishOr(winners[0]))
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("custody is None for another store's volume and for an unregistered id; folderOf refuses both", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = yield* tempRoot
      const store = yield* VolumeStore.open({ root: path.join(root, "a") })
      const other = yield* VolumeStore.open({ root: path.join(root, "b") })
      const foreign = yield* other.create({
        id: volumeId("private"),
        kind: "AgentPrivate",
        owner: Volume.agentOwner(researcher)
      })
      // Same volume id in this store's namespace, with a data folder but no metadata.
      yield* fs.makeDirectory(path.join(store.root, "volumes", "private"))
      const unregistered: Volume.VolumeRef = { store: store.id, volume: volumeId("private") }
      for (const ref of [foreign, unregistered]) {
        assert.isTrue(Option.isNone(yield* store.custody(ref)))
        const refused = yield* Effect.flip(store.folderOf(ref))
        assert.strictEqual(refused._tag, "Unauthorized")
        assert.strictEqual(refused._tag === "Unauthorized" ? refused.reason : undefined, "OutOfCustody")
      }
      assert.deepStrictEqual(yield* store.list(), [])
    }).pipe(Effect.provide(NodeServices.layer))
  )

  const corruptions: ReadonlyArray<{ readonly name: string; readonly text: string; readonly field: string }> = [
    { name: "bad JSON", text: '{"id": "private", "kind": ', field: "(root)" },
    { name: "wrong field type", text: '{"id": 7, "kind": "AgentPrivate", "owner": {"_tag": "Host"}}', field: "id" },
    { name: "unknown kind", text: '{"id": "private", "kind": "Secret", "owner": {"_tag": "Host"}}', field: "kind" },
    {
      name: "bad owner agent",
      text: '{"id": "private", "kind": "AgentPrivate", "owner": {"_tag": "Agent", "agent": "../root"}}',
      field: "owner.agent"
    },
    {
      name: "missing owner",
      text: '{"id": "private", "kind": "AgentPrivate"}',
      field: "owner"
    },
    {
      name: "unexpected field",
      text: '{"id": "private", "kind": "AgentPrivate", "owner": {"_tag": "Host"}, "grants": ["write"]}',
      field: "grants"
    },
    {
      name: "descriptor of another volume",
      text: '{"id": "journal", "kind": "AgentPrivate", "owner": {"_tag": "Host"}}',
      field: "id"
    }
  ]

  for (const corruption of corruptions) {
    it.effect(`bad input (${corruption.name}): metadata error names the file and the field, nothing changes`, () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const root = yield* tempRoot
        const store = yield* VolumeStore.open({ root })
        const ref = yield* store.create({
          id: volumeId("private"),
          kind: "AgentPrivate",
          owner: Volume.agentOwner(researcher)
        })
        const file = yield* metaFile(store.root, "private")
        yield* fs.writeFileString(file, corruption.text)
        const before = yield* snapshot(root)

        const reopened = yield* VolumeStore.open({ root })
        const errors = [
          yield* Effect.flip(reopened.custody(ref)),
          yield* Effect.flip(reopened.folderOf(ref)),
          yield* Effect.flip(reopened.list())
        ]
        for (const error of errors) {
          assert.strictEqual(error._tag, "VolumeMetadataInvalid", String(error))
          if (error._tag !== "VolumeMetadataInvalid") continue
          assert.strictEqual(error.file, file)
          assert.strictEqual(error.field, corruption.field, error.message)
          assert.include(error.message, file)
        }
        assert.deepStrictEqual(yield* snapshot(root), before)
      }).pipe(Effect.provide(NodeServices.layer))
    )
  }

  const manifestCorruptions: ReadonlyArray<{ readonly name: string; readonly text: string; readonly field: string }> = [
    { name: "bad JSON", text: "{", field: "(root)" },
    { name: "unknown format version", text: '{"format": 2, "store": "local"}', field: "format" },
    { name: "bad store id", text: '{"format": 1, "store": "a/b"}', field: "store" }
  ]

  for (const corruption of manifestCorruptions) {
    it.effect(`bad input (store.json, ${corruption.name}): error names the file and the field, nothing changes`, () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const root = yield* tempRoot
        const store = yield* VolumeStore.open({ root })
        yield* store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
        const file = path.join(store.root, "store.json")
        yield* fs.writeFileString(file, corruption.text)
        const before = yield* snapshot(root)

        const error = yield* Effect.flip(VolumeStore.open({ root }))
        assert.strictEqual(error._tag, "StoreManifestInvalid")
        if (error._tag === "StoreManifestInvalid") {
          assert.strictEqual(error.file, file)
          assert.strictEqual(error.field, corruption.field, error.message)
        }
        assert.deepStrictEqual(yield* snapshot(root), before)
      }).pipe(Effect.provide(NodeServices.layer))
    )
  }
})
