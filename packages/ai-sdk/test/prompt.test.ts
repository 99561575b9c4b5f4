import type { LanguageModelV4Message, LanguageModelV4Prompt } from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { History } from "@tessera/runtime"
import * as fc from "fast-check"
// The conversion is internal (the package blocks `./internal/*`); the test reaches it by path.
import { toHistory, toPrompt } from "../src/internal/prompt.js"

const text = fc.string({ maxLength: 40 })
const id = fc.stringMatching(/^[a-z0-9:_-]{1,12}$/)
const providerOptions = fc.option(fc.constant({ acme: { cache: true } }), { nil: undefined })
const withOptions = <M extends LanguageModelV4Message>(message: M, options: unknown): M =>
  options === undefined ? message : { ...message, providerOptions: options as never }

const system = fc
  .tuple(text, providerOptions)
  .map(([content, options]) => withOptions({ role: "system", content }, options))
const user = fc
  .tuple(fc.array(text, { minLength: 1, maxLength: 3 }), providerOptions)
  .map(([texts, options]) =>
    withOptions({ role: "user", content: texts.map((value) => ({ type: "text" as const, text: value })) }, options)
  )
const assistant = fc.tuple(text, fc.array(fc.tuple(id, fc.jsonValue()), { maxLength: 2 }), fc.boolean()).map(
  ([said, calls, reasoning]): LanguageModelV4Message => ({
    role: "assistant",
    content: [
      ...(reasoning ? [{ type: "reasoning" as const, text: said }] : []),
      { type: "text" as const, text: said },
      ...calls.map(([toolCallId, input]) => ({ type: "tool-call" as const, toolCallId, toolName: "t", input }))
    ]
  })
)
const toolMessage = fc.array(fc.tuple(id, text, fc.boolean()), { minLength: 1, maxLength: 2 }).map(
  (results): LanguageModelV4Message => ({
    role: "tool",
    content: results.map(([toolCallId, value, isJson]) => ({
      type: "tool-result" as const,
      toolCallId,
      toolName: "t",
      output: isJson ? { type: "json" as const, value: { value } } : { type: "text" as const, value }
    }))
  })
)

const prompts: fc.Arbitrary<LanguageModelV4Prompt> = fc
  .tuple(fc.array(system, { maxLength: 2 }), user, fc.array(fc.oneof(user, assistant, toolMessage), { maxLength: 6 }))
  .map(([systems, first, rest]) => [...systems, first, ...rest])

describe("prompt conversion", () => {
  it("a prompt nothing was replaced in comes back as the same messages and parts", () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const { history, origins } = toHistory(prompt)
        assert.deepStrictEqual(toPrompt(History.toParts(history), origins), prompt)
      })
    )
  })

  it("the task is the leading system messages and the first user message", () => {
    fc.assert(
      fc.property(prompts, (prompt) => {
        const { history } = toHistory(prompt)
        const firstUser = prompt.findIndex((message) => message.role === "user")
        const expected = prompt
          .slice(0, firstUser + 1)
          .reduce((count, message) => count + (typeof message.content === "string" ? 1 : message.content.length), 0)
        assert.strictEqual(history.task.length, expected)
      })
    )
  })

  it("a replaced tool result is rendered anew, as text, in a tool message", () => {
    const prompt: LanguageModelV4Prompt = [
      { role: "user", content: [{ type: "text", text: "task" }] },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "t", input: {} }] },
      {
        role: "tool",
        content: [
          { type: "tool-result", toolCallId: "c1", toolName: "t", output: { type: "text", value: "x".repeat(100) } }
        ]
      }
    ]
    const { history, origins } = toHistory(prompt)
    const parts = History.toParts(history).map((part) =>
      part._tag === "ToolResult" ? { ...part, content: "[artifact] pointer" } : part
    )
    const out = toPrompt(parts, origins)
    assert.deepStrictEqual(out[2], {
      role: "tool",
      content: [
        { type: "tool-result", toolCallId: "c1", toolName: "t", output: { type: "text", value: "[artifact] pointer" } }
      ]
    })
  })
})
