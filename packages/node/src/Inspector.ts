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
 * summaries and artifacts its journal records. Entry filters
 * ({@link InspectOptions.kinds}, {@link InspectOptions.turn},
 * {@link InspectOptions.since}) narrow the entries shown, and nothing else:
 * a task's tokens, resumable state and files are read from all its entries.
 *
 * Each task's redaction decision (the one its last turn recorded) is shown,
 * and a task whose bodies were stored verbatim is marked.
 *
 * {@link toJson} gives the report as a JSON document of the schema
 * {@link ReportJson} (`tessera-inspect/1`), and {@link follow} streams a
 * task's entries as they are journaled.
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
import type * as Ids from "@tessera/core/Ids"
import * as Volume from "@tessera/core/Volume"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as VolumeStore from "@tessera/runtime/VolumeStore"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Stream from "effect/Stream"
import { type ChildReport, childrenOf } from "./internal/inspectChildren.ts"
import * as InspectFilter from "./internal/inspectFilter.ts"
import { followTask } from "./internal/inspectFollow.ts"
import * as InspectHtml from "./internal/inspectHtml.ts"
import * as InspectJson from "./internal/inspectJson.ts"
import { journalTask, notRecorded, recordedFiles, resumableState } from "./internal/inspectRead.ts"
import * as InspectRedaction from "./internal/inspectRedaction.ts"
import {
  type JournalReport,
  type Report,
  type ResumableState,
  TaskNotFound,
  type VolumeFile,
  type VolumeReport
} from "./internal/inspectReport.ts"
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
 * An entry filter that cannot be used, refused before anything is read:
 * `filter` names it (`kind`, `turn`, `since`) and the message says why; an
 * unknown kind's message lists every known one ({@link entryKinds}).
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidFilter = InspectFilter.InvalidFilter
/**
 * An {@link InvalidFilter} failure, as a type.
 *
 * @since 0.1.0
 * @category errors
 */
export type InvalidFilter = InspectFilter.InvalidFilter

/**
 * Every journal entry tag ({@link EntryKind}), in the order
 * `JournalEntry.Entry` declares them: the values {@link InspectOptions.kinds}
 * accepts.
 *
 * @since 0.1.0
 * @category filters
 */
export const entryKinds: ReadonlyArray<InspectFilter.EntryKind> = InspectFilter.entryKinds

/**
 * A journal entry's tag, and the checked entry filters a report was read
 * with ({@link EntryFilter}: an absent field does not filter).
 *
 * @since 0.1.0
 * @category filters
 */
export type { EntryFilter, EntryKind } from "./internal/inspectFilter.ts"

/**
 * A task's redaction decision as the inspector reports it: `Scrubbed` (a
 * host redactor ran before offloaded results, summaries and transcript
 * records were stored), `Verbatim` (none did: they hold what the tools and
 * the model wrote), or `Unknown` (no turn recorded a decision, as in
 * journals written before `TurnOpened.redaction` existed). The last turn's
 * decision is the task's.
 *
 * @since 0.1.0
 * @category models
 */
export type { Redaction } from "./internal/inspectRedaction.ts"

/**
 * What the inspector found ({@link Report}): the volumes
 * ({@link VolumeReport}), files on them ({@link VolumeFile}), each task's
 * journal ({@link JournalReport}) with where it stands for a resume
 * ({@link ResumableState}) and its last conversation ({@link Conversation}).
 * Declared in the package's internals, so the readers and renderers there
 * share them.
 *
 * @since 0.1.0
 * @category models
 */
export type {
  Conversation,
  JournalReport,
  Report,
  ResumableState,
  VolumeFile,
  VolumeReport
} from "./internal/inspectReport.ts"

/**
 * A task was asked for and no journal volume holds its journal. Declared
 * with the report's model, in the package's internals.
 *
 * @since 0.1.0
 * @category errors
 */
