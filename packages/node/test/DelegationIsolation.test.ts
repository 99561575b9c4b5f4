/**
 * The isolation property of delegation, through the front door: over
 * generated delegation trees (a parent and one to three children, two of
 * them possibly of the same agent, one of them possibly of the parent's own
 * agent), one side attacks (the parent or a child) one volume (the parent's
 * private volume, a child's, or its own) by asking `read_artifact` for a
 * path it learned, and only the permitted reads and writes happen. The
 * model is the attacker and may know anything: the test hands it every
 * pointer any task was given, and the layout of the state folder.
 *
 * The negative control runs the same property on deliberately broken
 * wiring (`support/sharingHarness.ts`: children run as tasks of the
 * parent's own agent on the parent's scratch volume) and asserts it finds a
 * counterexample, and that each of its rules fires there.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer } from "@tessera/artifacts"
import { LocalHarness, NodeTessera } from "@tessera/node"
import { Delegation, History, type JournalEntry, Model, TaskExecution, Tool, VolumeStore } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"
import * as fc from "fast-check"
import { sharingHarness } from "./support/sharingHarness.ts"
import { agentId, taskId } from "./support/temp.ts"

const parentAgent = agentId("lead")
const parentTask = taskId("plan-1")

/**
 * The agents a host offers as children. `lead` is the parent's own agent: a child of it is still a task of its
 * own, with a private volume of its own, and reaches nothing of the parent's.
 */
const childAgents = ["scout", "critic", "lead"] as const
type ChildAgentName = (typeof childAgents)[number]

/** A side of the tree: the parent, or the `index`-th child of its one delegation. */
type Role = "parent" | `child ${number}`

/**
 * How the attacker writes the path it asks for: the pointer's path exactly, that path under the artifact folder
 * (`artifacts/…`, the form the journal records), a climb out of its own artifact folder into the target
 * volume's (`../../<target volume>/artifacts/…`), or the target file's absolute path on the host.
 */
const forms = ["exact", "under artifacts/", "climbing ..", "absolute"] as const
type Form = (typeof forms)[number]

/** One generated case, as fast-check prints it when it shrinks one. */
interface Scenario {
  /** The agent of each child, in the order the parent delegates (and the children run). */
  readonly children: ReadonlyArray<ChildAgentName>
  readonly attacker: Role
  readonly target: Role
  readonly form: Form
}

const childIndex = (role: Role): number => (role === "parent" ? -1 : Number(role.slice("child ".length)))

/**
 * A tree's children: any agents, or (one tree in four) one agent two or three times, so siblings of one agent
 * are attacked about as often as siblings of two.
 */
const childrenOf: fc.Arbitrary<ReadonlyArray<ChildAgentName>> = fc.oneof(
  { arbitrary: fc.array(fc.constantFrom(...childAgents), { minLength: 1, maxLength: 3 }), weight: 3 },
  {
    arbitrary: fc
      .constantFrom(...childAgents)
      .chain((agent) => fc.array(fc.constant(agent), { minLength: 2, maxLength: 3 })),
    weight: 1
  }
)

/**
 * Children run one at a time, in order, so a child attacks only siblings that ran before it: a refusal is never
 * for want of the file. Every pair of siblings is still drawn, up to their order.
 */
const scenario: fc.Arbitrary<Scenario> = childrenOf
  .chain((children) => {
    const roles: ReadonlyArray<Role> = ["parent", ...children.map((_, index): Role => `child ${index}`)]
    return fc.record({
      children: fc.constant(children),
      attacker: fc.constantFrom(...roles),
      target: fc.constantFrom(...roles),
      form: fc.constantFrom(...forms)
    })
  })
  .filter(({ attacker, target }) => attacker === "parent" || childIndex(target) <= childIndex(attacker))

/** What each task's own tool results hold, naming the task: `MARK<task>`, closed so no task's is in another's. */
const markerOf = (task: string) => `MARK<${task}>`
const markers = /MARK<([^>]*)>/g

/**
 * The only writes a model can cause are offloads of its own tool results: each task's `produce` returns its
 * marker and just over the offload threshold of filler, so it is offloaded to the task's private volume.
 */
