/**
 * The bridge between a conversation another library keeps (an AI SDK
 * prompt, an Effect AI prompt, Pi's messages) and Tessera's parts, in terms
 * of a neutral message shape each adapter maps its own type to. `History`
 * re-exports it (and adds `fromForeign`, which needs `fromMessages`); the
 * rules live here once so the adapters cannot drift apart on them.
 */
import type { MediaPart, Part, Role, ToolCallPart } from "../Model.ts"
import { text, toolCall, toolResult } from "../Model.ts"

/**
 * Who sent a foreign message. `custom` is a message the library's core does
 * not know (an app's own message kind): it is read as the user's, but it
 * never ends the task the way the first user message does.
 */
export type ForeignRole = "system" | "user" | "assistant" | "tool" | "custom"

/**
 * A file in a foreign message: its media type, its inline data as base64
 * (`undefined` for a file the provider fetches or reads otherwise: a URL, a
 * provider reference, inline text) and the library's provider options.
 */
export interface ForeignFile {
  readonly mediaType: string
  readonly base64: string | undefined
  readonly providerOptions: Readonly<Record<string, unknown>>
}

/**
 * What one item of a foreign message says, in Tessera's terms. A file's
 * `standIn` is the text the model reads for it where it cannot be media.
 */
export type ForeignContent =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "ToolCall"; readonly id: string; readonly name: string; readonly input: ToolCallPart["input"] }
  | {
      readonly _tag: "ToolResult"
      readonly callId: string
      readonly name: string
      readonly content: string
      readonly isError: boolean
    }
  | { readonly _tag: "File"; readonly file: ForeignFile; readonly standIn: string }

/** One item of a foreign message: the library's own object (`item`) and what it says. */
export interface ForeignItem<I> {
  readonly item: I
  readonly content: ForeignContent
}

/** A file a tool result carries (inside its output), with the call whose result carries it. */
export interface ForeignCarried<I> {
  readonly item: I
  readonly callId: string
  readonly file: ForeignFile
}

/**
 * A foreign message in the neutral shape: the library's own message, its
 * role, its items in order, and the files its tool results carry.
 */
export interface ForeignMessage<M, I> {
  readonly message: M
  readonly role: ForeignRole
  readonly items: ReadonlyArray<ForeignItem<I>>
  readonly carried?: ReadonlyArray<ForeignCarried<I>>
}

/**
 * Where a part made from a foreign message came from: the message's role
 * (`user` for a carried file), the library's own item, the message
 * (`undefined` for a carried file, which is rendered apart from it) and,
 * for a carried file, the call whose result carries it.
 */
export interface ForeignOrigin<M, I> {
  readonly role: ForeignRole
  /** The library's own item the part was made from. */
  readonly part: I
  readonly message: M | undefined
  readonly carriedBy?: string
}

/** A run of consecutive parts that form one foreign message: its role, the message it renders, its items. */
export interface ForeignRun<M, I> {
  readonly role: ForeignRole
  readonly source: M | undefined
  readonly items: ReadonlyArray<I>
}

/**
 * A prompt message in the shape the AI SDK and Effect AI share: a system
 * message's text, or the parts (tagged by `type`) of any other role's.
 */
export type PromptMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user" | "assistant" | "tool"; readonly content: ReadonlyArray<{ readonly type: string }> }

/** The parts a prompt's messages hold. */
export type PromptPart<M extends PromptMessage> = Exclude<M["content"], string>[number]

/** The part of `P` whose `type` is `T`. */
type PartOf<P, T extends string> = Extract<P, { readonly type: T }>

/** The part types every prompt names alike; any other is the library's own. */
type KnownType = "text" | "reasoning" | "tool-call" | "tool-result" | "file"

type Tagged<T extends ForeignContent["_tag"]> = Omit<Extract<ForeignContent, { readonly _tag: T }>, "_tag">

/**
 * Where a library keeps each fact of its prompt's parts: the text of a text
 * or reasoning part, a call's id, name and input, a result's call, name,
 * text and failure, the files a result carries, a file's data; and, by part
 * type, what a part of a type only that library has (`others`) says.
 */
