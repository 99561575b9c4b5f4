/**
 * Conversion between Pi's messages and Tessera's parts, so the runtime's
 * compaction and offload run on a Pi context.
 *
 * Pi's media are text and base64 images only: a text block is a `Text` part
 * (a tool result's text blocks together are its `ToolResult` content), an
 * image block is a `Media` part with `Base64` data, in the same place. A
 * message Pi's core does not know (an app's custom message) is one opaque
 * part. Every part made from a message remembers where it came from, and a
 * message whose parts all come back unchanged is rendered as the very
 * original object; only what Tessera replaced (an offloaded result, a
 * summary) is rendered anew.
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

interface Origin {
  readonly message: AgentMessage
  /** The block the part stands for; `undefined` for a part standing for a whole message. */
  readonly block: Block | undefined
}

/** Parts with the origin of each part made from a message. */
export interface Converted {
  readonly history: History.History
  readonly origins: WeakMap<Model.Part, Origin>
  /** The parts made from each message, in order. */
  readonly partsOf: Map<AgentMessage, ReadonlyArray<Model.Part>>
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

const image = (role: Model.Role, block: ImageContent): Model.MediaPart => ({
  _tag: "Media",
  role,
  mediaType: block.mimeType,
  data: { _tag: "Base64", base64: block.data },
  providerOptions: {}
})

/** A tool call block as a Tessera call. */
export const toolCallPart = (block: { readonly id: string; readonly name: string; readonly arguments: unknown }) =>
  Model.toolCall(block.id, block.name, (block.arguments ?? {}) as Schema.Json)

const convertMessage = (message: AgentMessage, origins: WeakMap<Model.Part, Origin>): Array<Model.Part> => {
  const out: Array<Model.Part> = []
  const add = (part: Model.Part, block: Block | undefined) => {
    origins.set(part, { message, block })
    out.push(part)
  }
  switch (roleOf(message)) {
    case "user": {
      const user = message as UserMessage
      if (typeof user.content === "string") add(Model.text("user", user.content), undefined)
      else {
        for (const block of user.content) {
          add(block.type === "text" ? Model.text("user", block.text) : image("user", block), block)
        }
      }
      return out
    }
    case "assistant": {
      for (const block of (message as AssistantMessage).content) {
        switch (block.type) {
          case "text":
            add(Model.text("assistant", block.text), block)
            break
          case "thinking":
            add(Model.text("assistant", block.thinking), block)
            break
          case "toolCall":
            add(toolCallPart(block), block)
            break
        }
      }
      return out
    }
    case "toolResult": {
      const result = message as ToolResultMessage
      add(
        Model.toolResult({
          callId: result.toolCallId,
          name: result.toolName,
          content: resultText(result.content),
          isError: result.isError
        }),
        undefined
      )
      for (const block of result.content) if (block.type === "image") add(image("user", block), block)
      return out
    }
    default:
      // An app's own message: opaque, measured by its JSON, rendered back as it was.
      add(Model.text("user", `[${roleOf(message)}] ${JSON.stringify(message)}`), undefined)
      return out
  }
}

/**
 * The messages as a history: everything up to and including the first user
 * message is the task (it opens every request and is never summarized);
 * everything after is history.
 */
export const toHistory = (messages: ReadonlyArray<AgentMessage>): Converted => {
  const origins = new WeakMap<Model.Part, Origin>()
  const partsOf = new Map<AgentMessage, ReadonlyArray<Model.Part>>()
  const results = new Map<string, ToolResultMessage>()
  const history = History.fromMessages(
    messages,
    (message) => roleOf(message) === "user",
    (message) => {
      const converted = convertMessage(message, origins)
      // A message without content (an errored answer) keeps its place: one empty part stands for it.
      if (converted.length === 0) {
        const empty = Model.text(roleOf(message) === "assistant" ? "assistant" : "user", "")
        origins.set(empty, { message, block: undefined })
        converted.push(empty)
      }
      partsOf.set(message, converted)
      if (roleOf(message) === "toolResult")
        results.set((message as ToolResultMessage).toolCallId, message as ToolResultMessage)
      return converted
    }
  )
  return { history, origins, partsOf, results }
}

const textBlock = (text: string): TextContent => ({ type: "text", text })

const rendered = (part: Model.Part): TextContent | ImageContent =>
  part._tag === "Media" && part.data._tag === "Base64"
    ? { type: "image", data: part.data.base64, mimeType: part.mediaType }
    : textBlock(part._tag === "Text" ? part.text : Compaction.renderPart(part))

/**
 * The parts of a history as Pi messages. A message all of whose parts come
 * back unchanged is the original object; a tool result whose content
 * Tessera replaced keeps its message (id, name, images, details) with the
 * new text; parts Tessera made (a summary) form a user message.
 */
export const toMessages = (parts: ReadonlyArray<Model.Part>, converted: Converted): Array<AgentMessage> => {
  const { origins, partsOf, results } = converted
  const out: Array<AgentMessage> = []
  const sourceOf = (part: Model.Part): AgentMessage | undefined => {
    const origin = origins.get(part)
    if (origin !== undefined) return origin.message
    // A replaced tool result stays in its own message (its images, its details).
    return part._tag === "ToolResult" ? results.get(part.callId) : undefined
  }
  const emit = (source: AgentMessage | undefined, grouped: ReadonlyArray<Model.Part>) => {
    if (source === undefined) {
      out.push({ role: "user", content: grouped.map(rendered), timestamp: 0 } satisfies UserMessage)
      return
    }
    const all = partsOf.get(source)
    if (all !== undefined && all.length === grouped.length && grouped.every((part, i) => part === all[i])) {
      out.push(source)
      return
    }
    const blockOf = (part: Model.Part) => origins.get(part)?.block
    switch (roleOf(source)) {
      case "toolResult": {
        const content = grouped.flatMap((part): Array<TextContent | ImageContent> => {
          if (part._tag !== "ToolResult")
            return [(blockOf(part) as TextContent | ImageContent | undefined) ?? rendered(part)]
          return origins.has(part)
            ? (source as ToolResultMessage).content.filter((block) => block.type === "text")
            : [textBlock(part.content)]
        })
        out.push({ ...(source as ToolResultMessage), content })
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
  for (const part of parts) {
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
  const origins = new WeakMap<Model.Part, Origin>()
  const parts: Array<Model.Part> = []
  if (context.systemPrompt !== undefined && context.systemPrompt.length > 0) {
    parts.push(Model.text("system", context.systemPrompt))
  }
  for (const message of context.messages) parts.push(...convertMessage(message, origins))
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
