/**
 * A summary request the middleware sends carries the task as the caller's
 * prompt gave it: the task's image reaches the provider as a native file
 * part (same bytes, same media type, as in the agent's own requests), never
 * as the `[file image/png]` text that stands for it in Tessera's history.
 */
import type { LanguageModelV4FilePart, LanguageModelV4Middleware, LanguageModelV4Prompt } from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { Compaction, History, Model } from "@tessera/runtime"
import { generateText, type ModelMessage, stepCountIs, wrapLanguageModel } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { Effect } from "effect"
import * as fc from "fast-check"
// The conversion is internal (the package blocks `./internal/*`); the test reaches it by path.
import { toHistory, toPrompt } from "../src/internal/prompt.js"
import { answer, bindTask, callTool, inWorld, produce, taskText } from "./support/world.ts"

/** A 1x1 transparent PNG. */
const png = Uint8Array.from(
  Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "base64"
  )
)

const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })

const isSummaryPrompt = (prompt: LanguageModelV4Prompt): boolean => {
  const first = prompt[0]
  return first?.role === "system" && first.content === Compaction.summaryInstruction
}

/** The raw bytes of a file part's data (`{ type: "data" }`: bytes or base64); none for a URL or a reference. */
const bytesOf = (data: LanguageModelV4FilePart["data"]): Uint8Array | undefined => {
  if (data.type !== "data") return undefined
  return typeof data.data === "string" ? Uint8Array.from(Buffer.from(data.data, "base64")) : data.data
}

const fileParts = (prompt: LanguageModelV4Prompt): Array<LanguageModelV4FilePart> =>
  prompt.flatMap((message) =>
    message.role === "user"
      ? message.content.filter((part): part is LanguageModelV4FilePart => part.type === "file")
      : []
  )

/**
 * What is wrong with a summary prompt's media: the task's file must be there
 * as a native file part with `bytes` and `mediaType`, exactly as the agent's
 * own request carried it, and its text stand-in nowhere.
 */
const mediaProblems = (
  summary: LanguageModelV4Prompt,
  turn: LanguageModelV4Prompt,
  bytes: Uint8Array,
  mediaType: string
): Array<string> => {
  const problems: Array<string> = []
  const files = fileParts(summary)
  const own = fileParts(turn)
  if (files.length !== 1) problems.push(`${files.length} file parts in the summary request, expected 1`)
  const file = files[0]
  if (file !== undefined) {
    if (file.mediaType !== mediaType) problems.push(`media type ${file.mediaType}, expected ${mediaType}`)
    const sent = bytesOf(file.data)
    if (sent === undefined || Buffer.compare(Buffer.from(sent), Buffer.from(bytes)) !== 0) {
      problems.push("the file's bytes differ from the task's")
    }
    try {
      assert.deepStrictEqual(file, own[0])
    } catch {
      problems.push("the file part differs from the one the agent's own request carried")
    }
  }
  const stand = `[file ${mediaType}]`
  if (JSON.stringify(summary).includes(stand)) problems.push(`the summary request holds the text ${stand}`)
  return problems
}

/**
 * Deliberately broken wiring: summary requests re-rendered the way the
 * middleware rendered them before (its parts converted to a history, files
 * made the text stand-ins the conversion once made of them, and rendered
 * without the prompt's origins), which turns the task's file into its text
 * stand-in.
 */
const flattening: LanguageModelV4Middleware = {
  specificationVersion: "v4",
  transformParams: async ({ params }) =>
    isSummaryPrompt(params.prompt)
      ? {
          ...params,
          prompt: toPrompt(
            History.toParts(toHistory(params.prompt).history).map((part) =>
              part._tag === "Media" ? Model.text(part.role, `[file ${part.mediaType}]`) : part
            ),
            new WeakMap()
          )
        }
      : params
}

/** The task (text and one file), two large tool results, then an answer: the third step compacts. */
const compactWithFile = (bytes: Uint8Array, mediaType: string, broken: boolean) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, policy)
      const tessera = yield* TesseraMiddleware.make(binding)
      const summaries: Array<LanguageModelV4Prompt> = []
      const turns: Array<LanguageModelV4Prompt> = []
      const mock = new MockLanguageModelV4({
        doGenerate: async ({ prompt }) => {
          if (isSummaryPrompt(prompt)) {
            summaries.push(prompt)
            return answer(`summary number ${summaries.length}: the reports so far are filler`)
          }
          turns.push(prompt)
          return turns.length <= 2 ? callTool(`call-${turns.length}`, 6_000, `r${turns.length}-`) : answer("done")
        }
      })
      const provider = broken ? wrapLanguageModel({ model: mock, middleware: flattening }) : mock
      const start: Array<ModelMessage> = [
        {
          role: "user",
          content: [
            { type: "text", text: taskText },
            { type: "file", data: bytes, mediaType }
          ]
        }
      ]
      yield* Effect.promise(() =>
        generateText({
          model: wrapLanguageModel({ model: provider, middleware: tessera.middleware }),
          tools: { produce },
          messages: start,
          stopWhen: stepCountIs(6)
        })
      )
      return { summaries, turns }
    })
  )

const problemsOf = async (bytes: Uint8Array, mediaType: string, broken: boolean) => {
  const { summaries, turns } = await compactWithFile(bytes, mediaType, broken)
  assert.isAtLeast(summaries.length, 1, "the task compacted")
  return summaries.flatMap((summary) => mediaProblems(summary, turns[0] ?? [], bytes, mediaType))
}

describe("TesseraMiddleware summary requests keep media", () => {
  it("ai_sdk_summary_media: the task's PNG reaches the summary request as a native file part, same bytes and media type, no [file image/png] text", async () => {
    assert.deepStrictEqual(await problemsOf(png, "image/png", false), [])
  })

  it("ai_sdk_summary_media_any: any task file (bytes, media type) reaches the summary request as the same file part", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 48 }),
        fc.constantFrom("image/png", "image/jpeg", "application/pdf"),
        async (bytes, mediaType) => {
          assert.deepStrictEqual(await problemsOf(bytes, mediaType, false), [])
        }
      ),
      { numRuns: 5 }
    )
  })

  it("negative control: summary requests rendered as before (without the prompt's origins) fail the check", async () => {
    const problems = await problemsOf(png, "image/png", true)
    assert.include(problems, "the summary request holds the text [file image/png]")
    assert.include(problems, "0 file parts in the summary request, expected 1")
  })
})
