/**
 * The OPFS layers on their own, in headless Chromium: Effect's FileSystem
 * (binary round trip, append, exclusive create) and the durable file
 * primitives' edges (ranges, folders, missing files, write-once publication).
 */
import { assert, describe, it } from "@effect/vitest"
import { OpfsDurableFiles, OpfsFileSystem } from "@tessera/browser"
import { Effect, FileSystem } from "effect"
import * as fc from "fast-check"
import { withRoot } from "./support.ts"

const run = <A, E>(effect: Effect.Effect<A, E, FileSystem.FileSystem>) =>
  Effect.runPromise(Effect.provide(effect, OpfsFileSystem.layer))

describe("OpfsFileSystem", () => {
  it("opfs_round_trip: any bytes written come back unchanged; appends land at the end in order (property)", () =>
    withRoot("round-trip", async (root) => {
      let n = 0
      await fc.assert(
        fc.asyncProperty(
          fc.uint8Array({ maxLength: 4_096 }),
          fc.array(fc.string({ maxLength: 40 }), { maxLength: 5 }),
          async (bytes, lines) => {
            const file = `${root}/f${n++}.bin`
            return run(
              Effect.gen(function* () {
                const fs = yield* FileSystem.FileSystem
                yield* fs.makeDirectory(root, { recursive: true })
                yield* fs.writeFile(file, bytes)
                const back = yield* fs.readFile(file)
                for (const line of lines) {
                  yield* Effect.scoped(
                    Effect.flatMap(fs.open(file, { flag: "a" }), (handle) =>
                      Effect.andThen(handle.writeAll(new TextEncoder().encode(`${line}\n`)), handle.sync)
                    )
                  )
                }
                const appended = yield* fs.readFile(file)
                const tail = new TextDecoder().decode(appended.subarray(bytes.length))
                return (
                  back.length === bytes.length &&
                  back.every((byte, i) => byte === bytes[i]) &&
                  tail === lines.map((line) => `${line}\n`).join("")
                )
              })
            )
          }
        ),
        { numRuns: 25 }
      )
    }))

  it("exclusive create: the second `wx` open of a name fails AlreadyExists and leaves the first's bytes", () =>
    withRoot("exclusive", (root) =>
      run(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          yield* fs.makeDirectory(root, { recursive: true })
          const file = `${root}/once.txt`
          yield* Effect.scoped(
            Effect.flatMap(fs.open(file, { flag: "wx" }), (handle) =>
              Effect.andThen(handle.writeAll(new TextEncoder().encode("first")), handle.sync)
            )
          )
          const second = yield* Effect.flip(Effect.scoped(fs.open(file, { flag: "wx" })))
          assert.strictEqual(second.reason._tag, "AlreadyExists")
          assert.strictEqual(yield* fs.readFileString(file), "first")
          const missing = yield* Effect.flip(fs.readFile(`${root}/missing.txt`))
          assert.strictEqual(missing.reason._tag, "NotFound")
          const unsupported = yield* Effect.flip(fs.symlink(file, `${root}/link`))
          assert.strictEqual(unsupported.reason._tag, "BadArgument")
        })
      )
    ))
})

describe("OpfsFileSystem rename", () => {
  it("rename replaces an existing target in one step, as the journal's repair needs, and removes the old name", () =>
    withRoot("rename", (root) =>
      run(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          yield* fs.makeDirectory(root, { recursive: true })
          yield* fs.writeFileString(`${root}/journal.jsonl`, "old and corrupt")
          yield* fs.writeFileString(`${root}/.journal.tmp`, "repaired")
          yield* fs.rename(`${root}/.journal.tmp`, `${root}/journal.jsonl`)
          assert.strictEqual(yield* fs.readFileString(`${root}/journal.jsonl`), "repaired")
          assert.deepStrictEqual(yield* fs.readDirectory(root), ["journal.jsonl"])
        })
      )
    ))
})

describe("OpfsDurableFiles", () => {
  const durable = OpfsDurableFiles.opfs
  it("readFile returns the asked range and the whole size; a folder is NotPlainFile, a missing file ENOENT", () =>
    withRoot("durable", (root) =>
      run(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          yield* fs.makeDirectory(`${root}/v/sub`, { recursive: true })
          yield* durable.writeNewFile(`${root}/v/a.txt`, "0123456789", { within: `${root}/v` })
          const part = yield* durable.readFile(`${root}/v/a.txt`, { within: `${root}/v`, offset: 3, maxBytes: 4 })
          assert.strictEqual(new TextDecoder().decode(part.bytes), "3456")
          assert.strictEqual(part.size, 10)
          assert.strictEqual(part.location, `${root}/v/a.txt`)
          const folder = yield* Effect.flip(durable.readFile(`${root}/v/sub`, { within: `${root}/v` }))
          assert.strictEqual(folder._tag, "NotPlainFile")
          const missing = yield* Effect.flip(durable.readFile(`${root}/v/none.txt`, { within: `${root}/v` }))
          assert.isTrue(missing._tag === "DurableFileFailure" && missing.code === "ENOENT")
          const again = yield* Effect.flip(durable.writeNewFile(`${root}/v/a.txt`, "x", { within: `${root}/v` }))
          assert.strictEqual(again._tag, "AlreadyExists")
          const outside = yield* Effect.flip(durable.makeDirectories(`${root}/w/x`, { within: `${root}/v` }))
          assert.strictEqual(outside._tag, "OutsideWithin")
          assert.isFalse(yield* fs.exists(`${root}/w`), "nothing was created outside")
        })
      )
    ))

  it("publishOnce never replaces: a second publication fails AlreadyExists and keeps its temporary file", () =>
    withRoot("publish", (root) =>
      run(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          yield* fs.makeDirectory(`${root}/v`, { recursive: true })
          yield* durable.writeNewFile(`${root}/v/.t1`, "first", { within: `${root}/v` })
          yield* durable.writeNewFile(`${root}/v/.t2`, "second", { within: `${root}/v` })
          yield* durable.publishOnce(`${root}/v/.t1`, `${root}/v/final.txt`)
          const second = yield* Effect.flip(durable.publishOnce(`${root}/v/.t2`, `${root}/v/final.txt`))
          assert.strictEqual(second._tag, "AlreadyExists")
          assert.strictEqual(yield* fs.readFileString(`${root}/v/final.txt`), "first")
          assert.deepStrictEqual((yield* fs.readDirectory(`${root}/v`)).sort(), [".t2", "final.txt"])
          yield* durable.publishReplacing(`${root}/v/.t2`, `${root}/v/final.txt`)
          assert.strictEqual(yield* fs.readFileString(`${root}/v/final.txt`), "second")
        })
      )
    ))
})
