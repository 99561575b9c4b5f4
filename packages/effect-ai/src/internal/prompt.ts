/**
 * Conversion between Effect AI's `Prompt` and Tessera's parts, both ways:
 *
 * - {@link toHistory}: a prompt as a Tessera `History`, every part made from
 *   a prompt part remembering where it came from, so that a part that comes
 *   back unchanged is rendered as the very original (its provider options,
 *   file data and reasoning included): only what Tessera replaced (an
 *   offloaded result, a summary reference) is rendered anew ({@link toPrompt}).
 *   Files with inline data (bytes, or a base64 string) become Tessera
 *   `Media` parts, so that compaction hands them to the summary request
 *   covering them, where they are rendered as the caller's own file parts:
 *   a user message's files, and the files of the `modelOutput` of a result
 *   in a tool message. Files given by URL, the assistant's own files (and a
 *   provider-run result's) stay text stand-ins (`[file <type>]` or the
 *   result's text): a summary request carries only that text for them.
 * - {@link partsToPrompt}: the parts of a Tessera request as a prompt, for a
 *   Tessera model served by an Effect AI `LanguageModel`.
 */
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as Prompt from "effect/ai/Prompt"
import * as Base64 from "effect/encoding/Base64"
import type * as Schema from "effect/Schema"

type Role = Prompt.Message["role"]
type ContentPart = Exclude<Prompt.Message["content"], string>[number]

interface Origin {
  readonly role: Role
  readonly part: ContentPart | string
  /** None for a tool result's file: it is rendered in a user message of its own (see {@link toPrompt}). */
  readonly message: Prompt.Message | undefined
  /** For a tool result's file, the call whose result carries it. */
  readonly carriedBy?: string
}

/** A prompt as a history, with the origin of each part made from it. */
export interface Converted {
  readonly history: History.History
  readonly origins: WeakMap<Model.Part, Origin>
}

/** The text a tool result stands for: what the model reads of it. */
export const resultText = (part: Prompt.ToolResultPart): string =>
  part.modelOutput !== undefined && part.modelOutput.length > 0
    ? Prompt.toolModelOutputToText(part.modelOutput)
    : typeof part.result === "string"
      ? part.result
      : (JSON.stringify(part.result) ?? "null")

const describeOther = (part: ContentPart): string =>
  part.type === "file" ? `[file ${part.mediaType}]` : `[${part.type}]`

/** A file with inline data as a `Media` part (measured by its `[media <type>]` rendering, like any media). */
const mediaPart = (role: Model.Role, file: Prompt.FilePart): Model.MediaPart | undefined =>
  file.data instanceof URL
    ? undefined
    : {
        _tag: "Media",
        role,
        mediaType: file.mediaType,
        data: { _tag: "Base64", base64: typeof file.data === "string" ? file.data : Base64.encode(file.data) },
        // A part built by hand (not decoded by `Prompt.make`) may lack its options.
        providerOptions: file.options ?? {}
      }

const convertPart = (role: Role, part: ContentPart): Model.Part => {
  const speaker = role === "assistant" ? "assistant" : "user"
  switch (part.type) {
    case "text":
    case "reasoning":
      return Model.text(speaker, part.text)
    case "tool-call":
      return Model.toolCall(part.id, part.name, (part.params ?? null) as Schema.Json)
    case "tool-result":
      return Model.toolResult({
        callId: part.id,
        name: part.name,
        content: resultText(part),
        isError: part.isFailure
      })
    case "file":
      return (role === "user" ? mediaPart("user", part) : undefined) ?? Model.text(speaker, describeOther(part))
    default:
      return Model.text(speaker, describeOther(part))
  }
}

/**
 * The files of a tool message's results (their `modelOutput`), as `Media`
 * parts remembering the call that carries them. Only a file with inline
 * data; the result's own part still carries every item, so these are
 * rendered only where that result is not (see {@link toPrompt}).
 */
const carriedMedia = (message: Prompt.Message, origins: WeakMap<Model.Part, Origin>): Array<Model.Part> => {
  if (message.role !== "tool") return []
  const out: Array<Model.Part> = []
  for (const content of message.content) {
    if (content.type !== "tool-result") continue
    for (const item of content.modelOutput ?? []) {
      if (item.type !== "file") continue
      const part = mediaPart("user", item)
      if (part === undefined) continue
      origins.set(part, { role: "user", part: item, message: undefined, carriedBy: content.id })
      out.push(part)
    }
  }
  return out
}

