/**
 * The delegation scenario the workflow tests run, in one process or on
 * cluster runners: a parent task that delegates two sub-tasks (a scout and
 * a critic) in one `delegate` call, each child reading its notes once with
 * a tool whose effect is a line in a marker file (fsynced, keyed by the
 * child call's `ToolCallKey`) and whose large result is offloaded to the
 * child's own private volume; then each child answers, and the parent
 * repeats what it was told.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import type { Ids } from "@tessera/core"
import { Compaction, Delegation, Journal, type JournalEntry, Model, type TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { SharedStore, TaskHosting, TaskWorkflow, type TemporaryPostgres, ToolCallKey } from "@tessera/workflow"
import { Effect, Layer, Option, Schema } from "effect"
import * as cluster from "./cluster.ts"
import * as world from "./world.ts"

/** What only a child's private work holds: its notes carry it, and they are offloaded to its private volume. */
export const markerOf = (agent: string) => `${agent.toUpperCase()}-PRIVATE-NOTES`

/** Bytes of a child's notes: over a child turn's offload threshold (8 KiB). */
const notesBytes = 12_000

/**
 * A child's notes tool. Its effect: the line `<agent> <key>` appended to `log` and fsynced, unless the log holds
 * the key already (the key is the child call's own, `ToolCallKey.current`). Having acted, it holds the call for
 * `pauseMs`, so a runner can be killed while a child's turn runs. Idempotent: a re-run with the same key acts not.
 */
export const notesTool = (log: string, agent: string, pauseMs: number) =>
  Tool.make({
    name: "read_notes",
    description: "Reads the notes of the sub-task",
    input: Schema.Struct({}),
    idempotent: true,
    handler: () =>
      Effect.gen(function* () {
        const key = Option.getOrElse(yield* ToolCallKey.current, () => "-")
        const done =
          key !== "-" &&
          fs.existsSync(log) &&
          fs
            .readFileSync(log, "utf8")
            .split("\n")
            .some((line) => line.endsWith(` ${key}`))
        if (!done) {
          const fd = fs.openSync(log, "a")
          fs.writeSync(fd, `${agent} ${key}\n`)
          fs.fsyncSync(fd)
          fs.closeSync(fd)
          if (pauseMs > 0) yield* Effect.sleep(pauseMs)
        }
        return `${markerOf(agent)}\n${"reading 17.2 nominal\n".repeat(Math.ceil(notesBytes / 21))}`
      })
  })

/** The child agents the host offers, their tools writing to `log`. */
export const children = (log: string, pauseMs = 0): ReadonlyArray<Delegation.ChildAgent> => [
  { agent: "scout", description: "reads the field notes", tools: [notesTool(log, "scout", pauseMs)] },
  { agent: "critic", description: "reviews the plan", tools: [notesTool(log, "critic", pauseMs)] }
]

/** The marker file's lines, by agent: the keys each child's tool acted with. */
export const actedKeys = (log: string): ReadonlyMap<string, ReadonlyArray<string>> => {
  const keys = new Map<string, Array<string>>()
  if (!fs.existsSync(log)) return keys
  for (const line of fs.readFileSync(log, "utf8").split("\n")) {
    if (line.length === 0) continue
    const [agent = "", key = ""] = line.split(" ")
    keys.set(agent, [...(keys.get(agent) ?? []), key])
  }
  return keys
}

const isParent = (request: Model.ModelRequest) => request.tools.some((tool) => tool.name === Delegation.toolName)
const firstUserText = (request: Model.ModelRequest) =>
  request.parts.find((part): part is Model.TextPart => part._tag === "Text" && part.role === "user")?.text ?? ""
const resultOf = (request: Model.ModelRequest, callId: string) =>
  request.parts.find((part): part is Model.ToolResultPart => part._tag === "ToolResult" && part.callId === callId)

/**
 * One model for parent and children: the parent delegates both sub-tasks in call `d1`, then answers with the
 * call's result; each child reads its notes (call `n1`) and then answers.
 */
export const model = ScriptedModel.layer((request) => {
  if (Compaction.isSummaryRequest(request)) return Model.response({ text: "SUMMARY of the notes" })
  if (isParent(request)) {
    const delegated = resultOf(request, "d1")
    if (delegated !== undefined) return Model.response({ text: `PARENT DONE\n${delegated.content}` })
    return Model.response({
      toolCalls: [
        Model.toolCall("d1", Delegation.toolName, {
          tasks: [
            { agent: "scout", task: "Summarize the field notes." },
            { agent: "critic", task: "Review the plan." }
          ]
        })
      ]
    })
  }
  const scout = firstUserText(request).startsWith("Summarize")
  if (resultOf(request, "n1") === undefined)
    return Model.response({ toolCalls: [Model.toolCall("n1", "read_notes", {})] })
  return Model.response({ text: scout ? "scout: all readings nominal." : "critic: the plan holds." })
})

