/**
 * Issue 35 through `AiSdkModel`: an image in the summarized history (not the
 * task) reaches the summary request on the wire as the provider's own image
 * block, same bytes and media type, beside the history text that keeps its
 * `[media image/png]` placeholder. End to end: Tessera's executor on a
 * `LocalHarness` task, real AI SDK providers (OpenAI-compatible and
 * Anthropic) against loopback servers speaking their wire formats.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createAnthropic } from "@ai-sdk/anthropic"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import type { LanguageModelV4 } from "@ai-sdk/provider"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { AiSdkModel } from "@tessera/ai-sdk"
import { Ids } from "@tessera/core"
import { LocalHarness, NodeDurableFiles } from "@tessera/node"
import { Compaction, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Layer, Schedule, Schema } from "effect"
import * as Loopback from "./support/loopback.ts"

type Format = "openai" | "anthropic"

const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const taskId = Schema.decodeUnknownSync(Ids.TaskId)

/** A 1x1 transparent PNG. */
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const providerModel = (format: Format, baseUrl: string): LanguageModelV4 =>
  format === "openai"
    ? createOpenAICompatible({ name: "loopback", baseURL: baseUrl, apiKey: "test-key", includeUsage: true }).chatModel(
        "loopback-model"
      )
    : createAnthropic({ baseURL: baseUrl, apiKey: "test-key" }).languageModel("claude-loopback")

const produce = Tool.make({
  name: "produce",
  description: "Produces a report of the given size, made of one repeated letter",
  input: Schema.Struct({ size: Schema.Number, fill: Schema.String }),
  handler: ({ fill, size }) => Effect.succeed(fill.repeat(size))
})
const tools = Tool.registry(produce)
const taskParts = [Model.text("user", "Produce the two reports and tell me what they say.")]
const shot: Model.MediaPart = {
  _tag: "Media",
  role: "user",
  mediaType: "image/png",
  data: { _tag: "Base64", base64: png },
  providerOptions: {}
}
/** The task, then (history, not task) the user's screenshot: summarized at step 3 with the first report. */
const start = History.append(History.make(taskParts), [Model.text("user", "Here is the failing page:"), shot])
const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 500, pieceLimit: 100_000 })

/** The images a request body carries, in each wire format's own image block. */
const imagesOn = (format: Format, body: Loopback.Received["body"]): Array<{ mediaType: string; data: string }> => {
  const messages = (body.messages ?? []) as ReadonlyArray<{ readonly content?: unknown }>
  return messages.flatMap((message) =>
    (Array.isArray(message.content) ? (message.content as ReadonlyArray<Record<string, unknown>>) : []).flatMap(
      (block) => {
        if (format === "anthropic") {
          const source = block.source as { type?: string; media_type?: string; data?: string } | undefined
          return block.type === "image" && source?.type === "base64"
            ? [{ mediaType: source.media_type ?? "", data: source.data ?? "" }]
            : []
        }
        const url = (block.image_url as { url?: string } | undefined)?.url ?? ""
        const found = /^data:([^;]+);base64,(.*)$/s.exec(url)
        return block.type === "image_url" && found !== null ? [{ mediaType: found[1] ?? "", data: found[2] ?? "" }] : []
      }
    )
  )
}

/** The summarizer says whether it saw the image; the turn calls for two reports, then answers. */
const script =
  (format: Format): Loopback.Script =>
  (body) => {
    const usage = { input: 100, output: 10 }
    if (Loopback.isSummary(body)) {
      const saw = imagesOn(format, body).some((image) => image.data === png)
      return { _tag: "Reply", text: saw ? "The summarizer saw the screenshot." : "No screenshot was shown.", usage }
    }
    const asked = JSON.stringify(body)
    const call = (id: string, fill: string) => ({ id, name: "produce", input: { size: 3_000, fill } })
    return asked.includes("bbbbbbbbbb")
      ? { _tag: "Reply", text: "Both reports are filler.", usage }
      : asked.includes("aaaaaaaaaa")
        ? { _tag: "Reply", toolCalls: [call("call_b", "b")], usage }
        : { _tag: "Reply", toolCalls: [call("call_a", "a")], usage }
  }

