/**
 * The middleware's hooks are the stock executor's (`TaskExecution.gatedHooks`,
 * the one assembly): what the executor guarantees for a result kept inline
 * holds through the AI SDK too. Under a `Threshold` policy a tool result is
 * held to the inline limit (by default the policy's piece limit) before the
 * provider sees it, so a result over it never reaches a request whole.
 */
import type { LanguageModelV4Prompt } from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { Compaction } from "@tessera/runtime"
import { generateText, stepCountIs, wrapLanguageModel } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { Effect } from "effect"
import { answer, bindTask, callTool, inWorld, isSummaryRequest, produce, taskText } from "./support/world.ts"

const pieceLimit = 2_000
// No compaction in these turns (the limit is far away): only the inline limit acts on the result.
const policy = Compaction.threshold({ measure: "bytes", limit: 1_000_000, keepRecent: 4, pieceLimit })

/** The UTF-8 sizes of the tool results a prompt carries (text outputs as they are, any other as its JSON). */
const resultSizes = (prompt: LanguageModelV4Prompt): Array<number> =>
  prompt.flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) => {
          if (part.type !== "tool-result") return []
          const output = part.output
          return [Buffer.byteLength(output.type === "text" ? output.value : JSON.stringify(output), "utf8")]
        })
      : []
  )

/** One tool call producing `size` bytes, then an answer; what the provider was sent for the second step. */
const turnWithResult = (size: number, inlineLimit?: number) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, policy)
      const tessera = yield* TesseraMiddleware.make(binding, inlineLimit === undefined ? {} : { inlineLimit })
      const prompts: Array<LanguageModelV4Prompt> = []
      const mock = new MockLanguageModelV4({
        doGenerate: async (options) => {
          // Not expected here: a summary request would mean the turn compacted, and fails the count below.
          if (isSummaryRequest(options)) prompts.push(options.prompt)
          prompts.push(options.prompt)
          return prompts.length === 1 ? callTool("call-1", size, "x") : answer("done")
        }
      })
      yield* Effect.promise(() =>
        generateText({
          model: wrapLanguageModel({ model: mock, middleware: tessera.middleware }),
          tools: { produce },
          prompt: taskText,
          stopWhen: stepCountIs(4)
        })
      )
      return prompts
    })
  )

describe("TesseraMiddleware gets the executor's hooks", () => {
  it("adapter_inline_limit: a result over the piece limit reaches the provider held to it, with a note", async () => {
    const prompts = await turnWithResult(30_000)
    assert.strictEqual(prompts.length, 2, "one tool step, then the answer")
    const sizes = resultSizes(prompts[1] ?? [])
    assert.strictEqual(sizes.length, 1)
    assert.isAtMost(sizes[0] ?? Infinity, pieceLimit, `the result sent is ${sizes[0]} bytes`)
    assert.include(JSON.stringify(prompts[1]), "bytes", "the cut result says what was cut")
  })

  it("negative control: with the limit lifted, the same result reaches the provider whole (the measure sees it)", async () => {
    const prompts = await turnWithResult(30_000, 10_000_000)
    const sizes = resultSizes(prompts[1] ?? [])
    assert.strictEqual(sizes[0], 30_000)
  })
})