export interface PromptFields<P extends { readonly type: string }> {
  readonly text: (part: PartOf<P, "text" | "reasoning">) => string
  readonly toolCall: (part: PartOf<P, "tool-call">) => Tagged<"ToolCall">
  readonly toolResult: (part: PartOf<P, "tool-result">) => Tagged<"ToolResult">
  readonly resultFiles: (part: PartOf<P, "tool-result">) => ReadonlyArray<PartOf<P, "file">>
  readonly file: (part: PartOf<P, "file">) => ForeignFile
  readonly others?: {
    readonly [T in Exclude<P["type"], KnownType>]?: (part: PartOf<P, T>) => ForeignContent
  }
}

// A generic union does not narrow on a `switch` over its tag: this guard does the narrowing the switch would.
const isType = <P extends { readonly type: string }, T extends string>(
  part: P,
  types: ReadonlyArray<T>
): part is PartOf<P, T> => (types as ReadonlyArray<string>).includes(part.type)

/**
 * A reader of prompt messages as {@link ForeignMessage}s, the rules stated
 * once for every library whose prompt has {@link PromptMessage}'s shape: a
 * system message is one text item; a text or reasoning part is text, a
 * `tool-call` a call, a `tool-result` a result, a `file` a file standing in
 * as `[file <media type>]`; a part of another type is what `others` says
 * for its type, else the stand-in `[<type>]`; a tool message carries the
 * files `resultFiles` finds in its results. `fields` says only where the
 * library keeps each fact.
 */
export const promptReader = <M extends PromptMessage>(
  fields: PromptFields<PromptPart<M>>
): ((message: M) => ForeignMessage<M, PromptPart<M> | string>) => {
  type P = PromptPart<M>
  // Each entry takes the parts of its own key's type, the only ones it is called with: a mapped type's union
  // of entries is not callable with `P`, so it is read as a record of readers of `P`.
  const others = (fields.others ?? {}) as Readonly<Record<string, ((part: P) => ForeignContent) | undefined>>
  const contentOf = (part: P): ForeignContent => {
    if (isType(part, ["text", "reasoning"])) return { _tag: "Text", text: fields.text(part) }
    if (isType(part, ["tool-call"])) return { _tag: "ToolCall", ...fields.toolCall(part) }
    if (isType(part, ["tool-result"])) return { _tag: "ToolResult", ...fields.toolResult(part) }
    if (isType(part, ["file"])) {
      const file = fields.file(part)
      return { _tag: "File", file, standIn: `[file ${file.mediaType}]` }
    }
    // Own keys only: a part typed like an object's inherited member (`constructor`) is still unknown.
    const other = Object.hasOwn(others, part.type) ? others[part.type] : undefined
    return other === undefined ? { _tag: "Text", text: `[${part.type}]` } : other(part)
  }
  return (message) => {
    const read: PromptMessage = message
    if (read.role === "system") {
      return { message, role: "system", items: [{ item: read.content, content: { _tag: "Text", text: read.content } }] }
    }
    // `M`'s parts are `P` by definition; the constraint alone types them as any tagged object.
    const items = (read.content as ReadonlyArray<P>).map((item) => ({ item, content: contentOf(item) }))
    const carried: Array<ForeignCarried<P>> = []
    if (read.role === "tool") {
      for (const { content, item } of items) {
        if (content._tag !== "ToolResult" || !isType(item, ["tool-result"])) continue
        for (const file of fields.resultFiles(item))
          carried.push({ item: file, callId: content.callId, file: fields.file(file) })
      }
    }
    return { message, role: read.role, items, carried }
  }
}

const speakerOf = (role: ForeignRole): Role =>
  role === "assistant" ? "assistant" : role === "system" ? "system" : "user"