/**
 * Deliberately broken wiring: a model that feeds summary requests the text
 * rendering alone (the history's media parts dropped, as summary requests
 * were before; this task has none of its own).
 */
const textOnly = (model: Model.Model["Service"]): Model.Model["Service"] => {
  const strip = (request: Model.ModelRequest): Model.ModelRequest =>
    Compaction.isSummaryRequest(request)
      ? { ...request, parts: request.parts.filter((part) => part._tag !== "Media") }
      : request
  return Model.Model.of({
    generate: (request) => model.generate(strip(request)),
    stream: (request) => model.stream(strip(request))
  })
}

const platform = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer)

/** The turn on a loopback server speaking `format`: every request body the server received. */
const turn = async (format: Format, broken: boolean) => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-history-media-"))
  const server = await Loopback.start(format, script(format))
  try {
    const program = Effect.gen(function* () {
      const harness = yield* LocalHarness.open({ stateDir, namespace: "loopback", agent })
      const stock = AiSdkModel.make(providerModel(format, server.baseUrl), { retry: Schedule.recurs(0) })
      const model = Layer.succeed(Model.Model)(broken ? textOnly(stock) : stock)
      yield* harness.withTask(
        taskId(`${format}-history-media`),
        (binding) => TaskExecution.runTurn(binding, start, { tools, maxSteps: 6 }).pipe(Effect.provide(model)),
        { policy }
      )
      return server.received.map((received) => received.body)
    })
    return await Effect.runPromise(
      Effect.scoped(program).pipe(Effect.provide(platform)) as Effect.Effect<Array<Loopback.Received["body"]>>
    )
  } finally {
    await server.close()
    fs.rmSync(stateDir, { recursive: true, force: true })
  }
}

/**
 * What is wrong with the turn's wire: its one summary request must carry the
 * history's PNG once, as the provider's image block (same bytes and media
 * type), and the history text its placeholder; the summary must come from
 * seeing it.
 */
const wireProblems = (format: Format, bodies: ReadonlyArray<Loopback.Received["body"]>): Array<string> => {
  const problems: Array<string> = []
  const summaries = bodies.filter(Loopback.isSummary)
  if (summaries.length !== 1) return [`${summaries.length} summary requests, expected 1`]
  const summary = summaries[0] as Loopback.Received["body"]
  const images = imagesOn(format, summary)
  if (images.length !== 1) problems.push(`${images.length} images in the summary request, expected 1`)
  const image = images[0]
  if (image !== undefined && (image.data !== png || image.mediaType !== "image/png")) {
    problems.push("the image differs from the history's")
  }
  if (!JSON.stringify(summary).includes("[media image/png]")) problems.push("the placeholder [media image/png] is gone")
  const last = JSON.stringify(bodies.at(-1))
  if (!last.includes("The summarizer saw the screenshot.")) problems.push("the summary does not come from seeing it")
  return problems
}

for (const format of ["openai", "anthropic"] as const) {
  describe(`AiSdkModel summary requests on the ${format} wire`, () => {
    it(`${format}_summary_history_media: the history's PNG reaches the summary request as the provider's image block, same bytes and media type, beside its [media image/png] placeholder`, async () => {
      const bodies = await turn(format, false)
      assert.strictEqual(imagesOn(format, bodies[0] ?? {}).length, 1, "the agent's first request carried the image")
      assert.deepStrictEqual(wireProblems(format, bodies), [])
    }, 30_000)

    it(`negative control (${format}): a summarizer fed only the text rendering gets no image`, async () => {
      const problems = wireProblems(format, await turn(format, true))
      assert.include(problems, "0 images in the summary request, expected 1")
      assert.include(problems, "the summary does not come from seeing it")
    }, 30_000)
  })
}
