/**
 * The inspector: what a namespace (task) folder holds, read without changing
 * anything, and rendered as text for people.
 *
 * {@link inspect} reads through the runtime's own readers (`VolumeStore.open`
 * for the store and its volume facts, `Journal.readEntries` for journals), so
 * the inspector decodes exactly what the runtime would and reports the same
 * typed errors, each naming the file. Before it opens the store it checks
 * that the folder is a complete store (a folder, with `store.json` and
 * `meta/volumes/`), because opening a store on a folder without one would
 * create it, and an inspector must never write.
 *
 * {@link render} and {@link formatEntry} are pure functions of the data, so
 * they are tested without a file system.
 *
 * What is shown:
 *
 * - the store id and every volume with its kind and owner;
 * - each task journal (`<task>.jsonl` on a `Journal` volume), one line per
 *   entry: sequence number, time, tag and the entry's key fields;
 * - summaries (files under `summaries/` on `AgentPrivate` volumes) and
 *   artifacts (every other file on a volume), with their sizes.
 *
 * With a task filter only that task's journal is shown, and only the
 * summaries and artifacts its journal records.
 *
 * For each task, its resumable state: its last turn (open or not, its
 * step), the calls awaiting the host's approval, the calls that were in
 * flight when a process died, and the conversation as the model last saw
 * it, rebuilt from the transcript (see `Transcript`): summaries and
 * artifact pointers are shown as such, and bodies (texts, inputs, results)
 * only with {@link InspectOptions.bodies}.
 *
 * @since 0.1.0
 */
import type * as DurableFiles from "@tessera/core/DurableFiles"
import * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import type * as Model from "@tessera/runtime/Model"
import * as Transcript from "@tessera/runtime/Transcript"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import * as Effect from "effect/Effect"
import type * as FileSystemNs from "effect/FileSystem"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as InspectText from "./internal/inspectText.ts"
import { checkStoreFolder, InspectIoError, listFiles, NotAStoreFolder } from "./internal/storeFolder.ts"

/**
 * What reading a folder can fail with besides the runtime's own readers:
 * {@link NotAStoreFolder}, the folder cannot be inspected as a store (it is
 * missing, not a folder, or not completely a Tessera store; nothing was
 * created or changed), with the namespaces found directly inside it when it
 * is their parent; {@link InspectIoError}, reading failed for a file below a
 * volume's data folder, named. Declared with the folder checks, in the
 * package's internals.
 *
 * @since 0.1.0
 * @category errors
 */
export { InspectIoError, NotAStoreFolder }

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
 * Everything {@link inspect} can fail with; every one names the file or
 * folder at fault.
 *
 * @since 0.1.0
 * @category errors
 */
export type InspectError =
  | NotAStoreFolder
  | TaskNotFound
  | InspectIoError
  | VolumeStore.OpenError
  | VolumeStore.VolumeMetadataInvalid
  | Journal.JournalCorrupt
  | Journal.JournalNotRecognized
  | Journal.JournalIoError

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
  readonly entries: ReadonlyArray<JournalEntry.Entry>
  /** The task's token total: the usage its turn steps and summary requests reported. */
  readonly usage: JournalEntry.UsageTotal
  /** Where the task stands for a resume. */
  readonly resumable: ResumableState
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
  /** Whether bodies are shown (see {@link InspectOptions.bodies}). */
  readonly bodies: boolean
}

/**
 * Options of {@link inspect}.
 *
 * @since 0.1.0
 * @category models
 */
export interface InspectOptions {
  /** Show only this task's journal, and the summaries and artifacts it records. */
  readonly task?: Ids.TaskId
  /** Show the bodies of the conversation (texts, tool inputs and results, summaries); hidden by default. */
  readonly bodies?: boolean
}

const decodeTaskId = Schema.decodeUnknownOption(Ids.TaskId)

const isSummary = (descriptor: Volume.VolumeDescriptor, file: string): boolean =>
  descriptor.kind === "AgentPrivate" && file.startsWith(`${VolumeStore.summariesFolder}/`)

const isTranscript = (descriptor: Volume.VolumeDescriptor, file: string): boolean =>
  descriptor.kind === "AgentPrivate" && file.startsWith(`${VolumeStore.transcriptsFolder}/`)

/**
 * The folder the inspector reads when given `folder`: an absolute folder as
 * it is; a relative one against the caller's working directory, which is
 * `INIT_CWD` when the inspector runs through a package manager script
 * (`npm run inspect` runs it from the repository root, and npm and pnpm set
 * `INIT_CWD` to where the command was typed), else the process's own.
 *
 * @since 0.1.0
 * @category reading
 */
export const resolveFolder = (
  path: Pick<Path.Path, "resolve">,
  folder: string,
  environment: { readonly cwd: string; readonly initCwd?: string | undefined }
): string => path.resolve(environment.initCwd ?? environment.cwd, folder)