// Only a user's file with inline data is media: the assistant's own files, and files the provider fetches
// itself, stay their stand-in text, so a summary request carries only that text for them.
const mediaOf = (file: ForeignFile): MediaPart | undefined =>
  file.base64 === undefined
    ? undefined
    : {
        _tag: "Media",
        role: "user",
        mediaType: file.mediaType,
        data: { _tag: "Base64", base64: file.base64 },
        // The library's own object: options Tessera does not know reach the provider again.
        providerOptions: file.providerOptions
      }

const partOf = (role: ForeignRole, content: ForeignContent): Part => {
  switch (content._tag) {
    case "Text":
      return text(speakerOf(role), content.text)
    case "ToolCall":
      return toolCall(content.id, content.name, content.input)
    case "ToolResult":
      return toolResult({
        callId: content.callId,
        name: content.name,
        content: content.content,
        isError: content.isError
      })
    case "File":
      return (role === "user" ? mediaOf(content.file) : undefined) ?? text(speakerOf(role), content.standIn)
  }
}

/** A message's own parts, one per item, each remembering its origin. */
export const messageParts = <M, I>(
  message: ForeignMessage<M, I>,
  origins: WeakMap<Part, ForeignOrigin<M, I>>
): Array<Part> =>
  message.items.map(({ content, item }) => {
    const part = partOf(message.role, content)
    origins.set(part, { role: message.role, part: item, message: message.message })
    return part
  })

/** The files a message's tool results carry, as user `Media` parts (inline data only), each remembering its call. */
export const carriedParts = <M, I>(
  message: ForeignMessage<M, I>,
  origins: WeakMap<Part, ForeignOrigin<M, I>>
): Array<Part> => {
  const out: Array<Part> = []
  for (const { callId, file, item } of message.carried ?? []) {
    const part = mediaOf(file)
    if (part === undefined) continue
    origins.set(part, { role: "user", part: item, message: undefined, carriedBy: callId })
    out.push(part)
  }
  return out
}

/**
 * `parts` without the carried files whose call has a result among them: the
 * result (or what replaced it) is how the conversation carries them.
 */
export const withoutAnsweredCarries = <M, I>(
  parts: ReadonlyArray<Part>,
  origins: WeakMap<Part, ForeignOrigin<M, I>>
): ReadonlyArray<Part> => {
  const results = new Set<string>()
  for (const part of parts) if (part._tag === "ToolResult") results.add(part.callId)
  return parts.filter((part) => {
    const carriedBy = origins.get(part)?.carriedBy
    return carriedBy === undefined || !results.has(carriedBy)
  })
}

/** The role of the message a part Tessera made (no origin) goes in: its own, a call's or a result's. */
const madeRole = (part: Part): ForeignRole => {
  switch (part._tag) {
    case "ToolResult":
      return "tool"
    case "ToolCall":
      return "assistant"
    case "Text":
    case "Media":
    case "FileReference":
      return part.role
  }
}

/**
 * Parts as runs of foreign messages. A part that came from a message is its
 * original item, in a run of that message (messages are never merged); a
 * part Tessera made is `render`ed and joins a run of its role's other made
 * parts, an offloaded result joining the open tool run. A carried file is
 * left out while its call has a result among `parts`; without one (a
 * summary request) it is its original item in a user run.
 */
export const foreignRuns = <M, I>(
  parts: ReadonlyArray<Part>,
  origins: WeakMap<Part, ForeignOrigin<M, I>>,
  render: (part: Part) => I
): Array<ForeignRun<M, I>> => {
  const runs: Array<{ role: ForeignRole; source: M | undefined; items: Array<I> }> = []
  let open: (typeof runs)[number] | undefined
  for (const part of withoutAnsweredCarries(parts, origins)) {
    const origin = origins.get(part)
    const role = origin?.role ?? madeRole(part)
    const source = origin?.message
    // An offloaded result stays in its original tool message when that message is still open.
    const joins =
      open !== undefined && open.role === role && (open.source === source || (source === undefined && role === "tool"))
    if (open === undefined || !joins) {
      open = { role, source, items: [] }
      runs.push(open)
    }
    open.items.push(origin === undefined ? render(part) : origin.part)
  }
  return runs
}