/** The parent task of the scenario and its request. */
export const parentTask = world.taskId("plan-1")
export const request = { task: parentTask, prompt: `${world.promptPrefix}plan the survey` }

/** The parent's turn configuration: no tools of its own (the `delegate` tool is the hosting's), private offload. */
export const parentConfig: TaskExecution.ExecutionConfig = {
  tools: Tool.empty,
  maxSteps: 8,
  offload: { threshold: 1_024, readTool: "read_artifact", destination: "Private" }
}

/** How a host binds a child: the runtime's binder (the default), or a broken wiring a control passes. */
export type BindChild = NonNullable<TaskHosting.TaskHostingShape["bindChild"]>

/** The broken wiring of the isolation control: every child bound like one of the parent's own tasks. */
export const asParentsOwn =
  (shared: SharedStore.SharedStore): BindChild =>
  (_parent, child) =>
    shared.hosting.bindTask(child.task)

/**
 * The broken wiring of the failover control: a host that forgets its children between runs of a call (each
 * child's journal set aside before the child is bound), so a re-run finds none of them answered and runs them anew.
 * (A host cannot rename a child instead: a binding of another task is refused `ChildBindingMismatch`.)
 */
export const forgetful =
  (shared: SharedStore.SharedStore): BindChild =>
  (parent, child) =>
    Effect.sync(() => {
      const file = path.join(shared.hosting.journalFolder, Journal.fileName(child.task))
      if (fs.existsSync(file)) fs.renameSync(file, `${file}.forgotten-${crypto.randomBytes(4).toString("hex")}`)
    }).pipe(Effect.andThen(Delegation.bindChild(parent, child)))

/** The store options of the scenario: the test agent and store id, the parent's config, the children. */
export const storeOptions = (root: string, log: string, pauseMs = 0): SharedStore.Options => ({
  root,
  storeId: world.storeId,
  agent: world.agent,
  config: parentConfig,
  gate: { policy: world.policy },
  children: children(log, pauseMs)
})

/**
 * Runs `body` with the workflow on the in-memory engine over a fresh store with the scenario's children, bound
 * by `bindChild` when a control breaks the wiring.
 */
export const onMemoryEngine = <A, E, R>(
  dir: string,
  options: {
    readonly bindChild?: (shared: SharedStore.SharedStore) => BindChild
    /** Offers in place of the scenario's, made with its children's marker file. */
    readonly children?: (log: string) => ReadonlyArray<Delegation.ChildAgent>
  },
  body: (shared: SharedStore.SharedStore) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const shared = yield* SharedStore.open(storeOptions(path.join(dir, "store"), path.join(dir, "notes.log")))
    const hosting: TaskHosting.TaskHostingShape = {
      ...shared.hosting,
      ...(options.bindChild === undefined ? {} : { bindChild: options.bindChild(shared) }),
      ...(options.children === undefined ? {} : { children: options.children(path.join(dir, "notes.log")) })
    }
    const services = Layer.mergeAll(
      Layer.succeed(TaskHosting.TaskHosting)(hosting),
      ArtifactPathPolicy.layer(shared.pathPolicy)
    )
    return yield* body(shared).pipe(
      Effect.provide(TaskWorkflow.layerMemory.pipe(Layer.provide(services))),
      Effect.provide(services)
    )
  })

/** What a run of the scenario left: the parent's answer, and the parent's and each child's journal, by agent. */
export interface Run {
  readonly answer: TaskWorkflow.TaskAnswer
  readonly parent: ReadonlyArray<JournalEntry.Entry>
  readonly children: ReadonlyMap<
    string,
    { readonly task: Ids.TaskId; readonly entries: ReadonlyArray<JournalEntry.Entry> }
  >
}

/** The journals of a finished run: the parent's, and each child's its `ChildDelegated` records name. */
export const journalsOf = (journalFolder: string, answer: TaskWorkflow.TaskAnswer) =>
  Effect.gen(function* () {
    const parent = yield* Journal.readEntries({ folder: journalFolder, task: answer.task })
    const found = new Map<string, { task: Ids.TaskId; entries: ReadonlyArray<JournalEntry.Entry> }>()
    for (const entry of parent) {
      if (entry._tag !== "ChildDelegated") continue
      found.set(entry.agent, {
        task: entry.task,
        entries: yield* Journal.readEntries({ folder: journalFolder, task: entry.task })
      })
    }
    const run: Run = { answer, parent, children: found }
    return run
  })

/** Every file below a volume's data folder, with its text, by path. */
export const filesOf = (
  store: string,
  volume: string
): ReadonlyArray<{ readonly file: string; readonly text: string }> => {
  const root = path.join(store, "volumes", volume)
  if (!fs.existsSync(root)) return []
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const file = path.join(entry.parentPath, entry.name)
      return { file, text: fs.readFileSync(file, "utf8") }
    })
}

/**
 * How many turns a child task opened over every journal file it ever had: its journal, and any a host set aside
 * (a host that forgets its children leaves the old one beside the new).
 */
