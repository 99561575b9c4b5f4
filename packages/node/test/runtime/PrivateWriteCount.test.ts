/**
 * A write of one summary admits the private writer once, and an admission
 * reads the volume's registration file once: the reads are counted where
 * they happen, in the platform's durable files the store reads through. A
 * private offload takes the same road: one admission per body written, none
 * for a result that stays inline.
 */
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles, Ids } from "@tessera/core"
import { Compaction, type Journal, Model, PrivateSummaries, ToolResults, VolumeStore } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"
import { compactThreeRounds, privateWriter, summaryKey, withJournal } from "./support/compacting.ts"
import { makeWorld, platformLayer, type World, withTempDir } from "./support/world.ts"

/** Reads of the private volume's registration file since the world was made. */
interface Reads {
  readonly registration: () => number
}

/** A world whose durable files count every read of the private volume's registration file. */
const runInCountedWorld = <A, E>(
  body: (world: World, reads: Reads) => Effect.Effect<A, E, Layer.Success<typeof platformLayer>>
) =>
  withTempDir((dir) => {
    let count = 0
    const registration = VolumeStore.metaFileName(Schema.decodeUnknownSync(Ids.VolumeId)("researcher-private"))
    const counting = Layer.effect(
      DurableFiles.DurableFiles,
      Effect.map(DurableFiles.DurableFiles, (files) => ({
        ...files,
        readFile: (file: string, options: DurableFiles.ReadFileOptions) => {
          if (file.endsWith(`/${registration}`)) count++
          return files.readFile(file, options)
        }
      }))
    ).pipe(Layer.provide(platformLayer))
    return Effect.runPromise(
      makeWorld(dir).pipe(
        Effect.flatMap((world) => body(world, { registration: () => count })),
        Effect.provide(Layer.merge(platformLayer, counting))
      ) as Effect.Effect<A>
    )
  })

/** How many registration reads `body` made. */
const readsOf = <A, E, R>(reads: Reads, body: Effect.Effect<A, E, R>): Effect.Effect<number, E, R> =>
  Effect.suspend(() => {
    const before = reads.registration()
    return Effect.map(body, () => reads.registration() - before)
  })

describe("one write of a summary: one admission, one read of the volume's registration", () => {
  it("summary_write_reads_the_registration_once: Compaction.publish and PrivateSummaries.stageOnce each read it once", () =>
    runInCountedWorld((world, reads) =>
      Effect.gen(function* () {
        const { capability, folder } = yield* privateWriter(world)
        const published = yield* withJournal(folder, (journal) =>
          readsOf(
            reads,
            Compaction.publish({
              key: summaryKey,
              summary: "the summary",
              journal: Option.some(journal),
              turn: 1
            }).pipe(PrivateSummaries.provide(capability))
          )
        )
        assert.strictEqual(published, 1)
        const staged = yield* readsOf(
          reads,
          PrivateSummaries.stageOnce({ ...summaryKey, step: 3 }, "another summary").pipe(
            PrivateSummaries.provide(capability)
          )
        )
        assert.strictEqual(staged, 1)
      })
    ))

  it("summary_write_reads_the_registration_once negative control: the former wiring (an admission before the write that admits again) reads it twice", () =>
    runInCountedWorld((world, reads) =>
      Effect.gen(function* () {
        const { capability } = yield* privateWriter(world)
        const former = Effect.andThen(
          PrivateSummaries.admit("Compaction.publish"),
          PrivateSummaries.stageOnce(summaryKey, "the summary")
        ).pipe(PrivateSummaries.provide(capability))
        assert.strictEqual(yield* readsOf(reads, former), 2)
      })
    ))

  it("compaction_admits_before_the_request_and_at_the_write: a summarizing compaction reads the registration twice, an adopting one once", () =>
    runInCountedWorld((world, reads) =>
      Effect.gen(function* () {
        const { capability, folder } = yield* privateWriter(world)
        let requests = 0
        const summarizer = ScriptedModel.layer(() => {
          requests++
          return Model.response({ text: "the summary" })
        })
        const compact = (journal: Journal.JournalService) =>
          compactThreeRounds(journal).pipe(PrivateSummaries.provide(capability), Effect.provide(summarizer))
        // A model request lies between the admission before it (no token is spent for a refused writer) and the
        // write (a volume re-registered meanwhile is refused): two admissions, each reading the registration once.
        const summarized = yield* withJournal(folder, (journal) => readsOf(reads, compact(journal)))
        assert.strictEqual(requests, 1)
        assert.strictEqual(summarized, 2)
        // The same compaction again finds its staged summary with the recorded inputs: adopted, nothing written.
        const adopted = yield* withJournal(folder, (journal) => readsOf(reads, compact(journal)))
        assert.strictEqual(requests, 1)
        assert.strictEqual(adopted, 1)
      })
    ))
})

describe("one private offload: one admission, one read of the volume's registration", () => {
  const config = { threshold: 64, readTool: "read_artifact", destination: "Private" } as const
  const offloadTo = (
    target: ToolResults.OffloadTarget<"Private">,
    journal: Journal.JournalService,
    callId: string,
    content: string
  ) =>
    ToolResults.offloadResult(
      config,
      target,
      journal,
      { task: journal.task, turn: 1, step: 1, call: Model.toolCall(callId, "produce", {}) },
      Model.toolResult({ callId, name: "produce", content, isError: false })
    )

  it("private_offload_reads_the_registration_once: a body written reads it once, a result kept inline never", () =>
    runInCountedWorld((world, reads) =>
      Effect.gen(function* () {
        const { capability, folder } = yield* privateWriter(world)
        const target = yield* ToolResults.privateTarget.pipe(PrivateSummaries.provide(capability))
        const run = (journal: Journal.JournalService, callId: string, content: string) =>
          offloadTo(target, journal, callId, content).pipe(PrivateSummaries.provide(capability))
        const [written, inline] = yield* withJournal(folder, (journal) =>
          Effect.all([readsOf(reads, run(journal, "big", "b".repeat(500))), readsOf(reads, run(journal, "small", "s"))])
        )
        assert.strictEqual(written, 1)
        assert.strictEqual(inline, 0)
      })
    ))

  it("private_offload_reads_the_registration_once negative control: a target made per result (an admission of its own before the write's) reads it twice", () =>
    runInCountedWorld((world, reads) =>
      Effect.gen(function* () {
        const { capability, folder } = yield* privateWriter(world)
        const perResult = yield* withJournal(folder, (journal) =>
          readsOf(
            reads,
            Effect.flatMap(ToolResults.privateTarget, (target) =>
              offloadTo(target, journal, "big", "b".repeat(500))
            ).pipe(PrivateSummaries.provide(capability))
          )
        )
        assert.strictEqual(perResult, 2)
      })
    ))
})