export { TaskNotFound }

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
  | InvalidFilter
  | InspectIoError
  | VolumeStore.OpenError
  | VolumeStore.VolumeMetadataInvalid
  | Journal.JournalCorrupt
  | Journal.JournalNotRecognized
  | Journal.JournalIoError

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
  /**
   * Only entries of these tags ({@link entryKinds}); an item may hold several,
   * comma-separated. An unknown tag fails {@link InvalidFilter}.
   */
  readonly kinds?: ReadonlyArray<string> | undefined
  /** Only entries of this turn (an integer >= 1); entries that belong to no turn do not match. */
  readonly turn?: number | undefined
  /** Only entries journaled at or after this instant: a `Date` or an ISO 8601 time (`2026-01-02T03:04:05Z`). */
  readonly since?: Date | string | undefined
}

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
 * complete store before the store is opened. The filters are checked first
 * ({@link InvalidFilter}, nothing read); a journal's entries are then the
 * ones matching every filter given, in order.
 *
 * @since 0.1.0
 * @category reading
 */
export const inspect = Effect.fnUntraced(function* (
  folder: string,
  options: InspectOptions = {}
): Effect.fn.Return<Report, InspectError, FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles> {
  const filter = yield* Effect.fromResult(InspectFilter.makeFilter(options))
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
          journaled: entries.length,
          entries,
          usage: JournalEntry.totalUsage(entries),
          redaction: InspectRedaction.redactionOf(entries),
          resumable: { lastTurn: Option.none(), awaitingApproval: [], inFlight: [], conversation: notRecorded },
          children: childrenOf(entries)
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
    journals: InspectFilter.isFiltering(filter)
      ? journals.map((journal) => ({
          ...journal,
          entries: journal.entries.filter((entry) => InspectFilter.matches(filter, entry))
        }))
      : journals,
    summaries: shown.filter(summary),
    artifacts: shown.filter((file) => !summary(file) && !transcript(file)),
    transcripts,
    bodies: options.bodies === true,
    filter
  }
  return report
})

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
 * A task's children, each on its line, with the children of its own below it (as far as the report holds their
 * journals); a task met twice on one branch is not followed again.
 */
const childTree = (
  report: Report,
  children: ReadonlyArray<ChildReport>,
  indent: string,
  above: ReadonlySet<string>
): ReadonlyArray<string> =>
  children.flatMap((child) => {
    const published = child.published.length === 0 ? "" : `, published ${child.published.join(", ")}`
    const line = `${indent}${child.task} (agent ${child.agent}): ${child.status}, tokens ${formatUsage(child.usage) || "unreported"}${published}`
    const own = above.has(child.task) ? undefined : report.journals.find((journal) => journal.task === child.task)
    return own === undefined || own.children.length === 0
      ? [line]
      : [line, ...childTree(report, own.children, `${indent}  `, new Set([...above, child.task]))]
  })

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
    ...(InspectFilter.isFiltering(report.filter)
      ? [`(entries filtered: ${InspectFilter.describeFilter(report.filter)})`]
      : []),
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
    const shown = InspectFilter.isFiltering(report.filter) ? `, ${journal.entries.length} shown` : ""
    lines.push(`journal of task ${journal.task} (${journal.journaled} entries${shown}, ${journal.file}):`)
    lines.push(InspectRedaction.redactionLine(journal.redaction))
    lines.push(...journal.entries.map((entry) => `  ${formatEntry(entry)}`))
    lines.push(
      `  tokens: ${formatUsage(journal.usage.usage)} (${journal.usage.reported} of ${journal.usage.responses} responses reported usage)`
    )
    if (journal.children.length > 0) {
      lines.push(
        `  with its children: ${formatUsage(journal.usage.withChildren)}`,
        `  children (${journal.children.length}):`,
        ...childTree(report, journal.children, "    ", new Set([journal.task]))
      )
    }
    lines.push("")
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

