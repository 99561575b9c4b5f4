/**
 * The inspector's report as JSON (`tessera-inspect --json`): the schema of
 * the document, `tessera-inspect/1`, and the pure conversion of a report
 * into it. Bodies (texts, tool inputs and results, summaries' texts,
 * pointers' abstracts) appear only in a report read with bodies; the
 * journal entries never hold any.
 *
 * @internal
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as History from "@tessera/runtime/History"
import type * as Journal from "@tessera/runtime/Journal"
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as Model from "@tessera/runtime/Model"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { entryKinds } from "./inspectFilter.ts"
import type { Conversation, Report } from "./inspectReport.ts"

/** The document's format name; a change that breaks a reader gets a new number. */
export const schemaName = "tessera-inspect/1"

const Count = Schema.Number.check(
  Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= 0, { expected: "an integer >= 0" })
)

const FileJson = Schema.Struct({
  volume: Ids.VolumeId,
  /** `/`-separated, relative to the volume's data folder. */
  path: Schema.String,
  size: Count
})

const VolumeJson = Schema.Struct({
  id: Ids.VolumeId,
  kind: Volume.VolumeKind,
  owner: Volume.Owner,
  folder: Schema.String
})

const CallJson = Schema.Struct({
  callId: Schema.String,
  name: Schema.String,
  /** Whether the call was started (`ToolCalled`). */
  called: Schema.Boolean,
  approval: Schema.NullOr(
    Schema.Struct({
      status: Schema.Literals(["Requested", "Approved", "Rejected"]),
      reason: JournalEntry.ApprovalReason,
      by: Schema.optionalKey(Schema.String),
      note: Schema.optionalKey(Schema.String)
    })
  )
})

const TurnJson = Schema.Struct({
  turn: Count,
  status: Schema.Literals(["Open", "Closed", "Abandoned"]),
  steps: Count,
  /** Its last request got no response (a crash or a failure mid-request). */
  awaitingResponse: Schema.Boolean,
  /** The model answered without calls, and the turn was not closed yet. */
  answered: Schema.Boolean,
  resumptions: Count
})

const Role = Model.Role
/** One part of the conversation; `text`, `input`, `content` and `abstract` only with bodies. */
const PartJson = Schema.Union([
  Schema.TaggedStruct("Text", {
    role: Role,
    inSummary: Schema.Boolean,
    size: Count,
    text: Schema.optionalKey(Schema.String)
  }),
  Schema.TaggedStruct("ToolCall", {
    id: Schema.String,
    name: Schema.String,
    inputSize: Count,
    input: Schema.optionalKey(Schema.Json)
  }),
  Schema.TaggedStruct("ToolResult", {
    callId: Schema.String,
    name: Schema.String,
    isError: Schema.Boolean,
    size: Count,
    /** The result was offloaded: the pointer the model holds instead (its abstract only with bodies). */
    offloaded: Schema.optionalKey(
      Schema.Struct({
        path: Schema.String,
        bytes: Count,
        readWith: Schema.String,
        abstract: Schema.optionalKey(Schema.String)
      })
    ),
    content: Schema.optionalKey(Schema.String)
  }),
  Schema.TaggedStruct("FileReference", {
    role: Role,
    inSummary: Schema.Boolean,
    volume: Volume.VolumeRef,
    path: Schema.String,
    mediaType: Schema.String
  }),
  Schema.TaggedStruct("Media", {
    role: Role,
    mediaType: Schema.String,
    url: Schema.optionalKey(Schema.String),
    base64Length: Schema.optionalKey(Count)
  })
])

const ConversationJson = Schema.Union([
  Schema.TaggedStruct("Rebuilt", { turn: Count, volume: Ids.VolumeId, parts: Schema.Array(PartJson) }),
  Schema.TaggedStruct("NotRecorded", { detail: Schema.String }),
  Schema.TaggedStruct("Unreadable", { detail: Schema.String })
])

const TaskJson = Schema.Struct({
  task: Ids.TaskId,
  /** The journal volume and the journal's file. */
  volume: Ids.VolumeId,
  journalFile: Schema.String,
  /** How many entries the journal holds; `entries` has those the filters kept. */
  journaledEntries: Count,
  entries: Schema.Array(JournalEntry.Entry),
  /** The task's token total over every entry (filters do not change it). */
  usage: Schema.Struct({ responses: Count, reported: Count, usage: Model.Usage, withChildren: Model.Usage }),
  /** The child tasks its delegations ran (`ChildDelegated`, `ChildAnswered`), with where each stands. */
  children: Schema.Array(
    Schema.Struct({
      task: Ids.TaskId,
      agent: Ids.AgentId,
      status: Schema.Literals(["Answered", "AwaitingApproval", "TimedOut", "Failed", "Unfinished"]),
      usage: Model.Usage,
      /** The names of the files it published that reached the parent. */
      published: Schema.Array(Schema.String)
    })
  ),
  /** The last turn's redaction decision (`TurnOpened.redaction`); `Unknown` when none was recorded. */
  redaction: Schema.Literals(["Scrubbed", "Verbatim", "Unknown"]),
  resumable: Schema.Struct({
    lastTurn: Schema.NullOr(TurnJson),
    awaitingApproval: Schema.Array(CallJson),
    inFlight: Schema.Array(CallJson),
    conversation: ConversationJson
  })
})

