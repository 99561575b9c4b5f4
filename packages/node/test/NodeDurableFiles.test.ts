import * as fs from "node:fs"
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
