/**
 * The inspector's report: what it found in a namespace folder, as data
 * (documented where `Inspector` re-exports each piece), and the error of a
 * task asked for that has no journal.
 *
 * @internal
 */

import type * as Ids from "@tessera/core/Ids"
import type * as Volume from "@tessera/core/Volume"
import type * as History from "@tessera/runtime/History"
import type * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { ChildReport } from "./inspectChildren.ts"
import type { EntryFilter } from "./inspectFilter.ts"
import type { Redaction } from "./inspectRedaction.ts"

/**
 * A task was asked for and no journal volume holds its journal.
 *
 * @since 0.1.0
 * @category errors
 */
export class TaskNotFound extends Schema.TaggedError<TaskNotFound>()("TaskNotFound", {
  task: Schema.String,
  searched: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `no journal for task ${this.task} in ${this.searched.length === 0 ? "(no journal volume)" : this.searched.join(", ")}`
  }
}

/**
 * A file on a volume: its path relative to the volume's data folder
 * (`/`-separated) and its size in bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface VolumeFile {
  readonly volume: Ids.VolumeId
  readonly path: string
  readonly size: number
}

/**
 * A volume and its data folder.
 *
 * @since 0.1.0
 * @category models
 */
export interface VolumeReport {
  readonly descriptor: Volume.VolumeDescriptor
  readonly folder: string
}

/**
 * One task's journal and its entries.
 *
 * @since 0.1.0
 * @category models
 */
export interface JournalReport {
  readonly task: Ids.TaskId
  readonly volume: Ids.VolumeId
  readonly file: string
  /** How many entries the journal holds. */
  readonly journaled: number
  /** The entries that match the report's filters, in journal order (all of them without filters). */
  readonly entries: ReadonlyArray<JournalEntry.Entry>
  /** The task's token total over all its entries: the usage its turn steps and summary requests reported. */
  readonly usage: JournalEntry.UsageTotal
  /** The redaction decision of the task's last turn. */
  readonly redaction: Redaction
  /** Where the task stands for a resume, from all its entries. */
  readonly resumable: ResumableState
  /** The child tasks its delegations ran, from all its entries. */
  readonly children: ReadonlyArray<ChildReport>
}

/**
 * Where a task stands for a resume: its last turn, the calls awaiting the
 * host's approval and those in flight at a crash (both only while the turn
 * is open), and the conversation as the model last saw it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResumableState {
  readonly lastTurn: Option.Option<Journal.TurnState>
  readonly awaitingApproval: ReadonlyArray<Journal.OwedCall>
  readonly inFlight: ReadonlyArray<Journal.OwedCall>
  readonly conversation: Conversation
}

/**
 * The conversation of a task's last turn: rebuilt from its transcript
 * (`Rebuilt`, with the volume it was read from), not recorded (the turn was
 * not run durably, or the task has no turn), or unreadable (why).
 *
 * @since 0.1.0
 * @category models
 */
export type Conversation =
  | {
      readonly _tag: "Rebuilt"
      readonly turn: number
      readonly volume: Ids.VolumeId
      readonly history: History.History
    }
  | { readonly _tag: "NotRecorded"; readonly detail: string }
  | { readonly _tag: "Unreadable"; readonly detail: string }

/**
 * Everything the inspector found.
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  readonly root: string
  readonly store: Ids.StoreId
  readonly task: Option.Option<Ids.TaskId>
  readonly volumes: ReadonlyArray<VolumeReport>
  readonly journals: ReadonlyArray<JournalReport>
  readonly summaries: ReadonlyArray<VolumeFile>
  readonly artifacts: ReadonlyArray<VolumeFile>
  /** Transcript records (`transcripts/<task>/...` on agent-private volumes), counted rather than listed. */
  readonly transcripts: ReadonlyArray<VolumeFile>
  /** Whether bodies are shown (see `InspectOptions.bodies`). */
  readonly bodies: boolean
  /** The entry filters the journals' entries were narrowed by. */
  readonly filter: EntryFilter
}
