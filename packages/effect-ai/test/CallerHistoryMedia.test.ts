/**
 * An image the caller's own Effect AI loop carries in its history (a later
 * user message's file, or a tool's image returned through `toModelOutput`)
 * reaches the summary request that covers it as a native file part, the
 * very part the caller's prompt held (same bytes, same media type), beside
 * the `[media image/png]` placeholder of the history text; the agent's own
 * requests still carry it exactly where the caller put it.
 */
import { assert, describe, it } from "@effect/vitest"
import { TesseraLanguageModel } from "@tessera/effect-ai"
import { Compaction, History, Model } from "@tessera/runtime"
import { Effect, Layer, Schema, Stream } from "effect"
import { LanguageModel, Prompt, type Response, Tool, Toolkit } from "effect/ai"
import * as fc from "fast-check"
// The conversion is internal (the package blocks `./internal/*`); the test reaches it by path.
import { partsToPrompt, toHistory, toPrompt } from "../src/internal/prompt.js"
import {
  answer,
  bindTask,
  callTool,
  inWorld,
  Produce,
  requestsDispatched,
  streamed,
  taskText
} from "./support/world.ts"

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

const usage = { inputTokens: { total: 10, uncached: 10 }, outputTokens: { total: 5, text: 5 } }

const isSummaryPrompt = (prompt: Prompt.Prompt): boolean => {
  const first = prompt.content[0]
  return first?.role === "system" && first.content === Compaction.summaryInstruction
}

/** A file part's data as bytes (raw, or base64); none for a URL. */
const bytesOf = (data: Prompt.FilePart["data"]): Uint8Array | undefined =>
  data instanceof URL ? undefined : typeof data === "string" ? Uint8Array.from(Buffer.from(data, "base64")) : data

const userFiles = (prompt: Prompt.Prompt): Array<Prompt.FilePart> =>
  prompt.content.flatMap((message) =>
    message.role === "user" ? message.content.filter((part): part is Prompt.FilePart => part.type === "file") : []
  )

/** The files of the tool results of a prompt (their `modelOutput`). */
const resultFiles = (prompt: Prompt.Prompt): Array<Prompt.FilePart> =>
  prompt.content.flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) =>
          part.type === "tool-result"
            ? (part.modelOutput ?? []).filter((item): item is Prompt.FilePart => item.type === "file")
            : []
        )
      : []
  )

