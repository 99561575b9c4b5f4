import * as nodeFs from "node:fs"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@tessera/core"
import * as NodeJournalFile from "@tessera/node/NodeJournalFile"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalStorage from "@tessera/runtime/JournalStorage"
import { Effect, FileSystem, Layer, Schema } from "effect"

const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")

const implementations: ReadonlyArray<readonly [string, JournalStorage.JournalFileShape]> = [
  ["the default (Effect FileSystem)", JournalStorage.fileSystem],
  ["the blocking Node implementation", NodeJournalFile.blocking]
]

describe.each(implementations)("journal file contract: %s", (_name, implementation) => {
  it.effect("appends land at the end in order, truncation cuts and later appends follow the cut", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
      const file = nodePath.join(folder, "log.jsonl")
      nodeFs.writeFileSync(file, "existing\n")
      yield* Effect.scoped(
        Effect.gen(function* () {
          const handle = yield* implementation.openAppend(file)
          yield* handle.append("one\n")
          assert.strictEqual(nodeFs.readFileSync(file, "utf8"), "existing\none\n")
          // A line is written as its UTF-8 bytes, a lone surrogate as U+FFFD.
          yield* handle.append("zwei: ünï 🧪 \ud800\n")
          yield* handle.append("two, half")
          yield* handle.truncate(Buffer.byteLength("existing\none\nzwei: ünï 🧪 \ufffd\n"))
          yield* handle.append("three\n")
        })
      )
      assert.deepStrictEqual(
        new Uint8Array(nodeFs.readFileSync(file)),
        new TextEncoder().encode("existing\none\nzwei: ünï 🧪 \ufffd\nthree\n")
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a file that cannot be opened fails with a typed JournalFileError", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
      const error = yield* Effect.flip(Effect.scoped(implementation.openAppend(nodePath.join(folder, "missing", "x"))))
      assert.strictEqual(error._tag, "JournalFileError")
      assert.strictEqual(error.operation, "open")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a journal written through it reopens (through either implementation) to the writer's state", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
      const using = Layer.succeed(JournalStorage.JournalFile)(implementation)
      const live = yield* Effect.scoped(
        Effect.gen(function* () {
          const journal = yield* Journal.open({ folder, task })
          yield* journal.openTurn
          yield* journal.abandonTurn("stopped")
          yield* journal.openTurn
          return yield* journal.state
        })
      ).pipe(Effect.provide(using))
      for (const [, reader] of implementations) {
        const reopened = yield* Effect.scoped(Effect.flatMap(Journal.open({ folder, task }), (j) => j.state)).pipe(
          Effect.provide(Layer.succeed(JournalStorage.JournalFile)(reader))
        )
        assert.deepStrictEqual(reopened, live)
      }
    }).pipe(Effect.provide(NodeServices.layer))
  )
})

describe("NodeJournalFile.blocking.readAll", () => {
  const readAll = NodeJournalFile.blocking.readAll
  if (readAll === undefined) throw new Error("the blocking implementation reads whole files")

  it.effect("reads a file's bytes whole as a plain Uint8Array, None for a missing file, a typed error otherwise", () =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
      const file = nodePath.join(folder, "log.jsonl")
      const text = `${"line ünï 🧪\n".repeat(10_000)}cut`
      nodeFs.writeFileSync(file, text)
      const read = yield* readAll(file)
      assert.isTrue(read._tag === "Some")
      if (read._tag === "Some") {
        assert.strictEqual(Object.getPrototypeOf(read.value), Uint8Array.prototype)
        assert.deepStrictEqual(read.value, new TextEncoder().encode(text))
      }
      assert.strictEqual((yield* readAll(nodePath.join(folder, "missing.jsonl")))._tag, "None")
      const error = yield* Effect.flip(readAll(folder))
      assert.strictEqual(error.operation, "read")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect(
    "Journal.open reads through it: a reader that fails makes the open fail with JournalIoError read (negative control: the path is taken)",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
        yield* Effect.scoped(Effect.flatMap(Journal.open({ folder, task }), (journal) => journal.openTurn)).pipe(
          Effect.provide(NodeJournalFile.layer)
        )
        const failing: JournalStorage.JournalFileShape = {
          ...NodeJournalFile.blocking,
          readAll: () => Effect.fail(new JournalStorage.JournalFileError({ operation: "read", detail: "EIO" }))
        }
        const error = yield* Effect.flip(Effect.scoped(Journal.open({ folder, task }))).pipe(
          Effect.provide(Layer.succeed(JournalStorage.JournalFile)(failing))
        )
        assert.strictEqual(error._tag, "JournalIoError")
        if (error._tag === "JournalIoError") assert.strictEqual(error.operation, "read")
      }).pipe(Effect.provide(NodeServices.layer))
  )
})
