/**
 * A summary carries its staged file's digest from the write that staged it,
 * and a transcript names the file by that digest rather than hashing the
 * text again; what comes back from disk is still checked against it.
 */
import * as crypto from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Journal, Model, PrivateSummaries, Transcript } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option } from "effect"
import { compactThreeRounds, privateWriter } from "./support/compacting.ts"
import { runInWorld, task, type World } from "./support/world.ts"

const sha256 = (text: string) => crypto.createHash("sha256").update(text).digest("hex")

const compacted = (world: World) =>
  Effect.gen(function* () {
    const { capability, folder } = yield* privateWriter(world)
    return yield* Effect.scoped(
      Effect.gen(function* () {
        const journal = yield* Journal.open({ folder, task })
        const summarized = yield* compactThreeRounds(journal)
        const transcript = yield* Transcript.make(Option.some(journal))
        const entries = yield* Journal.readEntries({ folder, task })
        return { summarized, transcript, entries }
      })
    ).pipe(
      PrivateSummaries.provide(capability),
      Effect.provide(ScriptedModel.layer(() => Model.response({ text: "the summary" })))
    )
  })

describe("a summary carries its file's digest", () => {
  it("summary_carries_its_file_digest: the summary names the staged file's size and digest, which the transcript records", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { summarized, transcript, entries } = yield* compacted(world)
        const staged = entries.find((entry) => entry._tag === "SummaryStaged")
        assert.isDefined(staged)
        if (staged?._tag !== "SummaryStaged" || summarized.summary === undefined) return assert.fail("no summary")
        assert.deepStrictEqual(summarized.summary.file, {
          volume: staged.volume,
          path: staged.path,
          size: staged.size,
          sha256: staged.sha256
        })
        const stored = yield* transcript.storeSummary(summarized.summary)
        assert.deepInclude(stored, { _tag: "SummaryRef", size: staged.size, sha256: staged.sha256 })
        const restored = yield* transcript.restoreSummary(stored)
        assert.deepStrictEqual(restored, summarized.summary)
      })
    ))

  it("summary_carries_its_file_digest negative control: a summary carrying another digest is recorded with it, and the read back refuses it loudly", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { summarized, transcript } = yield* compacted(world)
        const summary = summarized.summary
        if (summary?.file === undefined) return assert.fail("no summary file")
        const forged = { ...summary, file: { ...summary.file, sha256: sha256("another text") } }
        const stored = yield* transcript.storeSummary(forged)
        // The carried digest is the one recorded: the transcript did not hash the text again.
        assert.deepInclude(stored, { sha256: sha256("another text") })
        const refused = yield* Effect.flip(transcript.restoreSummary(stored))
        assert.strictEqual(refused._tag, "TranscriptError")
        assert.include(refused.message, `not the ${sha256("another text")} the transcript recorded`)
        // A file named elsewhere than the summary's reference says nothing about it: the text is hashed.
        const elsewhere = { ...summary, file: { ...forged.file, path: "summaries/other/1.txt" } }
        assert.deepInclude(yield* transcript.storeSummary(elsewhere), { sha256: summary.file.sha256 })
        // A summary built by hand (no file) is hashed from its text, as before.
        const { file: _, ...byHand } = summary
        assert.deepInclude(yield* transcript.storeSummary(byHand), { sha256: summary.file.sha256 })
      })
    ))
})
