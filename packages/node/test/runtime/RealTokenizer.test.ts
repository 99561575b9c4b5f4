/**
 * The `tokenizer` measure with a real tokenizer package: `gpt-tokenizer`
 * (an optional peer of `@tessera/runtime`, installed here as a dev
 * dependency), wired as `Compaction.tokenizer`'s documentation shows.
 * Compaction is driven through the public API on a real world (Node
 * platform, durable files and journal) in a temporary folder.
 */
import { assert, describe, it } from "@effect/vitest"
import { Compaction, History, Model, PrivateSummaries } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { countTokens } from "gpt-tokenizer"
import { privateWriter, summaryKey, withJournal } from "./support/compacting.ts"
import { runInWorld, type World } from "./support/world.ts"

/** gpt-tokenizer's count (o200k_base), as the docs wire it: a special token's text counts as text. */
const realCount = (text: string) => countTokens(text, { disallowedSpecial: new Set() })

/** The bytes/4 estimate, part by part as `estimatedTokens` takes it: the wrong count for the control. */
const estimateCount = (text: string) => Math.ceil(new TextEncoder().encode(text).length / 4)

/** What `count` gives a request: the sum of its parts' renderings, each counted once, as the measure counts them. */
const requestCount = (count: (text: string) => number, history: History.History) =>
  History.toParts(history).reduce((total, part) => total + count(Compaction.renderPart(part)), 0)

const round = (id: string, content: string): ReadonlyArray<Model.Part> => [
  Model.toolCall(id, "fetch", { report: id }),
  Model.toolResult({ callId: id, name: "fetch", content, isError: false })
]

// Three reports a tokenizer and bytes/4 see very differently: long words are about 14 bytes a token, digits
// between spaces one byte a token.
const sparse = " international".repeat(1_000)
const plain = " the".repeat(200)
const dense = Array.from({ length: 1_500 }, (_, index) => String((index * 7) % 10)).join(" ")

/**
 * A turn's requests, by the model step they go out for: step 3 carries the
 * first two reports, step 4 the third as well. The newest result has not
 * reached the model yet, so each request can summarize only the rounds
 * before it (step 3: the sparse one; step 4: the sparse and the plain ones).
 */
const step3 = History.append(History.make([Model.text("user", "Compare the three reports.")]), [
  ...round("c1", sparse),
  ...round("c2", plain)
])
const step4 = History.append(step3, round("c3", dense))
const steps: ReadonlyArray<{ readonly step: number; readonly history: History.History }> = [
  { step: 3, history: step3 },
  { step: 4, history: step4 }
]

/** Halfway between the real counts of the two requests: the tokenizer crosses it at step 4, and not before. */
const limit = Math.floor((requestCount(realCount, step3) + requestCount(realCount, step4)) / 2)

/** The same turn, its newest report quoting a special token of the encoding (as a page about tokenizers would). */
const withSpecialToken: typeof steps = [
  { step: 3, history: step3 },
  { step: 4, history: History.append(step3, round("c3", `<|endoftext|>${dense}`)) }
]

const policy = Compaction.threshold({ measure: "tokenizer", limit, keepRecent: 0, pieceLimit: 100_000 })

/**
 * Runs compaction before each of the turn's steps in order, as the turn
 * does (in turn 1 of the world's task, with its journal), counting with
 * `count`, until one compacts: that step (`undefined` when none did), what
 * it returned, and every request the model was sent.
 */
const firstCompaction = (world: World, count: (text: string) => number, turn = steps) =>
  Effect.gen(function* () {
    const { capability, folder } = yield* privateWriter(world)
    const sent: Array<Model.ModelRequest> = []
    const model = ScriptedModel.layer((request) => {
      sent.push(request)
      return Model.response({ text: "The first reports were fetched." })
    })
    const services = Layer.merge(model, Compaction.tokenizer(count))
    return yield* withJournal(folder, (journal) =>
      Effect.gen(function* () {
        for (const { history, step } of turn) {
          const compacted = yield* Compaction.compact({
            history,
            policy,
            operation: summaryKey.operation,
            step,
            journal: Option.some(journal),
            turn: 1
          }).pipe(PrivateSummaries.provide(capability), Effect.provide(services))
          if (compacted !== history) return { step, compacted, sent }
        }
        return { step: undefined, compacted: undefined, sent }
      })
    )
  })

describe("the tokenizer measure with gpt-tokenizer", () => {
  it("premise: the limit lies between the requests' real counts, and bytes/4 puts both over it", () => {
    assert.isAtMost(requestCount(realCount, step3), limit)
    assert.isAbove(requestCount(realCount, step4), limit)
    assert.isAbove(requestCount(estimateCount, step3), limit)
    // The estimate the control passes as a tokenizer is the `estimatedTokens` measure's, exactly.
    assert.strictEqual(
      requestCount(estimateCount, step3),
      Compaction.measureParts("estimatedTokens", History.toParts(step3))
    )
  })

  it("tokenizer_measure_counts_with_a_real_tokenizer: compaction waits for step 4, where gpt-tokenizer's count crosses the limit", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const first = yield* firstCompaction(world, realCount)
        assert.strictEqual(first.step, 4)
        // One summary request, sent at step 4 only: step 3 returned its history untouched and cost nothing.
        assert.lengthOf(first.sent, 1)
        assert.isTrue(Compaction.isSummaryRequest(first.sent[0] as Model.ModelRequest))
        assert.isTrue(Option.isSome(History.summaryText(first.compacted ?? step4)))
        const rendered = (first.sent[0] as Model.ModelRequest).parts.map(Compaction.renderPart).join("\n")
        assert.include(rendered, "international", "the sparse report is summarized")
        assert.notInclude(rendered, "7 4 1 8", "the dense report has not reached the model and is kept")
      })
    ))

  it("tokenizer_measure_counts_with_a_real_tokenizer negative control: the bytes/4 estimate as the tokenizer compacts at step 3", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const first = yield* firstCompaction(world, estimateCount)
        assert.strictEqual(first.step, 3)
        assert.lengthOf(first.sent, 1)
      })
    ))

  it("gpt_tokenizer_special_tokens: as the docs wire it, a result holding a special token's text is counted as text", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const first = yield* firstCompaction(world, realCount, withSpecialToken)
        assert.strictEqual(first.step, 4)
        assert.lengthOf(first.sent, 1)
      })
    ))

  it("gpt_tokenizer_special_tokens negative control: the bare countTokens throws on it, and the compaction dies", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(firstCompaction(world, countTokens, withSpecialToken))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), String(exit))
        assert.include(String(Exit.isFailure(exit) ? Cause.squash(exit.cause) : ""), "Disallowed special token")
      })
    ))
})
