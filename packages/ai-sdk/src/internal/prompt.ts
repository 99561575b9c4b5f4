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
  LanguageModelV4ToolResultOutput
} from "@ai-sdk/provider"
import * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import type * as Model from "@tessera/runtime/Model"
import * as Base64 from "effect/encoding/Base64"
import type * as Schema from "effect/Schema"
import * as AiSdkModel from "../AiSdkModel.ts"

type MessageRole = LanguageModelV4Message["role"]
type ContentPart = Exclude<LanguageModelV4Message["content"], string>[number]
/** A message's item: a content part, or a system message's text. */
type Item = ContentPart | string

/** A prompt as a history, with the origin of each part made from it. */
export type Converted = History.ForeignHistory<LanguageModelV4Message, Item>

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

/** A file as the bridge reads it: inline data (bytes or base64) as base64; none for a file the provider fetches. */
const fileOf = (
  file: Pick<LanguageModelV4FilePart, "data" | "mediaType" | "providerOptions">
): History.ForeignFile => ({
  mediaType: file.mediaType,
  base64:
    file.data.type === "data"
      ? typeof file.data.data === "string"
        ? file.data.data
        : Base64.encode(file.data.data)
      : undefined,
  providerOptions: file.providerOptions ?? {}
})

// The AI SDK's fields; the rules (stand-ins, carried files) are the bridge's, alike for every adapter.
const foreignOf = History.promptReader<LanguageModelV4Message>({
  text: (part) => part.text,
  toolCall: (part) => ({ id: part.toolCallId, name: part.toolName, input: part.input as Schema.Json }),
  toolResult: (part) => ({
    callId: part.toolCallId,
    name: part.toolName,
    content: outputText(part.output),
    isError: isErrorOutput(part.output)
  }),
  // The files inside a `content` output (the result's own part still carries every item).
  resultFiles: (part) =>
    part.output.type === "content" ? part.output.value.filter((item) => item.type === "file") : [],
  file: fileOf,
  others: { "reasoning-file": (part) => ({ _tag: "Text", text: `[reasoning-file ${part.mediaType}]` }) }
})

/**
 * The prompt as a history (`History.fromForeign`): the leading system
 * messages and the first user message are the task; the files of tool
 * results follow the run of tool messages holding them.
 */
export const toHistory = (prompt: LanguageModelV4Prompt): Converted => History.fromForeign(prompt.map(foreignOf))

/**
 * A part Tessera made, as prompt content: as `AiSdkModel.toPrompt` renders
 * it (the one rendering of Tessera's parts for the AI SDK), except a system
 * media part, which is its text: a system message takes text only.
 */
const rendered = (part: Model.Part): Item => {
  if (part._tag === "Media" && part.role === "system") return Compaction.renderPart(part)
  const [message] = AiSdkModel.toPrompt([part]) as [LanguageModelV4Message]
  return typeof message.content === "string" ? message.content : (message.content[0] as ContentPart)
}

/**
 * The parts of a history as a prompt (`History.foreignRuns`): a part that
 * came from the prompt unchanged is its original, in a message of its own
 * origin (with that message's provider options); parts Tessera made form
 * messages of their role. A tool result's file is left out while `parts`
 * hold a result of its call; without one (a summary request) it is the
 * caller's own file item, in a user message.
 */
export const toPrompt = (parts: ReadonlyArray<Model.Part>, origins: Converted["origins"]): LanguageModelV4Prompt =>
  History.foreignRuns(parts, origins, rendered).flatMap((run): Array<LanguageModelV4Message> => {
    const providerOptions = run.source?.providerOptions
    const extra = providerOptions === undefined ? {} : { providerOptions }
    // Only the prompt's own roles reach the runs: every origin is one of its messages, every made part's role is.
    const role = run.role as MessageRole
    return role === "system"
      ? run.items.map((content) => ({ role, content: content as string, ...extra }))
      : [{ role, content: run.items, ...extra } as LanguageModelV4Message]
  })
