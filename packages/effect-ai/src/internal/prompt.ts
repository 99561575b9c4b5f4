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
import type * as Model from "@tessera/runtime/Model"
import * as Prompt from "effect/ai/Prompt"
import * as Base64 from "effect/encoding/Base64"
import type * as Schema from "effect/Schema"

type Role = Prompt.Message["role"]
type ContentPart = Exclude<Prompt.Message["content"], string>[number]
/** A message's item: a content part, or a system message's text. */
type Item = ContentPart | string

/** A prompt as a history, with the origin of each part made from it. */
export type Converted = History.ForeignHistory<Prompt.Message, Item>

/** The text a tool result stands for: what the model reads of it. */
export const resultText = (part: Prompt.ToolResultPart): string =>
  part.modelOutput !== undefined && part.modelOutput.length > 0
    ? Prompt.toolModelOutputToText(part.modelOutput)
    : typeof part.result === "string"
      ? part.result
      : (JSON.stringify(part.result) ?? "null")

/** A file as the bridge reads it: inline data (bytes, or a base64 string) as base64; none for a URL. */
const fileOf = (file: Prompt.FilePart): History.ForeignFile => ({
  mediaType: file.mediaType,
  base64: file.data instanceof URL ? undefined : typeof file.data === "string" ? file.data : Base64.encode(file.data),
  // A part built by hand (not decoded by `Prompt.make`) may lack its options.
  providerOptions: file.options ?? {}
})

// Effect AI's fields; the rules (stand-ins, carried files) are the bridge's, alike for every adapter.
const foreignOf = History.promptReader<Prompt.Message>({
  text: (part) => part.text,
  toolCall: (part) => ({ id: part.id, name: part.name, input: (part.params ?? null) as Schema.Json }),
  toolResult: (part) => ({ callId: part.id, name: part.name, content: resultText(part), isError: part.isFailure }),
  // The files of the result's `modelOutput` (the result's own part still carries every item).
  resultFiles: (part) => (part.modelOutput ?? []).filter((item) => item.type === "file"),
  file: fileOf
})

/**
 * The prompt as a history (`History.fromForeign`): the leading system
 * messages and the first user message are the task; the files of tool
 * results follow the run of tool messages holding them.
 */
export const toHistory = (prompt: Prompt.Prompt): Converted => History.fromForeign(prompt.content.map(foreignOf))

/** A part Tessera made, as prompt content: a system message takes text only. */
const rendered = (part: Model.Part): Item => {
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

const message = (role: Role, content: ReadonlyArray<Item>, options: Prompt.ProviderOptions): Array<Prompt.Message> => {
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
 * Parts as a prompt (`History.foreignRuns`). A part that came from a prompt
 * unchanged is its original, in a message of its own origin (with that
 * message's options); parts Tessera made (a summary reference, an
 * offloaded result) form messages of their role, an offloaded result
 * joining its original tool message when that message is still open. A
 * tool result's file is left out while `parts` hold a result of its call;
 * without one (a summary request) it is the caller's own file part, in a
 * user message.
 */
export const toPrompt = (parts: ReadonlyArray<Model.Part>, origins: Converted["origins"]): Prompt.Prompt =>
  Prompt.fromMessages(
    History.foreignRuns(parts, origins, rendered).flatMap((run) =>
      // Only the prompt's own roles reach the runs: every origin is one of its messages, every made part's role is.
      message(run.role as Role, run.items, run.source?.options ?? {})
    )
  )

/** The parts of a Tessera request as a prompt (no origins: every part rendered). */
export const partsToPrompt = (parts: ReadonlyArray<Model.Part>): Prompt.Prompt => toPrompt(parts, new WeakMap())