const callerPart = (turns: ReadonlyArray<Prompt.Prompt>, where: Where): Prompt.FilePart | undefined => {
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
  summaries: ReadonlyArray<Prompt.Prompt>,
  turns: ReadonlyArray<Prompt.Prompt>,
  bytes: Uint8Array
): Array<string> => {
  const problems: Array<string> = []
  const own = callerPart(turns, where)
  if (own === undefined) return ["no request of the agent carried the image"]
  const text = (prompt: Prompt.Prompt) => JSON.stringify(prompt.content)
  const covering = summaries.filter((summary) => text(summary).includes("[media image/png]"))
  if (covering.length !== 1) problems.push(`${covering.length} summary requests cover the image, expected 1`)
  for (const summary of summaries) {
    if (text(summary).includes("[file image/png]")) problems.push("a summary request holds [file image/png]")
  }
  const summary = covering[0] ?? summaries[0]
  const files = summary === undefined ? [] : userFiles(summary)
  if (files.length !== 1) problems.push(`${files.length} file parts in the summary request, expected 1`)
  const file = files[0]
  if (file !== undefined) {
    if (file.mediaType !== "image/png") problems.push(`media type ${file.mediaType}, expected image/png`)
    const sent = bytesOf(file.data)
    if (sent === undefined || Buffer.compare(Buffer.from(sent), Buffer.from(bytes)) !== 0) {
      problems.push("the file's bytes differ from the caller's")
    }
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
 * Deliberately broken wiring, when `broken`: the provider re-renders each
 * summary request the way the adapter converted a caller's prompt before
 * (files as their text stand-ins, rendered without the prompt's origins).
 */
const flattened = (prompt: Prompt.Prompt): Prompt.Prompt =>
  partsToPrompt(
    History.toParts(toHistory(prompt).history).map((part) =>
      part._tag === "Media" ? Model.text(part.role, `[file ${part.mediaType}]`) : part
    )
  )

const Screenshot = (bytes: Uint8Array) =>
  Tool.make("screenshot", {
    description: "Takes a screenshot of the failing page",
    parameters: Schema.Struct({}),
    success: Schema.String,
    toModelOutput: () => [
      Prompt.textPart({ text: "The failing page:" }),
      Prompt.filePart({ mediaType: "image/png", data: bytes })
    ]
  })

const provider = (where: Where, broken: boolean) => {
  const summaries: Array<Prompt.Prompt> = []
  const turns: Array<Prompt.Prompt> = []
  const script = where === "user" ? ["report", "report"] : ["screenshot", "report", "report"]
  const respond = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
    if (isSummaryPrompt(options.prompt)) {
      summaries.push(broken ? flattened(options.prompt) : options.prompt)
      return answer(`summary number ${summaries.length}`)
    }
    turns.push(options.prompt)
    const next = script[turns.length - 1]
    return next === "screenshot"
      ? [
          { type: "tool-call", id: "shot-1", name: "screenshot", params: {} },
          { type: "finish", reason: "tool-calls", usage }
        ]
      : next === "report"
        ? callTool(`call-${turns.length}`, 6_000, `r${turns.length}-`)
        : answer("done")
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

/**
 * The caller's loop: with `where: "user"`, a second user message holds the
 * image; with `where: "tool"`, the model first calls `screenshot`, whose
 * `toModelOutput` returns the image. Two large reports follow, and the
 * history is summarized (under `policy`).
 */
const loop = (where: Where, bytes: Uint8Array, broken: boolean, under = policy) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, under)
      const model = provider(where, broken)
      const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
      const tools = Toolkit.make(Produce, Screenshot(bytes))
      const handlers = tools.toLayer({
        produce: ({ fill, size }) => Effect.succeed(fill.repeat(Math.ceil(size / fill.length)).slice(0, size)),
        screenshot: () => Effect.succeed("captured")
      })
      let prompt = Prompt.make(
        where === "user"
          ? [
              { role: "user", content: taskText },
              { role: "assistant", content: "Please send me a screenshot of the failing page." },
              {
                role: "user",
                content: [
                  { type: "text", text: "Here is the failing page:" },
                  { type: "file", mediaType: "image/png", data: bytes }
                ]
              }
            ]
          : [{ role: "user", content: taskText }]
      )
      yield* Effect.gen(function* () {
        for (let step = 0; step < 6; step++) {
          const response = yield* wrapped.languageModel.generateText({ prompt, toolkit: tools })
          prompt = Prompt.concat(prompt, Prompt.fromResponseParts(response.content))
          if (response.toolCalls.length === 0) break
        }
      }).pipe(Effect.provide(handlers))
      const dispatched = (yield* requestsDispatched(world)).map((entry) => `${entry.size} ${entry.sha256}`)
      return { summaries: model.summaries, turns: model.turns, dispatched }
    })
  )

const check = async (where: Where, bytes: Uint8Array, broken: boolean) => {
  const { summaries, turns } = await loop(where, bytes, broken)
  assert.isAtLeast(summaries.length, 1, "the history was summarized")
  return problemsOf(where, summaries, turns, bytes)
}

