import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Agent, type AgentMessage, type AgentTool } from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage,
  type Context,
  fauxAssistantMessage,
  fauxToolCall,
  type ImageContent,
  registerFauxProvider,
  type TextContent,
  type ToolResultMessage,
  Type,
  type UserMessage
} from "@mariozechner/pi-ai"
import { TesseraPi } from "@tessera/pi"
import { History, Model, ToolResults } from "@tessera/runtime"
import { Effect } from "effect"
import * as fc from "fast-check"
import { toHistory, toMessages } from "../src/internal/messages.js"
import { bindTask, contextText, inWorld, journalText, privateFolder, systemPrompt, taskText } from "./support/world.ts"

/** Call ids as providers may send them: Pi's `tool:<time>:<random>`, and any text with `:`, `/`, `..`, quotes, non-ASCII. */
const callId = fc.oneof(
  fc.tuple(fc.nat(), fc.string({ minLength: 1, maxLength: 12 })).map(([time, random]) => `tool:${time}:${random}`),
  fc
    .array(
      fc.oneof(
        fc.constantFrom(":", "/", "\\", "..", ".", "-", "_", '"', " ", "\u00e9", "\u{1F600}", "%2F", "\u0000"),
        fc.string({ minLength: 1, maxLength: 4 })
      ),
      { minLength: 1, maxLength: 12 }
    )
    .map((pieces) => pieces.join(""))
)

const usage = {
  input: 0,
  output: 0,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 0,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
}
const assistant = (content: AssistantMessage["content"]): AssistantMessage => ({
  role: "assistant",
  content,
  api: "faux",
  provider: "faux",
  model: "faux-1",
  usage,
  stopReason: content.some((block) => block.type === "toolCall") ? "toolUse" : "stop",
  timestamp: 1
})
const image = (data: string): ImageContent => ({ type: "image", data, mimeType: "image/png" })
const text = (body: string): TextContent => ({ type: "text", text: body })

/** A Pi transcript: the task, then rounds of an answer with calls and their results (text and images). */
const transcript = fc
  .array(
    fc.record({
      said: fc.string(),
      thought: fc.option(fc.string(), { nil: undefined }),
      calls: fc.uniqueArray(callId, { minLength: 0, maxLength: 3 }),
      body: fc.string(),
      withImage: fc.boolean()
    }),
    { maxLength: 5 }
  )
  .map((rounds): Array<AgentMessage> => {
    const seen = new Set<string>()
    const messages: Array<AgentMessage> = [
      { role: "user", content: [text(taskText), image("aGVsbG8=")], timestamp: 1 } satisfies UserMessage
    ]
    rounds.forEach((round, n) => {
      const calls = round.calls.filter((id) => !seen.has(id))
      for (const id of calls) seen.add(id)
      messages.push(
        assistant([
          ...(round.thought === undefined ? [] : [{ type: "thinking" as const, thinking: round.thought }]),
          text(round.said),
          ...calls.map((id) => ({ type: "toolCall" as const, id, name: "produce", arguments: { n } }))
        ])
      )
      for (const id of calls) {
        messages.push({
          role: "toolResult",
          toolCallId: id,
          toolName: "produce",
          content: [text(round.body), ...(round.withImage ? [image("d29ybGQ=")] : [])],
          isError: false,
          timestamp: 1
        } satisfies ToolResultMessage)
      }
      if (calls.length === 0) messages.push({ role: "user", content: `next ${n}`, timestamp: 1 })
    })
    return messages
  })

describe("Pi messages as Tessera parts", () => {
  it("pi_media_round_trip: text and base64 images map to Text and Media parts, ids kept exactly, and unchanged messages come back as the very objects", () => {
    fc.assert(
      fc.property(transcript, (messages) => {
        const converted = toHistory(messages)
        const parts = History.toParts(converted.history)
        const back = toMessages(parts, converted)
        assert.strictEqual(back.length, messages.length)
        back.forEach((message, i) => {
          assert.strictEqual(message, messages[i])
        })
        // Every call id reaches Tessera as it is, and every image as base64 media.
        const ids = messages.flatMap((message) => (message.role === "toolResult" ? [message.toolCallId] : []))
        assert.deepStrictEqual(
          parts.flatMap((part) => (part._tag === "ToolResult" ? [part.callId] : [])),
          ids
        )
        const images = messages.flatMap((message) =>
          message.role === "assistant" || typeof message.content === "string"
            ? []
            : message.content.filter((block) => block.type === "image")
        )
        const media = parts.filter((part): part is Model.MediaPart => part._tag === "Media")
        assert.deepStrictEqual(
          media.map((part) => (part.data._tag === "Base64" ? part.data.base64 : "")),
          images.map((block) => block.data)
        )
      }),
      { numRuns: 200 }
    )
  })

  it("pi_replaced_result_keeps_its_message: a replaced tool result keeps its call id, images and details, only its text changes", () => {
    fc.assert(
      fc.property(callId, fc.string(), (id, body) => {
        const result: ToolResultMessage = {
          role: "toolResult",
          toolCallId: id,
          toolName: "produce",
          content: [text(body), image("aW1n")],
          details: { kept: true },
          isError: false,
          timestamp: 7
        }
        const messages: Array<AgentMessage> = [
          { role: "user", content: taskText, timestamp: 1 },
          assistant([{ type: "toolCall", id, name: "produce", arguments: {} }]),
          result
        ]
        const converted = toHistory(messages)
        const pointer = Model.toolResult({ callId: id, name: "produce", content: "[artifact] pointer", isError: false })
        const parts = converted.history.parts.map((part) => (part._tag === "ToolResult" ? pointer : part))
        const back = toMessages([...converted.history.task, ...parts], converted)
        assert.strictEqual(back.length, 3)
        assert.deepStrictEqual(back[2], { ...result, content: [text("[artifact] pointer"), image("aW1n")] })
      }),
      { numRuns: 200 }
    )
  })

  it("control: a conversion that drops image blocks fails the media property", () => {
    const messages: Array<AgentMessage> = [{ role: "user", content: [text(taskText), image("aGVsbG8=")], timestamp: 1 }]
    const converted = toHistory(messages)
    // Deliberately broken: only the text parts are handed back.
    const lossy = History.toParts(converted.history).filter((part) => part._tag !== "Media")
    const back = toMessages(lossy, converted)
    assert.notStrictEqual(back[0], messages[0])
    assert.notDeepEqual(back[0], messages[0])
  })
})

