import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactOffload } from "@tessera/artifacts"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, Fiber, Layer, Ref } from "effect"
import { listEntries, listFiles, nodeLayer, tempDir } from "./utils/fixtures.ts"

/**
 * Swaps `root/tool-results` between a real folder and a symlink to `outside`.
 * A real folder is moved aside (staying inside the root) rather than deleted,
 * so every file an offload wrote is still there to be counted afterwards.
 */
const swapperSource = `
const fs = require("node:fs")
const path = require("node:path")
const [root, outside, iterations] = process.argv.slice(1)
const folder = path.join(root, "tool-results")
let violations = 0
for (let i = 0; i < Number(iterations); i++) {
  try {
    const st = fs.lstatSync(folder, { throwIfNoEntry: false })
    if (st === undefined) fs.mkdirSync(folder)
    else if (st.isSymbolicLink()) { fs.unlinkSync(folder); fs.mkdirSync(folder) }
    else { fs.renameSync(folder, path.join(root, "aside-" + process.pid + "-" + i)); fs.symlinkSync(outside, folder) }
  } catch (error) {}
  if (fs.readdirSync(outside).length > 0) violations++
}
process.stdout.write(String(violations))
`

const swapOnce = (root: string, outside: string, i: number) => {
  const folder = path.join(root, "tool-results")
  const st = fs.lstatSync(folder, { throwIfNoEntry: false })
  if (st === undefined) fs.mkdirSync(folder)
  else if (st.isSymbolicLink()) {
    fs.unlinkSync(folder)
    fs.mkdirSync(folder)
  } else {
    fs.renameSync(folder, path.join(root, `aside-fiber-${i}`))
    fs.symlinkSync(outside, folder)
  }
}

const offloads = (root: string, count: number, tag: string) =>
  Effect.forEach(
    Array.from({ length: count }, (_, i) => i),
    (i) =>
      ArtifactOffload.offload({
        content: `body ${tag} ${i} `.repeat(20),
        threshold: 16,
        root,
        target: i % 2 === 0 ? `tool-results/${tag}-${i}.txt` : `tool-results/nested/${tag}-${i}.txt`,
        readTool: "read_file"
      }),
    { concurrency: 4 }
  )

/** Every offloaded file must be found inside the root (possibly in a folder moved aside). */
const assertAllInside = (root: string, results: ReadonlyArray<ArtifactOffload.OffloadResult>) => {
  const inside = new Set(listFiles(root).map((file) => path.basename(file)))
  for (const result of results) {
    if (result._tag === "Offloaded") assert.isTrue(inside.has(path.basename(result.path)), result.path)
  }
}

/** Offloads racing a fiber that keeps swapping the target folder, over whatever primitives are provided. */
const fiberRace = Effect.gen(function* () {
  const dir = yield* tempDir
  const root = path.join(dir, "root")
  const outside = path.join(dir, "outside")
  fs.mkdirSync(root)
  fs.mkdirSync(outside)
  const violations = yield* Ref.make(0)
  const swapper = yield* Effect.forkChild(
    Effect.forEach(
      Array.from({ length: 2000 }, (_, i) => i),
      (i) =>
        Effect.gen(function* () {
          yield* Effect.sync(() => swapOnce(root, outside, i))
          if (fs.readdirSync(outside).length > 0) yield* Ref.update(violations, (n) => n + 1)
          yield* Effect.yieldNow
        }),
      { discard: true }
    )
  )
  const results = yield* offloads(root, 200, "fiber")
  yield* Fiber.interrupt(swapper)
  return { root, outside, results, violations: yield* Ref.get(violations), outsideEntries: listEntries(outside) }
})

describe("offload under a folder-for-symlink swap", () => {
  it.live(
    "race: a second fiber swapping a folder for a symlink while offloads run never gets a byte outside the root",
    () =>
      Effect.gen(function* () {
        // Every round must keep everything inside. Rounds repeat (up to 5)
        // until one shows the swap really raced the offloads, i.e. some met
        // the link and were refused without losing content: how often that
        // happens depends on scheduling, so one round alone may not show it.
        let raced = false
        for (let round = 0; round < 5 && !raced; round++) {
          raced = yield* Effect.scoped(
            Effect.gen(function* () {
              const { outside, results, root, violations } = yield* fiberRace
              assert.strictEqual(violations, 0)
              assert.deepStrictEqual(listEntries(outside), [])
              assertAllInside(root, results)
              for (const result of results) {
                if (result._tag === "Inline") assert.isTrue(result.content.startsWith("body fiber"))
              }
              return results.some((result) => result._tag === "Inline")
            })
          )
        }
        assert.isTrue(raced, "in 5 rounds no offload ever met the swapped link")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "negative control: the same race over primitives that check a path and then write by path does leak outside",
    () =>
      Effect.gen(function* () {
        const fail = (operation: DurableFiles.DurableFileOperation, target: string) =>
          new DurableFiles.DurableFileFailure({ operation, path: target, code: "EIO", detail: "careless" })
        const careless = Layer.succeed(DurableFiles.DurableFiles)({
          ...NodeDurableFiles.make(),
          makeDirectories: (target) =>
            Effect.try({
              try: () => void fs.mkdirSync(target, { recursive: true }),
              catch: () => fail("makeDirectories", target)
            }),
          writeNewFile: (target, bytes) =>
            Effect.tryPromise({
              try: () => fs.promises.writeFile(target, bytes),
              catch: () => fail("writeNewFile", target)
            })
        })
        // The window is small but real; a few rounds make a miss practically impossible.
        let leaked = 0
        for (let round = 0; round < 5 && leaked === 0; round++) {
          const { outsideEntries } = yield* fiberRace.pipe(Effect.provide(careless), Effect.scoped)
          leaked = outsideEntries.length
        }
        assert.isAbove(leaked, 0)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "race: a child process swapping a folder for a symlink while offloads run never gets a byte outside the root",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const root = path.join(dir, "root")
        const outside = path.join(dir, "outside")
        fs.mkdirSync(root)
        fs.mkdirSync(outside)
        const child = spawn(process.execPath, ["-e", swapperSource, root, outside, "4000"], {
          stdio: ["ignore", "pipe", "inherit"]
        })
        let output = ""
        child.stdout.on("data", (data: Buffer) => {
          output += data.toString("utf8")
        })
        const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
        const results: Array<ArtifactOffload.OffloadResult> = []
        let round = 0
        let running = true
        void exited.then(() => {
          running = false
        })
        // Keep offloading for as long as the swapper runs (at least one round).
        do {
          results.push(...(yield* offloads(root, 40, `child${round}`)))
          round++
        } while (running)
        const code = yield* Effect.promise(() => exited)
        assert.strictEqual(code, 0)
        assert.strictEqual(output, "0", "the swapper saw entries outside the root")
        assert.deepStrictEqual(listEntries(outside), [])
        assertAllInside(root, results)
      }).pipe(Effect.provide(nodeLayer))
  )
})