const threshold = 8_192
const produce = Tool.make({
  name: "produce",
  description: "Produces this task's working notes",
  input: Schema.Struct({}),
  handler: () =>
    Effect.gen(function* () {
      const position = yield* Tool.CurrentCall
      const task = Option.match(position, { onNone: () => "no-call", onSome: (call) => call.task })
      return `${markerOf(task)}\n${"0123456789abcdef\n".repeat(threshold / 16)}`
    })
})

const offers: ReadonlyArray<Delegation.ChildAgent> = childAgents.map((agent) => ({
  agent,
  description: `the ${agent}`,
  tools: [produce]
}))

const isParent = (request: Model.ModelRequest) => request.tools.some((tool) => tool.name === Delegation.toolName)
const instructionOf = (index: number) => `child ${index}: produce your notes, then answer.`
const roleOf = (request: Model.ModelRequest): Role => {
  if (isParent(request)) return "parent"
  const first = request.parts.find((part): part is Model.TextPart => part._tag === "Text" && part.role === "user")
  const index = /^child (\d+):/.exec(first?.text ?? "")?.[1]
  return index === undefined ? "parent" : `child ${Number(index)}`
}
const resultOf = (request: Model.ModelRequest, callId: string) =>
  request.parts.find((part): part is Model.ToolResultPart => part._tag === "ToolResult" && part.callId === callId)

/** The task a pointer's path names (`tool-results/<task>-t<turn>-s<step>-<call>.txt`). */
const taskOfPointer = (pointer: string) => /^tool-results\/(.+)-t\d+-s\d+-[^-]+\.txt$/.exec(pointer)?.[1] ?? ""

/** The private volume of a side: the parent agent's scratch volume, or the one the host creates for a child task. */
const volumeOf = (role: Role, task: string) =>
  role === "parent" ? LocalHarness.scratchVolumeId(parentAgent) : `${task}-scratch`

const attackPath = (form: Form, target: Role, pointer: string, folder: string) => {
  const volume = volumeOf(target, taskOfPointer(pointer))
  switch (form) {
    case "exact":
      return pointer
    case "under artifacts/":
      return `${VolumeStore.artifactFolder}/${pointer}`
    case "climbing ..":
      return `../../${volume}/${VolumeStore.artifactFolder}/${pointer}`
    case "absolute":
      return path.join(folder, VolumeStore.volumesFolder, volume, VolumeStore.artifactFolder, pointer)
  }
}

/**
 * One model for parent and children, as a host gives a task and its children the same provider. Every side
 * produces first (its result offloaded; the pointer it is given is remembered in `learned`), the parent then
 * delegates to every child, and the attacker, once it has produced (the parent: once its children answered),
 * asks `read_artifact` for the target's pointer in the scenario's form.
 */
const scriptOf = (scenario: Scenario, learned: Map<Role, string>, folder: string) => (request: Model.ModelRequest) => {
  const role = roleOf(request)
  const produced = resultOf(request, "p")
  if (produced === undefined) return Model.response({ toolCalls: [Model.toolCall("p", "produce", {})] })
  const pointer = ArtifactPointer.extractPaths(produced.content)[0]
  if (pointer !== undefined) learned.set(role, pointer)
  if (role === "parent" && resultOf(request, "d") === undefined) {
    const tasks = scenario.children.map((agent, index) => ({ agent, task: instructionOf(index) }))
    return Model.response({ toolCalls: [Model.toolCall("d", Delegation.toolName, { tasks })] })
  }
  if (role === scenario.attacker && resultOf(request, "a") === undefined) {
    const known = learned.get(scenario.target)
    const read = known === undefined ? "" : attackPath(scenario.form, scenario.target, known, folder)
    return Model.response({ toolCalls: [Model.toolCall("a", NodeTessera.defaultOffload.readTool, { path: read })] })
  }
  return Model.response({ text: `${role}: done.` })
}

/**
 * A fresh folder for one run, removed when the run ends: on the machine's memory file system when it has one
 * (`/dev/shm`), where the per-entry journal syncs and the folder syncs of every write cost little. On disk they
 * take most of a run (a tree of three children: about 230 ms on disk, 90 ms in memory, on a two-core machine),
 * and the property makes 1,000 runs. What runs is the same either way: the same writes, syncs and checks.
 */
