/**
 * Conversion between Pi's messages and Tessera's parts, so the runtime's
 * compaction and offload run on a Pi context.
 *
 * Pi's media are text and base64 images only: a text block is a `Text` part
 * (a tool result's text blocks together are its `ToolResult` content), an
 * image block is a `Media` part with `Base64` data, in its place in a user
 * message and after the run of tool results for a result's image (the
 * runtime's bridge, `History.fromForeign`, says where). A message Pi's core
 * does not know (an app's custom message) is one opaque part. Every part
 * made from a message remembers where it came from, and a message whose
 * parts all come back unchanged is rendered as the very original object;
 * only what Tessera replaced (an offloaded result, a summary) is rendered
 * anew.
 */
import type { AgentMessage } from "@mariozechner/pi-agent-core"
import type {
  AssistantMessage,
  Context,
  ImageContent,
  Message,
  Usage as PiUsage,
  TextContent,
  ToolResultMessage,
  UserMessage
} from "@mariozechner/pi-ai"
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import type * as Schema from "effect/Schema"

type Block = AssistantMessage["content"][number] | TextContent | ImageContent
/** The block a part stands for; `undefined` for a part standing for a whole message (a result, a string). */
type Item = Block | undefined

/** Pi's messages as a history, with the origin of each part made from a message. */
export interface Converted extends History.ForeignHistory<AgentMessage, Item> {
  /** Each tool result message, by call id. */
  readonly results: Map<string, ToolResultMessage>
}

const roleOf = (message: AgentMessage): string => (message as { readonly role?: unknown }).role as string

/** The text of a tool result's content as Tessera's `ToolResult` holds it: its text blocks, one per line. */
export const resultText = (content: ReadonlyArray<TextContent | ImageContent>): string =>
  content
    .filter((block): block is TextContent => block.type === "text")
    .map((block) => block.text)
    .join("\n")

/** A tool call block as a Tessera call. */
export const toolCallPart = (block: { readonly id: string; readonly name: string; readonly arguments: unknown }) =>
  Model.toolCall(block.id, block.name, (block.arguments ?? {}) as Schema.Json)

const imageFile = (block: ImageContent): History.ForeignFile => ({
  mediaType: block.mimeType,
  base64: block.data,
  providerOptions: {}
})

const blockItem = (block: TextContent | ImageContent): History.ForeignItem<Item> => ({
  item: block,
  content:
    block.type === "text"
      ? { _tag: "Text", text: block.text }
      : { _tag: "File", file: imageFile(block), standIn: `[image ${block.mimeType}]` }
})

const foreignOf = (message: AgentMessage): History.ForeignMessage<AgentMessage, Item> => {
  const neutral = ((): History.ForeignMessage<AgentMessage, Item> => {
    switch (roleOf(message)) {
      case "user": {
        const user = message as UserMessage
        const items =
          typeof user.content === "string"
            ? [{ item: undefined, content: { _tag: "Text", text: user.content } } as const]
            : user.content.map(blockItem)
        return { message, role: "user", items }
      }
      case "assistant":
        return {
          message,
          role: "assistant",
          items: (message as AssistantMessage).content.map(
            (block): History.ForeignItem<Item> => ({
              item: block,
              content:
                block.type === "text"
                  ? { _tag: "Text", text: block.text }
                  : block.type === "thinking"
                    ? { _tag: "Text", text: block.thinking }
                    : { _tag: "ToolCall", id: block.id, name: block.name, input: toolCallPart(block).input }
            })
          )
        }
      case "toolResult": {
        const result = message as ToolResultMessage
        return {
          message,
          role: "tool",
          items: [
            {
              item: undefined,
              content: {
                _tag: "ToolResult",
                callId: result.toolCallId,
                name: result.toolName,
                content: resultText(result.content),
                isError: result.isError
              }
            }
          ],
          // Its images follow the run of results (History.fromForeign), so they never split a round.
          carried: result.content.flatMap((block) =>
            block.type === "image" ? [{ item: block, callId: result.toolCallId, file: imageFile(block) }] : []
          )
        }
      }
      default:
        // An app's own message: opaque, measured by its JSON, rendered back as it was.
        return {
          message,
          role: "custom",
          items: [
            { item: undefined, content: { _tag: "Text", text: `[${roleOf(message)}] ${JSON.stringify(message)}` } }
          ]
        }
    }
  })()
  // A message without content (an errored answer) keeps its place: one empty part stands for it.
  return neutral.items.length > 0
    ? neutral
    : { ...neutral, items: [{ item: undefined, content: { _tag: "Text", text: "" } }] }
}

/**
 * The messages as a history (`History.fromForeign`): everything up to and
 * including the first user message is the task (it opens every request and
 * is never summarized); everything after is history. A tool result's
 * images follow the run of tool results they came with.
 */
export const toHistory = (messages: ReadonlyArray<AgentMessage>): Converted => {
  const results = new Map<string, ToolResultMessage>()
  for (const message of messages) {
    if (roleOf(message) === "toolResult")
      results.set((message as ToolResultMessage).toolCallId, message as ToolResultMessage)
  }
  return { ...History.fromForeign(messages.map(foreignOf)), results }
}

const textBlock = (text: string): TextContent => ({ type: "text", text })

/** A part Tessera made as a Pi block: base64 media as an image, anything else as text. */
const rendered = (part: Model.Part): TextContent | ImageContent =>
  part._tag === "Media" && part.data._tag === "Base64"
    ? { type: "image", data: part.data.base64, mimeType: part.mediaType }
    : textBlock(part._tag === "Text" ? part.text : Compaction.renderPart(part))

