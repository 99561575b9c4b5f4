/**
 * Delegation on the browser platform, in headless Chromium: a parent task's
 * `delegate` call through the browser front door runs each sub-task as a
 * child task of its own (its own agent, scope, private volume and journal
 * on OPFS under its own Web Lock), and only the children's answers and what
 * they publish (through their own output volumes) reach the parent. The control runs the same scenario through a front door whose
 * child harness binds each child like one of the parent's own tasks (the
 * parent's agent and grants: one shared scratchpad) and asserts that the
 * isolation check fails.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ArtifactPathPolicy } from "@tessera/artifacts"
import { type BrowserHarness, BrowserTessera } from "@tessera/browser"
import type { Ids } from "@tessera/core"
import { Delegation, Journal, JournalEntry, Model, TaskExecution, Tool, VolumeStore } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, FileSystem, Option, Path, Schema } from "effect"
import { withRoot } from "./support.ts"

/** What only the scout's private work holds: its notes are large (offloaded) and carry a marker. */
const childMarker = "SCOUT-PRIVATE-b2e9"
const fetchNotes = Tool.make({
  name: "fetch_notes",
  description: "Fetches the field notes",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(`${childMarker}\n${"reading 17.2 nominal\n".repeat(1_500)}`)
})

const children: ReadonlyArray<Delegation.ChildAgent> = [
  { agent: "scout", description: "reads the field notes", tools: [fetchNotes] },
  { agent: "critic", description: "reviews a plan" }
]

const scoutAnswer = "scout: all readings nominal."
const publishedReview = "CRITIC-PUBLIC-41aa: the plan holds, with one caveat"
const criticAnswer = "critic: the plan holds."

const isParent = (request: Model.ModelRequest) => request.tools.some((tool) => tool.name === Delegation.toolName)
const firstUserText = (request: Model.ModelRequest) =>
  request.parts.find((part): part is Model.TextPart => part._tag === "Text" && part.role === "user")?.text ?? ""
const resultOf = (request: Model.ModelRequest, callId: string) =>
  request.parts.find((part): part is Model.ToolResultPart => part._tag === "ToolResult" && part.callId === callId)

/**
 * One model for parent and children: the parent delegates to both children in one call and answers with what
 * they said; the scout reads its notes (offloaded: they are large) before it answers, the critic answers at once.
 */
