/**
 * Conversion between the AI SDK's `LanguageModelV4Prompt` and a Tessera
 * `History`, so the runtime's own compaction and offload run on an AI SDK
 * request. Every Tessera part made from a prompt part remembers where it
 * came from, and a part that comes back unchanged is rendered as the very
 * original (provider options, file data and reasoning included): only what
 * Tessera replaced (an offloaded result, a summary) is rendered anew.
 */
import type {
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4ToolResultOutput,
  LanguageModelV4ToolResultPart
} from "@ai-sdk/provider"
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import type * as Schema from "effect/Schema"

type MessageRole = LanguageModelV4Message["role"]
type ContentPart = Exclude<LanguageModelV4Message["content"], string>[number]

interface Origin {
  readonly role: MessageRole
  readonly part: ContentPart | string
  readonly message: LanguageModelV4Message
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

const describeOther = (part: ContentPart): string =>
  part.type === "file" || part.type === "reasoning-file" ? `[${part.type} ${part.mediaType}]` : `[${part.type}]`

const convertPart = (role: MessageRole, part: ContentPart): Model.Part => {
  switch (part.type) {
    case "text":
    case "reasoning":
      return Model.text(role === "assistant" ? "assistant" : "user", part.text)
    case "tool-call":
      return Model.toolCall(part.toolCallId, part.toolName, part.input as Schema.Json)
    case "tool-result":
      return toolResultPart(part)
    default:
      return Model.text(role === "assistant" ? "assistant" : "user", describeOther(part))
  }
}

/**
 * The prompt as a history: the leading system messages and the first user
 * message are the task (they open every request and are never summarized);
 * everything after them is history.
 */
export const toHistory = (prompt: LanguageModelV4Prompt): Converted => {
  const origins = new WeakMap<Model.Part, Origin>()
  const history = History.fromMessages(
    prompt,
    (message) => message.role === "user",
    (message) => {
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
 * offloaded result) form messages of their role.
 */
export const toPrompt = (
  parts: ReadonlyArray<Model.Part>,
  origins: WeakMap<Model.Part, Origin>
): LanguageModelV4Prompt => {
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