const imagesOf = (message: ToolResultMessage): Array<TextContent | ImageContent> =>
  message.content.filter((block) => block.type === "image")

/**
 * The parts of a history as Pi messages. A message all of whose parts come
 * back unchanged is the original object; a tool result whose content
 * Tessera replaced keeps its message (id, name, images, details) with the
 * new text; parts Tessera made (a summary) form a user message. A result's
 * images are left out while `parts` hold a result of its call (that
 * result's message carries them); without one they form a user message.
 */
export const toMessages = (parts: ReadonlyArray<Model.Part>, converted: Converted): Array<AgentMessage> => {
  const { messageParts, origins, results } = converted
  const out: Array<AgentMessage> = []
  const sourceOf = (part: Model.Part): AgentMessage | undefined => {
    const origin = origins.get(part)
    if (origin !== undefined) return origin.message
    // A replaced tool result stays in its own message (its images, its details).
    return part._tag === "ToolResult" ? results.get(part.callId) : undefined
  }
  const blockOf = (part: Model.Part) => origins.get(part)?.part
  const emit = (source: AgentMessage | undefined, grouped: ReadonlyArray<Model.Part>) => {
    if (source === undefined) {
      out.push({
        role: "user",
        content: grouped.map((part) => (blockOf(part) as TextContent | ImageContent | undefined) ?? rendered(part)),
        timestamp: 0
      } satisfies UserMessage)
      return
    }
    const all = messageParts.get(source)
    if (all !== undefined && all.length === grouped.length && grouped.every((part, i) => part === all[i])) {
      out.push(source)
      return
    }
    switch (roleOf(source)) {
      case "toolResult": {
        const result = source as ToolResultMessage
        const content = grouped.flatMap((part): Array<TextContent | ImageContent> => {
          if (part._tag !== "ToolResult")
            return [(blockOf(part) as TextContent | ImageContent | undefined) ?? rendered(part)]
          return origins.has(part) ? result.content : [textBlock(part.content), ...imagesOf(result)]
        })
        out.push({ ...result, content })
        return
      }
      case "assistant":
        out.push({
          ...(source as AssistantMessage),
          content: grouped.map(
            (part) =>
              (blockOf(part) as AssistantMessage["content"][number] | undefined) ??
              textBlock(Compaction.renderPart(part))
          )
        })
        return
      case "user":
        out.push({
          ...(source as UserMessage),
          content: grouped.map((part) => (blockOf(part) as TextContent | ImageContent | undefined) ?? rendered(part))
        })
        return
      default:
        out.push(source)
    }
  }
  let current: AgentMessage | undefined
  let grouped: Array<Model.Part> = []
  for (const part of History.withoutAnsweredCarries(parts, origins)) {
    const source = sourceOf(part)
    if (grouped.length > 0 && source !== current) {
      emit(current, grouped)
      grouped = []
    }
    current = source
    grouped.push(part)
  }
  if (grouped.length > 0) emit(current, grouped)
  return out
}

/** The request Pi sends (system prompt, messages, tools) as Tessera measures and journals it. */
export const toRequest = (context: Context): Model.ModelRequest => {
  const parts: Array<Model.Part> = []
  if (context.systemPrompt !== undefined && context.systemPrompt.length > 0) {
    parts.push(Model.text("system", context.systemPrompt))
  }
  // As Pi sends them: a result's images in place.
  for (const message of context.messages) parts.push(...History.foreignParts(foreignOf(message)))
  return {
    parts,
    tools: (context.tools ?? []).map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.parameters as unknown as Record<string, unknown>
    }))
  }
}

/** Pi's usage as Tessera's: input counts the cached tokens too, as providers report them. */
export const toUsage = (usage: PiUsage): Model.Usage => ({
  inputTokens: usage.input + usage.cacheRead + usage.cacheWrite,
  outputTokens: usage.output,
  cachedInputTokens: usage.cacheRead
})

const finishReasons: Record<AssistantMessage["stopReason"], Model.FinishReason> = {
  stop: "stop",
  length: "length",
  toolUse: "tool-calls",
  error: "error",
  aborted: "other"
}

/** An answer as Tessera journals it: its text, its calls, usage and finish reason. */
export const toResponse = (message: AssistantMessage): Model.ModelResponse => ({
  text: message.content
    .filter((block): block is TextContent => block.type === "text")
    .map((block) => block.text)
    .join(""),
  toolCalls: message.content.flatMap((block) => (block.type === "toolCall" ? [toolCallPart(block)] : [])),
  usage: toUsage(message.usage),
  finishReason: finishReasons[message.stopReason]
})

/**
 * A summary request (Tessera's parts) as a Pi context: system parts become
 * the system prompt, followed by the agent's own (`agentSystemPrompt`, as
 * the agent's requests carry it; nothing added when it is empty).
 */
export const toSummaryContext = (request: Model.ModelRequest, agentSystemPrompt: string): Context => {
  const system: Array<string> = []
  const messages: Array<Message> = []
  for (const part of request.parts) {
    if (part._tag === "Text" && part.role === "system") system.push(part.text)
    else messages.push({ role: "user", content: [rendered(part)], timestamp: 0 })
  }
  if (agentSystemPrompt.length > 0) system.push(agentSystemPrompt)
  return { systemPrompt: system.join("\n\n"), messages }
}
