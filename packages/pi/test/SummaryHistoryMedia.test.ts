/**
 * Issue 35 through the Pi hooks: an image in the summarized history (here a
 * tool's screenshot, which Tessera keeps beside the result) reaches the
 * summary request Pi's stream function gets as an image block, same bytes
 * and media type, beside the history text that keeps its `[media image/png]`
 * placeholder. Pi's summary model is a Pi model like the agent's: it takes
 * images when its `input` lists `"image"` (the faux model's does; Pi's
 * providers replace images by a note for a model without it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent, type AgentTool } from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage,
  type Context,
  fauxAssistantMessage,
  fauxToolCall,
  type ImageContent,
  registerFauxProvider,
  type StreamFunction,
  streamSimple,
  Type
} from "@mariozechner/pi-ai"
import { TesseraPi } from "@tessera/pi"
import { Compaction } from "@tessera/runtime"
import { Effect } from "effect"
import { bindTask, inWorld, isSummaryRequest, produce, systemPrompt, taskText } from "./support/world.ts"

/** A 1x1 transparent PNG, base64 as Pi carries images. */
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })

const snapshotParameters = Type.Object({})

/** A tool that captures the failing page: a short text and the screenshot. */
const snapshot: AgentTool<typeof snapshotParameters> = {
  name: "snapshot",
  label: "Snapshot",
  description: "Captures the failing page",
  parameters: snapshotParameters,
  execute: async () => ({
    content: [
      { type: "text", text: "captured the failing page" },
      { type: "image", data: png, mimeType: "image/png" }
    ],
    details: {}
  })
}

const images = (context: Context): Array<ImageContent> =>
  context.messages.flatMap((message) =>
    message.role !== "assistant" && typeof message.content !== "string"
      ? message.content.filter((block): block is ImageContent => block.type === "image")
      : []
  )

const isScreenshot = (image: ImageContent): boolean => image.data === png && image.mimeType === "image/png"

const sawIt = "The summarizer saw the screenshot."

/**
 * The faux provider: the snapshot, two large reports, then an answer; a
 * summary request is answered with whether it showed the screenshot. Every
 * request's context is kept.
 */
const scriptedRun = () => {
  const faux = registerFauxProvider({ tokenSize: { min: 64, max: 64 } })
  const contexts: Array<Context> = []
  let steps = 0
  const respond = (context: Context): AssistantMessage => {
    contexts.push({
      ...(context.systemPrompt === undefined ? {} : { systemPrompt: context.systemPrompt }),
      messages: structuredClone(context.messages)
    })
    if (isSummaryRequest(context)) {
      // A later summary builds on the previous one, which it carries: what an earlier request saw is kept.
      const saw = images(context).some(isScreenshot) || JSON.stringify(context.messages).includes(sawIt)
      return fauxAssistantMessage(saw ? sawIt : "No screenshot was shown.")
    }
    steps++
    const call = (name: string, args: Record<string, unknown>) =>
      fauxAssistantMessage(fauxToolCall(name, args, { id: `tool:${steps}:x` }), { stopReason: "toolUse" })
    return steps === 1
      ? call("snapshot", {})
      : steps <= 3
        ? call("produce", { size: 6_000, fill: `r${steps}-` })
        : fauxAssistantMessage("The page fails; the reports are filler.")
  }
  faux.setResponses(Array.from({ length: 20 }, () => respond))
  return { faux, contexts }
}

/**
 * Deliberately broken wiring: a stream function that feeds summary requests
 * the text rendering alone (their image blocks dropped, as summary requests
 * were before; this task has no image of its own).
 */
const textOnly: StreamFunction = (model, context, options) =>
  streamSimple(
    model,
    isSummaryRequest(context)
      ? {
          ...context,
          messages: context.messages.map((message) =>
            message.role === "user" && typeof message.content !== "string"
              ? { ...message, content: message.content.filter((block) => block.type !== "image") }
              : message
          )
        }
      : context,
    options
  )

const run = (broken: boolean) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, policy)
      const tessera = yield* TesseraPi.make(binding, broken ? { streamFn: textOnly } : {})
      const script = scriptedRun()
      const agent = new Agent({
        initialState: { systemPrompt, model: script.faux.getModel(), tools: [snapshot, produce] },
        ...tessera.agentOptions
      })
      yield* Effect.promise(() => agent.prompt(taskText))
      script.faux.unregister()
      assert.include(script.faux.getModel().input, "image", "the faux summary model takes images")
      return script.contexts
    })
  )

/**
 * What is wrong with the run: exactly one summary request (the one covering
 * the snapshot's round) carries the screenshot, once, as an image block, and
 * its history text the placeholder; the summary must come from seeing it.
 */
const runProblems = (contexts: ReadonlyArray<Context>): Array<string> => {
  const problems: Array<string> = []
  const summaries = contexts.filter(isSummaryRequest)
  if (summaries.length === 0) return ["no summary request"]
  const carrying = summaries.filter((context) => images(context).some(isScreenshot))
  if (carrying.length !== 1) problems.push(`${carrying.length} summary requests carry the screenshot, expected 1`)
  const covering = summaries.find((context) => JSON.stringify(context.messages).includes("[media image/png]"))
  if (covering === undefined) problems.push("no summary request holds the placeholder [media image/png]")
  else if (images(covering).filter(isScreenshot).length !== 1) {
    problems.push("the request holding the placeholder does not carry the screenshot once")
  }
  const last = contexts.filter((context) => !isSummaryRequest(context)).at(-1)
  if (!JSON.stringify(last?.messages).includes(sawIt)) {
    problems.push("the summary does not come from seeing it")
  }
  return problems
}

describe("TesseraPi summary requests carry the summarized history's media", () => {
  it("pi_summary_history_media: a tool's screenshot in the summarized history reaches the summary request as an image block, same bytes and media type, beside its [media image/png] placeholder", async () => {
    const contexts = await run(false)
    const agentSaw = contexts.filter((context) => !isSummaryRequest(context)).some((c) => images(c).some(isScreenshot))
    assert.isTrue(agentSaw, "the agent's own request carried the screenshot before it was summarized")
    assert.deepStrictEqual(runProblems(contexts), [])
  })

  it("negative control: a summarizer fed only the text rendering gets no image", async () => {
    const problems = runProblems(await run(true))
    assert.include(problems, "0 summary requests carry the screenshot, expected 1")
    assert.include(problems, "the summary does not come from seeing it")
  })
})
