/**
 * Issue 17, findings 3 and 4 for artifacts: a file an interrupted attempt
 * left under the target is reused or replaced (never a reason to keep the
 * body inline), and bytes only ever appear under a final name complete.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactOffload } from "@tessera/artifacts"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, Layer } from "effect"
import { nodeLayer, offloadedOf, tempDir } from "./utils/fixtures.ts"

const body = (seed: string) => `${seed}\n${"the report goes on ".repeat(200)}`
const request = (root: string, content: string): ArtifactOffload.OffloadRequest => ({
  content,
  threshold: 64,
  root,
  target: "tool-results/c1.txt",
  readTool: "read_file"
})

/**
 * Durable files that check, at every step, what a reader listing the folder
 * would see: a write must go to a temporary name, and the final name must not
 * exist while bytes are being written. `seen` collects every violation.
 */
const observed = (seen: Array<string>, finalName: string, inner: DurableFiles.DurableFilesShape) =>
  Layer.succeed(DurableFiles.DurableFiles)({
    ...inner,
    writeNewFile: (target, bytes, options) => {
      if (!DurableFiles.isTemporaryName(path.basename(target))) seen.push(`bytes written under ${target}`)
      return inner.writeNewFile(target, bytes, options).pipe(
        Effect.tap(() =>
          Effect.sync(() => {
            const final = path.join(path.dirname(target), finalName)
            const content = fs.existsSync(final) ? fs.readFileSync(final, "utf8") : undefined
            if (content !== undefined && content !== bytes) seen.push(`${final} visible before its bytes were complete`)
          })
        )
      )
    }
  })

describe("finding 3: artifacts left by an interrupted attempt", () => {
  it.effect(
    "the same bytes under the target are reused; other bytes are replaced atomically; the body never stays inline",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const final = path.join(dir, "tool-results", "c1.txt")
        fs.mkdirSync(path.dirname(final), { recursive: true })
        const content = body("precious")

        fs.writeFileSync(final, content)
        const reused = offloadedOf(yield* ArtifactOffload.offload(request(dir, content)))
        assert.strictEqual(reused.disposition, "Reused")
        assert.strictEqual(fs.readFileSync(final, "utf8"), content)

        fs.writeFileSync(final, "an interrupted attempt's other bytes")
        const replaced = offloadedOf(yield* ArtifactOffload.offload(request(dir, content)))
        assert.strictEqual(replaced.disposition, "Replaced")
        assert.strictEqual(fs.readFileSync(final, "utf8"), content)

        fs.rmSync(final)
        assert.strictEqual(offloadedOf(yield* ArtifactOffload.offload(request(dir, content))).disposition, "Written")
        // Nothing else is left in the folder: no temporary name survives a reuse or a replacement.
        assert.deepStrictEqual(fs.readdirSync(path.dirname(final)), ["c1.txt"])
      }).pipe(Effect.provide(nodeLayer))
  )

  it.effect(
    "negative control: with the former exclusive-only placement (no replacement), the leftover keeps the body inline",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const final = path.join(dir, "tool-results", "c1.txt")
        fs.mkdirSync(path.dirname(final), { recursive: true })
        fs.writeFileSync(final, "an interrupted attempt's other bytes")
        const inner = NodeDurableFiles.make()
        const exclusiveOnly = Layer.succeed(DurableFiles.DurableFiles)({
          ...inner,
          publishReplacing: (_temp, finalPath) =>
            Effect.fail(
              new DurableFiles.DurableFileFailure({
                operation: "publishReplacing",
                path: finalPath,
                code: "EEXIST",
                detail: ""
              })
            )
        })
        const result = yield* ArtifactOffload.offload(request(dir, body("precious"))).pipe(
          Effect.provide(exclusiveOnly)
        )
        assert.strictEqual(result._tag, "Inline")
      }).pipe(Effect.provide(NodeServices.layer))
  )
})

describe("finding 4: an artifact appears under its final name only when complete", () => {
  it.effect("bytes go to a recognisable temporary name in the final folder and the final name appears whole", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const seen: Array<string> = []
      const content = body("whole")
      const result = yield* ArtifactOffload.offload(request(dir, content)).pipe(
        Effect.provide(observed(seen, "c1.txt", NodeDurableFiles.make()))
      )
      assert.strictEqual(offloadedOf(result).disposition, "Written")
      assert.deepStrictEqual(seen, [])
      assert.strictEqual(fs.readFileSync(path.join(dir, "tool-results", "c1.txt"), "utf8"), content)
      assert.deepStrictEqual(fs.readdirSync(path.join(dir, "tool-results")), ["c1.txt"])
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("negative control: the observer flags the former wiring, which created the final name before writing", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const seen: Array<string> = []
      const final = path.join(dir, "c1.txt")
      yield* Effect.gen(function* () {
        const files = yield* DurableFiles.DurableFiles
        yield* files.writeNewFile(final, body("whole"), { within: dir })
      }).pipe(Effect.provide(observed(seen, "c1.txt", NodeDurableFiles.make())))
      assert.deepStrictEqual(seen, [`bytes written under ${final}`])
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it("temporary names are recognisable and distinct from any final name", () => {
    const temp = DurableFiles.temporaryName("c1.txt", "3f1c")
    assert.isTrue(DurableFiles.isTemporaryName(temp))
    for (const name of ["c1.txt", ".c1.txt", "3.txt", "store.json", "task.jsonl", ".tessera-partial"]) {
      assert.isFalse(DurableFiles.isTemporaryName(name), name)
    }
  })
})