const model = () =>
  ScriptedModel.layer((request) => {
    if (isParent(request)) {
      const delegated = resultOf(request, "d1")
      if (delegated !== undefined) return Model.response({ text: `Both answered.\n${delegated.content}` })
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
    if (firstUserText(request).startsWith("Summarize the field notes")) {
      return resultOf(request, "n1") === undefined
        ? Model.response({ toolCalls: [Model.toolCall("n1", "fetch_notes", {})] })
        : Model.response({ text: scoutAnswer })
    }
    // The critic hands its review over through its output volume, then answers.
    return resultOf(request, "p1") === undefined
      ? Model.response({
          toolCalls: [Model.toolCall("p1", Delegation.publishToolName, { name: "review.md", text: publishedReview })]
        })
      : Model.response({ text: criticAnswer })
  })

/**
 * The broken wiring: a child harness that binds every child like one of the parent's own tasks (the parent's
 * agent, the parent's grants on its scratch and output volumes), each with a journal of its own.
 */
const sharingHarness = (
  harness: BrowserHarness.BrowserHarnessService
): TaskExecution.TaskHarness<
  BrowserHarness.ChildError,
  FileSystem.FileSystem | Path.Path,
  Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy
> => ({
  withTask: harness.withTask,
  withChild: (_parent, child, body) => harness.withTask(child.task, body)
})

/** What a child task left in the namespace. */
interface ChildFacts {
  readonly task: Ids.TaskId
  readonly agent: Ids.AgentId
  readonly journalFile: boolean
  readonly privateVolume: Option.Option<{ readonly kind: string; readonly owner: string }>
  /** The volumes its journal says its offloaded results went to. */
  readonly offloadedTo: ReadonlyArray<string>
}

/**
 * The parent's delegation once, through the browser front door (or, for the control, the same front door over
 * the sharing child harness): its answer, its journal, each child's facts, and the volumes whose files hold the
 * scout's marker.
 */
const delegateOnce = (root: string, wiring: "browser" | "sharing") =>
  Effect.scoped(
    Effect.gen(function* () {
      // The namespace's Web Lock is the origin's: every run takes a namespace of its own.
      const namespace = `ns-${crypto.randomUUID()}`
      const opened = yield* BrowserTessera.open({ agent: "lead", redactor: Option.none(), root, namespace })
      const tessera =
        wiring === "browser"
          ? opened
          : yield* TaskExecution.frontDoor(
              sharingHarness(opened.harness),
              { redactor: Option.none() },
              { entry: "SharingControl" }
            )
      const outcome = yield* tessera.run("plan-1", "Plan the survey.", { children })
      const entries = yield* tessera.entries("plan-1")
      const harness = opened.harness
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const delegated = entries.flatMap((entry) => (entry._tag === "ChildDelegated" ? [entry] : []))
      const childFacts: Array<ChildFacts> = []
      for (const { agent, task } of delegated) {
        const volume = Delegation.childVolumes(task).private
        const descriptor = yield* harness.host.store.custody({ store: harness.namespace, volume })
        const childEntries = yield* tessera.entries(task)
        childFacts.push({
          task,
          agent,
          journalFile: yield* fs.exists(path.join(harness.journalFolder, Journal.fileName(task))),
          privateVolume: Option.map(descriptor, (found) => ({
            kind: found.kind,
            owner: found.owner._tag === "Agent" ? found.owner.agent : "host"
          })),
          offloadedTo: childEntries.flatMap((entry) =>
            entry._tag === "ArtifactOffloaded" && entry.volume !== undefined ? [entry.volume.volume] : []
          )
        })
      }
      const volumes = path.join(harness.folder, VolumeStore.volumesFolder)
      const markedIn = new Set<string>()
      const reviewAt: Array<string> = []
      for (const name of yield* fs.readDirectory(volumes, { recursive: true })) {
        const file = path.join(volumes, name)
        if ((yield* fs.stat(file)).type !== "File") continue
        const text = yield* fs.readFileString(file)
        if (text.includes(childMarker)) markedIn.add(name.split("/")[0] ?? "")
        if (text === publishedReview) reviewAt.push(name)
      }
      return {
        outcome,
        entries,
        childFacts,
        markedIn: [...markedIn].sort(),
        reviewAt: reviewAt.sort(),
        parentVolume: harness.volumes.scratch
      }
    })
  ).pipe(Effect.provide(model()), Effect.provide(BrowserTessera.layer))

type Observed = Effect.Success<ReturnType<typeof delegateOnce>>

/** The isolation the browser host must give: the scout's offload in its own private volume, never the parent's. */
const assertChildIsolated = ({ childFacts, markedIn, parentVolume }: Observed) => {
  const scout = childFacts.find((child) => child.agent === "scout")
  if (scout === undefined) return assert.fail("the scout was delegated to")
  const scoutVolume = Delegation.childVolumes(scout.task).private
  assert.deepStrictEqual(scout.offloadedTo, [scoutVolume], "the scout's large result went to its own volume")
  assert.deepStrictEqual(markedIn, [scoutVolume], "the scout's notes are in its own volume and nowhere else")
  assert.notInclude(markedIn, parentVolume.volume)
}

describe("delegation in the browser", () => {
  it("browser_delegates_to_children: a parent delegates two sub-tasks in one call through the browser front door; each child is its own task (own journal on OPFS, own private volume owned by its agent, its large result offloaded there), the parent's answer carries both answers and its journal records both delegations", () =>
    withRoot("delegation", (root) =>
      Effect.runPromise(
        Effect.gen(function* () {
          const observed = yield* delegateOnce(root, "browser")
          const { childFacts, entries, outcome } = observed
          assert.strictEqual(outcome._tag, "Answered")
          const text = outcome._tag === "Answered" ? outcome.text : ""
          assert.include(text, `[scout, task plan-1-child-`)
          assert.include(text, scoutAnswer)
          assert.include(text, `[critic, task plan-1-child-`)
          assert.include(text, criticAnswer)
          // Two children, each its own task with its own journal file and its own agent-private volume.
          assert.deepStrictEqual(childFacts.map((child) => child.agent).sort(), ["critic", "scout"])
          assert.strictEqual(new Set(childFacts.map((child) => child.task)).size, 2)
          for (const child of childFacts) {
            assert.notStrictEqual(child.task, "plan-1")
            assert.isTrue(child.journalFile, `${child.task} has its own journal`)
            assert.deepStrictEqual(child.privateVolume, Option.some({ kind: "AgentPrivate", owner: child.agent }))
          }
          assertChildIsolated(observed)
          // Nothing of the scout's private work is in the parent's journal.
          assert.notInclude(JSON.stringify(entries), childMarker)
          // The parent's journal records each delegation and each answer, for both children.
          const delegated = entries.flatMap((entry) => (entry._tag === "ChildDelegated" ? [entry] : []))
          const answered = entries.flatMap((entry) => (entry._tag === "ChildAnswered" ? [entry] : []))
          assert.deepStrictEqual(delegated.map((entry) => entry.agent).sort(), ["critic", "scout"])
          assert.deepStrictEqual(
            answered.map((entry) => entry.task).sort(),
            childFacts.map((child) => child.task).sort()
          )
          assert.deepStrictEqual(
            answered.map((entry) => entry.outcome),
            ["Answered", "Answered"]
          )
          assert.lengthOf(JournalEntry.totalUsage(entries).children, 2)
          // The critic's review crossed through its output volume: published there, copied into the parent's
          // private volume, named in the parent's result by the copy's pointer.
          const critic = childFacts.find((child) => child.agent === "critic")?.task ?? ""
          assert.deepStrictEqual(
            observed.reviewAt,
            [
              `${observed.parentVolume.volume}/${VolumeStore.artifactFolder}/delegated/${critic}/review.md`,
              `${Delegation.childVolumes(critic as Ids.TaskId).output}/${VolumeStore.artifactFolder}/published/review.md`
            ].sort()
          )
          assert.include(text, `published review.md (${publishedReview.length} bytes):`)
        })
      )
    ))

  it("browser_delegates_to_children negative control: a child harness that binds each child with the parent's scope puts the scout's offload in the parent's volume, and the isolation check fails", () =>
    withRoot("delegation-sharing", (root) =>
      Effect.runPromise(
        Effect.gen(function* () {
          const observed = yield* delegateOnce(root, "sharing")
          // The delegation itself still ran: the wiring, not the scenario, is what broke.
          assert.strictEqual(observed.outcome._tag, "Answered")
          assert.include(observed.markedIn, observed.parentVolume.volume)
          assert.throws(() => assertChildIsolated(observed))
        })
      )
    ))
})