const runRoot = (() => {
  try {
    fs.accessSync("/dev/shm", fs.constants.W_OK)
    return "/dev/shm"
  } catch {
    return os.tmpdir()
  }
})()
const runFolder = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(runRoot, "tessera-isolation-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Every file below the namespace's volumes, relative to it, with its text. */
const volumeFiles = (folder: string) => {
  const root = path.join(folder, VolumeStore.volumesFolder)
  return fs
    .readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const file = path.join(entry.parentPath, entry.name)
      return { file: path.relative(root, file), text: fs.readFileSync(file, "utf8") }
    })
}

/** What one run left: the requests by side, the tasks of the sides, the parent's journal, and the files. */
interface Observed {
  readonly requests: ReadonlyArray<{ readonly role: Role; readonly request: Model.ModelRequest }>
  readonly tasks: ReadonlyMap<Role, string>
  readonly learned: ReadonlyMap<Role, string>
  readonly delegated: ReadonlyArray<string>
  readonly parentEntries: ReadonlyArray<JournalEntry.Entry>
  readonly files: ReadonlyArray<{ readonly file: string; readonly text: string }>
}

type Wiring = "front door" | "sharing"

/** The scenario's run on a fresh folder: through the front door, or through the sharing harness of the controls. */
const runScenario = (scenario: Scenario, wiring: Wiring) =>
  Effect.gen(function* () {
    const stateDir = yield* runFolder
    const learned = new Map<Role, string>()
    const prompt = "Produce, delegate, and answer."
    const offload = { ...NodeTessera.defaultOffload, threshold }
    // One at a time, so an attacked sibling has run (see `scenario`), and the run is the same on every attempt.
    const limits = { maxChildren: 3, maxConcurrent: 1 }
    const ran = yield* Effect.scoped(
      Effect.gen(function* () {
        const tessera = yield* NodeTessera.open({
          folder: stateDir,
          agent: parentAgent,
          redactor: Option.none(),
          offload
        })
        if (wiring === "front door") {
          yield* tessera.run(parentTask, prompt, { tools: [produce], children: offers, delegation: limits })
        } else {
          yield* tessera.harness.withTask(parentTask, (parent) =>
            Effect.gen(function* () {
              const delegate = yield* Delegation.tool(sharingHarness(tessera.harness), parent, offers, limits)
              return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", prompt)]), {
                tools: Tool.registry(produce, delegate),
                maxSteps: NodeTessera.defaultMaxSteps,
                durable: true,
                offload
              })
            })
          )
        }
        const requests = yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
        const parentEntries = yield* tessera.harness.readEntries(parentTask)
        return { requests, parentEntries, folder: tessera.folder }
      })
    ).pipe(
      Effect.provide(
        ScriptedModel.layer(scriptOf(scenario, learned, path.join(stateDir, NodeTessera.defaultNamespace)))
      )
    )
    // The children's tasks, as the contract names them after the delegating call.
    const delegations = ran.parentEntries.flatMap((entry) => (entry._tag === "ChildDelegated" ? [entry] : []))
    const tasks = new Map<Role, string>([["parent", parentTask]])
    const call = delegations[0]
    if (call !== undefined) {
      for (const index of scenario.children.keys()) {
        const position = { task: parentTask, turn: call.turn, step: call.step, callId: call.callId }
        tasks.set(`child ${index}`, yield* Delegation.childTaskId(position, index))
      }
    }
    const observed: Observed = {
      requests: ran.requests.map((request) => ({ role: roleOf(request), request })),
      tasks,
      learned,
      delegated: delegations.map((entry) => entry.task),
      parentEntries: ran.parentEntries,
      files: volumeFiles(ran.folder)
    }
    return observed
  }).pipe(Effect.scoped, Effect.provide(NodeTessera.layer))

const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text)

