/**
 * The read tool the pointers name, through the AI SDK middleware: a model
 * that follows a pointer with `read_artifact` gets the artifact's bytes
 * (whole, a byte range, the lines holding a text), each read journaled and
 * never offloaded again; the request lists the tool even when the caller
 * did not spread `tessera.tools`. The controls withhold the tool
 * (`registerReadTool: false`): the same call fails as a missing tool, and
 * no request lists it.
 */
import type {
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4ToolResultOutput
} from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { ArtifactPointer } from "@tessera/artifacts"
import { Compaction } from "@tessera/runtime"
import {
  generateText,
  jsonSchema,
  type ModelMessage,
  stepCountIs,
  streamText,
  type Tool,
  tool,
  wrapLanguageModel
} from "ai"
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test"
import { Effect, Option } from "effect"
import { answer, bindTask, inWorld, journalText, taskText } from "./support/world.ts"

const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const
const withheld = { ...offload, registerReadTool: false } as const

// 120 lines of about 40 bytes, every 30th an error: 4.8 KB, over the threshold and within one read's cap.
const report = Array.from({ length: 120 }, (_, index) =>
  (index + 1) % 30 === 0 ? `line ${index + 1}: ERROR disk full on node-${index}` : `line ${index + 1}: ok, all quiet`
).join("\n")

const fetchReport: Tool<Record<string, never>, string> = tool({
  description: "Fetches the nightly report",
  inputSchema: jsonSchema<Record<string, never>>({ type: "object", properties: {} }),
  execute: async () => report
})

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}

const call = (id: string, toolName: string, input: unknown): LanguageModelV4GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: id, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: []
})

/** The output a request carries for call `id`, if it carries one. */
const resultOf = (prompt: LanguageModelV4Prompt, id: string): LanguageModelV4ToolResultOutput | undefined => {
  for (const message of prompt) {
    if (message.role !== "tool") continue
    for (const part of message.content) {
      if (part.type === "tool-result" && part.toolCallId === id) return part.output
    }
  }
  return undefined
}

const textOf = (output: LanguageModelV4ToolResultOutput | undefined): string =>
  output === undefined ? "" : "value" in output ? (typeof output.value === "string" ? output.value : "") : ""

/** The reads the model makes once it sees the pointer: whole, a byte range, the lines holding `ERROR`. */
const reads = (path: string) => [{ path }, { path, bytes: { start: 41, end: 120 } }, { path, pattern: "ERROR" }]

/**
 * A model that fetches the report, then follows the pointer it gets back
 * with three reads, then answers. The pointer's path is read from the
 * request, as a model reads it.
 */
const follower = () => {
  let path: string | undefined
  const respond = (prompt: LanguageModelV4Prompt, step: number): LanguageModelV4GenerateResult => {
    if (step === 1) return call("fetch-1", "fetchReport", {})
    if (step === 2) {
      const pointer = ArtifactPointer.parse(textOf(resultOf(prompt, "fetch-1")))
      if (Option.isNone(pointer)) return answer("no pointer came back")
      path = pointer.value.path
    }
    const read = path === undefined ? undefined : reads(path)[step - 2]
    return read === undefined ? answer("The report has four errors.") : call(`read-${step - 1}`, "read_artifact", read)
  }
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }): Promise<LanguageModelV4GenerateResult> =>
      respond(prompt, model.doGenerateCalls.length),
    // The same answer as a provider streams it: the text in one delta, the call whole, then finish.
    doStream: async ({ prompt }): Promise<{ stream: ReadableStream<LanguageModelV4StreamPart> }> => {
      const result = respond(prompt, model.doStreamCalls.length)
      const parts: Array<LanguageModelV4StreamPart> = [{ type: "stream-start", warnings: [] }]
      for (const part of result.content) {
        if (part.type === "text") {
          parts.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: part.text })
          parts.push({ type: "text-end", id: "t" })
        }
        if (part.type === "tool-call") parts.push(part)
      }
      parts.push({ type: "finish", usage: result.usage, finishReason: result.finishReason })
      return { stream: convertArrayToReadableStream(parts) }
    }
  })
  return { model, path: () => path }
}

const messages: Array<ModelMessage> = [{ role: "user", content: taskText }]

const converse = (registerReadTool: boolean, spreadTools: boolean) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, Compaction.disabled)
      const tessera = yield* TesseraMiddleware.make(binding, { offload: registerReadTool ? offload : withheld })
      const { model, path } = follower()
      const result = yield* Effect.promise(() =>
        generateText({
          model: wrapLanguageModel({ model, middleware: tessera.middleware }),
          tools: spreadTools ? { ...tessera.tools, fetchReport } : { fetchReport },
          messages,
          stopWhen: stepCountIs(6)
        })
      )
      return { tessera, requests: model.doGenerateCalls, path: path(), result, journal: journalText(world) }
    })
  )