const bigParameters = Type.Object({})
const big: AgentTool<typeof bigParameters> = {
  name: "produce",
  label: "Produce",
  description: "Produces a large result",
  parameters: bigParameters,
  execute: async (id) => ({ content: [{ type: "text", text: `${id}|${"x".repeat(5_000)}` }], details: {} })
}

describe("Pi tool-call ids on disk and in the journal", () => {
  it("pi_call_ids_property: any call id (Pi's hold ':') is journaled as it is and offloaded to one plain file named by callIdSegment, distinct ids to distinct files", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraPi.make(binding, {
          offload: { threshold: 2_000, readTool: "read_artifact", destination: "Private" }
        })
        const faux = registerFauxProvider()
        const folder = path.join(privateFolder(world), "artifacts", "tool-results")
        const files = new Map<string, string>()
        const ran: Array<string> = []
        let turn = 0
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(callId, async (id) => {
              turn++
              ran.push(id)
              faux.setResponses([
                fauxAssistantMessage(fauxToolCall("produce", {}, { id }), { stopReason: "toolUse" }),
                (context: Context) => {
                  assert.notInclude(contextText(context), "x".repeat(1_000), "the body is not sent again")
                  return fauxAssistantMessage("done")
                }
              ])
              const agent = new Agent({
                initialState: { systemPrompt, model: faux.getModel(), tools: [big] },
                ...tessera.agentOptions
              })
              await agent.prompt(taskText)
              assert.isUndefined(agent.state.errorMessage)
              const segment = await Effect.runPromise(ToolResults.callIdSegment(id))
              const name = `task-1-t${turn}-s1-${segment}.txt`
              assert.match(segment, /^[A-Za-z0-9_.~]+$/, "a plain file-name segment")
              assert.include(fs.readdirSync(folder), name)
              assert.isTrue(fs.readFileSync(path.join(folder, name), "utf8").startsWith(`${id}|`))
              assert.include(tessera.offloaded.get(id) ?? "", `tool-results/${name}`)
              const other = files.get(name)
              assert.isTrue(
                other === undefined || other === id,
                `${JSON.stringify(id)} and ${JSON.stringify(other)} share ${name}`
              )
              files.set(name, id)
            }),
            { numRuns: 40 }
          )
        )
        faux.unregister()
        // The journal names every call by its id, exactly.
        const called = journalText(world)
          .split("\n")
          .filter((line) => line.includes('"_tag":"ToolCalled"'))
          .map((line) => (JSON.parse(line) as { callId: string }).callId)
        assert.deepStrictEqual(called, ran)
        assert.strictEqual(new Set(fs.readdirSync(folder)).size, turn)
      })
    ))

  it("pi_call_id_segments: callIdSegment names any set of ids with plain, distinct segments; control: the raw id or a lossy sanitizer fails", () => {
    const plainAndDistinct = (segment: (id: string) => string) =>
      fc.check(
        fc.property(fc.uniqueArray(callId, { minLength: 2, maxLength: 8 }), (ids) => {
          const names = ids.map(segment)
          return names.every((name) => /^[A-Za-z0-9_.~]+$/.test(name)) && new Set(names).size === ids.length
        }),
        // Pi's id next to the one a "replace every odd byte by _" scheme would give it too.
        { numRuns: 300, examples: [[["tool:1:x", "tool_1_x"]]] }
      )
    const runtime = (id: string) => Effect.runSync(ToolResults.callIdSegment(id))
    assert.isFalse(plainAndDistinct(runtime).failed, "the runtime's segment")
    // Deliberately broken naming: the id as it is (":" and "/" stay), and a sanitizer that maps many ids to one.
    assert.isTrue(plainAndDistinct((id) => id).failed, "the raw id")
    assert.isTrue(plainAndDistinct((id) => id.replace(/[^A-Za-z0-9_]/g, "_")).failed, "a lossy sanitizer")
  })
})
