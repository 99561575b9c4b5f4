/**
 * Issue 35 through `EffectAiModel`: an image in the summarized history (not
 * the task) reaches the summary request's `Prompt` as a native file part,
 * same bytes and media type, beside the history text that keeps its
 * `[media image/png]` placeholder. A turn through `TaskExecution` on an
 * Effect AI `LanguageModel` that records every prompt it is sent.
 */
import { assert, describe, it } from "@effect/vitest"
import { EffectAiModel } from "@tessera/effect-ai"
import { Compaction, History, Model, TaskExecution, Tool as TesseraTool } from "@tessera/runtime"
import { Effect, Layer, Schema, Stream } from "effect"
import { LanguageModel, type Prompt, type Response } from "effect/ai"
import { answer, bindTask, callTool, inWorld, isSummaryRequest, streamed, taskText } from "./support/world.ts"

/** A 1x1 transparent PNG. */
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const produce = TesseraTool.make({
  name: "produce",
  description: "Produces a report of the given size, made of one repeated letter",
  input: Schema.Struct({ size: Schema.Number, fill: Schema.String }),
  handler: ({ fill, size }) => Effect.succeed(fill.repeat(size))
})

const shot: Model.MediaPart = {
  _tag: "Media",
  role: "user",
  mediaType: "image/png",
  data: { _tag: "Base64", base64: png },
  providerOptions: {}
}
/** The task, then (history, not task) the user's screenshot: summarized at step 3 with the first report. */
const start = History.append(History.make([Model.text("user", taskText)]), [
  Model.text("user", "Here is the failing page:"),
  shot
])
const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 500, pieceLimit: 100_000 })

/** A file part's bytes as base64 (its data is raw bytes or base64); none for a URL. */
const base64Of = (data: Prompt.FilePart["data"]): string | undefined =>
  data instanceof URL ? undefined : typeof data === "string" ? data : Buffer.from(data).toString("base64")

const imagesIn = (prompt: Prompt.Prompt): Array<Prompt.FilePart> =>
  prompt.content.flatMap((message) =>
    message.role === "user" ? message.content.filter((part): part is Prompt.FilePart => part.type === "file") : []
  )

/** A provider whose summarizer says whether it saw the image; the turn calls for two reports, then answers. */
const provider = () => {
  const prompts: Array<Prompt.Prompt> = []
  let steps = 0
  const respond = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
    prompts.push(options.prompt)
    if (isSummaryRequest(options)) {
      const saw = imagesIn(options.prompt).some((file) => base64Of(file.data) === png)
      return answer(saw ? "The summarizer saw the screenshot." : "No screenshot was shown.")
    }
    steps++
    return steps <= 2 ? callTool(`call-${steps}`, 3_000, steps === 1 ? "a" : "b") : answer("Both reports are filler.")
  }
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) => Effect.sync(() => respond(options)),
      streamText: (options) => Stream.suspend(() => Stream.fromIterable(streamed(respond(options))))
    })
  )
  return { layer, prompts }
}

/**
 * Deliberately broken wiring: a model that feeds summary requests the text
 * rendering alone (the history's media parts dropped, as summary requests
 * were before; this task has none of its own).
 */
const textOnly = Layer.effect(
  Model.Model,
  Effect.map(Effect.service(Model.Model), (model) =>
    Model.fromGenerate((request) =>
      model.generate(
        Compaction.isSummaryRequest(request)
          ? { ...request, parts: request.parts.filter((part) => part._tag !== "Media") }
          : request
      )
    )
  )
)

const turn = (broken: boolean) => {
  const served = provider()
  const stock = EffectAiModel.layer.pipe(Layer.provide(served.layer))
  const model = broken ? textOnly.pipe(Layer.provide(stock)) : stock
  return inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, policy)
      yield* TaskExecution.runTurn(binding, start, { tools: TesseraTool.registry(produce), maxSteps: 6 }).pipe(
        Effect.provide(model)
      )
      return served.prompts
    })
  )
}

/**
 * What is wrong with the turn's prompts: its one summary request must carry
 * the history's PNG once, as a file part (same bytes and media type), and the
 * history text its placeholder; the summary must come from seeing it.
 */
const promptProblems = (prompts: ReadonlyArray<Prompt.Prompt>): Array<string> => {
  const problems: Array<string> = []
  const summaries = prompts.filter((prompt) => prompt.content[0]?.role === "system")
  if (summaries.length !== 1) return [`${summaries.length} summary requests, expected 1`]
  const summary = summaries[0] as Prompt.Prompt
  const files = imagesIn(summary)
  if (files.length !== 1) problems.push(`${files.length} file parts in the summary request, expected 1`)
  const file = files[0]
  if (file !== undefined && (base64Of(file.data) !== png || file.mediaType !== "image/png")) {
    problems.push("the file part differs from the history's image")
  }
  if (!JSON.stringify(summary.content).includes("[media image/png]")) {
    problems.push("the placeholder [media image/png] is gone")
  }
  if (!JSON.stringify(prompts.at(-1)?.content).includes("The summarizer saw the screenshot.")) {
    problems.push("the summary does not come from seeing it")
  }
  return problems
}

describe("EffectAiModel summary requests carry the summarized history's media", () => {
  it("effect_ai_summary_history_media: the history's PNG reaches the summary request's prompt as a native file part, same bytes and media type, beside its [media image/png] placeholder", async () => {
    const prompts = await turn(false)
    assert.strictEqual(imagesIn(prompts[0] as Prompt.Prompt).length, 1, "the agent's first request carried the image")
    assert.deepStrictEqual(promptProblems(prompts), [])
  })

  it("negative control: a summarizer fed only the text rendering gets no image", async () => {
    const problems = promptProblems(await turn(true))
    assert.include(problems, "0 file parts in the summary request, expected 1")
    assert.include(problems, "the summary does not come from seeing it")
  })
})