/** The same conversation through `streamText`, read to its end. */
const converseStreamed = () =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, Compaction.disabled)
      const tessera = yield* TesseraMiddleware.make(binding, { offload })
      const { model, path } = follower()
      const text = yield* Effect.promise(async () => {
        const result = streamText({
          model: wrapLanguageModel({ model, middleware: tessera.middleware }),
          tools: { ...tessera.tools, fetchReport },
          messages,
          stopWhen: stepCountIs(6)
        })
        return await result.text
      })
      return { requests: model.doStreamCalls, path: path(), text, journal: journalText(world) }
    })
  )

const count = (journal: string, tag: string): number => journal.split(`"_tag":"${tag}"`).length - 1

const toolNames = (request: LanguageModelV4CallOptions | undefined): ReadonlyArray<string> =>
  (request?.tools ?? []).map((offered) => offered.name)

describe("TesseraMiddleware offers the read tool its pointers name", () => {
  it("read_tool_returns_the_artifact: a model that follows the pointer reads it whole, by bytes and by pattern", async () => {
    const { journal, path, requests } = await converse(true, true)
    assert.isDefined(path, "the model was given a pointer")
    assert.strictEqual(requests.length, 5, "fetch, three reads, the answer")
    const whole = textOf(resultOf((requests[2] as LanguageModelV4CallOptions).prompt, "read-1"))
    assert.include(whole, report, "the whole artifact, as the tool returned it")
    const bytes = textOf(resultOf((requests[3] as LanguageModelV4CallOptions).prompt, "read-2"))
    assert.include(bytes, "bytes=41-119")
    assert.include(bytes, report.slice(41, 120))
    assert.notInclude(bytes, report.slice(0, 41))
    const pattern = textOf(resultOf((requests[4] as LanguageModelV4CallOptions).prompt, "read-3"))
    const errors = report.split("\n").filter((line) => line.includes("ERROR"))
    assert.strictEqual(errors.length, 4)
    for (const line of errors) assert.include(pattern, line)
    assert.notInclude(pattern, "all quiet", "only the lines holding the pattern")
    // Each read is the library's: journaled, bounded, and never offloaded behind a pointer of its own.
    assert.strictEqual(count(journal, "ArtifactOffloaded"), 1, "only the report was offloaded")
    assert.strictEqual(count(journal, "ToolResulted"), 4)
    assert.isFalse(whole.startsWith(ArtifactPointer.marker), "the whole read is not a pointer to a copy of itself")
  })

  it("read_tool_returns_the_artifact_streamed: through streamText, the model's reads get the artifact's bytes too", async () => {
    const { journal, path, requests, text } = await converseStreamed()
    assert.isDefined(path, "the model was given a pointer")
    assert.strictEqual(text, "The report has four errors.")
    assert.strictEqual(requests.length, 5)
    assert.include(textOf(resultOf((requests[2] as LanguageModelV4CallOptions).prompt, "read-1")), report)
    assert.include(
      textOf(resultOf((requests[3] as LanguageModelV4CallOptions).prompt, "read-2")),
      report.slice(41, 120)
    )
    assert.strictEqual(count(journal, "ArtifactOffloaded"), 1)
    assert.strictEqual(count(journal, "ToolResulted"), 4)
  })

  it("negative control: with the read tool withheld (registerReadTool: false) the same call fails as a missing tool, no bytes", async () => {
    const { path, requests, tessera } = await converse(false, true)
    assert.isDefined(path, "the model was given a pointer")
    assert.deepStrictEqual(Object.keys(tessera.tools), [])
    const output = resultOf((requests[2] as LanguageModelV4CallOptions).prompt, "read-1")
    assert.strictEqual(output?.type, "error-text")
    assert.include(textOf(output), "unavailable tool 'read_artifact'")
    // Every read's answer is the missing tool's error: none carries a line of the report.
    const last = (requests.at(-1) as LanguageModelV4CallOptions).prompt
    for (const id of ["read-1", "read-2", "read-3"]) {
      assert.strictEqual(resultOf(last, id)?.type, "error-text", id)
      assert.notInclude(textOf(resultOf(last, id)), "line 1", id)
    }
  })

  it("read_tool_listed_in_request: every request lists the read tool once, even when the caller did not spread tessera.tools", async () => {
    const spread = await converse(true, true)
    for (const request of spread.requests) {
      assert.deepStrictEqual(toolNames(request).filter((name) => name === "read_artifact").length, 1)
    }
    const bare = await converse(true, false)
    for (const request of bare.requests) assert.include(toolNames(request), "read_artifact")
    // Listed, but the AI SDK runs only the tools it was given: the call comes back as its missing-tool error.
    assert.strictEqual(resultOf((bare.requests[2] as LanguageModelV4CallOptions).prompt, "read-1")?.type, "error-text")
  })

  it("negative control: with the read tool withheld no request lists it", async () => {
    const { requests } = await converse(false, true)
    assert.isAbove(requests.length, 0)
    for (const request of requests) assert.notInclude(toolNames(request), "read_artifact")
  })
})
