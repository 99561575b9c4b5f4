import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer, ArtifactRedactor } from "@tessera/artifacts"
import { Compaction, EntryGate, Model, TaskExecution } from "@tessera/runtime"
import { Effect, Layer, Option } from "effect"
import { journalBytes, journalFolder, requests, requestText, start, tools, turnLayer } from "./support/turns.ts"
import { dataFolderOf, runInWorld, task } from "./support/world.ts"

const big = 30_000
const script = [
  Model.response({ toolCalls: [Model.toolCall("call-1", "produce", { size: big, fill: "r" })] }),
  Model.response({ text: "read the pointer" })
]
/** The contents of the tool results a request carries. */
const resultsOf = (request: Model.ModelRequest | undefined): string =>
  (request?.parts ?? []).flatMap((part) => (part._tag === "ToolResult" ? [part.content] : [])).join("\n")

const offload = { threshold: 4_096, readTool: "read_artifact", destination: "Private" as const }

describe("tool-result offload in a turn", () => {
  it("a large result goes to the private volume before the next request; the request and the journal get the pointer, never the body", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.some(world.privateRef))
        const context = yield* runtime.bindTask({
          scope: yield* world.scopeFor([world.privateRef]),
          output: Option.none()
        })
        const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 4, offload })
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, script)))

        assert.strictEqual(sent.length, 2)
        assert.notInclude(requestText(sent[1] as Model.ModelRequest), "r".repeat(1_000))
        const second = resultsOf(sent[1])
        const paths = ArtifactPointer.extractPaths(second)
        assert.deepStrictEqual(paths, ["tool-results/task-1-t1-s1-call.2d1.txt"])
        assert.include(second, 'read_with="read_artifact"')
        const folder = dataFolderOf(world, world.privateRef)
        assert.strictEqual(fs.readFileSync(path.join(folder, "artifacts", paths[0] ?? ""), "utf8"), "r".repeat(big))
        const journal = journalBytes(yield* journalFolder(world), task)
        assert.include(journal, '"_tag":"ArtifactOffloaded"')
        assert.include(journal, "artifacts/tool-results/task-1-t1-s1-call.2d1.txt")
        assert.notInclude(journal, "r".repeat(100))
      })
    ))

  it("public results go to the output volume and need no private writer", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.none(), [])
        const scope = yield* world.scopeFor([world.outputRef])
        const context = yield* runtime.bindTask({ scope, output: Option.some(world.outputRef) })
        const binding = yield* EntryGate.bind(context)
        assert.strictEqual(binding.policy._tag, "Disabled")
        yield* TaskExecution.runTurn(binding, start, {
          tools,
          maxSteps: 4,
          offload: { ...offload, destination: "Output" }
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        const folder = yield* world.host.store.folderOf(world.outputRef)
        assert.isTrue(fs.existsSync(path.join(folder, "artifacts", "tool-results", "task-1-t1-s1-call.2d1.txt")))
      })
    ))

  it("a writerless task asking for private offload is Unauthorized at entry: zero requests, nothing journaled", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.none(), [])
        const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([]), output: Option.none() })
        const binding = yield* EntryGate.bind(context)
        const { error, sent } = yield* Effect.gen(function* () {
          const error = yield* Effect.flip(TaskExecution.runTurn(binding, start, { tools, maxSteps: 4, offload }))
          return { error, sent: yield* requests }
        }).pipe(Effect.provide(turnLayer(world, task, script)))
        assert.strictEqual(error._tag, "Unauthorized")
        assert.strictEqual(sent.length, 0)
        assert.strictEqual(journalBytes(yield* journalFolder(world), task), "")
      })
    ))

  it("the stored body and the pointer's abstract come from the redacted result", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.some(world.privateRef))
        const context = yield* runtime.bindTask({
          scope: yield* world.scopeFor([world.privateRef]),
          output: Option.none()
        })
        const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
        const secretScript = [
          Model.response({ toolCalls: [Model.toolCall("c1", "produce", { size: 400, fill: "token=hunter2 " })] }),
          Model.response({ text: "ok" })
        ]
        const redactor = ArtifactRedactor.layer({
          redact: (body) => Effect.succeed(body.replaceAll("hunter2", "[REDACTED]"))
        })
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 4, offload })
          return yield* requests
        }).pipe(Effect.provide(Layer.merge(turnLayer(world, task, secretScript), redactor)))
        const second = resultsOf(sent[1])
        assert.isTrue(second.startsWith("[artifact] "), second)
        assert.notInclude(second, "hunter2")
        assert.include(second, "[REDACTED]")
        const folder = dataFolderOf(world, world.privateRef)
        const stored = fs.readFileSync(path.join(folder, "artifacts", "tool-results", "task-1-t1-s1-c1.txt"), "utf8")
        assert.notInclude(stored, "hunter2")
      })
    ))
})
