/**
 * The host chooses who writes summaries: `Compaction.summarizer` gives the
 * summary requests their own instruction and their own model; without it
 * the turn's model answers the library's instruction.
 */
import { assert, describe, it } from "@effect/vitest"
import { Compaction, History, Model, PrivateSummaries } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option } from "effect"
import { compactThreeRounds, privateWriter, withJournal } from "./support/compacting.ts"
import { runInWorld, type World } from "./support/world.ts"

const instruction = "Summarize the work so far in five bullet points for your own later use."

/** Compacts the three rounds with a turn model and, when given, the host's summarizer; who answered what. */
const compactWith = (world: World, summarizer: "host" | "none") =>
  Effect.gen(function* () {
    const turnModel: Array<Model.ModelRequest> = []
    const summaryModel: Array<Model.ModelRequest> = []
    const { capability, folder } = yield* privateWriter(world)
    const turn = ScriptedModel.layer((request) => {
      turnModel.push(request)
      return Model.response({ text: "the turn model's summary" })
    })
    const host = Compaction.summarizer({
      instruction,
      model: ScriptedModel.layer((request) => {
        summaryModel.push(request)
        return Model.response({ text: "the summary model's summary" })
      })
    })
    const compacted = yield* withJournal(folder, (journal) =>
      compactThreeRounds(journal).pipe(
        PrivateSummaries.provide(capability),
        Effect.provide(summarizer === "host" ? Layer.merge(turn, host) : turn)
      )
    )
    return { turnModel, summaryModel, summary: History.summaryText(compacted) }
  })

const systemText = (request: Model.ModelRequest | undefined) => {
  const first = request?.parts[0]
  return first?._tag === "Text" && first.role === "system" ? first.text : undefined
}

describe("the host's summarizer", () => {
  it("summarizer_writes_the_summaries: the summary requests go to the summary model, opened by the host's instruction; the turn model gets none", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { summary, summaryModel, turnModel } = yield* compactWith(world, "host")
        assert.lengthOf(turnModel, 0)
        assert.lengthOf(summaryModel, 1)
        assert.strictEqual(systemText(summaryModel[0]), instruction)
        assert.isTrue(Compaction.isSummaryRequestFor(instruction)(summaryModel[0] as Model.ModelRequest))
        assert.strictEqual(Option.getOrUndefined(summary), "the summary model's summary")
      })
    ))

  it("summarizer_writes_the_summaries negative control: without the layer, the turn model answers the library's instruction", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { summary, summaryModel, turnModel } = yield* compactWith(world, "none")
        assert.lengthOf(summaryModel, 0)
        assert.lengthOf(turnModel, 1)
        assert.strictEqual(systemText(turnModel[0]), Compaction.summaryInstruction)
        assert.strictEqual(Option.getOrUndefined(summary), "the turn model's summary")
      })
    ))

  it("summarizer_refuses_an_empty_instruction: InvalidInput naming the instruction when the layer is built", () =>
    runInWorld(() =>
      Effect.gen(function* () {
        const refused = yield* Effect.flip(
          Layer.build(Compaction.summarizer({ instruction: "  " })).pipe(Effect.scoped)
        )
        assert.strictEqual(refused._tag, "InvalidInput")
        assert.strictEqual(refused.field, "instruction")
        // Control: the same layer with an instruction builds.
        yield* Layer.build(Compaction.summarizer({ instruction })).pipe(Effect.scoped)
      })
    ))
})
