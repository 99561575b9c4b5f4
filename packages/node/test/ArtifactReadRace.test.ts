/**
 * Reads racing a child process that keeps swapping the artifact folder
 * between a real folder and a symlink to a folder outside. The read checks
 * what it opened, not a path that can change underneath, so no read ever
 * returns the bytes outside; a reader that checks the path first and then
 * reads it by path, run against the same swapper, does.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect } from "effect"
import { tempDir } from "./support/temp.ts"

/** Swaps `volume/tool-results` between a real folder (holding `a.txt`) and a link to `outside`. */
const swapperSource = `
const fs = require("node:fs")
const path = require("node:path")
const [volume, outside, iterations] = process.argv.slice(1)
const folder = path.join(volume, "tool-results")
for (let i = 0; i < Number(iterations); i++) {
  try {
    const st = fs.lstatSync(folder, { throwIfNoEntry: false })
    if (st === undefined) { fs.mkdirSync(folder); fs.writeFileSync(path.join(folder, "a.txt"), "INSIDE") }
    else if (st.isSymbolicLink()) { fs.unlinkSync(folder); fs.mkdirSync(folder); fs.writeFileSync(path.join(folder, "a.txt"), "INSIDE") }
    else { fs.renameSync(folder, path.join(volume, "aside-" + i)); fs.symlinkSync(outside, folder) }
  } catch (error) {}
}
`

type Reader = (file: string, within: string) => Promise<string | undefined>

/** Runs `reader` in a loop for as long as a swapper runs; returns what the reads saw. */
const race = (reader: Reader, iterations: number) =>
  Effect.gen(function* () {
    const dir = yield* tempDir
    const volume = path.join(dir, "volume")
    const outside = path.join(dir, "outside")
    fs.mkdirSync(volume)
    fs.mkdirSync(outside)
    fs.writeFileSync(path.join(outside, "a.txt"), "OUTSIDE")
    const child = spawn(process.execPath, ["-e", swapperSource, volume, outside, String(iterations)], {
      stdio: ["ignore", "ignore", "inherit"]
    })
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
    let running = true
    void exited.then(() => {
      running = false
    })
    const seen = { inside: 0, outside: 0, refused: 0 }
    yield* Effect.promise(async () => {
      do {
        const text = await reader(path.join(volume, "tool-results", "a.txt"), volume)
        if (text === "INSIDE") seen.inside++
        else if (text === "OUTSIDE") seen.outside++
        else seen.refused++
        // A read refused before any I/O settles in microtasks only: yield so the child's exit is seen.
        await new Promise((resolve) => setImmediate(resolve))
      } while (running)
    })
    assert.strictEqual(yield* Effect.promise(() => exited), 0)
    return seen
  })

const throughDurableFiles =
  (files: DurableFiles.DurableFilesShape): Reader =>
  (file, within) =>
    Effect.runPromise(
      files.readFile(file, { within }).pipe(
        Effect.map((read) => new TextDecoder().decode(read.bytes)),
        Effect.orElseSucceed(() => undefined)
      )
    )

/** Checks every component with `lstat` first, then reads by path: the window between is the bug. */
const checkThenRead: Reader = async (file, within) => {
  try {
    let current = within
    for (const name of path.relative(within, file).split(path.sep)) {
      current = path.join(current, name)
      if ((await fs.promises.lstat(current)).isSymbolicLink()) return undefined
    }
    return await fs.promises.readFile(file, "utf8")
  } catch {
    return undefined
  }
}

describe("reads under a folder-for-symlink swap", () => {
  for (const variant of [
    { name: "descriptor paths", files: NodeDurableFiles.make({ descriptorPaths: true }) },
    { name: "portable paths", files: NodeDurableFiles.make({ descriptorPaths: false }) }
  ]) {
    it.live(`race (${variant.name}): no read returns the bytes behind the swapped link`, () =>
      Effect.gen(function* () {
        const seen = yield* race(throughDurableFiles(variant.files), 400)
        assert.strictEqual(seen.outside, 0)
        assert.isAbove(seen.inside, 0, "reads between swaps found the file")
        assert.isAbove(seen.refused, 0, "some reads met the link or the gap and were refused")
      })
    )
  }

  it.live("control: a reader that checks the path and then reads it by path returns the bytes outside", () =>
    Effect.gen(function* () {
      // The window is small but real; a few rounds make a miss practically impossible.
      let leaked = 0
      for (let round = 0; round < 5 && leaked === 0; round++) {
        leaked = (yield* race(checkThenRead, 400)).outside
      }
      assert.isAbove(leaked, 0)
    })
  )
})
