import * as fs from "node:fs"
import { createRequire, syncBuiltinESMExports } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, Result } from "effect"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const bytes = (text: string) => new TextEncoder().encode(text)

const variants = [
  { name: "descriptor paths", layer: NodeDurableFiles.layerWith({ descriptorPaths: true }) },
  { name: "portable paths", layer: NodeDurableFiles.layerWith({ descriptorPaths: false }) },
  {
    name: "descriptor paths, small writes and syncs blocking",
    layer: NodeDurableFiles.layerWith({ descriptorPaths: true, blockingUpTo: 64 * 1024 })
  }
] as const

describe.each(variants)("NodeDurableFiles ($name)", ({ layer }) => {
  it.effect("writeNewFile creates a file with exactly the given bytes, durably and privately", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      const target = path.join(dir, "a.txt")
      yield* files.writeNewFile(target, bytes("hello"), { within: dir })
      assert.strictEqual(fs.readFileSync(target, "utf8"), "hello")
      assert.strictEqual(fs.statSync(target).mode & 0o777, 0o600)
    }).pipe(Effect.provide(layer))
  )

  it.effect("writeNewFile stores a text as its UTF-8 bytes, small or large, lone surrogates as U+FFFD", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      // Multibyte text on both sides of a 64 KiB blocking limit, and a lone surrogate.
      const texts = ["naïve ünïcode 🧪", "é".repeat(40_000), "x".repeat(70_000), "tail \ud800 cut"]
      for (const [index, text] of texts.entries()) {
        const target = path.join(dir, `text-${index}.txt`)
        yield* files.writeNewFile(target, text, { within: dir })
        assert.deepStrictEqual(new Uint8Array(fs.readFileSync(target)), new TextEncoder().encode(text), `text ${index}`)
      }
    }).pipe(Effect.provide(layer))
  )

  it.effect.skipIf(!fs.existsSync("/proc/self/fd"))(
    "writeNewFile closes every descriptor it opened, after success and after a refusal",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const files = yield* DurableFiles.DurableFiles
        const open = () => fs.readdirSync("/proc/self/fd").length
        const before = open()
        for (let index = 0; index < 20; index++) {
          yield* files.writeNewFile(path.join(dir, `f-${index}.txt`), "x".repeat(index * 5_000), { within: dir })
          yield* Effect.flip(files.writeNewFile(path.join(dir, `f-${index}.txt`), "again", { within: dir }))
        }
        assert.strictEqual(open(), before)
      }).pipe(Effect.provide(layer))
  )

  it.effect("writeNewFile never replaces an existing file", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      const target = path.join(dir, "a.txt")
      fs.writeFileSync(target, "original")
      const error = yield* Effect.flip(files.writeNewFile(target, bytes("replacement"), { within: dir }))
      assert.strictEqual(error._tag, "AlreadyExists")
      assert.strictEqual(error.path, target)
      assert.strictEqual(fs.readFileSync(target, "utf8"), "original")
    }).pipe(Effect.provide(layer))
  )

  it.effect("writeNewFile never follows a final symlink, even a dangling one", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const outside = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      const target = path.join(dir, "link.txt")
      const victim = path.join(outside, "victim.txt")
      fs.symlinkSync(victim, target)
      const error = yield* Effect.flip(files.writeNewFile(target, bytes("payload"), { within: dir }))
      assert.strictEqual(error._tag, "AlreadyExists")
      assert.isFalse(fs.existsSync(victim))
      assert.deepStrictEqual(fs.readdirSync(outside), [])
    }).pipe(Effect.provide(layer))
  )

  it.effect("writeNewFile refuses a parent that leads outside `within`, creating nothing there", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const outside = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      fs.symlinkSync(outside, path.join(dir, "sub"))
      const error = yield* Effect.flip(files.writeNewFile(path.join(dir, "sub", "a.txt"), bytes("x"), { within: dir }))
      assert.strictEqual(error._tag, "OutsideWithin")
      if (error._tag === "OutsideWithin") assert.strictEqual(error.actual, path.join(outside, "a.txt"))
      assert.deepStrictEqual(fs.readdirSync(outside), [])
    }).pipe(Effect.provide(layer))
  )

  it.effect("writeNewFile refuses a target in a sibling folder of `within`", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const within = path.join(dir, "root")
      const sibling = path.join(dir, "root-sibling")
      fs.mkdirSync(within)
      fs.mkdirSync(sibling)
      const files = yield* DurableFiles.DurableFiles
      const error = yield* Effect.flip(files.writeNewFile(path.join(sibling, "a.txt"), bytes("x"), { within }))
      assert.strictEqual(error._tag, "OutsideWithin")
      assert.deepStrictEqual(fs.readdirSync(sibling), [])
    }).pipe(Effect.provide(layer))
  )

  it.effect("makeDirectories creates nested folders and refuses a component that links out", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const outside = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      yield* files.makeDirectories(path.join(dir, "a", "b", "c"), { within: dir })
      assert.isTrue(fs.statSync(path.join(dir, "a", "b", "c")).isDirectory())
      fs.symlinkSync(outside, path.join(dir, "link"))
      const error = yield* Effect.flip(files.makeDirectories(path.join(dir, "link", "x", "y"), { within: dir }))
      assert.strictEqual(error._tag, "OutsideWithin")
      assert.deepStrictEqual(fs.readdirSync(outside), [])
      const climbing = yield* Effect.flip(files.makeDirectories(path.join(dir, "..", "elsewhere"), { within: dir }))
      assert.strictEqual(climbing._tag, "OutsideWithin")
    }).pipe(Effect.provide(layer))
  )

  it.effect("writeNewFile with createFolders creates the missing folders, and nothing through a link out", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const outside = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      const nested = path.join(dir, "a", "b", "c.txt")
      yield* files.writeNewFile(nested, "nested", { within: dir, createFolders: true })
      assert.strictEqual(fs.readFileSync(nested, "utf8"), "nested")
      // An existing folder is walked through, not replaced.
      yield* files.writeNewFile(path.join(dir, "a", "d.txt"), "sibling", { within: dir, createFolders: true })
      assert.deepStrictEqual(fs.readdirSync(path.join(dir, "a")).sort(), ["b", "d.txt"])
      fs.symlinkSync(outside, path.join(dir, "link"))
      const error = yield* Effect.flip(
        files.writeNewFile(path.join(dir, "link", "x", "y.txt"), "x", { within: dir, createFolders: true })
      )
      assert.strictEqual(error._tag, "OutsideWithin")
      if (error._tag === "OutsideWithin") assert.strictEqual(error.actual, outside)
      assert.deepStrictEqual(fs.readdirSync(outside), [])
      const climbing = yield* Effect.flip(
        files.writeNewFile(path.join(dir, "..", "elsewhere", "z.txt"), "x", { within: dir, createFolders: true })
      )
      assert.strictEqual(climbing._tag, "OutsideWithin")
      // Without the option a missing folder is an error, and nothing is created.
      const missing = yield* Effect.flip(files.writeNewFile(path.join(dir, "m", "n.txt"), "x", { within: dir }))
      assert.strictEqual(missing._tag, "DurableFileFailure")
      if (missing._tag === "DurableFileFailure") assert.strictEqual(missing.code, "ENOENT")
      assert.isFalse(fs.existsSync(path.join(dir, "m")))
    }).pipe(Effect.provide(layer))
  )

  it.effect("makeDirectories follows a symlink that stays inside `within`", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      fs.mkdirSync(path.join(dir, "real"))
      fs.symlinkSync(path.join(dir, "real"), path.join(dir, "alias"))
      yield* files.makeDirectories(path.join(dir, "alias", "x"), { within: dir })
      assert.isTrue(fs.statSync(path.join(dir, "real", "x")).isDirectory())
    }).pipe(Effect.provide(layer))
  )

  it.effect("publishOnce publishes complete content and removes the temp name", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      const temp = path.join(dir, ".tmp-1")
      const final = path.join(dir, "final.txt")
      yield* files.writeNewFile(temp, bytes("summary"), { within: dir })
      yield* files.publishOnce(temp, final)
      assert.strictEqual(fs.readFileSync(final, "utf8"), "summary")
      assert.isFalse(fs.existsSync(temp))
    }).pipe(Effect.provide(layer))
  )

  it.effect("publishOnce never overwrites: of concurrent publishers exactly one wins", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      const final = path.join(dir, "final.txt")
      const publishers = Array.from({ length: 8 }, (_, i) => i)
      yield* Effect.forEach(publishers, (i) =>
        files.writeNewFile(path.join(dir, `.tmp-${i}`), bytes(`content ${i}`), { within: dir })
      )
      const outcomes = yield* Effect.forEach(
        publishers,
        (i) => Effect.result(files.publishOnce(path.join(dir, `.tmp-${i}`), final)),
        { concurrency: "unbounded" }
      )
      const winners = publishers.filter((i) => outcomes[i] !== undefined && Result.isSuccess(outcomes[i]))
      assert.strictEqual(winners.length, 1)
      for (const outcome of outcomes) {
        if (Result.isFailure(outcome)) assert.strictEqual(outcome.failure._tag, "AlreadyExists")
      }
      const [winner] = winners
      assert.strictEqual(fs.readFileSync(final, "utf8"), `content ${winner}`)
      // Losers keep their temp file untouched; the winner's temp name is gone.
      for (const i of publishers) {
        const temp = path.join(dir, `.tmp-${i}`)
        if (i === winner) assert.isFalse(fs.existsSync(temp))
        else assert.strictEqual(fs.readFileSync(temp, "utf8"), `content ${i}`)
      }
    }).pipe(Effect.provide(layer))
  )

  it.effect("errors carry the path and the errno code", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const files = yield* DurableFiles.DurableFiles
      const missing = path.join(dir, "missing")
      const error = yield* Effect.flip(files.realPath(missing))
      assert.strictEqual(error.code, "ENOENT")
      assert.strictEqual(error.path, missing)
      assert.include(error.message, "ENOENT")
      const syncError = yield* Effect.flip(files.syncDirectory(missing))
      assert.strictEqual(syncError.operation, "syncDirectory")
      assert.strictEqual(syncError.code, "ENOENT")
    }).pipe(Effect.provide(layer))
  )
})

