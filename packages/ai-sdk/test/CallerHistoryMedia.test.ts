/**
 * An image the caller's own `generateText` loop carries in its history (a
 * later user message's file, or a tool's image returned through
 * `toModelOutput`) reaches the summary request that covers it as a native
 * file part, the very part the caller's prompt held (same bytes, same media
 * type), beside the `[media image/png]` placeholder of the history text;
 * the agent's own requests still carry it exactly where the caller put it.
 */
import type {
  LanguageModelV4FilePart,
  LanguageModelV4Message,
  LanguageModelV4Middleware,
  LanguageModelV4Prompt
} from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { Compaction, History, Model } from "@tessera/runtime"
import { generateText, jsonSchema, type ModelMessage, stepCountIs, tool, wrapLanguageModel } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { Effect } from "effect"
import * as fc from "fast-check"
// The conversion is internal (the package blocks `./internal/*`); the test reaches it by path.
import { toHistory, toPrompt } from "../src/internal/prompt.js"
import { answer, bindTask, callTool, inWorld, journalText, produce, taskText } from "./support/world.ts"

/** A 1x1 transparent PNG. */
const png = Uint8Array.from(
  Buffer.from(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
    "base64"
  )
)

const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })
/** Never reached by these loops: no summary, so no staged file's path (the store's own random id) in any request. */
const roomy = Compaction.threshold({ measure: "bytes", limit: 1_000_000, keepRecent: 0, pieceLimit: 100_000 })

type Where = "user" | "tool"

const isSummaryPrompt = (prompt: LanguageModelV4Prompt): boolean => {
  const first = prompt[0]
  return first?.role === "system" && first.content === Compaction.summaryInstruction
}

type FileItem = Pick<LanguageModelV4FilePart, "data" | "mediaType">

/** The raw bytes of a file's data (`{ type: "data" }`: bytes or base64); none for a URL or a reference. */
const bytesOf = (data: LanguageModelV4FilePart["data"]): Uint8Array | undefined => {
  if (data.type !== "data") return undefined
  return typeof data.data === "string" ? Uint8Array.from(Buffer.from(data.data, "base64")) : data.data
}

const sameBytes = (file: FileItem, bytes: Uint8Array): boolean => {
  const sent = bytesOf(file.data)
  return sent !== undefined && Buffer.compare(Buffer.from(sent), Buffer.from(bytes)) === 0
}

const userFiles = (prompt: LanguageModelV4Prompt): Array<LanguageModelV4FilePart> =>
  prompt.flatMap((message) =>
    message.role === "user"
      ? message.content.filter((part): part is LanguageModelV4FilePart => part.type === "file")
      : []
  )

/** The files inside the tool results of a prompt (a `content` output's file items). */
const resultFiles = (prompt: LanguageModelV4Prompt): Array<FileItem> =>
  prompt.flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) =>
          part.type === "tool-result" && part.output.type === "content"
            ? part.output.value.filter((item): item is Extract<typeof item, { type: "file" }> => item.type === "file")
            : []
        )
      : []
  )

