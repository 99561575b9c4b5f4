/**
 * The journal entries about a call beyond its run and result: the approval
 * it waits for, and the children it delegated to. `JournalEntry` documents
 * them; they are defined here to keep that module within bounds.
 */
import * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as Schema from "effect/Schema"
import { Usage } from "../Model.ts"
import { callInput } from "./callFields.ts"
import { Count, header, Ordinal, Sha256 } from "./entryFields.ts"

/** See `JournalEntry.ApprovalReason`. */
export const ApprovalReason = Schema.Literals(["Tool", "InFlight", "Delegated"])
/** See `JournalEntry.ApprovalReason`. */
export type ApprovalReason = typeof ApprovalReason.Type

/** See `JournalEntry.ApprovalRequested`. */
export const ApprovalRequested = Schema.TaggedStruct("ApprovalRequested", {
  ...header,
  ...callInput,
  reason: ApprovalReason,
  /** For `Delegated`: the children's calls the decision is for, each in its child task's journal. */
  children: Schema.optionalKey(Schema.Array(Schema.Struct({ task: Ids.TaskId, callId: Schema.String })))
})

/** See `JournalEntry.ApprovalDecided`. */
export const ApprovalDecided = Schema.TaggedStruct("ApprovalDecided", {
  ...header,
  turn: Ordinal,
  step: Ordinal,
  callId: Schema.String,
  approved: Schema.Boolean,
  by: Schema.String,
  note: Schema.optionalKey(Schema.String)
})

// Where in the parent's turn a child was delegated: the call that asked for it, and the child task.
const childOfCall = {
  turn: Ordinal,
  step: Ordinal,
  callId: Schema.String,
  task: Ids.TaskId
}

/** See `JournalEntry.ChildDelegated`. */
export const ChildDelegated = Schema.TaggedStruct("ChildDelegated", {
  ...header,
  ...childOfCall,
  agent: Ids.AgentId,
  output: Schema.optionalKey(Volume.VolumeRef)
})

/** See `JournalEntry.ChildAnswered`. */
export const ChildAnswered = Schema.TaggedStruct("ChildAnswered", {
  ...header,
  ...childOfCall,
  outcome: Schema.Literals(["Answered", "AwaitingApproval", "TimedOut", "Failed"]),
  size: Count,
  sha256: Sha256,
  usage: Schema.optionalKey(Usage),
  published: Schema.optionalKey(Schema.Array(Schema.Struct({ name: Schema.String, size: Count, sha256: Sha256 })))
})
