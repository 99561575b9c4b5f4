/**
 * The redactor's pass over a transcript record: every text it holds (text
 * parts, tool results, the string values of tool-call inputs, an inline
 * summary) goes through the redactor before the record touches disk. A
 * summary reference holds no text and is kept as it is.
 */
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type { Part, ToolResultPart } from "../Model.ts"
import type { StoredHistory, StoredSummary, TranscriptError, TranscriptRecord } from "./transcriptRecords.ts"

export type Redact = (text: string) => Effect.Effect<string, TranscriptError>

const scrubJson = (redact: Redact, value: Schema.Json): Effect.Effect<Schema.Json, TranscriptError> => {
  if (typeof value === "string") return redact(value)
  if (Array.isArray(value)) return Effect.forEach(value, (inner) => scrubJson(redact, inner))
  if (value !== null && typeof value === "object") {
    const record = value as { readonly [key: string]: Schema.Json }
    return Effect.map(
      Effect.forEach(Object.keys(record), (key) =>
        Effect.map(scrubJson(redact, record[key] as Schema.Json), (inner) => [key, inner] as const)
      ),
      (pairs) => Object.fromEntries(pairs)
    )
  }
  return Effect.succeed(value)
}

const scrubPart = (redact: Redact, part: Part): Effect.Effect<Part, TranscriptError> => {
  switch (part._tag) {
    case "Text":
      return Effect.map(redact(part.text), (scrubbed) => (scrubbed === part.text ? part : { ...part, text: scrubbed }))
    case "ToolResult":
      return Effect.map(redact(part.content), (scrubbed) =>
        scrubbed === part.content ? part : { ...part, content: scrubbed }
      )
    case "ToolCall":
      return Effect.map(scrubJson(redact, part.input), (input) => ({ ...part, input }))
    default:
      return Effect.succeed(part)
  }
}

const scrubParts = (redact: Redact, parts: ReadonlyArray<Part>) =>
  Effect.forEach(parts, (part) => scrubPart(redact, part))

const scrubSummary = (redact: Redact, summary: StoredSummary): Effect.Effect<StoredSummary, TranscriptError> =>
  summary._tag === "SummaryRef"
    ? Effect.succeed(summary)
    : Effect.map(
        Effect.all([scrubParts(redact, summary.parts), redact(summary.text)]),
        ([parts, scrubbed]) => ({ _tag: "SummaryInline", parts, text: scrubbed }) as const
      )

const scrubHistory = (redact: Redact, history: StoredHistory): Effect.Effect<StoredHistory, TranscriptError> =>
  Effect.map(
    Effect.all([
      scrubParts(redact, history.task),
      scrubParts(redact, history.parts),
      history.summary === undefined ? Effect.succeed(undefined) : scrubSummary(redact, history.summary)
    ]),
    ([task, parts, summary]) => (summary === undefined ? { task, parts } : { task, parts, summary })
  )

/** The record with its texts scrubbed, without its `redacted` mark (set by the caller). */
export const scrubRecord = (
  redact: Redact,
  record: TranscriptRecord
): Effect.Effect<TranscriptRecord, TranscriptError> => {
  switch (record._tag) {
    case "Opened":
    case "Replaced":
      return Effect.map(scrubHistory(redact, record.history), (history) => ({ ...record, history }))
    case "Rewritten":
      return record.summary === undefined
        ? Effect.succeed(record)
        : Effect.map(scrubSummary(redact, record.summary), (summary) => ({ ...record, summary }))
    case "Responded":
      return Effect.map(
        Effect.all([redact(record.text), Effect.forEach(record.toolCalls, (call) => scrubPart(redact, call))]),
        ([scrubbed, toolCalls]) => ({ ...record, text: scrubbed, toolCalls: toolCalls as typeof record.toolCalls })
      )
    case "Resulted":
      return Effect.map(scrubPart(redact, record.result), (result) => ({
        ...record,
        result: result as ToolResultPart
      }))
  }
}