/**
 * Reads a namespace folder. Never writes: the folder is checked to be a
 * complete store before the store is opened.
 *
 * @since 0.1.0
 * @category reading
 */
export const inspect = Effect.fnUntraced(function* (
  folder: string,
  options: InspectOptions = {}
): Effect.fn.Return<Report, InspectError, FileSystemNs.FileSystem | Path.Path | DurableFiles.DurableFiles> {
  const path = yield* Path.Path
  const root = path.resolve(folder)
  yield* checkStoreFolder(root)

  const store = yield* VolumeStore.open({ root })
  const descriptors = yield* store.list()
  const volumes: Array<VolumeReport> = []
  const journals: Array<JournalReport> = []
  const files: Array<VolumeFile> = []
  for (const descriptor of descriptors) {
    // Read-only, so located by the layout: `folderOf` hands out no agent-private folder.
    const volumeFolder = VolumeStore.dataFolder(path, store.root, descriptor.id)
    volumes.push({ descriptor, folder: volumeFolder })
    for (const file of yield* listFiles(volumeFolder)) {
      const task = descriptor.kind === "Journal" ? journalTask(file.path) : Option.none()
      if (Option.isSome(task)) {
        if (options.task !== undefined && options.task !== task.value) continue
        const entries = yield* Journal.readEntries({ folder: volumeFolder, task: task.value }).pipe(
          Effect.catchTag("InvalidInput", (error) =>
            Effect.fail(new InspectIoError({ path: file.path, operation: "read a journal", detail: error.message }))
          )
        )
        journals.push({
          task: task.value,
          volume: descriptor.id,
          file: path.join(volumeFolder, file.path),
          entries,
          usage: JournalEntry.totalUsage(entries),
          resumable: { lastTurn: Option.none(), awaitingApproval: [], inFlight: [], conversation: notRecorded }
        })
        continue
      }
      files.push({ volume: descriptor.id, path: file.path, size: file.size })
    }
  }
  const privateVolumes = volumes.filter((volume) => volume.descriptor.kind === "AgentPrivate")
  for (const [index, journal] of journals.entries()) {
    journals[index] = { ...journal, resumable: yield* resumableState(store.id, privateVolumes, journal) }
  }
  if (options.task !== undefined && journals.length === 0) {
    return yield* new TaskNotFound({
      task: options.task,
      searched: volumes.filter((volume) => volume.descriptor.kind === "Journal").map((volume) => volume.folder)
    })
  }
  const recorded = recordedFiles(journals)
  const shown =
    options.task === undefined ? files : files.filter((file) => recorded.has(`${file.volume}\u0000${file.path}`))
  const kinds = new Map(descriptors.map((descriptor) => [descriptor.id, descriptor]))
  const summary = (file: VolumeFile) => {
    const descriptor = kinds.get(file.volume)
    return descriptor !== undefined && isSummary(descriptor, file.path)
  }
  const transcript = (file: VolumeFile) => {
    const descriptor = kinds.get(file.volume)
    return descriptor !== undefined && isTranscript(descriptor, file.path)
  }
  const transcripts = files.filter(
    (file) =>
      transcript(file) &&
      (options.task === undefined || file.path.startsWith(`${VolumeStore.transcriptsFolder}/${options.task}/`))
  )
  const report: Report = {
    root,
    store: store.id,
    task: Option.fromUndefinedOr(options.task),
    volumes,
    journals,
    summaries: shown.filter(summary),
    artifacts: shown.filter((file) => !summary(file) && !transcript(file)),
    transcripts,
    bodies: options.bodies === true
  }
  return report
})

const notRecorded: Conversation = { _tag: "NotRecorded", detail: "the task has no turn" }