const convertMessage = (message: Prompt.Message, origins: WeakMap<Model.Part, Origin>): Array<Model.Part> => {
  if (message.role === "system") {
    const part = Model.text("system", message.content)
    origins.set(part, { role: "system", part: message.content, message })
    return [part]
  }
  return message.content.map((content) => {
    const part = convertPart(message.role, content)
    origins.set(part, { role: message.role, part: content, message })
    return part
  })
}

/**
 * The prompt as a history: the leading system messages and the first user
 * message are the task (they open every request and are never summarized);
 * everything after them is history. The files of tool results follow the
 * run of tool messages holding them: a `Media` part among the results
 * would open a round of its own, separating the calls after it from their
 * results.
 */
export const toHistory = (prompt: Prompt.Prompt): Converted => {
  const origins = new WeakMap<Model.Part, Origin>()
  const history = History.fromMessages(
    prompt.content,
    (message) => message.role === "user",
    (message) => convertMessage(message, origins),
    { of: (message) => carriedMedia(message, origins), within: (message) => message.role === "tool" }
  )
  return { history, origins }
}

const roleOf = (part: Model.Part): Role => {
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

const rendered = (part: Model.Part): ContentPart | string => {
  switch (part._tag) {
    case "Text":
      return part.role === "system" ? part.text : Prompt.makePart("text", { text: part.text })
    case "ToolCall":
      return Prompt.makePart("tool-call", {
        id: part.id,
        name: part.name,
        params: part.input,
        providerExecuted: false
      })
    case "ToolResult":
      return Prompt.makePart("tool-result", {
        id: part.callId,
        name: part.name,
        isFailure: part.isError,
        result: part.content,
        providerExecuted: false
      })
    case "Media":
      return part.role === "system"
        ? Compaction.renderPart(part)
        : Prompt.makePart("file", {
            mediaType: part.mediaType,
            data: part.data._tag === "Base64" ? part.data.base64 : new URL(part.data.url),
            options: part.providerOptions as Prompt.FilePartOptions
          })
    case "FileReference":
      return part.role === "system"
        ? Compaction.renderPart(part)
        : Prompt.makePart("text", { text: Compaction.renderPart(part) })
  }
}

const message = (
  role: Role,
  content: Array<ContentPart | string>,
  options: Prompt.ProviderOptions
): Array<Prompt.Message> => {
  switch (role) {
    case "system":
      return content.map((text) => Prompt.makeMessage("system", { content: text as string, options }))
    case "user":
      return [Prompt.makeMessage("user", { content: content as Array<Prompt.UserMessagePart>, options })]
    case "assistant":
      return [Prompt.makeMessage("assistant", { content: content as Array<Prompt.AssistantMessagePart>, options })]
    case "tool":
      return [Prompt.makeMessage("tool", { content: content as Array<Prompt.ToolMessagePart>, options })]
  }
}

/**
 * Parts as a prompt. A part that came from a prompt unchanged is its
 * original, in a message of its own origin (messages are never merged or
 * split); parts Tessera made (a summary reference, an offloaded result)
 * form messages of their role, an offloaded result joining its original
 * tool message when that message is still open. A tool result's file is
 * left out while `parts` hold a result of its call (the result, or what
 * replaced it, is how the prompt carried it); without one (a summary
 * request) it is the caller's own file part, in a user message.
 */
export const toPrompt = (parts: ReadonlyArray<Model.Part>, origins: WeakMap<Model.Part, Origin>): Prompt.Prompt => {
  const results = new Set<string>()
  for (const part of parts) if (part._tag === "ToolResult") results.add(part.callId)
  const messages: Array<Prompt.Message> = []
  let group: { role: Role; content: Array<ContentPart | string>; source: Prompt.Message | undefined } | undefined
  const flush = () => {
    if (group === undefined) return
    messages.push(...message(group.role, group.content, group.source?.options ?? {}))
    group = undefined
  }
  for (const part of parts) {
    const origin = origins.get(part)
    if (origin?.carriedBy !== undefined && results.has(origin.carriedBy)) continue
    const role = origin?.role ?? roleOf(part)
    const content = origin?.part ?? rendered(part)
    const source = origin?.message
    const joins =
      group !== undefined &&
      group.role === role &&
      (group.source === source ||
        (source === undefined && role === "tool") ||
        (group.source === undefined && origin === undefined))
    if (!joins) {
      flush()
      group = { role, content: [], source }
    }
    group?.content.push(content)
  }
  flush()
  return Prompt.fromMessages(messages)
}

/** The parts of a Tessera request as a prompt (no origins: every part rendered). */
export const partsToPrompt = (parts: ReadonlyArray<Model.Part>): Prompt.Prompt => toPrompt(parts, new WeakMap())