/**
 * Every rule the run broke, as sentences (none when isolation held):
 *
 * - the tree ran: the parent delegated to every child, each side was given the pointer of its own result;
 * - the read: it succeeds (not an error, the target's marker in it) iff the attacker reads its own volume by the
 *   pointer's exact path; otherwise it is an error result, `NotFound` or `InvalidPath`;
 * - no request of a side holds another side's marker (so the attacker's none of the target's, and the parent's
 *   none of a child's);
 * - every write landed in the writer's own volume: a file in a side's private volume holds no other side's
 *   marker, a task's journal no other task's, any other volume no marker at all; and each side's result is in its
 *   own volume, at its pointer's path;
 * - the parent's journal holds no byte of a child's marker.
 */
const violations = (scenario: Scenario, observed: Observed): ReadonlyArray<string> => {
  const found: Array<string> = []
  const roles: ReadonlyArray<Role> = ["parent", ...scenario.children.map((_, index): Role => `child ${index}`)]
  const taskOf = (role: Role) => observed.tasks.get(role) ?? `unknown ${role}`
  const roleOfTask = new Map(roles.map((role) => [taskOf(role), role]))
  if (observed.delegated.join() !== roles.slice(1).map(taskOf).join()) {
    found.push(`the parent delegated to ${observed.delegated.length} of ${scenario.children.length} children`)
  }
  for (const role of roles) {
    if (!observed.learned.has(role)) found.push(`the ${role} was given no pointer to its own result`)
  }
  // The read.
  const read = observed.requests
    .filter(({ role }) => role === scenario.attacker)
    .map(({ request }) => resultOf(request, "a"))
    .find((part) => part !== undefined)
  const own = scenario.attacker === scenario.target
  const targetMarker = markerOf(taskOf(scenario.target))
  if (read === undefined) {
    found.push(`the ${scenario.attacker}'s read was never answered`)
  } else if (own && scenario.form === "exact") {
    if (read.isError || !read.content.includes(targetMarker)) {
      found.push(`the ${scenario.attacker} could not read its own artifact: ${clip(read.content)}`)
    }
  } else if (!read.isError || !/\((NotFound|InvalidPath)\)/.test(read.content)) {
    found.push(
      `the ${scenario.attacker}'s read of the ${scenario.target}'s artifact (${scenario.form}) was not refused NotFound or InvalidPath: ${clip(read.content)}`
    )
  }
  // What each side's requests hold.
  for (const { request, role } of observed.requests) {
    const text = JSON.stringify(request)
    for (const other of roles) {
      if (other !== role && text.includes(markerOf(taskOf(other)))) {
        found.push(`a request of the ${role} holds the ${other}'s marker`)
      }
    }
  }
  // Where the writes landed.
  const journalFolder = LocalHarness.journalVolumeId
  const ownerOf = (file: string): Option.Option<Role> => {
    const [volume = "", name = ""] = file.split(path.sep)
    if (volume === journalFolder) {
      return Option.fromNullishOr(roleOfTask.get(name.replace(/\.jsonl$/, "")))
    }
    return Option.fromNullishOr(roles.find((role) => volumeOf(role, taskOf(role)) === volume))
  }
  for (const { file, text } of observed.files) {
    const owner = ownerOf(file)
    // A file a task writes in a private volume names the task in its path: its transcript records, its results.
    const segments = file.split(path.sep)
    const named =
      segments[1] === "transcripts"
        ? segments[2]
        : /^artifacts\/tool-results\/(.+)-t\d+-s\d+-[^-/]+\.txt$/.exec(segments.slice(1).join("/"))?.[1]
    if (Option.isSome(owner) && segments[0] !== journalFolder && named !== undefined && named !== taskOf(owner.value)) {
      found.push(
        `${file} (the ${owner.value}'s volume) was written for the ${roleOfTask.get(named) ?? `task ${named}`}`
      )
    }
    for (const [, task = ""] of text.matchAll(markers)) {
      const writer = roleOfTask.get(task) ?? `task ${task}`
      if (Option.isNone(owner) || owner.value !== writer) {
        found.push(
          `${file} (${Option.match(owner, { onNone: () => "no side's", onSome: (role) => `the ${role}'s` })}) holds the ${writer}'s marker`
        )
      }
    }
  }
  for (const role of roles) {
    const pointer = observed.learned.get(role)
    const where = path.join(volumeOf(role, taskOf(role)), VolumeStore.artifactFolder, ...(pointer ?? "").split("/"))
    const stored = observed.files.find(({ file }) => file === where)
    if (pointer !== undefined && !stored?.text.includes(markerOf(taskOf(role)))) {
      found.push(`the ${role}'s result is not in its own volume at ${where}`)
    }
  }
  // The parent's journal, as its entries.
  const journal = JSON.stringify(observed.parentEntries)
  for (const role of roles.slice(1)) {
    if (journal.includes(markerOf(taskOf(role)))) found.push(`the parent's journal holds the ${role}'s marker`)
  }
  return [...new Set(found)]
}

/** The kind of attack a scenario makes, for the tally that shows every kind was drawn. */
const kindOf = ({ attacker, children, target }: Scenario): string => {
  if (attacker === target) return `${attacker === "parent" ? "parent" : "child"} reads its own`
  if (attacker === "parent") return "parent reads a child's"
  if (target === "parent")
    return children[childIndex(attacker)] === "lead" ? "lead child reads the parent's" : "child reads the parent's"
  return children[childIndex(attacker)] === children[childIndex(target)]
    ? "child reads a sibling's of its agent"
    : "child reads a sibling's of another agent"
}

const isolationHolds = (wiring: Wiring, tally?: Map<string, number>) =>
  fc.asyncProperty(scenario, async (generated) => {
    const observed = await Effect.runPromise(runScenario(generated, wiring))
    const kind = `${kindOf(generated)} (${generated.form})`
    tally?.set(kind, (tally.get(kind) ?? 0) + 1)
    const found = violations(generated, observed)
    assert.deepStrictEqual(found, [], `isolation broken:\n- ${found.join("\n- ")}\n`)
  })

const runs = 1_000

describe("delegation isolation", () => {
  it(`delegation_isolation_property: over ${runs} generated delegation trees, whichever side attacks whichever volume, only its own reads succeed and every write lands in the writer's own volume`, async () => {
    const tally = new Map<string, number>()
    await fc.assert(isolationHolds("front door", tally), { numRuns: runs })
    // Every kind of attack, in every form, was drawn: 7 kinds times 4 forms.
    assert.strictEqual(tally.size, 28, [...tally.keys()].join("; "))
  }, 600_000)

  it("delegation_isolation_property negative control: on a host that runs children on the parent's own scratch volume, the property finds a counterexample, and each of its rules fires", async () => {
    const outcome = await fc.check(isolationHolds("sharing"), { numRuns: 20, seed: 38 })
    assert.isTrue(outcome.failed, "the property must fail on the sharing wiring")
    // Shrunk to the smallest tree, readable as it is printed: there the child's own writes already land in the
    // parent's volume.
    assert.deepStrictEqual(outcome.counterexample, [
      { children: ["scout"], attacker: "parent", target: "parent", form: "exact" }
    ])
    // The rules one by one: a child reads the parent's artifact and the parent a child's, each sees the
    // other's marker, and the children's results land in the parent's volume.
    const childReadsParent: Scenario = { children: ["scout"], attacker: "child 0", target: "parent", form: "exact" }
    const parentReadsChild: Scenario = { children: ["scout"], attacker: "parent", target: "child 0", form: "exact" }
    const sibling: Scenario = { children: ["scout", "scout"], attacker: "child 1", target: "child 0", form: "exact" }
    for (const [given, expected] of [
      [childReadsParent, "the child 0's read of the parent's artifact (exact) was not refused"],
      [childReadsParent, "a request of the child 0 holds the parent's marker"],
      [parentReadsChild, "the parent's read of the child 0's artifact (exact) was not refused"],
      [parentReadsChild, "a request of the parent holds the child 0's marker"],
      [sibling, "the child 1's read of the child 0's artifact (exact) was not refused"],
      [sibling, "(the parent's) holds the child 0's marker"],
      [sibling, "was written for the child 0"],
      [sibling, "the child 0's result is not in its own volume"]
    ] as const) {
      const found = violations(given, await Effect.runPromise(runScenario(given, "sharing")))
      assert.isTrue(
        found.some((violation) => violation.includes(expected)),
        `${JSON.stringify(given)}: ${expected}\nfound: ${found.join("\n")}`
      )
    }
  }, 120_000)
})
