/**
 * A summary request the Pi hooks send carries what the agent's own
 * requests carry: the agent's system prompt (after Tessera's summary
 * instruction, unchanged) and the task's image as a native image block
 * (same bytes, same media type), never as a text stand-in.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@mariozechner/pi-agent-core"
import {
  type Context,
  type ImageContent,
  type StreamFunction,
  streamSimple,
  type UserMessage
} from "@mariozechner/pi-ai"
import { TesseraPi } from "@tessera/pi"
import { Compaction, type Model } from "@tessera/runtime"
import { Effect } from "effect"
import * as fc from "fast-check"
import { bindTask, inWorld, isSummaryRequest, produce, scripted, systemPrompt, taskText } from "./support/world.ts"

/** A 1x1 transparent PNG, base64 as Pi carries images. */
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })

const images = (context: Context): Array<ImageContent> =>
  context.messages.flatMap((message) =>
    message.role === "user" && typeof message.content !== "string"
      ? message.content.filter((block): block is ImageContent => block.type === "image")
      : []
  )

/**
 * What is wrong with a summary request: its system prompt must be the
 * summary instruction followed by the agent's own, as the agent's request
 * carried it; the task's image must be there once, as the agent's request
 * carried it (same bytes, same media type); no text stands in for it.
 */
const problemsIn = (summary: Context, turn: Context, data: string, mimeType: string): Array<string> => {
  const problems: Array<string> = []
  const expected = `${Compaction.summaryInstruction}\n\n${turn.systemPrompt}`
  if (summary.systemPrompt !== expected) problems.push("the system prompt is not the instruction and the agent's")
  const sent = images(summary)
  if (sent.length !== 1) problems.push(`${sent.length} images in the summary request, expected 1`)
  const image = sent[0]
  if (image !== undefined) {
    if (image.mimeType !== mimeType) problems.push(`media type ${image.mimeType}, expected ${mimeType}`)
    if (image.data !== data) problems.push("the image's bytes differ from the task's")
    try {
      assert.deepStrictEqual(image, images(turn)[0])
    } catch {
      problems.push("the image differs from the one the agent's own request carried")
    }
  }
  const text = JSON.stringify(summary.messages)
  for (const stand of [`[file ${mimeType}]`, `[media ${mimeType}]`]) {
    if (text.includes(stand)) problems.push(`the summary request holds the text ${stand}`)
  }
  return problems
}

/**
 * Deliberately broken wiring: summary requests reach the provider as the
 * hooks would send them with a converter that flattens: the summary
 * instruction alone as system prompt (as before), each image as the text
 * Tessera renders for it.
 */
const flattening: StreamFunction = (model, context, options) =>
  streamSimple(
    model,
    isSummaryRequest(context)
      ? {
          systemPrompt: Compaction.summaryInstruction,
          messages: context.messages.map((message) =>
            message.role === "user" && typeof message.content !== "string"
              ? ({
                  ...message,
                  content: message.content.map((block) =>
                    block.type === "image"
                      ? {
                          type: "text" as const,
                          text: Compaction.renderPart({
                            _tag: "Media",
                            role: "user",
                            mediaType: block.mimeType,
                            data: { _tag: "Base64", base64: block.data },
                            providerOptions: {}
                          } satisfies Model.MediaPart)
                        }
                      : block
                  )
                } satisfies UserMessage)
              : message
          )
        }
      : context,
    options
  )

/** The task (text and one image), two large tool results, then an answer: the third request compacts. */
const problemsOf = (data: string, mimeType: string, broken: boolean) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, policy)
      const tessera = yield* TesseraPi.make(binding, broken ? { streamFn: flattening } : {})
      const script = scripted(2, 6_000)
      const agent = new Agent({
        initialState: { systemPrompt, model: script.faux.getModel(), tools: [produce] },
        ...tessera.agentOptions
      })
      yield* Effect.promise(() => agent.prompt(taskText, [{ type: "image", data, mimeType }]))
      script.faux.unregister()
      const summaries = script.summaryRequests()
      const turn = script.turnRequests()[0]
      assert.isAtLeast(summaries.length, 1, "the task compacted")
      assert.isDefined(turn)
      assert.strictEqual(turn?.systemPrompt, systemPrompt)
      return summaries.flatMap((summary) => problemsIn(summary, turn as Context, data, mimeType))
    })
  )

describe("TesseraPi summary requests keep the system prompt and media", () => {
  it("pi_summary_media: the summary request carries the agent's system prompt and the task's PNG as an image block, same bytes and media type, no text stand-in", async () => {
    assert.deepStrictEqual(await problemsOf(png, "image/png", false), [])
  })

  it("pi_summary_media_any: any task image (bytes, media type) reaches the summary request as the same image block", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 48 }),
        fc.constantFrom("image/png", "image/jpeg", "image/webp"),
        async (bytes, mimeType) => {
          assert.deepStrictEqual(await problemsOf(Buffer.from(bytes).toString("base64"), mimeType, false), [])
        }
      ),
      { numRuns: 5 }
    )
  })

  it("negative control: summary requests through a flattening converter (instruction alone, image as text) fail the check", async () => {
    const problems = await problemsOf(png, "image/png", true)
    assert.include(problems, "the system prompt is not the instruction and the agent's")
    assert.include(problems, "0 images in the summary request, expected 1")
    assert.include(problems, "the summary request holds the text [media image/png]")
  })
})

/** A resumed agent whose stored messages are already over the limit: its first request compacts, before any is sent. */
const compactFirst = (systemPromptOption: string | undefined) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, policy)
      const script = scripted(0, 0)
      const tessera = yield* TesseraPi.make(binding, {
        summaryModel: script.faux.getModel(),
        ...(systemPromptOption === undefined ? {} : { systemPrompt: systemPromptOption })
      })
      const stored = [
        { role: "user", content: taskText, timestamp: 1 },
        { role: "user", content: "earlier: ".concat("x".repeat(6_000)), timestamp: 2 }
      ] satisfies Array<UserMessage>
      const agent = new Agent({
        initialState: { systemPrompt, model: script.faux.getModel(), tools: [produce], messages: stored },
        ...tessera.agentOptions
      })
      yield* Effect.promise(() => agent.prompt("Go on."))
      script.faux.unregister()
      return { summaries: script.summaryRequests(), turns: script.turnRequests(), error: agent.state.errorMessage }
    })
  )

describe("TesseraPi summary requests before the agent's first request", () => {
  it("pi_summary_system_prompt_option: a summary request sent before any request carries the systemPrompt option", async () => {
    const { summaries } = await compactFirst(systemPrompt)
    assert.strictEqual(summaries.length, 1)
    assert.strictEqual(summaries[0]?.systemPrompt, `${Compaction.summaryInstruction}\n\n${systemPrompt}`)
  })

  it("pi_summary_system_prompt_unknown: without the option, that summary request is not sent and the error names systemPrompt", async () => {
    const { error, summaries, turns } = await compactFirst(undefined)
    assert.strictEqual(summaries.length, 0)
    assert.strictEqual(turns.length, 0)
    assert.include(error ?? "", "pass systemPrompt")
  })
})
