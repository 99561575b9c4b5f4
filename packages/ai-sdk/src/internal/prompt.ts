/**
 * Conversion between the AI SDK's `LanguageModelV4Prompt` and a Tessera
 * `History`, so the runtime's own compaction and offload run on an AI SDK
 * request. Every Tessera part made from a prompt part remembers where it
 * came from, and a part that comes back unchanged is rendered as the very
 * original (provider options, file data and reasoning included): only what
 * Tessera replaced (an offloaded result, a summary) is rendered anew.
 *
 * Files with inline data (`{ type: "data" }`: bytes or base64) become
 * Tessera `Media` parts, so that compaction hands them to the summary
 * request covering them, where they are rendered as the caller's own file
 * parts: a user message's files, and the files of a `content` output of a
 * result in a tool message. Files given by URL, by provider reference or as
 * inline text, the assistant's own files (and a provider-run result's), stay
 * text stand-ins (`[file <type>]` or the result's text): a summary request
 * carries only that text for them.
 */
import type {
  LanguageModelV4FilePart,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4ToolResultPart
} from "@ai-sdk/provider"
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as Base64 from "effect/encoding/Base64"
import type * as Schema from "effect/Schema"

type MessageRole = LanguageModelV4Message["role"]
type ContentPart = Exclude<LanguageModelV4Message["content"], string>[number]

interface Origin {
  readonly role: MessageRole
  readonly part: ContentPart | string
  /** None for a tool result's file: it is rendered in a user message of its own (see {@link toPrompt}). */
  readonly message: LanguageModelV4Message | undefined
  /** For a tool result's file, the call whose result carries it. */
  readonly carriedBy?: string
}

/** A prompt as a history, with the origin of each part made from it. */
export interface Converted {
  readonly history: History.History
  readonly origins: WeakMap<Model.Part, Origin>
}

/** The text a tool result's output stands for: what the model reads of it. */
export const outputText = (output: LanguageModelV4ToolResultOutput): string => {
  switch (output.type) {
    case "text":
    case "error-text":
      return output.value
    case "json":
    case "error-json":
      return JSON.stringify(output.value)
    case "execution-denied":
      return `execution denied${output.reason === undefined ? "" : `: ${output.reason}`}`
    case "content":
      return output.value.map((item) => (item.type === "text" ? item.text : `[${item.type}]`)).join("\n")
  }
}

const isErrorOutput = (output: LanguageModelV4ToolResultOutput): boolean =>
  output.type === "error-text" || output.type === "error-json" || output.type === "execution-denied"

const toolResultPart = (part: LanguageModelV4ToolResultPart): Model.ToolResultPart =>
  Model.toolResult({
    callId: part.toolCallId,
    name: part.toolName,
    content: outputText(part.output),
    isError: isErrorOutput(part.output)
  })

type FileData = LanguageModelV4FilePart["data"]

/** A file's inline data as Tessera media data; none for a file the provider fetches or reads otherwise. */
const inlineData = (data: FileData): Model.MediaData | undefined =>
  data.type === "data"
    ? { _tag: "Base64", base64: typeof data.data === "string" ? data.data : Base64.encode(data.data) }
    : undefined

/** A file with inline data as a `Media` part (measured by its `[media <type>]` rendering, like any media). */
const mediaPart = (
  role: Model.Role,
  file: Pick<LanguageModelV4FilePart, "data" | "mediaType" | "providerOptions">
): Model.MediaPart | undefined => {
  const data = inlineData(file.data)
  return data === undefined
    ? undefined
    : { _tag: "Media", role, mediaType: file.mediaType, data, providerOptions: file.providerOptions ?? {} }
}

const describeOther = (part: ContentPart): string =>
  part.type === "file" || part.type === "reasoning-file" ? `[${part.type} ${part.mediaType}]` : `[${part.type}]`

const speakerOf = (role: MessageRole): Model.Role => (role === "assistant" ? "assistant" : "user")

const convertPart = (role: MessageRole, part: ContentPart): Model.Part => {
  switch (part.type) {
    case "text":
    case "reasoning":
      return Model.text(speakerOf(role), part.text)
    case "tool-call":
      return Model.toolCall(part.toolCallId, part.toolName, part.input as Schema.Json)
    case "tool-result":
      return toolResultPart(part)
    case "file":
      return (role === "user" ? mediaPart("user", part) : undefined) ?? Model.text(speakerOf(role), describeOther(part))
    default:
      return Model.text(speakerOf(role), describeOther(part))
  }
}