export const turnsOpened = (store: string, task: Ids.TaskId): number => {
  const folder = path.join(store, "volumes", "journal")
  return fs
    .readdirSync(folder)
    .filter((file) => file.startsWith(Journal.fileName(task)))
    .flatMap((file) => fs.readFileSync(path.join(folder, file), "utf8").split("\n"))
    .filter((line) => line.includes('"_tag":"TurnOpened"')).length
}

/**
 * What must hold of a finished run, as the local executor leaves it: the parent's journal records each child's
 * delegation and answer once and its turn closed; each child's own journal holds one closed turn, and no other
 * turn was ever opened for it (none in a journal set aside either); each child's
 * offloaded notes are in its own private volume (`Delegation.childVolumes`), and nowhere else: not in the agent's
 * private volume, not in a sibling's. Returns what is violated (empty: all holds).
 */
export const violations = (store: string, run: Run): ReadonlyArray<string> => {
  const found: Array<string> = []
  const count = (entries: ReadonlyArray<JournalEntry.Entry>, tag: JournalEntry.Entry["_tag"]) =>
    entries.filter((entry) => entry._tag === tag).length
  if (count(run.parent, "ChildDelegated") !== 2)
    found.push(`parent: ${count(run.parent, "ChildDelegated")} ChildDelegated`)
  const answered = run.parent.filter((entry) => entry._tag === "ChildAnswered")
  if (
    answered.length !== 2 ||
    answered.some((entry) => entry._tag === "ChildAnswered" && entry.outcome !== "Answered")
  ) {
    found.push(`parent: ${answered.length} ChildAnswered, not two answers`)
  }
  if (run.parent.at(-1)?._tag !== "TurnClosed") found.push("parent: turn not closed")
  const agentPrivate = filesOf(store, SharedStore.privateVolumeId(world.agent))
  for (const agent of ["scout", "critic"]) {
    const child = run.children.get(agent)
    if (child === undefined) {
      found.push(`${agent}: never delegated`)
      continue
    }
    if (count(child.entries, "TurnOpened") !== 1 || count(child.entries, "TurnClosed") !== 1) {
      found.push(
        `${agent}: ${count(child.entries, "TurnOpened")} turns opened, ${count(child.entries, "TurnClosed")} closed`
      )
    }
    if (child.entries.at(-1)?._tag !== "TurnClosed") found.push(`${agent}: turn not closed`)
    const opened = turnsOpened(store, child.task)
    if (opened !== 1) found.push(`${agent}: ${opened} turns opened over its journals`)
    const own = Delegation.childVolumes(child.task).private
    const offloaded = child.entries.filter((entry) => entry._tag === "ArtifactOffloaded")
    if (offloaded.length !== 1) found.push(`${agent}: ${offloaded.length} offloads`)
    if (!filesOf(store, own).some((file) => file.text.startsWith(markerOf(agent)))) {
      found.push(`${agent}: its notes are not in its own private volume ${own}`)
    }
    if (agentPrivate.some((file) => file.text.includes(markerOf(agent)))) {
      found.push(`${agent}: its notes are in the agent's private volume`)
    }
    for (const [sibling, other] of run.children) {
      if (sibling === agent) continue
      const theirs = filesOf(store, Delegation.childVolumes(other.task).private)
      if (theirs.some((file) => file.text.includes(markerOf(agent))))
        found.push(`${agent}: its notes are in ${sibling}'s`)
    }
  }
  if (JSON.stringify(run.parent).includes("PRIVATE-NOTES")) found.push("parent: a child's notes in its journal")
  return found
}

/** The digests of the requests a journal says were sent, in order (a lost one sent again counts once). */
export const requestDigests = (entries: ReadonlyArray<JournalEntry.Entry>): ReadonlyArray<string> => {
  const digests: Array<string> = []
  for (const entry of entries) {
    if (entry._tag !== "RequestDispatched") continue
    if (digests.at(-1) !== entry.sha256) digests.push(entry.sha256)
  }
  return digests
}

/** The argument of a delegation runner process (`fixtures/delegationRunner.ts`), as JSON. */
export interface DelegationRunnerArgs {
  readonly postgres: string
  readonly store: string
  /** The children's marker file. */
  readonly log: string
  readonly port: number
  /** How long a child's tool holds its call after it acted. */
  readonly pauseMs: number
  /** The failover control's broken wiring: a host that forgets its children between runs (`scenario.forgetful`). */
  readonly forgetful: boolean
}

const runnerScript = path.join(import.meta.dirname, "..", "fixtures", "delegationRunner.ts")

/** Starts delegation runner `index` (see `fixtures/delegationRunner.ts`), waits for `ready`; SIGKILLed at scope end. */
export const startRunner = (
  postgres: TemporaryPostgres.TemporaryPostgres,
  options: Omit<DelegationRunnerArgs, "postgres" | "port">,
  index: number
) =>
  cluster.spawnRunner(
    runnerScript,
    (port): DelegationRunnerArgs => ({ ...options, postgres: postgres.url, port }),
    index
  )
