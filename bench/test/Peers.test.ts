import { assert, describe, it } from "@effect/vitest"
import { JournalStorage } from "@tessera/runtime"
import { Effect } from "effect"
import * as fc from "fast-check"
import { runChild } from "../src/Harness.ts"
import { run as runAiSdk } from "../src/PeerAiSdk.ts"
import { run as runLangChain } from "../src/PeerLangChain.ts"
import { run as runPi } from "../src/PeerPi.ts"
import {
  type PeersRun,
  roundRatio,
  runPeers,
  section,
  targetRows,
  targets,
  type Variant,
  variantsOf
} from "../src/Peers.ts"
import { platformOf, policyFor, run as runTessera } from "../src/PeerTessera.ts"
import { trimFrom } from "../src/PeerTrim.ts"
import { Conversation, type PeerResult, resultText, scriptedCalls, type Workload } from "../src/PeerWorkload.ts"

// The workloads at a few seconds' size: what each side's job reports must show it made the calls, took the steps
// and compacted (or, for Pi with no compaction, did not).
const tinyTwoCalls: Workload = {
  name: "two-calls",
  warmupSteps: 3,
  steps: 30,
  callsPerStep: 2,
  minChars: 2_048,
  maxChars: 2_048,
  seed: 25,
  text: "ascii",
  triggerChars: 20_000,
  keepChars: 6_000
}
const tinyLong: Workload = {
  name: "long",
  warmupSteps: 3,
  steps: 30,
  callsPerStep: 1,
  minChars: 1_024,
  maxChars: 20_000,
  seed: 2_025,
  text: "mixed",
  triggerChars: 60_000,
  keepChars: 15_000
}

/** Every side's run: the script's steps and tool calls, every interval timed as a step or a compaction step. */
const assertRan = (result: PeerResult, workload: Workload) => {
  assert.strictEqual(result.workload, workload.name)
  assert.strictEqual(result.steps, workload.steps)
  assert.strictEqual(result.toolCalls, (workload.steps - 1) * workload.callsPerStep, "every scripted call ran")
  assert.strictEqual(result.step.n + result.compactionStep.n, workload.steps - 1)
  assert.isAbove(result.step.median, 0)
  assert.isAbove(result.toolMs, 0)
  assert.isAbove(result.peakRss, 0)
}

/** The messages a request carries when nothing is ever dropped: the task, then per step the call and its results. */
const uncompacted = (workload: Workload, messagesPerStep: number) => 1 + (workload.steps - 1) * messagesPerStep

describe("peer jobs", () => {
  for (const workload of [tinyTwoCalls, tinyLong]) {
    describe(workload.name, () => {
      for (const journal of ["memory-only", "tmpfs", "disk"] as const) {
        it(`tessera, journal ${journal}: summarizes (one summary request per compaction) and keeps its requests bounded`, async () => {
          const result = await runTessera({ workload, journal })
          assertRan(result, workload)
          assert.isAtLeast(result.compactions, 2)
          assert.strictEqual(result.summaryRequests, result.compactions)
          assert.strictEqual(result.compactionStep.n, result.compactions)
          assert.isBelow(result.largestRequestMessages, uncompacted(workload, 1 + workload.callsPerStep))
        })
      }

      it("ai sdk: trims in prepareStep (no summary requests) and keeps its requests bounded", async () => {
        const result = await runAiSdk({ workload })
        assertRan(result, workload)
        assert.isAtLeast(result.compactions, 2)
        assert.strictEqual(result.summaryRequests, 0)
        // The SDK puts a step's tool results in one tool message.
        assert.isBelow(result.largestRequestMessages, uncompacted(workload, 2))
      })

      it("pi, trim: trims what it sends, and with no compaction sends the whole transcript (the control)", async () => {
        const trimmed = await runPi({ workload, compaction: "trim" })
        assertRan(trimmed, workload)
        assert.isAtLeast(trimmed.compactions, 2)
        assert.strictEqual(trimmed.summaryRequests, 0)
        const whole = await runPi({ workload, compaction: "none" })
        assertRan(whole, workload)
        assert.strictEqual(whole.compactions, 0)
        assert.strictEqual(whole.compactionStep.n, 0)
        assert.strictEqual(whole.largestRequestMessages, uncompacted(workload, 1 + workload.callsPerStep))
        assert.isBelow(trimmed.largestRequestMessages, whole.largestRequestMessages)
      })

      it("pi, faux usage estimate over the whole request: the same script, the same counts", async () => {
        const result = await runPi({ workload, compaction: "trim", request: "whole" })
        assertRan(result, workload)
        assert.isAtLeast(result.compactions, 2)
      })

      it("langchain: summarizes through summarizationMiddleware and keeps its requests bounded", async () => {
        const result = await runLangChain({ workload })
        assertRan(result, workload)
        assert.isAtLeast(result.compactions, 2)
        assert.isAtLeast(result.summaryRequests, result.compactions)
        assert.isBelow(result.largestRequestMessages, uncompacted(workload, 1 + workload.callsPerStep))
      })
    })
  }
})

