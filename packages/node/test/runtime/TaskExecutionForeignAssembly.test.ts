/**
 * A foreign loop's hooks are the stock executor's (the one assembly of a
 * task's hooks): the read tool's exemption and the inline limit hold for
 * an adapter's loop as they do for a turn of the executor.
 */
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer } from "@tessera/artifacts"
import { Compaction, EntryGate, History, Journal, Model, PrivateSummaries, TaskExecution } from "@tessera/runtime"
import { Effect, Option } from "effect"
import { bindPrivate, foreignStep, journalBytes, journalFolder, taskParts, turnLayer } from "./support/turns.ts"
import { runInWorld, task, type World } from "./support/world.ts"

const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" as const }

const produced = Model.toolCall("c1", "produce", { size: 6_000, fill: "r" })
const producedResult = Model.toolResult({ callId: "c1", name: "produce", content: "r".repeat(6_000), isError: false })

const offloads = (journal: string): number =>
  journal.split("\n").filter((line) => line.includes('"_tag":"ArtifactOffloaded"')).length

/**
 * One step offloads a 6,000-byte result; the next reads it back with the
 * tool the pointer names, run through the loop's `readTool` (or, in the
 * control, answered by some other tool of the same name). Returns what the
 * loop kept of the read's result and the journal.
 */
const readBack = (world: World, throughLibrary: boolean) =>
  Effect.gen(function* () {
    const binding = yield* bindPrivate(world, Compaction.disabled)
    const folder = yield* journalFolder(world)
    const kept = yield* Effect.gen(function* () {
      const loop = yield* TaskExecution.foreignLoop(binding, { offload })
      const step = (history: History.History) => foreignStep(loop, history)
      let history = History.make(taskParts)
      yield* step(history)
      const pointer = yield* loop.toolResult(produced, producedResult)
      const parsed = ArtifactPointer.parse(pointer.content)
      assert.isTrue(Option.isSome(parsed), "the large result was offloaded behind a pointer")
      if (Option.isNone(parsed)) return undefined
      history = History.append(history, [produced, pointer])
      const read = Model.toolCall("c2", "read_artifact", { path: parsed.value.path })
      yield* step(history)
      const tool = loop.readTool
      assert.isTrue(Option.isSome(tool), "a loop that offloads offers the tool its pointers name")
      if (Option.isNone(tool)) return undefined
      assert.strictEqual(tool.value.spec.name, "read_artifact")
      // The control's wiring: a text of the same size under the same tool name, which the library's tool did not produce.
      const answered = throughLibrary
        ? yield* tool.value.run(read)
        : Model.toolResult({ callId: "c2", name: "read_artifact", content: "r".repeat(6_000), isError: false })
      assert.isFalse(answered.isError, answered.content)
      assert.include(answered.content, "r".repeat(2_100))
      return yield* loop.toolResult(read, answered)
    }).pipe(
      Effect.provide(
        turnLayer(world, task, [
          Model.response({ toolCalls: [produced] }),
          Model.response({ toolCalls: [Model.toolCall("c2", "read_artifact", { path: "unused" })] }),
          Model.response({ text: "done" })
        ])
      )
    )
    return { kept, journal: journalBytes(folder, task) }
  })

describe("TaskExecution.foreignLoop gets the executor's hooks", () => {
  it("foreign_read_tool_spared: a read run through the loop's read tool comes back as read, never offloaded again", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { kept, journal } = yield* readBack(world, true)
        assert.isDefined(kept)
        assert.isFalse(
          kept?.content.startsWith(ArtifactPointer.marker),
          "the read is not a pointer to a copy of itself"
        )
        assert.strictEqual(offloads(journal), 1, "only the produced result was offloaded")
      })
    ))

  it("negative control: the same text under the tool's name, not produced by the loop's read tool, is offloaded as any result", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { kept, journal } = yield* readBack(world, false)
        assert.isTrue(kept?.content.startsWith(ArtifactPointer.marker))
        assert.strictEqual(offloads(journal), 2)
      })
    ))

  it("foreign_loop_inline_limit: under Threshold, a result over the piece limit is kept held to it (the executor's default limit)", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const pieceLimit = 1_500
        const policy = Compaction.threshold({ measure: "bytes", limit: 1_000_000, keepRecent: 4, pieceLimit })
        const binding = yield* bindPrivate(world, policy)
        const kept = yield* Effect.gen(function* () {
          const loop = yield* TaskExecution.foreignLoop(binding)
          yield* foreignStep(loop, History.make(taskParts))
          return yield* loop.toolResult(produced, producedResult)
        }).pipe(Effect.provide(turnLayer(world, task, [Model.response({ toolCalls: [produced] })])))
        assert.isAtMost(ArtifactPointer.utf8Length(kept.content), pieceLimit)
        assert.isBelow(kept.content.length, producedResult.content.length)
      })
    ))

  it("negative control: hooks assembled without the inline limit (compaction alone, built here) keep the whole result", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const policy = Compaction.threshold({
          measure: "bytes",
          limit: 1_000_000,
          keepRecent: 4,
          pieceLimit: 1_500
        })
        const binding = yield* bindPrivate(world, policy)
        const kept = yield* Effect.gen(function* () {
          const capability = (yield* EntryGate.verify(binding, "Turn")).writer
          if (Option.isNone(capability)) return undefined
          const hooks = yield* TaskExecution.compactionHooks(policy, yield* Journal.Journal).pipe(
            PrivateSummaries.provide(capability.value)
          )
          const context = { task: binding.context.task, turn: 1, step: 1, call: produced }
          return hooks.onToolResult === undefined ? producedResult : yield* hooks.onToolResult(context, producedResult)
        }).pipe(Effect.provide(turnLayer(world, task, [])))
        assert.strictEqual(kept?.content.length, producedResult.content.length)
      })
    ))

  it("foreign_loop_options_decoded: an inline limit or offload of the wrong shape is InvalidInput naming the field, before any journal byte", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindPrivate(world, Compaction.disabled)
        const folder = yield* journalFolder(world)
        const refused = yield* Effect.gen(function* () {
          const limit = yield* Effect.flip(TaskExecution.foreignLoop(binding, { inlineLimit: -1 }))
          const tool = yield* Effect.flip(
            TaskExecution.foreignLoop(binding, {
              offload: { ...offload, readTool: "" } as TaskExecution.ForeignLoopOptions["offload"] & {}
            })
          )
          return [limit, tool]
        }).pipe(Effect.provide(turnLayer(world, task, [])))
        assert.deepStrictEqual(
          refused.map((error) => (error._tag === "InvalidInput" ? error.field : error._tag)),
          ["inlineLimit", "offload.readTool"]
        )
        assert.strictEqual(journalBytes(folder, task), "")
      })
    ))
})
