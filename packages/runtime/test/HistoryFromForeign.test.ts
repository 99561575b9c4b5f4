/**
 * The bridge every adapter's converter ends in (`History.fromForeign` and
 * its way back, `History.foreignRuns`), tested on its own contract: the
 * runtime's tests cannot import the adapters, so the adapter-shaped inputs
 * are built here, two layouts of one conversation (the AI SDK's and Effect
 * AI's, all of a step's results in one tool message with their files inside;
 * Pi's, one tool message per result with its images beside the text).
 */
import { assert, describe, it } from "@effect/vitest"
import { History, type Model } from "@tessera/runtime"
import * as fc from "fast-check"

/** The library's own object for an item: identity is what the way back must keep. */
interface Item {
  readonly at: string
}
type Message = History.ForeignMessage<{ readonly at: string }, Item>

interface File {
  readonly mediaType: string
  readonly base64: string | undefined
}
interface Call {
  readonly body: string
  readonly isError: boolean
  readonly files: ReadonlyArray<File>
}
interface Round {
  readonly said: string
  readonly files: ReadonlyArray<File>
  readonly calls: ReadonlyArray<Call>
  readonly next: ReadonlyArray<string> | undefined
}
interface Conversation {
  readonly systems: ReadonlyArray<string>
  readonly task: ReadonlyArray<string>
  readonly taskFiles: ReadonlyArray<File>
  readonly rounds: ReadonlyArray<Round>
}

const word = fc.constantFrom("a", "b", "c", "")
const file: fc.Arbitrary<File> = fc.record({
  mediaType: fc.constantFrom("image/png", "application/pdf"),
  base64: fc.option(fc.constantFrom("aGk=", "d29ybGQ="), { nil: undefined })
})
const conversation: fc.Arbitrary<Conversation> = fc.record({
  systems: fc.array(word, { maxLength: 2 }),
  task: fc.array(word, { minLength: 1, maxLength: 2 }),
  taskFiles: fc.array(file, { maxLength: 2 }),
  rounds: fc.array(
    fc.record({
      said: word,
      files: fc.array(file, { maxLength: 1 }),
      calls: fc.array(fc.record({ body: word, isError: fc.boolean(), files: fc.array(file, { maxLength: 2 }) }), {
        maxLength: 3
      }),
      next: fc.option(fc.array(word, { minLength: 1, maxLength: 2 }), { nil: undefined })
    }),
    { maxLength: 4 }
  )
})

// One options object for every file: the bridge must hand the library's own object on, not a copy.
const providerOptions = { acme: { cache: true } }

type Layout = "one tool message per step" | "one tool message per result"

/** The conversation as neutral messages, laid out as one adapter's library holds it. */
const messagesOf = (conversation: Conversation, layout: Layout): ReadonlyArray<Message> => {
  let n = 0
  const item = (): Item => ({ at: `item ${n++}` })
  const message = (role: History.ForeignRole, items: Message["items"], carried?: Message["carried"]): Message => ({
    message: { at: `message ${n++}` },
    role,
    items,
    ...(carried === undefined ? {} : { carried })
  })
  const text = (value: string) => ({ item: item(), content: { _tag: "Text" as const, text: value } })
  const fileItem = (each: File) => ({
    item: item(),
    content: {
      _tag: "File" as const,
      file: { ...each, providerOptions },
      standIn: `[file ${each.mediaType}]`
    }
  })
  const out: Array<Message> = conversation.systems.map((value) => message("system", [text(value)]))
  out.push(message("user", [...conversation.task.map(text), ...conversation.taskFiles.map(fileItem)]))
  conversation.rounds.forEach((round, r) => {
    const id = (c: number) => `call ${r}:${c}`
    out.push(
      message("assistant", [
        text(round.said),
        ...round.files.map(fileItem),
        ...round.calls.map((_, c) => ({
          item: item(),
          content: { _tag: "ToolCall" as const, id: id(c), name: "t", input: { r, c } }
        }))
      ])
    )
    const results = round.calls.map((call, c) => ({
      item: {
        item: item(),
        content: { _tag: "ToolResult" as const, callId: id(c), name: "t", content: call.body, isError: call.isError }
      },
      carried: call.files.map((each) => ({ item: item(), callId: id(c), file: { ...each, providerOptions } }))
    }))
    if (results.length > 0) {
      if (layout === "one tool message per step") {
        out.push(
          message(
            "tool",
            results.map((result) => result.item),
            results.flatMap((result) => result.carried)
          )
        )
      } else for (const result of results) out.push(message("tool", [result.item], result.carried))
    }
    if (round.next !== undefined) out.push(message("user", round.next.map(text)))
  })
  return out
}

type Convert = (messages: ReadonlyArray<Message>) => History.History