describe("Tessera's side", () => {
  it.effect("memory-only provides the memory-only durability; tmpfs and disk keep the default (per entry)", () =>
    Effect.gen(function* () {
      const memory = yield* JournalStorage.JournalDurability.pipe(Effect.provide(platformOf("memory-only")))
      assert.strictEqual(memory._tag, "MemoryOnly")
      for (const journal of ["tmpfs", "disk"] as const) {
        const durability = yield* JournalStorage.JournalDurability.pipe(Effect.provide(platformOf(journal)))
        assert.strictEqual(durability._tag, "PerEntry")
      }
    })
  )

  it("the policy converts the character budget by the text's UTF-8 bytes per character, one summary request per compaction", () => {
    const ascii = policyFor(tinyTwoCalls)
    assert.deepStrictEqual([ascii.limit, ascii.keepRecent, ascii.pieceLimit], [5_000, 1_500, 5_000])
    const mixed = policyFor(tinyLong)
    assert.isAbove(mixed.limit, tinyLong.triggerChars / 4)
    assert.strictEqual(mixed.pieceLimit, mixed.limit)
  })
})

describe("workload", () => {
  const workloads = fc.constantFrom(tinyTwoCalls, tinyLong)

  it("a result is exactly its size, valid UTF-16, cut between segments, and the same for the same call", () => {
    fc.assert(
      fc.property(workloads, fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 1, max: 204_800 }), (w, n, size) => {
        const text = resultText(w, n, size)
        if (text.length !== size || text !== resultText(w, n, size)) return false
        // Lone surrogates do not survive a trip through UTF-8.
        if (Buffer.from(text, "utf8").toString("utf8") !== text) return false
        const header = `result of call ${n} (${size} characters):\n`
        if (size <= header.length) return true
        const body = text.slice(header.length).replace(/\.*$/, "")
        return body.length === 0 || body.endsWith("\n")
      }),
      { numRuns: 300 }
    )
  })

  it("results of different calls differ; the mixed text carries CJK, surrogate pairs and ZWJ sequences", () => {
    assert.notStrictEqual(resultText(tinyLong, 1, 20_000), resultText(tinyLong, 2, 20_000))
    const text = resultText(tinyLong, 1, 200_000)
    assert.match(text, /[\u4e00-\u9fff]/)
    assert.match(text, /[\ud800-\udbff][\udc00-\udfff]/)
    assert.include(text, "\u200d")
    const ascii = resultText(tinyTwoCalls, 1, 2_048)
    assert.strictEqual(Buffer.byteLength(ascii, "utf8"), ascii.length, "the two-calls text is ASCII")
  })

  it("the script asks for the same sizes in every process and ends with the final answer", () => {
    const sizes = Array.from({ length: tinyLong.steps - 1 }, (_, index) =>
      scriptedCalls(tinyLong, "measured", index + 1)
    )
    assert.isTrue(sizes.every((calls) => calls?.length === 1))
    assert.isTrue(
      sizes.every(
        (calls) => (calls?.[0]?.size ?? 0) >= tinyLong.minChars && (calls?.[0]?.size ?? 0) <= tinyLong.maxChars
      )
    )
    assert.strictEqual(new Set(sizes.map((calls) => calls?.[0]?.size)).size > 10, true, "sizes vary")
    assert.isUndefined(scriptedCalls(tinyLong, "measured", tinyLong.steps))
    assert.notDeepEqual(scriptedCalls(tinyLong, "warmup", 1), scriptedCalls(tinyLong, "measured", 1))
  })

  it("a request with fewer messages than the one before marks a compaction step; a summary request does too", () => {
    const conversation = new Conversation(tinyTwoCalls, "measured")
    conversation.agentCall(1)
    conversation.agentCall(4)
    conversation.agentCall(7)
    conversation.agentCall(3)
    conversation.summaryRequest()
    conversation.agentCall(5)
    assert.strictEqual(conversation.compactions, 1)
    assert.strictEqual(conversation.summaryRequests, 1)
    assert.strictEqual(conversation.plain.length, 2)
    assert.strictEqual(conversation.compacting.length, 2)
  })
})

