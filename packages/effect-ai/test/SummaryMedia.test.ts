/**
 * A summary request `TesseraLanguageModel` sends carries the task as the
 * caller's prompt gave it: the task's image reaches the provider as a
 * native file part (same bytes, same media type, as in the agent's own
 * requests), never as the `[file image/png]` text that stands for it in
 * Tessera's history.
 */
import { assert, describe, it } from "@effect/vitest"
import { TesseraLanguageModel } from "@tessera/effect-ai"
import { Compaction, History, Model } from "@tessera/runtime"
import { Effect, Layer, Stream } from "effect"
import { LanguageModel, Prompt, type Response } from "effect/ai"
import * as fc from "fast-check"
// The conversion is internal (the package blocks `./internal/*`); the test reaches it by path.
import { partsToPrompt, toHistory } from "../src/internal/prompt.js"
import { answer, bindTask, callTool, inWorld, streamed, Tools, taskText, toolsLayer } from "./support/world.ts"

/** A 1x1 transparent PNG. */
const png = Uint8Array.from(
  Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "base64"
  )
)

const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })

const isSummaryPrompt = (prompt: Prompt.Prompt): boolean => {
  const first = prompt.content[0]
  return first?.role === "system" && first.content === Compaction.summaryInstruction
}

const fileParts = (prompt: Prompt.Prompt): Array<Prompt.FilePart> =>
  prompt.content.flatMap((message) =>
    message.role === "user" ? message.content.filter((part): part is Prompt.FilePart => part.type === "file") : []
  )

/** A file part's data as bytes (raw, or base64); none for a URL. */
const bytesOf = (data: Prompt.FilePart["data"]): Uint8Array | undefined =>
  data instanceof URL ? undefined : typeof data === "string" ? Uint8Array.from(Buffer.from(data, "base64")) : data

/**
 * What is wrong with a summary prompt's media: the task's file must be there
 * as a native file part with `bytes` and `mediaType`, exactly as the agent's
 * own request carried it, and its text stand-in nowhere.
 */
const mediaProblems = (
  summary: Prompt.Prompt,
  turn: Prompt.Prompt,
  bytes: Uint8Array,
  mediaType: string
): Array<string> => {
  const problems: Array<string> = []
  const files = fileParts(summary)
  if (files.length !== 1) problems.push(`${files.length} file parts in the summary request, expected 1`)
  const file = files[0]
  if (file !== undefined) {
    if (file.mediaType !== mediaType) problems.push(`media type ${file.mediaType}, expected ${mediaType}`)
    const sent = bytesOf(file.data)
    if (sent === undefined || Buffer.compare(Buffer.from(sent), Buffer.from(bytes)) !== 0) {
      problems.push("the file's bytes differ from the task's")
    }
    try {
      assert.deepStrictEqual(file, fileParts(turn)[0])
    } catch {
      problems.push("the file part differs from the one the agent's own request carried")
    }
  }
  const stand = `[file ${mediaType}]`
  if (JSON.stringify(summary.content).includes(stand)) problems.push(`the summary request holds the text ${stand}`)
  return problems
}

/**
 * Deliberately broken wiring, when `broken`: the provider re-renders each
 * summary request the way the adapter rendered it before (its parts read as
 * a history, files made the text stand-ins the conversion once made of
 * them, and rendered without the prompt's origins), which turns the task's
 * file into its text stand-in.
 */
const flattened = (prompt: Prompt.Prompt): Prompt.Prompt =>
  partsToPrompt(
    History.toParts(toHistory(prompt).history).map((part) =>
      part._tag === "Media" ? Model.text(part.role, `[file ${part.mediaType}]`) : part
    )
  )

const provider = (broken: boolean) => {
  const summaries: Array<Prompt.Prompt> = []
  const turns: Array<Prompt.Prompt> = []
  const respond = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
    if (isSummaryPrompt(options.prompt)) {
      summaries.push(broken ? flattened(options.prompt) : options.prompt)
      return answer(`summary number ${summaries.length}: the reports so far are filler`)
    }
    turns.push(options.prompt)
    return turns.length <= 2 ? callTool(`call-${turns.length}`, 6_000, `r${turns.length}-`) : answer("done")
  }
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) => Effect.sync(() => respond(options)),
      streamText: (options) => Stream.suspend(() => Stream.fromIterable(streamed(respond(options))))
    })
  )
  return { layer, summaries, turns }
}

/** The task (text and one file), two large tool results, then an answer: the third step compacts. */
const compactWithFile = (bytes: Uint8Array, mediaType: string, broken: boolean) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, policy)
      const model = provider(broken)
      const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
      let prompt = Prompt.make([
        {
          role: "user",
          content: [
            { type: "text", text: taskText },
            { type: "file", mediaType, data: bytes }
          ]
        }
      ])
      for (let step = 0; step < 6; step++) {
        const response = yield* wrapped.languageModel.generateText({ prompt, toolkit: Tools })
        prompt = Prompt.concat(prompt, Prompt.fromResponseParts(response.content))
        if (response.toolCalls.length === 0) break
      }
      return { summaries: model.summaries, turns: model.turns }
    }).pipe(Effect.provide(toolsLayer))
  )

const problemsOf = async (bytes: Uint8Array, mediaType: string, broken: boolean) => {
  const { summaries, turns } = await compactWithFile(bytes, mediaType, broken)
  assert.isAtLeast(summaries.length, 1, "the task compacted")
  const turn = turns[0]
  assert.isDefined(turn)
  return summaries.flatMap((summary) => mediaProblems(summary, turn as Prompt.Prompt, bytes, mediaType))
}

describe("TesseraLanguageModel summary requests keep media", () => {
  it("effect_ai_summary_media: the task's PNG reaches the summary request as a native file part, same bytes and media type, no [file image/png] text", async () => {
    assert.deepStrictEqual(await problemsOf(png, "image/png", false), [])
  })

  it("effect_ai_summary_media_any: any task file (bytes, media type) reaches the summary request as the same file part", async () => {
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