/**
 * A task's resumable state as text lines: its last turn, the calls awaiting
 * approval and in flight, and the conversation as the model last saw it,
 * one line per part. Summaries are shown as their file, artifact pointers
 * as pointers; bodies only when `bodies` is true.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderResumable: (task: Ids.TaskId, state: ResumableState, bodies: boolean) => ReadonlyArray<string> =
  InspectText.resumableLines

/**
 * The schema of the inspector's JSON document (`tessera-inspect --json`),
 * named `tessera-inspect/1` in its `schema` field: the store, its volumes,
 * each task (its journal file, the entries the filters kept, each as the
 * `JournalEntry.Entry` it is journaled as, its token total, resumable state
 * and redaction decision), summaries and artifacts, and the transcript
 * records counted. Bodies are in it only when the report was read with
 * {@link InspectOptions.bodies}. A change that breaks a reader of this
 * schema gets a new `schema` name.
 *
 * @example
 * ```ts
 * import { execFileSync } from "node:child_process"
 * import { Inspector } from "@tessera/node"
 * import { Schema } from "effect"
 *
 * // A harness's own tooling reads the inspector's output back as typed data.
 * const output = execFileSync("npx", ["tessera-inspect", "state/project-a", "--json"], { encoding: "utf8" })
 * const report = Schema.decodeUnknownSync(Schema.fromJsonString(Inspector.ReportJson))(output)
 * for (const task of report.tasks) {
 *   console.log(`${task.task}: ${task.entries.length} entries, redaction ${task.redaction}`)
 * }
 * ```
 *
 * @since 0.1.0
 * @category json
 */
export const ReportJson = InspectJson.ReportJson
/**
 * @since 0.1.0
 * @category json
 */
export type ReportJson = typeof ReportJson.Type

/**
 * The report as a {@link ReportJson} document: a plain value to
 * `JSON.stringify`, equal to what `tessera-inspect --json` prints. Pure.
 *
 * @since 0.1.0
 * @category json
 */
export const toJson: (report: Report) => typeof ReportJson.Encoded = InspectJson.toJson

/**
 * One entry as one line of JSON, exactly the entry's journaled encoding
 * (decodable with `JournalEntry.EntryLine`): a line of
 * `tessera-inspect --follow --json`.
 *
 * @since 0.1.0
 * @category json
 */
export const formatEntryJson: (entry: JournalEntry.Entry) => string = InspectJson.entryJson

/**
 * Options of {@link follow}: the task, the entry filters of
 * {@link InspectOptions}, and how often the journal's size is looked at.
 *
 * @since 0.1.0
 * @category models
 */
export interface FollowOptions extends Pick<InspectOptions, "kinds" | "turn" | "since"> {
  readonly task: Ids.TaskId
  /** Time between two looks at the journal's size; 200 milliseconds by default. */
  readonly interval?: Duration.Input
}

/**
 * A live view of a task: its journal's entries, from the first, then each
 * one as it is journaled, filtered as {@link inspect} filters. Never ends by
 * itself: interrupt it, or take what you need. Reads only, by polling the
 * journal file's size, and emits a line only once its newline is written,
 * so an append in progress (or a crash's cut line) is never shown as an
 * entry.
 *
 * Fails before following: {@link InvalidFilter}, {@link NotAStoreFolder},
 * or {@link TaskNotFound} when no journal volume holds the task's journal
 * yet. While following: `JournalCorrupt` on a complete line that is not an
 * entry (file and line named), {@link InspectIoError} when the file cannot
 * be read or shrinks below what was read (a repair replaced it).
 *
 * @since 0.1.0
 * @category reading
 */
export const follow = (
  folder: string,
  options: FollowOptions
): Stream.Stream<JournalEntry.Entry, InspectError, FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles> =>
  Stream.unwrap(
    Effect.map(Effect.fromResult(InspectFilter.makeFilter(options)), (filter) =>
      followTask(folder, options.task, { filter, interval: options.interval ?? 200 })
    )
  )

/**
 * One task's page as one self-contained HTML document (inline CSS and SVG,
 * no script, a Content-Security-Policy that allows no fetch): the context
 * size per request as a chart with compactions and offloads marked, the
 * provider's input tokens beside it, the usage per response, the summaries
 * and artifacts its journal records, the calls awaiting approval, the
 * redaction decision, and the conversation (bodies only when
 * `report.bodies`). Every text from the journal or the disk is escaped.
 * Draw it from a report read without filters: the chart shows the entries
 * the report holds. `tessera-inspect --task <id> --html <file>` writes it.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderHtml: (report: Report, journal: JournalReport) => string = InspectHtml.renderHtml