describe("trimFrom", () => {
  interface Message {
    readonly round: boolean
    readonly size: number
  }
  const rounds = { sizeOf: (message: Message) => message.size, startsRound: (message: Message) => message.round }
  const budget = { ...tinyTwoCalls, triggerChars: 1_000, keepChars: 300 }
  const history = fc
    .array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 400 })), { minLength: 1, maxLength: 40 })
    .map((steps) => [
      { round: false, size: 10 },
      ...steps.flatMap(([results, size]) => [
        { round: true, size: 0 },
        ...Array.from({ length: results }, () => ({ round: false, size }))
      ])
    ])

  it("under the trigger keeps everything; over it keeps the largest suffix of whole rounds within the budget (the newest round always)", () => {
    fc.assert(
      fc.property(history, fc.integer({ min: 1, max: 5 }), (messages, from) => {
        const start = Math.min(from, messages.length)
        const total = messages.slice(start).reduce((sum, message) => sum + message.size, 0)
        const cut = trimFrom(messages, start, budget, rounds)
        if (total <= budget.triggerChars) return cut === undefined
        if (cut === undefined) {
          // Nothing to drop: the window from `start` is one round (or begins at the newest round).
          const starts = messages.slice(start).filter((message) => message.round).length
          return (
            starts <= 1 || messages.slice(start).findIndex((message) => message.round) === messages.length - start - 1
          )
        }
        if (cut <= start || messages[cut]?.round !== true) return false
        const kept = messages.slice(cut).reduce((sum, message) => sum + message.size, 0)
        const newestRound = messages.map((message) => message.round).lastIndexOf(true)
        if (kept > budget.keepChars && cut !== newestRound) return false
        // One more round would not have fitted.
        const previous = messages
          .slice(start, cut)
          .map((message) => message.round)
          .lastIndexOf(true)
        if (previous === -1) return true
        const wider = messages.slice(start + previous).reduce((sum, message) => sum + message.size, 0)
        return wider > budget.keepChars
      }),
      { numRuns: 2_000 }
    )
  })
})

const fakeResult = (side: string, step: number, compactionStep: number): PeerResult => ({
  side,
  workload: "two-calls",
  steps: 10,
  toolCalls: 18,
  toolMs: 0.9,
  step: { n: 8, median: step, q1: step, q3: step, min: step, max: step },
  compactionStep: {
    n: 1,
    median: compactionStep,
    q1: compactionStep,
    q3: compactionStep,
    min: compactionStep,
    max: compactionStep
  },
  compactions: 1,
  summaryRequests: 1,
  largestRequestMessages: 7,
  peakRss: 100 * 1024 * 1024,
  retainedHeap: 20 * 1024 * 1024,
  wallMs: 10,
  cpuMs: 10
})

describe("runPeers", () => {
  it("runs every side once per round and takes ratios as medians of per-round ratios; a miss names its figures", async () => {
    const order: Array<string> = []
    // Ours takes 1, 2, 3 ms in rounds 0..2; the AI SDK 1 ms, 1 ms, 1 ms: per-round ratios 1, 2, 3; median 2.
    const run = await runPeers({ workload: tinyTwoCalls, rounds: 3 }, async (variant: Variant, round: number) => {
      order.push(`${round}:${variant.key}`)
      const ours = variant.key.startsWith("tessera") ? round + 1 : 1
      return fakeResult(variant.key, ours, 4 * ours)
    })
    const variants = variantsOf(tinyTwoCalls)
    for (let round = 0; round < 3; round++) {
      const keys = order.filter((entry) => entry.startsWith(`${round}:`)).map((entry) => entry.slice(2))
      assert.deepStrictEqual([...keys].sort(), variants.map((variant) => variant.key).sort())
    }
    const ratio = roundRatio(run, "tessera-memory-only", "ai-sdk", (result) => result.step.median)
    assert.deepStrictEqual(ratio.rounds, [1, 2, 3])
    assert.strictEqual(ratio.median, 2)
    const rows = targetRows([run])
    assert.strictEqual(rows.length, targets.filter((target) => target.workload === "two-calls").length)
    const vsAiSdk = rows.find((row) => row.name.includes("AI SDK"))
    assert.isFalse(vsAiSdk?.ok)
    assert.include(vsAiSdk?.measured, "2.00x")
    assert.include(vsAiSdk?.cause, "ours took 2.00 ms per step against 1.00 ms")
    assert.include(
      section(run, "policy").join("\n"),
      "## Side by side with more peers: two parallel tool calls per step"
    )
  })

  it("a target is met when ours is within its limit (the same run with ours faster)", async () => {
    const run: PeersRun = await runPeers({ workload: tinyTwoCalls, rounds: 1 }, async (variant) =>
      fakeResult(variant.key, variant.key.startsWith("tessera") ? 0.1 : 1, 1)
    )
    assert.isTrue(
      targetRows([run])
        .filter((row) => row.name.includes("per step"))
        .every((row) => row.ok)
    )
  })

  it("each side's job runs in a process of its own through the benchmark's child entry", async () => {
    const run = await runPeers({ workload: { ...tinyTwoCalls, steps: 12 }, rounds: 1 }, (variant) =>
      runChild<PeerResult>(variant.job, variant.args)
    )
    for (const variant of variantsOf(tinyTwoCalls)) {
      const [result] = run.runs[variant.key] ?? []
      assert.strictEqual(result?.steps, 12, variant.key)
    }
  }, 60_000)
})