const bridge: Convert = (messages) => History.fromForeign(messages).history

/** Deliberately broken: each message's parts as it holds them, a result's files in place (Pi's old converter). */
const inPlace: Convert = (messages) =>
  History.fromMessages(messages, (message) => message.role === "user", History.foreignParts)

/** Whether every tool result sits in the round of the call it answers. */
const callsKeepTheirResults = (history: History.History): boolean =>
  History.rounds(history).every((round) => {
    const calls = new Set(round.flatMap((part) => (part._tag === "ToolCall" ? [part.id] : [])))
    return round.every((part) => part._tag !== "ToolResult" || calls.has(part.callId))
  })

const sameWhicheverLayout = (convert: Convert) => (each: Conversation) =>
  JSON.stringify(convert(messagesOf(each, "one tool message per step"))) ===
  JSON.stringify(convert(messagesOf(each, "one tool message per result")))

const roundsHold = (convert: Convert) => (each: Conversation) =>
  callsKeepTheirResults(convert(messagesOf(each, "one tool message per result"))) &&
  callsKeepTheirResults(convert(messagesOf(each, "one tool message per step")))

const layout = fc.constantFrom<Layout>("one tool message per step", "one tool message per result")

type Bridge = (messages: ReadonlyArray<Message>) => History.ForeignHistory<Message["message"], Item>

/**
 * Deliberately broken: the bridge, but with the assistant's inline files made media (the rule one
 * converter once drifted from), under the same origins.
 */
const assistantFilesAsMedia: Bridge = (messages) => {
  const real = History.fromForeign(messages)
  const assistants = new Map(
    messages.flatMap((message) =>
      message.role === "assistant" ? message.items.map((entry) => [entry.item, entry.content] as const) : []
    )
  )
  const swap = (part: Model.Part): Model.Part => {
    const origin = real.origins.get(part)
    const content = origin === undefined ? undefined : assistants.get(origin.part)
    if (origin === undefined || content?._tag !== "File" || content.file.base64 === undefined) return part
    const media: Model.Part = {
      _tag: "Media",
      role: "assistant",
      mediaType: content.file.mediaType,
      data: { _tag: "Base64", base64: content.file.base64 },
      providerOptions: content.file.providerOptions
    }
    real.origins.set(media, origin)
    return media
  }
  const history = History.append(History.make(real.history.task.map(swap)), real.history.parts.map(swap))
  return { ...real, history }
}

/** The part rules, checked on what `convert` makes of one layout of a conversation. */
const partRulesHold = (convert: Bridge) => (each: Conversation, laidOut: Layout) => {
  const messages = messagesOf(each, laidOut)
  const { history, origins } = convert(messages)
  const firstUser = messages.findIndex((message) => message.role === "user")
  const taskItems = new Set(
    messages.slice(0, firstUser + 1).flatMap((message) => message.items.map((entry) => entry.item))
  )
  const byItem = new Map(
    messages.flatMap((message) => message.items.map((entry) => [entry.item, { message, entry }] as const))
  )
  for (const part of history.task) assert.isTrue(taskItems.has(origins.get(part)?.part as Item), "a task part")
  for (const part of history.parts) {
    const origin = origins.get(part)
    assert.isDefined(origin)
    if (origin?.carriedBy !== undefined) assert.strictEqual(part._tag, "Media")
    else assert.isFalse(taskItems.has(origin?.part as Item), "a history part")
  }
  for (const part of History.toParts(history)) {
    const found = byItem.get(origins.get(part)?.part as Item)
    if (found === undefined) continue
    const { entry, message } = found
    const speaker = message.role === "assistant" ? "assistant" : message.role === "system" ? "system" : "user"
    const content = entry.content
    if (content._tag === "File") {
      if (message.role === "user" && content.file.base64 !== undefined) {
        assert.strictEqual(part._tag, "Media")
        assert.strictEqual((part as Model.MediaPart).providerOptions, providerOptions)
      } else assert.deepStrictEqual(part, { _tag: "Text", role: speaker, text: content.standIn })
    } else if (content._tag === "Text")
      assert.deepStrictEqual(part, { _tag: "Text", role: speaker, text: content.text })
    else assert.strictEqual(part._tag, content._tag)
  }
  // Every carried file with inline data is one Media part, in order; one without stays inside its result only.
  const carried = messages
    .flatMap((message) => message.carried ?? [])
    .filter((entry) => entry.file.base64 !== undefined)
  assert.deepStrictEqual(
    History.toParts(history).flatMap((part) => {
      const origin = origins.get(part)
      return origin?.carriedBy === undefined ? [] : [origin.part]
    }),
    carried.map((entry) => entry.item)
  )
}