/** The caller's own part for the image, as the agent's first request carrying it held it. */
const callerPart = (turns: ReadonlyArray<LanguageModelV4Prompt>, where: Where): FileItem | undefined => {
  for (const turn of turns) {
    const found = where === "user" ? userFiles(turn)[0] : resultFiles(turn)[0]
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * What is wrong with the loop's requests: the summary request covering the
 * image holds it once, as a native user file part equal to the caller's own
 * (same bytes and media type), with the `[media image/png]` placeholder in
 * its history text and no text stand-in; the agent's requests carry it only
 * where the caller put it (a tool's image inside its result, never beside).
 */
const problemsOf = (
  where: Where,
  summaries: ReadonlyArray<LanguageModelV4Prompt>,
  turns: ReadonlyArray<LanguageModelV4Prompt>,
  bytes: Uint8Array
): Array<string> => {
  const problems: Array<string> = []
  const own = callerPart(turns, where)
  if (own === undefined) return ["no request of the agent carried the image"]
  const covering = summaries.filter((summary) => JSON.stringify(summary).includes("[media image/png]"))
  if (covering.length !== 1) problems.push(`${covering.length} summary requests cover the image, expected 1`)
  for (const summary of summaries) {
    if (JSON.stringify(summary).includes("[file image/png]")) problems.push("a summary request holds [file image/png]")
  }
  const summary = covering[0] ?? summaries[0]
  const files = summary === undefined ? [] : userFiles(summary)
  if (files.length !== 1) problems.push(`${files.length} file parts in the summary request, expected 1`)
  const file = files[0]
  if (file !== undefined) {
    if (file.mediaType !== "image/png") problems.push(`media type ${file.mediaType}, expected image/png`)
    if (!sameBytes(file, bytes)) problems.push("the file's bytes differ from the caller's")
    try {
      assert.deepStrictEqual(file, own)
    } catch {
      problems.push("the file part differs from the caller's own")
    }
  }
  if (where === "tool") {
    for (const turn of turns) {
      if (userFiles(turn).length > 0) problems.push("an agent request carries the tool's image beside its result")
    }
  }
  return problems
}

/**
 * Deliberately broken wiring: summary requests re-rendered the way the
 * adapters converted a caller's prompt before (files as their text
 * stand-ins, rendered without the prompt's origins).
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

const screenshotCall = (id: string) => ({
  content: [{ type: "tool-call" as const, toolCallId: id, toolName: "screenshot", input: JSON.stringify({}) }],
  finishReason: { unified: "tool-calls" as const, raw: undefined },
  usage: answer("").usage,
  warnings: []
})

/**
 * The caller's loop: with `where: "user"`, a second user message holds the
 * image; with `where: "tool"`, the model first calls `screenshot`, whose
 * `toModelOutput` returns the image. Two large reports follow, and the
 * history is summarized.
 */
const loop = (where: Where, bytes: Uint8Array, broken: boolean, under = policy) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, under)
      const tessera = yield* TesseraMiddleware.make(binding)
      const summaries: Array<LanguageModelV4Prompt> = []
      const turns: Array<LanguageModelV4Prompt> = []
      const script = where === "user" ? ["report", "report"] : ["screenshot", "report", "report"]
      const mock = new MockLanguageModelV4({
        doGenerate: async ({ prompt }) => {
          if (isSummaryPrompt(prompt)) {
            summaries.push(prompt)
            return answer(`summary number ${summaries.length}`)
          }
          turns.push(prompt)
          const next = script[turns.length - 1]
          return next === "screenshot"
            ? screenshotCall("shot-1")
            : next === "report"
              ? callTool(`call-${turns.length}`, 6_000, `r${turns.length}-`)
              : answer("done")
        }
      })
      const screenshot = tool({
        description: "Takes a screenshot of the failing page",
        inputSchema: jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
        execute: async () => "captured",
        toModelOutput: () => ({
          type: "content",
          value: [
            { type: "text", text: "The failing page:" },
            { type: "file", data: { type: "data", data: bytes }, mediaType: "image/png" }
          ]
        })
      })
      const start: Array<ModelMessage> =
        where === "user"
          ? [
              { role: "user", content: taskText },
              { role: "assistant", content: "Please send me a screenshot of the failing page." },
              {
                role: "user",
                content: [
                  { type: "text", text: "Here is the failing page:" },
                  { type: "file", data: bytes, mediaType: "image/png" }
                ]
              }
            ]
          : [{ role: "user", content: taskText }]
      const provider = broken ? wrapLanguageModel({ model: mock, middleware: flattening }) : mock
      yield* Effect.promise(() =>
        generateText({
          model: wrapLanguageModel({ model: provider, middleware: tessera.middleware }),
          tools: { produce, screenshot },
          messages: start,
          stopWhen: stepCountIs(6)
        })
      )
      const dispatched = journalText(world)
        .split("\n")
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as { _tag: string; size?: number; sha256?: string })
        .filter((entry) => entry._tag === "RequestDispatched")
        .map((entry) => `${entry.size} ${entry.sha256}`)
      return { summaries, turns, dispatched }
    })
  )

const check = async (where: Where, bytes: Uint8Array, broken: boolean) => {
  const { summaries, turns } = await loop(where, bytes, broken)
  assert.isAtLeast(summaries.length, 1, "the history was summarized")
  return problemsOf(where, summaries, turns, bytes)
}

