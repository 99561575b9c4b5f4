/**
 * Conversion between Effect AI's `Prompt` and Tessera's parts, both ways:
 *
 * - {@link toHistory}: a prompt as a Tessera `History`, every part made from
 *   a prompt part remembering where it came from, so that a part that comes
 *   back unchanged is rendered as the very original (its provider options,
 *   file data and reasoning included): only what Tessera replaced (an
 *   offloaded result, a summary reference) is rendered anew ({@link toPrompt}).
 * - {@link partsToPrompt}: the parts of a Tessera request as a prompt, for a
 *   Tessera model served by an Effect AI `LanguageModel`.
 */
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as Prompt from "effect/ai/Prompt"
import type * as Schema from "effect/Schema"

type Role = Prompt.Message["role"]
type ContentPart = Exclude<Prompt.Message["content"], string>[number]

interface Origin {
  readonly role: Role
  readonly part: ContentPart | string
  readonly message: Prompt.Message
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
    default:
      return Model.text(speaker, describeOther(part))
  }
}

/**
 * The prompt as a history: the leading system messages and the first user
 * message are the task (they open every request and are never summarized);
 * everything after them is history.
 */
export const toHistory = (prompt: Prompt.Prompt): Converted => {
  const origins = new WeakMap<Model.Part, Origin>()
  const history = History.fromMessages(
    prompt.content,
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
 * tool message when that message is still open.
 */
export const toPrompt = (parts: ReadonlyArray<Model.Part>, origins: WeakMap<Model.Part, Origin>): Prompt.Prompt => {
  const messages: Array<Prompt.Message> = []
  let group: { role: Role; content: Array<ContentPart | string>; source: Prompt.Message | undefined } | undefined
  const flush = () => {
    if (group === undefined) return
    messages.push(...message(group.role, group.content, group.source?.options ?? {}))
    group = undefined
  }
  for (const part of parts) {
    const origin = origins.get(part)
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