/** The resumable state of one journal: its state folded from the entries, and the conversation from a transcript. */
const resumableState = Effect.fnUntraced(function* (
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
const journalTask = (file: string): Option.Option<Ids.TaskId> => {
  if (file.includes("/") || !file.endsWith(VolumeStore.journalExtension)) return Option.none()
  return decodeTaskId(file.slice(0, -VolumeStore.journalExtension.length))
}

/** `<volume>\0<path>` of every file the journals record (summaries staged, artifacts offloaded). */
const recordedFiles = (journals: ReadonlyArray<JournalReport>): ReadonlySet<string> => {
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

/**
 * Token counts as `in=… out=… cached=… reasoning=…`, the counts a provider
 * did not report left out (`none reported` when it reported none).
 *
 * @since 0.1.0
 * @category rendering
 */
export const formatUsage: (usage: JournalEntry.UsageTotal["usage"]) => string = InspectText.formatUsage

/**
 * One journal entry on one line: `#seq  time  tag  key fields`. Bodies are
 * never in the journal, so nothing private can appear here.
 *
 * @since 0.1.0
 * @category rendering
 */
export const formatEntry = (entry: JournalEntry.Entry): string =>
  `#${String(entry.seq).padStart(3, " ")}  ${new Date(entry.at).toISOString()}  ${entry._tag.padEnd(19, " ")} ${InspectText.entryFields(entry)}`.trimEnd()

/**
 * A size for people: bytes below 1 KiB, else KiB or MiB with one decimal,
 * always followed by the exact byte count.
 *
 * @since 0.1.0
 * @category rendering
 */
export const formatSize: (bytes: number) => string = InspectText.formatSize

const fileLines = (files: ReadonlyArray<VolumeFile>): ReadonlyArray<string> =>
  files.length === 0 ? ["  (none)"] : files.map((file) => `  ${file.volume}:${file.path}  ${formatSize(file.size)}`)

/**
 * The whole report as text.
 *
 * @since 0.1.0
 * @category rendering
 */
export const render = (report: Report): string => {
  const lines: Array<string> = [
    `store ${report.store} at ${report.root}`,
    ...Option.match(report.task, { onNone: () => [], onSome: (task) => [`(task ${task} only)`] }),
    "",
    `volumes (${report.volumes.length}):`,
    ...report.volumes.map(
      ({ descriptor }) =>
        `  ${descriptor.id.padEnd(24, " ")} ${descriptor.kind.padEnd(12, " ")} owned by ${Volume.formatOwner(descriptor.owner)}`
    ),
    ""
  ]
  if (report.journals.length === 0) lines.push("journals: (none)", "")
  for (const journal of report.journals) {
    lines.push(`journal of task ${journal.task} (${journal.entries.length} entries, ${journal.file}):`)
    lines.push(...journal.entries.map((entry) => `  ${formatEntry(entry)}`))
    lines.push(
      `  tokens: ${formatUsage(journal.usage.usage)} (${journal.usage.reported} of ${journal.usage.responses} responses reported usage)`,
      ""
    )
    lines.push(...renderResumable(journal.task, journal.resumable, report.bodies), "")
  }
  lines.push(`summaries (${report.summaries.length}):`, ...fileLines(report.summaries), "")
  lines.push(`artifacts (${report.artifacts.length}):`, ...fileLines(report.artifacts))
  if (report.transcripts.length > 0) {
    const bytes = report.transcripts.reduce((sum, file) => sum + file.size, 0)
    lines.push("", `transcript records: ${report.transcripts.length} (${formatSize(bytes)})`)
  }
  return `${lines.join("\n")}\n`
}

const callLine = (call: Journal.OwedCall): string =>
  `${call.callId} ${call.name}${call.approval === undefined ? "" : ` (${call.approval.reason})`}`

/**
 * A task's resumable state as text lines: its last turn, the calls awaiting
 * approval and in flight, and the conversation as the model last saw it,
 * one line per part. Summaries are shown as their file, artifact pointers
 * as pointers; bodies only when `bodies` is true.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderResumable = (task: Ids.TaskId, state: ResumableState, bodies: boolean): ReadonlyArray<string> => {
  const lines = [`resumable state of task ${task}:`]
  if (Option.isNone(state.lastTurn)) return [...lines, "  no turn yet"]
  const turn = state.lastTurn.value
  lines.push(
    turn.status === "Open"
      ? `  open turn ${turn.turn}: step ${turn.steps}${turn.awaitingResponse ? " (its request got no response)" : ""}${turn.answered ? " (answered, not closed)" : ""}, ${turn.resumptions} resumption${turn.resumptions === 1 ? "" : "s"}`
      : `  no open turn: turn ${turn.turn} ${turn.status.toLowerCase()} after ${turn.steps} step${turn.steps === 1 ? "" : "s"}`,
    `  awaiting approval: ${state.awaitingApproval.length === 0 ? "none" : state.awaitingApproval.map(callLine).join(", ")}`,
    `  in flight at a crash: ${state.inFlight.length === 0 ? "none" : state.inFlight.map(callLine).join(", ")}`
  )
  const conversation = state.conversation
  if (conversation._tag !== "Rebuilt") {
    lines.push(
      `  conversation: ${conversation._tag === "NotRecorded" ? "not recorded" : "unreadable"}: ${conversation.detail}`
    )
    return lines
  }
  const history = conversation.history
  const parts = History.toParts(history)
  lines.push(
    `  conversation as the model last saw it (turn ${conversation.turn}, ${parts.length} parts, transcript on ${conversation.volume}${bodies ? "" : "; bodies hidden, --bodies shows them"}):`
  )
  const summaryParts = new Set<Model.Part>(history.summary?.parts ?? [])
  for (const [index, part] of parts.entries()) {
    lines.push(...InspectText.partLines(index + 1, part, summaryParts.has(part), bodies))
  }
  return lines
}