describe("TesseraMiddleware summary requests carry the caller's history media", () => {
  it("ai_sdk_caller_history_media: a later user message's PNG reaches the summary request as the caller's own file part, same bytes", async () => {
    assert.deepStrictEqual(await check("user", png, false), [])
  })

  it("ai_sdk_caller_tool_media: a tool's PNG (toModelOutput) reaches the summary request as the caller's own file item, same bytes, and stays inside its result in the agent's requests", async () => {
    assert.deepStrictEqual(await check("tool", png, false), [])
  })

  it("ai_sdk_caller_history_media_any: any image bytes, in a user message or a tool result, reach the summary request unchanged", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 48 }),
        fc.constantFrom<Where>("user", "tool"),
        async (bytes, where) => {
          assert.deepStrictEqual(await check(where, bytes, false), [])
        }
      ),
      { numRuns: 4 }
    )
  })

  it("negative control: summary requests flattened as the old conversion did carry no file part", async () => {
    for (const where of ["user", "tool"] as const) {
      const problems = await check(where, png, true)
      assert.include(problems, "0 file parts in the summary request, expected 1")
      assert.include(problems, "a summary request holds [file image/png]")
    }
  })

  it("ai_sdk_caller_media_digests_deterministic: the same loop journals the same RequestDispatched sizes and digests; other image bytes change them", async () => {
    for (const where of ["user", "tool"] as const) {
      const first = await loop(where, png, false, roomy)
      const again = await loop(where, png, false, roomy)
      assert.strictEqual(first.summaries.length, 0)
      assert.isAtLeast(first.dispatched.length, 3)
      assert.deepStrictEqual(again.dispatched, first.dispatched)
      // Control: the digests see the image, so the check above could fail.
      const other = await loop(where, Uint8Array.from([...png].reverse()), false, roomy)
      assert.notDeepEqual(other.dispatched, first.dispatched)
    }
  })
})

const toolResultWithImage = (id: string, bytes: Uint8Array | string): LanguageModelV4Message => ({
  role: "tool",
  content: [
    {
      type: "tool-result",
      toolCallId: id,
      toolName: "screenshot",
      output: {
        type: "content",
        value: [
          { type: "text", text: "page" },
          { type: "file", data: { type: "data", data: bytes }, mediaType: "image/png" }
        ]
      }
    }
  ]
})

/** Prompts with images in user messages and in tool results (bytes, or base64), some given by URL. */
const prompts: fc.Arbitrary<LanguageModelV4Prompt> = fc
  .array(
    fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 8 }).map(
        (bytes): LanguageModelV4Message => ({
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type: "file", data: { type: "data", data: bytes }, mediaType: "image/png" },
            { type: "file", data: { type: "url", url: new URL("https://example.test/a.png") }, mediaType: "image/png" }
          ]
        })
      ),
      fc
        .tuple(fc.stringMatching(/^[a-z0-9]{1,6}$/), fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.boolean())
        .map(
          ([id, bytes, base64]): Array<LanguageModelV4Message> => [
            { role: "assistant", content: [{ type: "tool-call", toolCallId: id, toolName: "screenshot", input: {} }] },
            toolResultWithImage(id, base64 ? Buffer.from(bytes).toString("base64") : bytes)
          ]
        )
    ),
    { maxLength: 5 }
  )
  .map((rest) => [{ role: "user", content: [{ type: "text", text: "task" }] }, ...rest.flat()])

describe("prompt conversion of the caller's media", () => {
  it("ai_sdk_caller_media_round_trip: a prompt with inline images converts to Media parts and comes back as the same messages and parts", () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const { history, origins } = toHistory(prompt)
        const parts = History.toParts(history)
        const inline = prompt.reduce(
          (count, message) =>
            count +
            userFiles([message]).filter((file) => file.data.type === "data").length +
            resultFiles([message]).length,
          0
        )
        assert.strictEqual(parts.filter((part) => part._tag === "Media").length, inline)
        assert.deepStrictEqual(toPrompt(parts, origins), prompt)
      }),
      { numRuns: 200 }
    )
  })

  it("negative control: a tool result's image not tied to its result is sent twice", () => {
    const prompt: LanguageModelV4Prompt = [
      { role: "user", content: [{ type: "text", text: "task" }] },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "screenshot", input: {} }] },
      toolResultWithImage("c1", png)
    ]
    const { history, origins } = toHistory(prompt)
    const parts = History.toParts(history)
    // Broken wiring: the same origins, with each image's tie to its result dropped.
    const untied = new WeakMap<Model.Part, NonNullable<ReturnType<typeof origins.get>>>()
    for (const part of parts) {
      const origin = origins.get(part)
      if (origin !== undefined) untied.set(part, { role: origin.role, part: origin.part, message: origin.message })
    }
    assert.deepStrictEqual(toPrompt(parts, origins), prompt)
    assert.notDeepEqual(toPrompt(parts, untied), prompt)
  })
})