/**
 * The files of a tool message's results, as `Media` parts remembering the
 * call that carries them. Only a file with inline data; the result's own
 * part still carries every item, so these are rendered only where that
 * result is not (see {@link toPrompt}).
 */
const carriedMedia = (message: LanguageModelV4Message, origins: WeakMap<Model.Part, Origin>): Array<Model.Part> => {
  if (message.role !== "tool") return []
  const out: Array<Model.Part> = []
  for (const content of message.content) {
    if (content.type !== "tool-result" || content.output.type !== "content") continue
    for (const item of content.output.value) {
      if (item.type !== "file") continue
      const part = mediaPart("user", item)
      if (part === undefined) continue
      origins.set(part, { role: "user", part: item, message: undefined, carriedBy: content.toolCallId })
      out.push(part)
    }
  }
  return out
}

const convertMessage = (message: LanguageModelV4Message, origins: WeakMap<Model.Part, Origin>): Array<Model.Part> => {
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
export const toHistory = (prompt: LanguageModelV4Prompt): Converted => {
  const origins = new WeakMap<Model.Part, Origin>()
  const history = History.fromMessages(
    prompt,
    (message) => message.role === "user",
    (message) => convertMessage(message, origins),
    { of: (message) => carriedMedia(message, origins), within: (message) => message.role === "tool" }
  )
  return { history, origins }
}

const roleOf = (part: Model.Part): MessageRole => {
  switch (part._tag) {
    case "ToolResult":
      return "tool"
    case "ToolCall":
      return "assistant"
    case "Text":
    case "Media":
      return part.role
    case "FileReference":
      return part.role === "system" ? "system" : "user"
  }
}

const rendered = (part: Model.Part): ContentPart | string => {
  switch (part._tag) {
    case "Text":
      return part.role === "system" ? part.text : { type: "text", text: part.text }
    case "ToolCall":
      return { type: "tool-call", toolCallId: part.id, toolName: part.name, input: part.input }
    case "ToolResult":
      return {
        type: "tool-result",
        toolCallId: part.callId,
        toolName: part.name,
        output: { type: part.isError ? "error-text" : "text", value: part.content }
      }
    case "FileReference":
    case "Media":
      return part.role === "system" ? Compaction.renderPart(part) : { type: "text", text: Compaction.renderPart(part) }
  }
}

/**
 * The parts of a history as a prompt. A part that came from the prompt
 * unchanged is its original, in a message of its own origin (messages are
 * never merged or split); parts Tessera made (a summary reference, an
 * offloaded result) form messages of their role. A tool result's file is
 * left out while `parts` hold a result of its call (the result, or what
 * replaced it, is how the prompt carried it); without one (a summary
 * request) it is the caller's own file item, in a user message.
 */
export const toPrompt = (
  parts: ReadonlyArray<Model.Part>,
  origins: WeakMap<Model.Part, Origin>
): LanguageModelV4Prompt => {
  const results = new Set<string>()
  for (const part of parts) if (part._tag === "ToolResult") results.add(part.callId)
  const prompt: Array<LanguageModelV4Message> = []
  let group:
    | { role: MessageRole; content: Array<ContentPart | string>; source: LanguageModelV4Message | undefined }
    | undefined
  const flush = () => {
    if (group === undefined) return
    const providerOptions = group.source?.providerOptions
    const extra = providerOptions === undefined ? {} : { providerOptions }
    if (group.role === "system") {
      for (const content of group.content) prompt.push({ role: "system", content: content as string, ...extra })
    } else {
      prompt.push({ role: group.role, content: group.content, ...extra } as LanguageModelV4Message)
    }
    group = undefined
  }
  for (const part of parts) {
    const origin = origins.get(part)
    if (origin?.carriedBy !== undefined && results.has(origin.carriedBy)) continue
    const role = origin?.role ?? roleOf(part)
    const content = origin?.part ?? rendered(part)
    // An offloaded result stays in its original tool message when that message is still open.
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
  return prompt
}