// The worker-thread calls of `node:fs` are counted by replacing them on the module object and
// propagating that to its ESM bindings, which the implementation reads at every call.
const nodeFs = createRequire(import.meta.url)("node:fs") as Record<"write" | "fsync", (...args: Array<unknown>) => void>

/** Runs `body` and returns how many `fs.write` and `fs.fsync` calls (each a worker round trip) it made. */
const workerCalls = <E, R>(body: Effect.Effect<unknown, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => {
      const originals = { write: nodeFs.write, fsync: nodeFs.fsync }
      const counts = { write: 0, fsync: 0 }
      for (const name of ["write", "fsync"] as const) {
        nodeFs[name] = (...args) => {
          counts[name]++
          originals[name](...args)
        }
      }
      syncBuiltinESMExports()
      return { originals, counts }
    }),
    ({ counts }) => Effect.as(body, counts),
    ({ originals }) =>
      Effect.sync(() => {
        Object.assign(nodeFs, originals)
        syncBuiltinESMExports()
      })
  )

const memoryFolder = "/dev/shm"
const tmpfsAvailable =
  process.platform === "linux" && fs.existsSync(memoryFolder) && fs.statfsSync(memoryFolder).type === 0x01021994

/** A fresh folder on tmpfs, removed when the scope closes. */
const memoryTempDir = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(memoryFolder, "tessera-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Every primitive that writes or syncs, on `dir`: a small and a 1 MiB write, a publish, a folder sync. */
const writesAndSyncs = (dir: string) =>
  Effect.gen(function* () {
    const files = yield* DurableFiles.DurableFiles
    yield* files.writeNewFile(path.join(dir, "small.txt"), "small", { within: dir })
    yield* files.writeNewFile(path.join(dir, "large.txt"), "x".repeat(1024 * 1024), { within: dir })
    yield* files.writeNewFile(path.join(dir, ".temp"), bytes("published"), { within: dir, syncFolder: false })
    yield* files.publishOnce(path.join(dir, ".temp"), path.join(dir, "published.txt"))
    yield* files.syncDirectory(dir)
    assert.strictEqual(fs.readFileSync(path.join(dir, "large.txt"), "utf8").length, 1024 * 1024)
    assert.strictEqual(fs.readFileSync(path.join(dir, "published.txt"), "utf8"), "published")
  })

describe.skipIf(!tmpfsAvailable)("NodeDurableFiles on a memory file system (tmpfs)", () => {
  it.effect("writes up to 1 MiB and every sync run on the calling thread: no worker round trip", () =>
    Effect.gen(function* () {
      const dir = yield* memoryTempDir
      const counts = yield* workerCalls(writesAndSyncs(dir))
      assert.deepStrictEqual(counts, { write: 0, fsync: 0 })
      // Larger writes still go to a worker.
      const larger = yield* workerCalls(
        DurableFiles.DurableFiles.use((files) =>
          files.writeNewFile(path.join(dir, "larger.txt"), "x".repeat(1024 * 1024 + 1), { within: dir })
        )
      )
      assert.isAbove(larger.write, 0)
    }).pipe(Effect.provide(NodeDurableFiles.layer))
  )

  it.effect("with memoryFileSystems: false the same calls wait on a worker, as on a device", () =>
    Effect.gen(function* () {
      const dir = yield* memoryTempDir
      const counts = yield* workerCalls(writesAndSyncs(dir))
      assert.isAbove(counts.write, 0)
      assert.isAbove(counts.fsync, 0)
    }).pipe(Effect.provide(NodeDurableFiles.layerWith({ memoryFileSystems: false })))
  )
})