describe("TesseraLanguageModel summary requests carry the caller's history media", () => {
  it("effect_ai_caller_history_media: a later user message's PNG reaches the summary request as the caller's own file part, same bytes", async () => {
    assert.deepStrictEqual(await check("user", png, false), [])
  })

  it("effect_ai_caller_tool_media: a tool's PNG (toModelOutput) reaches the summary request as the caller's own file part, same bytes, and stays inside its result in the agent's requests", async () => {
    assert.deepStrictEqual(await check("tool", png, false), [])
  })

  it("effect_ai_caller_history_media_any: any image bytes, in a user message or a tool result, reach the summary request unchanged", async () => {
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

  it("effect_ai_caller_media_digests_deterministic: the same loop journals the same RequestDispatched sizes and digests; other image bytes change them", async () => {
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

const file = (data: Uint8Array | string | URL) => Prompt.filePart({ mediaType: "image/png", data })

const toolResultWithImage = (id: string, data: Uint8Array | string): Prompt.Message =>
  Prompt.makeMessage("tool", {
    content: [
      Prompt.makePart("tool-result", {
        id,
        name: "screenshot",
        isFailure: false,
        result: "captured",
        modelOutput: [Prompt.textPart({ text: "page" }), file(data)],
        providerExecuted: false
      })
    ]
  })

/** Prompts with images in user messages and in tool results (bytes, or base64), some given by URL. */
const prompts: fc.Arbitrary<Prompt.Prompt> = fc
  .array(
    fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 8 }).map(
        (bytes): Array<Prompt.Message> => [
          Prompt.makeMessage("user", {
            content: [Prompt.textPart({ text: "look" }), file(bytes), file(new URL("https://example.test/a.png"))]
          })
        ]
      ),
      fc.tuple(fc.stringMatching(/^[a-z0-9]{1,6}$/), fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.boolean()).map(
        ([id, bytes, base64]): Array<Prompt.Message> => [
          Prompt.makeMessage("assistant", {
            content: [Prompt.makePart("tool-call", { id, name: "screenshot", params: {}, providerExecuted: false })]
          }),
          toolResultWithImage(id, base64 ? Buffer.from(bytes).toString("base64") : bytes)
        ]
      )
    ),
    { maxLength: 5 }
  )
  .map((rest) =>
    Prompt.fromMessages([Prompt.makeMessage("user", { content: [Prompt.textPart({ text: "task" })] }), ...rest.flat()])
  )

/** Whether two prompts hold the same messages (roles) with the very same part objects, in order. */
const sameParts = (again: Prompt.Prompt, prompt: Prompt.Prompt): boolean =>
  again.content.length === prompt.content.length &&
  again.content.every((message, index) => {
    const original = prompt.content[index]
    if (original === undefined || message.role !== original.role) return false
    if (typeof message.content === "string") return message.content === original.content
    const before = original.content as ReadonlyArray<unknown>
    return message.content.length === before.length && message.content.every((part, at) => part === before[at])
  })

describe("Effect AI prompt conversion of the caller's media", () => {
  it("effect_ai_caller_media_round_trip: a prompt with inline images converts to Media parts and comes back as the same messages and parts", () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const { history, origins } = toHistory(prompt)
        const parts = History.toParts(history)
        const inline =
          userFiles(prompt).filter((part) => !(part.data instanceof URL)).length + resultFiles(prompt).length
        assert.strictEqual(parts.filter((part) => part._tag === "Media").length, inline)
        assert.isTrue(sameParts(toPrompt(parts, origins), prompt))
      }),
      { numRuns: 200 }
    )
  })

  it("negative control: a tool result's image not tied to its result is sent twice", () => {
    const prompt = Prompt.fromMessages([
      Prompt.makeMessage("user", { content: [Prompt.textPart({ text: "task" })] }),
      Prompt.makeMessage("assistant", {
        content: [Prompt.makePart("tool-call", { id: "c1", name: "screenshot", params: {}, providerExecuted: false })]
      }),
      toolResultWithImage("c1", png)
    ])
    const { history, origins } = toHistory(prompt)
    const parts = History.toParts(history)
    // Broken wiring: the same origins, with each image's tie to its result dropped.
    const untied = new WeakMap<Model.Part, NonNullable<ReturnType<typeof origins.get>>>()
    for (const part of parts) {
      const origin = origins.get(part)
      if (origin !== undefined) untied.set(part, { role: origin.role, part: origin.part, message: origin.message })
    }
    assert.isTrue(sameParts(toPrompt(parts, origins), prompt))
    assert.isFalse(sameParts(toPrompt(parts, untied), prompt))
  })
})