/** The schema of `tessera-inspect --json`'s document (exported as `Inspector.ReportJson`). */
export const ReportJson = Schema.Struct({
  schema: Schema.Literal(schemaName),
  store: Ids.StoreId,
  root: Schema.String,
  /** The `--task` the report is restricted to, else `null`. */
  onlyTask: Schema.NullOr(Ids.TaskId),
  /** Whether bodies were asked for (`--bodies`). */
  bodies: Schema.Boolean,
  /** The entry filters applied; `null` where none was given. */
  filter: Schema.Struct({
    kinds: Schema.NullOr(Schema.Array(Schema.Literals(entryKinds))),
    turn: Schema.NullOr(Count),
    /** ISO 8601, UTC. */
    since: Schema.NullOr(Schema.String)
  }),
  volumes: Schema.Array(VolumeJson),
  tasks: Schema.Array(TaskJson),
  summaries: Schema.Array(FileJson),
  artifacts: Schema.Array(FileJson),
  /** Transcript records, counted rather than listed. */
  transcripts: Schema.Struct({ count: Count, bytes: Count })
})
export type ReportJson = typeof ReportJson.Type

const callJson = (call: Journal.OwedCall): typeof CallJson.Type => ({
  callId: call.callId,
  name: call.name,
  called: call.called,
  approval:
    call.approval === undefined
      ? null
      : {
          status: call.approval.status,
          reason: call.approval.reason,
          ...(call.approval.by === undefined ? {} : { by: call.approval.by }),
          ...(call.approval.note === undefined ? {} : { note: call.approval.note })
        }
})

const utf8 = ArtifactPointer.utf8Length

const partJson = (part: Model.Part, inSummary: boolean, bodies: boolean): typeof PartJson.Type => {
  switch (part._tag) {
    case "Text":
      return { _tag: "Text", role: part.role, inSummary, size: utf8(part.text), ...(bodies ? { text: part.text } : {}) }
    case "ToolCall":
      return {
        _tag: "ToolCall",
        id: part.id,
        name: part.name,
        inputSize: utf8(JSON.stringify(part.input)),
        ...(bodies ? { input: part.input } : {})
      }
    case "ToolResult": {
      const pointer = ArtifactPointer.parse(part.content)
      const head = { _tag: "ToolResult", callId: part.callId, name: part.name, isError: part.isError } as const
      if (Option.isSome(pointer)) {
        const { abstract, bytes, path, readWith } = pointer.value
        return {
          ...head,
          size: utf8(part.content),
          offloaded: { path, bytes, readWith, ...(bodies ? { abstract } : {}) }
        }
      }
      return { ...head, size: utf8(part.content), ...(bodies ? { content: part.content } : {}) }
    }
    case "FileReference":
      return {
        _tag: "FileReference",
        role: part.role,
        inSummary,
        volume: part.volume,
        path: part.path,
        mediaType: part.mediaType
      }
    case "Media":
      return {
        _tag: "Media",
        role: part.role,
        mediaType: part.mediaType,
        ...(part.data._tag === "Url" ? { url: part.data.url } : { base64Length: part.data.base64.length })
      }
  }
}

const conversationJson = (conversation: Conversation, bodies: boolean): typeof ConversationJson.Type => {
  if (conversation._tag !== "Rebuilt") return { _tag: conversation._tag, detail: conversation.detail }
  const summaryParts = new Set<Model.Part>(conversation.history.summary?.parts ?? [])
  return {
    _tag: "Rebuilt",
    turn: conversation.turn,
    volume: conversation.volume,
    parts: History.toParts(conversation.history).map((part) => partJson(part, summaryParts.has(part), bodies))
  }
}

const turnJson = (turn: Journal.TurnState): typeof TurnJson.Type => ({
  turn: turn.turn,
  status: turn.status,
  steps: turn.steps,
  awaitingResponse: turn.awaitingResponse,
  answered: turn.answered,
  resumptions: turn.resumptions
})

const encodeReport = Schema.encodeSync(ReportJson)
const encodeEntry = Schema.encodeSync(JournalEntry.Entry)

/** The report as the JSON document (a plain value for `JSON.stringify`), checked against {@link ReportJson}. */
export const toJson = (report: Report): typeof ReportJson.Encoded =>
  encodeReport({
    schema: schemaName,
    store: report.store,
    root: report.root,
    onlyTask: Option.getOrNull(report.task),
    bodies: report.bodies,
    filter: {
      kinds: report.filter.kinds ?? null,
      turn: report.filter.turn ?? null,
      since: report.filter.since?.toISOString() ?? null
    },
    volumes: report.volumes.map(({ descriptor, folder }) => ({ ...descriptor, folder })),
    tasks: report.journals.map((journal) => ({
      task: journal.task,
      volume: journal.volume,
      journalFile: journal.file,
      journaledEntries: journal.journaled,
      entries: journal.entries,
      usage: {
        responses: journal.usage.responses,
        reported: journal.usage.reported,
        usage: journal.usage.usage,
        withChildren: journal.usage.withChildren
      },
      children: journal.children,
      redaction: journal.redaction,
      resumable: {
        lastTurn: Option.getOrNull(Option.map(journal.resumable.lastTurn, turnJson)),
        awaitingApproval: journal.resumable.awaitingApproval.map(callJson),
        inFlight: journal.resumable.inFlight.map(callJson),
        conversation: conversationJson(journal.resumable.conversation, report.bodies)
      }
    })),
    summaries: report.summaries,
    artifacts: report.artifacts,
    transcripts: {
      count: report.transcripts.length,
      bytes: report.transcripts.reduce((sum, file) => sum + file.size, 0)
    }
  })

/** One entry as the JSON it is journaled as: a line of `--follow --json`. */
export const entryJson = (entry: JournalEntry.Entry): string => JSON.stringify(encodeEntry(entry))
