/**
 * `History.promptReader`, the one reading of AI SDK-shaped prompt parts
 * (the AI SDK's and Effect AI's adapters state only their fields), tested
 * on its own contract with a prompt shaped like theirs: what each part type
 * reads as, the stand-ins, the library's own types, and the files a tool
 * message's results carry.
 */
import { assert, describe, it } from "@effect/vitest"
import { History } from "@tessera/runtime"

interface File {
  readonly type: "file"
  readonly mime: string
  readonly data?: string
}
type Part =
  | { readonly type: "text" | "reasoning"; readonly text: string }
  | { readonly type: "tool-call"; readonly id: string; readonly tool: string; readonly args: { readonly at: number } }
  | {
      readonly type: "tool-result"
      readonly id: string
      readonly tool: string
      readonly out: string
      readonly files: ReadonlyArray<File>
    }
  | File
  | { readonly type: "reasoning-file"; readonly mime: string }
  | { readonly type: "approval" }
type Message =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user" | "assistant" | "tool"; readonly content: ReadonlyArray<Part> }
type Read = History.ForeignMessage<Message, unknown>

const fields: History.PromptFields<History.PromptPart<Message>> = {
  text: (part) => part.text,
  toolCall: (part) => ({ id: part.id, name: part.tool, input: part.args }),
  toolResult: (part) => ({ callId: part.id, name: part.tool, content: part.out, isError: false }),
  resultFiles: (part) => part.files,
  file: (part) => ({ mediaType: part.mime, base64: part.data, providerOptions: {} }),
  others: { "reasoning-file": (part) => ({ _tag: "Text", text: `[reasoning-file ${part.mime}]` }) }
}

const png: File = { type: "file", mime: "image/png", data: "aGk=" }
const pdf: File = { type: "file", mime: "application/pdf" }
// Types the library does not declare (a newer version's), named like an object's inherited members.
const undeclared = [{ type: "constructor" }, { type: "toString" }] as unknown as ReadonlyArray<Part>
const prompt: ReadonlyArray<Message> = [
  { role: "system", content: "be brief" },
  { role: "user", content: [{ type: "text", text: "look" }, png, ...undeclared] },
  {
    role: "assistant",
    content: [
      { type: "reasoning", text: "hm" },
      { type: "reasoning-file", mime: "image/webp" },
      { type: "tool-call", id: "c1", tool: "read", args: { at: 1 } },
      // A provider-run result in the assistant's message: its files are not carried.
      { type: "tool-result", id: "p1", tool: "web", out: "found", files: [pdf] },
      { type: "approval" }
    ]
  },
  { role: "tool", content: [{ type: "tool-result", id: "c1", tool: "read", out: "done", files: [png, pdf] }] }
]

/** What a reader gets wrong about `prompt`, as sentences (none for a reader keeping the contract). */
const problemsOf = (read: (message: Message) => Read): Array<string> => {
  const problems: Array<string> = []
  const [system, user, assistant, tool] = prompt.map(read)
  const expect = (what: string, actual: unknown, expected: unknown) => {
    const text = JSON.stringify(actual)
    if (text !== JSON.stringify(expected)) problems.push(`${what}: ${text}`)
  }
  const contents = (message: Read | undefined) => message?.items.map((item) => item.content)
  expect("system", contents(system), [{ _tag: "Text", text: "be brief" }])
  expect("user", contents(user), [
    { _tag: "Text", text: "look" },
    {
      _tag: "File",
      file: { mediaType: "image/png", base64: "aGk=", providerOptions: {} },
      standIn: "[file image/png]"
    },
    { _tag: "Text", text: "[constructor]" },
    { _tag: "Text", text: "[toString]" }
  ])
  expect("assistant", contents(assistant), [
    { _tag: "Text", text: "hm" },
    { _tag: "Text", text: "[reasoning-file image/webp]" },
    { _tag: "ToolCall", id: "c1", name: "read", input: { at: 1 } },
    { _tag: "ToolResult", callId: "p1", name: "web", content: "found", isError: false },
    { _tag: "Text", text: "[approval]" }
  ])
  if ((assistant?.carried ?? []).length > 0) problems.push("an assistant's result carries files")
  expect(
    "tool carried",
    tool?.carried?.map(({ callId, file, item }) => ({
      callId,
      mediaType: file.mediaType,
      own: item === png || item === pdf
    })),
    [
      { callId: "c1", mediaType: "image/png", own: true },
      { callId: "c1", mediaType: "application/pdf", own: true }
    ]
  )
  // Every item is the library's own object, so the way back renders the very original.
  prompt.forEach((message, m) => {
    const own: ReadonlyArray<unknown> = message.role === "system" ? [message.content] : message.content
    if (read(message).items.some(({ item }, i) => item !== own[i]))
      problems.push(`message ${m}'s items are not its own`)
  })
  return problems
}

describe("History.promptReader", () => {
  it("prompt_reader_rules: each part type reads as the bridge states it, stand-ins included; only a tool message carries its results' files", () => {
    assert.deepStrictEqual(problemsOf(History.promptReader<Message>(fields)), [])
  })

  it("negative control: readers wired wrong (the library's own entry lost; files carried from every role) are caught", () => {
    const withoutOthers = problemsOf(History.promptReader<Message>({ ...fields, others: {} }))
    assert.isTrue(
      withoutOthers.some((problem) => problem.startsWith("assistant") && problem.includes("[reasoning-file]"))
    )
    const read = History.promptReader<Message>(fields)
    const carriedFromEveryRole = (message: Message): Read =>
      message.role === "system"
        ? read(message)
        : { ...read(message), carried: read({ role: "tool", content: message.content }).carried ?? [] }
    assert.include(problemsOf(carriedFromEveryRole), "an assistant's result carries files")
  })
})
