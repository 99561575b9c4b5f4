import { assert, describe, it } from "@effect/vitest"
import { Model } from "@tessera/runtime"
import * as fc from "fast-check"
// The conversion is internal (the package blocks `./internal/*`); the test reaches it by path.
import { partsToPrompt, toHistory, toPrompt } from "../src/internal/prompt.js"

const json: fc.Arbitrary<Model.ToolCallPart["input"]> = fc.jsonValue() as fc.Arbitrary<Model.ToolCallPart["input"]>

/** Tessera parts of every kind the conversion carries as such (text of each role, calls, results). */
const part: fc.Arbitrary<Model.Part> = fc.oneof(
  fc
    .tuple(fc.constantFrom("system", "user", "assistant") as fc.Arbitrary<Model.Role>, fc.string())
    .map(([role, text]) => Model.text(role, text)),
  fc
    .tuple(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), json)
    .map(([id, name, input]) => Model.toolCall(id, name, input)),
  fc
    .tuple(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.string(), fc.boolean())
    .map(([callId, name, content, isError]) => Model.toolResult({ callId, name, content, isError }))
)

const flat = (parts: ReadonlyArray<Model.Part>) => JSON.parse(JSON.stringify(parts)) as unknown

describe("Effect AI prompt conversion", () => {
  it("effect_ai_prompt_round_trip: Tessera parts made into a prompt and read back are the same parts, in order", () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 12 }), (parts) => {
        const { history } = toHistory(partsToPrompt(parts))
        assert.deepStrictEqual(flat([...history.task, ...history.parts]), flat(parts))
      }),
      { numRuns: 300 }
    )
  })

  it("effect_ai_prompt_identity: a prompt read as a history and rendered unchanged gives back its own messages and parts", () => {
    fc.assert(
      fc.property(fc.array(part, { maxLength: 12 }), (parts) => {
        const prompt = partsToPrompt(parts)
        const { history, origins } = toHistory(prompt)
        const again = toPrompt([...history.task, ...history.parts], origins)
        assert.strictEqual(again.content.length, prompt.content.length)
        again.content.forEach((message, index) => {
          const original = prompt.content[index]
          assert.strictEqual(message.role, original?.role)
          const before: ReadonlyArray<unknown> | string = original?.content ?? []
          if (typeof message.content === "string") assert.strictEqual(message.content, before)
          else {
            for (const [at, content] of message.content.entries()) assert.strictEqual(content, before[at])
          }
        })
      }),
      { numRuns: 300 }
    )
  })

  it("negative control: rendered without its origins, a prompt's parts come back as new objects", () => {
    const prompt = partsToPrompt([Model.text("user", "task"), Model.text("assistant", "thinking")])
    const { history } = toHistory(prompt)
    const again = toPrompt([...history.task, ...history.parts], new WeakMap())
    const part = (message: (typeof prompt.content)[number] | undefined) =>
      message === undefined || typeof message.content === "string" ? undefined : message.content[0]
    assert.notStrictEqual(part(again.content[1]), part(prompt.content[1]))
  })
})
