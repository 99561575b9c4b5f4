/**
 * Issue 17, finding 8: a result above the hard inline limit is cut with a
 * note when it cannot be offloaded, so compaction's cost is bounded by the
 * policy's piece limit, not by the payload. (The 100 MB case and its peak
 * memory are measured by the `hostile-size` benchmark job.)
 */
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import {
  Compaction,
  EntryGate,
  Executor,
  Journal,
  Model,
  PrivateSummaries,
  TaskExecution,
  ToolResults
} from "@tessera/runtime"
import { Effect, Layer, Option } from "effect"
import * as fc from "fast-check"
import * as Inline from "../../../runtime/src/internal/inlineLimit.js"
import { isSummaryRequest, journalFolder, requests, start, tools, turnLayer } from "./support/turns.ts"
import { platformLayer, runInWorld, task, type World } from "./support/world.ts"

const payload = 1_000_000
const policy = Compaction.threshold({ measure: "bytes", limit: 6_000, keepRecent: 0, pieceLimit: 8_000 })
const utf8 = (text: string) => Buffer.byteLength(text, "utf8")

/** One huge result, one small one (so the huge one's round is summarized at step 3), then an answer. */
const hugeThenSmall = () => {
  let turnRequests = 0
  return (request: Model.ModelRequest) => {
    if (isSummaryRequest(request)) return Model.response({ text: "a summary of the huge result" })
    turnRequests++
    return turnRequests === 1
      ? Model.response({ toolCalls: [Model.toolCall("c1", "produce", { size: payload, fill: "h" })] })
      : turnRequests === 2
        ? Model.response({ toolCalls: [Model.toolCall("c2", "produce", { size: 10, fill: "s" })] })
        : Model.response({ text: "done" })
  }
}

const bound = (world: World) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef), [world.privateRef, world.outputRef])
    const scope = yield* world.scopeFor([world.privateRef, world.outputRef])
    const context = yield* runtime.bindTask({ scope, output: Option.some(world.outputRef) })
    return yield* EntryGate.bind(context, { policy })
  })

const resultSizes = (world: World) =>
  Effect.flatMap(journalFolder(world), (folder) => Journal.readEntries({ folder, task })).pipe(
    Effect.map((entries) => entries.flatMap((entry) => (entry._tag === "ToolResulted" ? [entry.size] : []))),
    Effect.provide(platformLayer)
  )

const resultOf = (request: Model.ModelRequest | undefined, callId: string): string => {
  const part = request?.parts.find((candidate) => candidate._tag === "ToolResult" && candidate.callId === callId)
  return part?._tag === "ToolResult" ? part.content : ""
}

describe("inline_limit", () => {
  it("with no offload, a 1 MB result is cut to the piece limit with a note before it enters the history; compaction then sends at most 2 summary requests for it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bound(world)
        const sent = yield* Effect.gen(function* () {
          const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 6 })
          assert.strictEqual(outcome.text, "done")
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, hugeThenSmall())))
        const summaries = sent.filter(isSummaryRequest)
        assert.isAtLeast(summaries.length, 1)
        assert.isAtMost(summaries.length, 2)
        const seen = resultOf(sent[1], "c1")
        assert.isAtMost(utf8(seen), 8_000)
        assert.isTrue(seen.startsWith("h".repeat(7_000)))
        assert.include(seen, `this tool result was ${payload} bytes, over the inline limit of 8000 bytes`)
        const sizes = yield* resultSizes(world)
        assert.isAtMost(sizes[0] ?? Number.POSITIVE_INFINITY, 8_000, "the journal records the cut result")
      })
    ))

  it("an offload that is refused (the host's path policy refuses every target) leaves the result to the limit: cut with a note", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bound(world)
        const refuseAll = ArtifactPathPolicy.layer({ isInternalState: () => true, isUnderInternalRoot: () => true })
        const offload = { threshold: 4_096, readTool: "read", destination: "Output" as const }
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 6, offload })
          return yield* requests
        }).pipe(Effect.provide(Layer.merge(turnLayer(world, task, hugeThenSmall()), refuseAll)))
        const seen = resultOf(sent[1], "c1")
        assert.isAtMost(utf8(seen), 8_000)
        assert.include(seen, "was not offloaded")
      })
    ))

  it("an offload that succeeds is not cut: the pointer enters the history", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bound(world)
        const offload = { threshold: 4_096, readTool: "read", destination: "Output" as const }
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 6, offload })
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, hugeThenSmall())))
        const seen = resultOf(sent[1], "c1")
        assert.isTrue(seen.startsWith("[artifact] "), seen.slice(0, 100))
        assert.notInclude(seen, "inline limit")
      })
    ))

  it("negative control: the same turn wired without the limit (compaction hooks alone, built here) keeps the whole result and pays one summary request per piece of it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bound(world)
        const capability = yield* PrivateSummaries.resolve(binding.context)
        const sent = yield* Effect.gen(function* () {
          const journal = yield* Journal.Journal
          const hooks = yield* TaskExecution.compactionHooks(policy, journal).pipe(PrivateSummaries.provide(capability))
          yield* Executor.runTurn({ tools, maxSteps: 6, hooks }, start)
          return yield* requests
        }).pipe(Effect.provide(turnLayer(world, task, hugeThenSmall())))
        assert.strictEqual(utf8(resultOf(sent[1], "c1")), payload)
        assert.isAbove(sent.filter(isSummaryRequest).length, 100)
      })
    ))

  it("property: a cut result measures at most the limit, keeps a prefix of the content that ends between graphemes, and ends with the note; a result within the limit is unchanged", () => {
    const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" })
    const noteBytes = utf8(Inline.note(99_999, 99_999, 99_999))
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 400 }),
        fc.integer({ min: noteBytes, max: noteBytes + 1_500 }),
        (content, limit) => {
          const result = Model.toolResult({ callId: "c", name: "t", content, isError: false })
          const limited = Inline.limitResult(limit, result)
          if (utf8(content) <= limit) {
            assert.strictEqual(limited, result)
            return
          }
          assert.isAtMost(utf8(limited.content), limit)
          const noteAt = limited.content.lastIndexOf("\n[tessera: this tool result was ")
          assert.isAtLeast(noteAt, 0)
          const kept = limited.content.slice(0, noteAt)
          assert.isTrue(content.startsWith(kept))
          const boundaries = new Set([...segmenter.segment(content)].map((segment) => segment.index))
          assert.isTrue(boundaries.has(kept.length), `cut at ${kept.length} is between graphemes`)
          assert.include(limited.content, `was ${utf8(content)} bytes`)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("defaults: the piece limit under Threshold, none when compaction is disabled", () => {
    assert.strictEqual(ToolResults.defaultInlineBytes(policy), 8_000)
    assert.strictEqual(
      ToolResults.defaultInlineBytes(Compaction.threshold({ measure: "estimatedTokens", pieceLimit: 1_000 })),
      4_000
    )
    assert.isUndefined(ToolResults.defaultInlineBytes(Compaction.disabled))
  })
})
