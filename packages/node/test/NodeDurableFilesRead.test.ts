/**
 * `DurableFiles.readFile`: reads below a folder, follows no symlink at any
 * step, reads only plain files with one name, and checks where the opened
 * file lives. Each refusal is paired with a control showing that a plain
 * read of the same path would have returned the bytes outside.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect } from "effect"
import { tempDir } from "./support/temp.ts"

const variants = [
  { name: "descriptor paths", layer: NodeDurableFiles.layerWith({ descriptorPaths: true }) },
  { name: "portable paths", layer: NodeDurableFiles.layerWith({ descriptorPaths: false }) }
] as const

/** A folder `inside` (the one reads must stay within) and a secret file beside it. */
const layout = Effect.map(tempDir, (dir) => {
  const inside = path.join(dir, "inside")
  fs.mkdirSync(path.join(inside, "sub"), { recursive: true })
  fs.writeFileSync(path.join(inside, "sub", "a.txt"), "0123456789")
  const secret = path.join(dir, "secret.txt")
  fs.writeFileSync(secret, "SECRET-OUTSIDE")
  return { dir, inside, secret }
})

describe.each(variants)("DurableFiles.readFile ($name)", ({ layer }) => {
  it.effect("reads a whole file, or a range of it, and reports the size and the real location", () =>
    Effect.gen(function* () {
      const { inside } = yield* layout
      const files = yield* DurableFiles.DurableFiles
      const file = path.join(inside, "sub", "a.txt")
      const whole = yield* files.readFile(file, { within: inside })
      assert.strictEqual(new TextDecoder().decode(whole.bytes), "0123456789")
      assert.strictEqual(whole.size, 10)
      assert.strictEqual(whole.location, file)
      const part = yield* files.readFile(file, { within: inside, offset: 3, maxBytes: 4 })
      assert.strictEqual(new TextDecoder().decode(part.bytes), "3456")
      const past = yield* files.readFile(file, { within: inside, offset: 50, maxBytes: 4 })
      assert.strictEqual(past.bytes.byteLength, 0)
    }).pipe(Effect.provide(layer))
  )

  it.effect("a symlinked file is refused, not followed, wherever it points", () =>
    Effect.gen(function* () {
      const { inside, secret } = yield* layout
      const files = yield* DurableFiles.DurableFiles
      const out = path.join(inside, "sub", "out.txt")
      const within = path.join(inside, "sub", "in.txt")
      fs.symlinkSync(secret, out)
      fs.symlinkSync(path.join(inside, "sub", "a.txt"), within)
      for (const link of [out, within]) {
        const error = yield* Effect.flip(files.readFile(link, { within: inside }))
        assert.strictEqual(error._tag, "SymlinkRefused")
        assert.notInclude(error.message, "SECRET")
      }
      // Control: a plain read of the same path follows the link out.
      assert.strictEqual(fs.readFileSync(out, "utf8"), "SECRET-OUTSIDE")
    }).pipe(Effect.provide(layer))
  )

  it.effect("a symlinked folder on the way is refused, naming the link", () =>
    Effect.gen(function* () {
      const { dir, inside } = yield* layout
      const files = yield* DurableFiles.DurableFiles
      const elsewhere = path.join(dir, "elsewhere")
      fs.mkdirSync(elsewhere)
      fs.writeFileSync(path.join(elsewhere, "x.txt"), "SECRET-FOLDER")
      fs.symlinkSync(elsewhere, path.join(inside, "linked"))
      const error = yield* Effect.flip(files.readFile(path.join(inside, "linked", "x.txt"), { within: inside }))
      assert.strictEqual(error._tag, "SymlinkRefused")
      if (error._tag === "SymlinkRefused") assert.strictEqual(error.link, path.join(inside, "linked"))
      assert.strictEqual(fs.readFileSync(path.join(inside, "linked", "x.txt"), "utf8"), "SECRET-FOLDER")
    }).pipe(Effect.provide(layer))
  )

  it.effect("a path outside `within`, or `within` itself, is refused before anything is opened", () =>
    Effect.gen(function* () {
      const { inside, secret } = yield* layout
      const files = yield* DurableFiles.DurableFiles
      for (const target of [secret, path.join(inside, "..", "secret.txt"), inside]) {
        const error = yield* Effect.flip(files.readFile(target, { within: inside }))
        assert.strictEqual(error._tag, "OutsideWithin", target)
      }
    }).pipe(Effect.provide(layer))
  )

  it.effect("a second hard link, a folder and a FIFO are not plain files; opening the FIFO does not block", () =>
    Effect.gen(function* () {
      const { inside, secret } = yield* layout
      const files = yield* DurableFiles.DurableFiles
      const linked = path.join(inside, "hard.txt")
      fs.linkSync(secret, linked)
      const hard = yield* Effect.flip(files.readFile(linked, { within: inside }))
      assert.strictEqual(hard._tag, "NotPlainFile")
      assert.include(hard.message, "2 hard links")
      assert.strictEqual(hard._tag === "NotPlainFile" ? hard.hardLinks : undefined, 2)
      assert.strictEqual(fs.readFileSync(linked, "utf8"), "SECRET-OUTSIDE", "control: a plain read gets the secret")
      const folder = yield* Effect.flip(files.readFile(path.join(inside, "sub"), { within: inside }))
      assert.strictEqual(folder._tag, "NotPlainFile")
      const fifo = path.join(inside, "pipe")
      execFileSync("mkfifo", [fifo])
      const special = yield* Effect.flip(files.readFile(fifo, { within: inside }))
      assert.strictEqual(special._tag, "NotPlainFile")
    }).pipe(Effect.provide(layer))
  )

  it.effect.skipIf(!fs.existsSync("/proc/self/fd"))(
    "readFile closes every descriptor it opened, after a read and after each kind of refusal",
    () =>
      Effect.gen(function* () {
        const { dir, inside, secret } = yield* layout
        const files = yield* DurableFiles.DurableFiles
        fs.symlinkSync(secret, path.join(inside, "sub", "out.txt"))
        fs.symlinkSync(dir, path.join(inside, "up"))
        fs.linkSync(secret, path.join(inside, "sub", "hard.txt"))
        const targets = ["a.txt", "out.txt", "hard.txt", "none.txt"].map((name) => path.join(inside, "sub", name))
        targets.push(path.join(inside, "up", "secret.txt"), path.join(inside, "sub"))
        const open = () => fs.readdirSync("/proc/self/fd").length
        const before = open()
        for (let round = 0; round < 5; round++) {
          for (const target of targets) yield* Effect.result(files.readFile(target, { within: inside }))
        }
        assert.strictEqual(open(), before)
      }).pipe(Effect.provide(layer))
  )

  it.effect("a missing file fails with ENOENT", () =>
    Effect.gen(function* () {
      const { inside } = yield* layout
      const files = yield* DurableFiles.DurableFiles
      const error = yield* Effect.flip(files.readFile(path.join(inside, "sub", "none.txt"), { within: inside }))
      assert.strictEqual(error._tag, "DurableFileFailure")
      if (error._tag === "DurableFileFailure") assert.strictEqual(error.code, "ENOENT")
    }).pipe(Effect.provide(layer))
  )
})
