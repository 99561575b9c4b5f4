/**
 * Reading the pieces of a report that need more than a journal's entries: a
 * task's resumable state (its journal folded, its conversation rebuilt from
 * a transcript), which files name journals, and which files journals record.
 *
 * @internal
 */
import * as Ids from "@tessera/core/Ids"
import * as Journal from "@tessera/runtime/Journal"
import * as Transcript from "@tessera/runtime/Transcript"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { Conversation, JournalReport, ResumableState, VolumeReport } from "./inspectReport.ts"

const decodeTaskId = Schema.decodeUnknownOption(Ids.TaskId)

export const notRecorded: Conversation = { _tag: "NotRecorded", detail: "the task has no turn" }

/** The resumable state of one journal: its state folded from the entries, and the conversation from a transcript. */
export const resumableState = Effect.fnUntraced(function* (
  store: Ids.StoreId,
  privateVolumes: ReadonlyArray<VolumeReport>,
  journal: JournalReport
) {
  const folded = Journal.stateOf(journal.task, journal.entries)
  if (Result.isFailure(folded)) {
    const unreadable: ResumableState = {
      lastTurn: Option.none(),
      awaitingApproval: [],
      inFlight: [],
      conversation: { _tag: "Unreadable", detail: folded.failure }
    }
    return unreadable
  }
  const lastTurn = Option.fromUndefinedOr(folded.success.turns.at(-1))
  const open = Option.filter(lastTurn, (turn) => turn.status === "Open")
  const owed = Option.match(open, { onNone: () => [], onSome: (turn) => turn.owedCalls })
  const state = {
    lastTurn,
    awaitingApproval: owed.filter((call) => call.approval?.status === "Requested"),
    inFlight: owed.filter((call) => call.called && call.approval?.status !== "Rejected")
  }
  if (Option.isNone(lastTurn)) return { ...state, conversation: notRecorded } satisfies ResumableState
  const path = yield* Path.Path
  const fs = yield* FileSystem.FileSystem
  for (const volume of privateVolumes) {
    const folder = path.join(volume.folder, VolumeStore.transcriptsFolder, journal.task)
    if (!(yield* fs.exists(folder).pipe(Effect.orElseSucceed(() => false)))) continue
    const reader = yield* Transcript.reader({
      folder: volume.folder,
      task: journal.task,
      volume: { store, volume: volume.descriptor.id }
    })
    const rebuilt = yield* Effect.result(Transcript.rebuild(reader, journal.entries, lastTurn.value.turn))
    const conversation: Conversation = Result.isSuccess(rebuilt)
      ? { _tag: "Rebuilt", turn: lastTurn.value.turn, volume: volume.descriptor.id, history: rebuilt.success.history }
      : rebuilt.failure._tag === "TranscriptMissing"
        ? { _tag: "NotRecorded", detail: rebuilt.failure.message }
        : { _tag: "Unreadable", detail: rebuilt.failure.message }
    return { ...state, conversation } satisfies ResumableState
  }
  return {
    ...state,
    conversation: {
      _tag: "NotRecorded",
      detail: `no transcript of task ${journal.task} on any agent-private volume (its turns were not run durably)`
    }
  } satisfies ResumableState
})

/** `<task>.jsonl` at the top of a journal volume names a task's journal. */
export const journalTask = (file: string): Option.Option<Ids.TaskId> => {
  if (file.includes("/") || !file.endsWith(VolumeStore.journalExtension)) return Option.none()
  return decodeTaskId(file.slice(0, -VolumeStore.journalExtension.length))
}

/** `<volume>\0<path>` of every file the journals record (summaries staged, artifacts offloaded). */
export const recordedFiles = (journals: ReadonlyArray<JournalReport>): ReadonlySet<string> => {
  const keys = new Set<string>()
  for (const journal of journals) {
    for (const entry of journal.entries) {
      if (entry._tag === "SummaryStaged") keys.add(`${entry.volume.volume}\u0000${entry.path}`)
      if (entry._tag === "ArtifactOffloaded" && entry.volume !== undefined) {
        keys.add(`${entry.volume.volume}\u0000${entry.path}`)
      }
    }
  }
  return keys
}