/** Whether `runsOf`, given the bridge's origins, gives back every message of one layout with its own items. */
const comesBack = (runsOf: typeof History.foreignRuns) => (each: Conversation, laidOut: Layout) => {
  const messages = messagesOf(each, laidOut)
  const { history, origins } = History.fromForeign(messages)
  const runs = runsOf(History.toParts(history), origins, (part): Item => ({ at: `made ${part._tag}` }))
  assert.strictEqual(runs.length, messages.length)
  for (const [i, run] of runs.entries()) {
    const message = messages[i] as Message
    assert.strictEqual(run.source, message.message)
    assert.strictEqual(run.role, message.role)
    assert.strictEqual(run.items.length, message.items.length)
    for (const [at, item] of run.items.entries()) assert.strictEqual(item, message.items[at]?.item)
  }
}

describe("History.fromForeign", () => {
  it("foreign_same_history_any_layout: one conversation is one history, whether its results share a tool message or have one each", () => {
    fc.assert(fc.property(conversation, sameWhicheverLayout(bridge)), { numRuns: 500 })
  })

  it("foreign_results_stay_with_their_calls: a result's files never open a round that separates a call from its result", () => {
    fc.assert(fc.property(conversation, roundsHold(bridge)), { numRuns: 500 })
  })

  it("negative control: a converter that keeps a result's files in place fails both properties", () => {
    for (const property of [sameWhicheverLayout, roundsHold]) {
      const outcome = fc.check(fc.property(conversation, property(inPlace)), { numRuns: 500, seed: 36 })
      assert.isTrue(outcome.failed)
    }
  })

  it("foreign_part_rules: text is its speaker's, a file is media only in a user message with inline data (the library's own options object), the task ends with the first user message", () => {
    fc.assert(fc.property(conversation, layout, partRulesHold(History.fromForeign)), { numRuns: 300 })
  })

  it("negative control: a converter that makes media of the assistant's inline files fails the part rules", () => {
    const outcome = fc.check(fc.property(conversation, layout, partRulesHold(assistantFilesAsMedia)), {
      numRuns: 300,
      seed: 36
    })
    assert.isTrue(outcome.failed)
  })

  it("foreign_round_trip: a history nothing was replaced in comes back as its messages, each with its own items, the results' files left to their results", () => {
    fc.assert(fc.property(conversation, layout, comesBack(History.foreignRuns)), { numRuns: 300 })
  })

  it("negative control: a way back that forgets the origins fails the round trip", () => {
    const forgetful: typeof History.foreignRuns = (parts, _origins, render) =>
      History.foreignRuns(parts, new WeakMap(), render)
    const outcome = fc.check(fc.property(conversation, layout, comesBack(forgetful)), { numRuns: 50, seed: 36 })
    assert.isTrue(outcome.failed)
  })

  it("foreign_made_parts: a part Tessera made goes in a run of its role, an offloaded result in the open tool run, and a file whose result is gone is its own item in a user run", () => {
    const messages = messagesOf(
      {
        systems: [],
        task: ["task"],
        taskFiles: [],
        rounds: [
          {
            said: "",
            files: [],
            calls: [
              { body: "one", isError: false, files: [{ mediaType: "image/png", base64: "aGk=" }] },
              { body: "two", isError: false, files: [] }
            ],
            next: undefined
          }
        ]
      },
      "one tool message per step"
    )
    const { history, origins } = History.fromForeign(messages)
    const pointer = {
      _tag: "ToolResult",
      callId: "call 0:1",
      name: "t",
      content: "[artifact] pointer",
      isError: false
    } as const
    const render = (part: Model.Part): Item => ({ at: `made ${part._tag}` })
    const offloaded = History.toParts(history).map((part) =>
      part._tag === "ToolResult" && part.callId === pointer.callId ? pointer : part
    )
    const runs = History.foreignRuns(offloaded, origins, render)
    // The pointer joins its tool message, still open; the image is left to its result, which that message holds.
    assert.deepStrictEqual(
      runs.map((run) => [run.role, run.items.length]),
      [
        ["user", 1],
        ["assistant", 3],
        ["tool", 2]
      ]
    )
    assert.strictEqual(runs[2]?.source, messages[2]?.message)
    assert.deepStrictEqual(runs[2]?.items[1], { at: "made ToolResult" })
    // Without the results (a summary request), the image is its own item in a user run.
    const summary = History.toParts(history).filter((part) => part._tag !== "ToolResult" && part._tag !== "ToolCall")
    const image = History.foreignRuns(summary, origins, render).at(-1)
    assert.strictEqual(image?.role, "user")
    assert.strictEqual(image?.source, undefined)
    assert.strictEqual(image?.items[0], messages[2]?.carried?.[0]?.item)
  })
})
