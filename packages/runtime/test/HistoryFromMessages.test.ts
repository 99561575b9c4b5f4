import { assert, describe, it } from "@effect/vitest"
import { History, Model } from "@tessera/runtime"
import * as fc from "fast-check"

type Message = { readonly role: "system" | "user" | "assistant"; readonly texts: ReadonlyArray<string> }

const message: fc.Arbitrary<Message> = fc.record({
  role: fc.constantFrom("system" as const, "user" as const, "assistant" as const),
  texts: fc.array(fc.constantFrom("a", "b", "c"), { maxLength: 3 })
})

const partsOf = (each: Message) => each.texts.map((text) => Model.text(each.role, text))

/** What an adapter's conversation should become: the messages up to the first user's, then the rest. */
const expected = (messages: ReadonlyArray<Message>) => {
  const first = messages.findIndex((each) => each.role === "user")
  const cut = first === -1 ? messages.length : first + 1
  return { task: messages.slice(0, cut).flatMap(partsOf), parts: messages.slice(cut).flatMap(partsOf) }
}

const splitsAsTheRuleSays =
  (convert: (messages: ReadonlyArray<Message>) => History.History) => (messages: ReadonlyArray<Message>) => {
    const made = convert(messages)
    const wanted = expected(messages)
    const texts = (parts: ReadonlyArray<Model.Part>) => parts.map((part) => (part._tag === "Text" ? part.text : "?"))
    return (
      JSON.stringify(texts(made.task)) === JSON.stringify(texts(wanted.task)) &&
      JSON.stringify(texts(made.parts)) === JSON.stringify(texts(wanted.parts))
    )
  }

describe("History.fromMessages", () => {
  it("history_from_messages_task_rule: every message up to and including the first user's is the task, the rest history", () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 8 }),
        splitsAsTheRuleSays((messages) => History.fromMessages(messages, (each) => each.role === "user", partsOf))
      ),
      { numRuns: 500 }
    )
  })

  it("negative control: a split that keeps only the leading system messages as the task is caught", () => {
    const systemOnly = (messages: ReadonlyArray<Message>) => {
      const lead = messages.findIndex((each) => each.role !== "system")
      const cut = lead === -1 ? messages.length : lead
      return History.append(History.make(messages.slice(0, cut).flatMap(partsOf)), messages.slice(cut).flatMap(partsOf))
    }
    const outcome = fc.check(fc.property(fc.array(message, { maxLength: 8 }), splitsAsTheRuleSays(systemOnly)), {
      numRuns: 500,
      seed: 5
    })
    assert.isTrue(outcome.failed)
  })
})
