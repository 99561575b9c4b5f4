/**
 * Delegation through the front door: a parent task's `delegate` call runs
 * each sub-task as a child task of its own (its own agent, scope, private
 * volume and journal), only the children's answers reach the parent, and
 * nothing of a child's private content does. Controls run the same
 * scenario on deliberately broken wiring: a host that runs the child on
 * the parent's own binding (one shared scratchpad).
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer } from "@tessera/artifacts"
import { Ids } from "@tessera/core"
import { Inspector, JournalForbiddingHost, NodeTessera } from "@tessera/node"
import {
  Delegation,
  History,
  Journal,
  JournalEntry,
  Model,
  PrivateSummaries,
  TaskExecution,
  Tool,
  VolumeStore
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Deferred, Effect, Fiber, Option, Schema, type Tracer } from "effect"
import { recordSpans } from "./runtime/support/spans.ts"
import { sharingHarness } from "./support/sharingHarness.ts"
import { agentId, taskId, tempDir } from "./support/temp.ts"

/** What only the scout's private work holds: its notes are large (offloaded) and carry a marker. */
const childMarker = "SCOUT-PRIVATE-7f3a"
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

const isParent = (request: Model.ModelRequest) => request.tools.some((tool) => tool.name === Delegation.toolName)
const firstUserText = (request: Model.ModelRequest) =>
  request.parts.find((part): part is Model.TextPart => part._tag === "Text" && part.role === "user")?.text ?? ""
const hasResultOf = (request: Model.ModelRequest, callId: string) =>
  request.parts.some((part) => part._tag === "ToolResult" && part.callId === callId)

/**
 * One model for parent and children, as a host gives a task and its children the same provider: the parent
 * delegates to both children at once, the scout reads its notes before it answers, the critic answers at once.
 */
const model = ScriptedModel.layer((request) => {
  if (isParent(request)) {
    return hasResultOf(request, "d1")
      ? Model.response({ text: "Both children answered." })
      : Model.response({
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
  // Each child request reports usage: 100 tokens in and 10 out for the scout's, 7 and 3 for the critic's.
  if (firstUserText(request).startsWith("Summarize the field notes")) {
    const usage = { inputTokens: 100, outputTokens: 10 }
    return hasResultOf(request, "n1")
      ? Model.response({ text: "scout: all readings nominal.", usage })
      : Model.response({ toolCalls: [Model.toolCall("n1", "fetch_notes", {})], usage })
  }
  return Model.response({ text: "critic: the plan holds.", usage: { inputTokens: 7, outputTokens: 3 } })
})

/** A child's tool that never ends: only its offer's time limit stops it. */
const slow = Tool.make({
  name: "slow_check",
  description: "Checks slowly",
  input: Schema.Struct({}),
  handler: () => Effect.never
})

/** Every file below a volume's artifact folder, by volume id. */
const artifactsOf = (folder: string, volume: string) => {
  const root = path.join(folder, VolumeStore.volumesFolder, volume, VolumeStore.artifactFolder)
  return fs.existsSync(root)
    ? fs
        .readdirSync(root, { recursive: true, withFileTypes: true })
        .flatMap((entry) => (entry.isFile() ? [fs.readFileSync(path.join(entry.parentPath, entry.name), "utf8")] : []))
    : []
}

/** The parent's run, its requests (parent and children apart) and the folder, on the front door. */
const delegateOnce = (stateDir: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
      const outcome = yield* tessera.run("plan-1", "Plan the survey.", { children })
      const requests = yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
      return { outcome, requests, folder: tessera.folder, entries: yield* tessera.entries("plan-1") }
    })
  ).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))

/** What only the lead's private work holds: its survey is large (offloaded to the lead's scratch volume). */
const parentMarker = "LEAD-PRIVATE-c41d"
const survey = Tool.make({
  name: "survey",
  description: "Runs the survey",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(`${parentMarker}\n${"site 4 clear\n".repeat(2_000)}`)
})

/** The pointer paths a request's results name (an offloaded result's pointer line). */
const pointersIn = (requests: ReadonlyArray<Model.ModelRequest>, callId: string) =>
  requests.flatMap((request) =>
    request.parts.flatMap((part) =>
      part._tag === "ToolResult" && part.callId === callId ? ArtifactPointer.extractPaths(part.content) : []
    )
  )

/** The results of calls named `callId` in `requests`. */
const resultsOf = (requests: ReadonlyArray<Model.ModelRequest>, callId: string) =>
  requests.flatMap((request) =>
    request.parts.flatMap((part) => (part._tag === "ToolResult" && part.callId === callId ? [part] : []))
  )

/**
 * A hostile pair: the lead offloads its survey, then delegates to a snoop that tries to read the lead's
 * artifact by its pointer; the lead then tries to read the snoop's own offloaded notes by theirs.
 */
const snoopModel = () => {
  let leadPointer = ""
  let snoopPointer = ""
  return ScriptedModel.layer((request) => {
    if (isParent(request)) {
      if (!hasResultOf(request, "s1")) return Model.response({ toolCalls: [Model.toolCall("s1", "survey", {})] })
      leadPointer = pointersIn([request], "s1")[0] ?? leadPointer
      if (!hasResultOf(request, "d1")) {
        return Model.response({
          toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks: [{ agent: "scout", task: "Snoop around." }] })]
        })
      }
      if (!hasResultOf(request, "p1")) {
        return Model.response({ toolCalls: [Model.toolCall("p1", "read_artifact", { path: snoopPointer })] })
      }
      return Model.response({ text: "done" })
    }
    if (!hasResultOf(request, "n1")) return Model.response({ toolCalls: [Model.toolCall("n1", "fetch_notes", {})] })
    snoopPointer = pointersIn([request], "n1")[0] ?? snoopPointer
    if (!hasResultOf(request, "c1")) {
      return Model.response({ toolCalls: [Model.toolCall("c1", "read_artifact", { path: leadPointer })] })
    }
    return Model.response({ text: "scout: nothing to see." })
  })
}

/** The hostile pair's run on the front door, or through `harness` when a test breaks the wiring. */
const snoopRun = (stateDir: string, sharing: boolean) =>
  Effect.scoped(
    Effect.gen(function* () {
      const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
      if (!sharing) {
        yield* tessera.run("plan-1", "Survey, then delegate.", { tools: [survey], children })
      } else {
        yield* tessera.harness.withTask(tessera.harness.runtime.scope.task, (parent) =>
          Effect.gen(function* () {
            const delegate = yield* Delegation.tool(sharingHarness(tessera.harness), parent, children)
            return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Survey, then delegate.")]), {
              tools: Tool.registry(survey, delegate),
              maxSteps: 8,
              durable: true,
              offload: TaskExecution.defaultFrontDoorOffload
            })
          })
        )
      }
      return yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
    })
  ).pipe(Effect.provide(snoopModel()), Effect.provide(NodeTessera.layer))

/** Children whose tools hang until interrupted, each signalling `started` once it runs: a delegation to cancel. */
const hangingChildren = (started: Deferred.Deferred<void>, running: { count: number }) => {
  const hang = (name: string) =>
    Tool.make({
      name,
      description: "Waits",
      input: Schema.Struct({}),
      handler: () =>
        Effect.suspend(() => {
          running.count++
          return running.count === 2 ? Deferred.succeed(started, undefined) : Effect.void
        }).pipe(Effect.andThen(Effect.never))
    })
  const offered: ReadonlyArray<Delegation.ChildAgent> = [
    { agent: "scout", description: "reads the field notes", tools: [hang("fetch_notes")] },
    { agent: "critic", description: "reviews a plan", tools: [hang("check_plan")] }
  ]
  const script = ScriptedModel.layer((request) => {
    if (isParent(request)) {
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
    const tool = firstUserText(request).startsWith("Summarize") ? "fetch_notes" : "check_plan"
    return Model.response({ toolCalls: [Model.toolCall("w1", tool, {})] })
  })
  return { offered, script }
}

/** The last entry's kind of every journal in the namespace, by task. */
const lastEntries = (folder: string) => {
  const journals = path.join(folder, VolumeStore.volumesFolder, "journal")
  return Object.fromEntries(
    fs
      .readdirSync(journals)
      .filter((file) => file.endsWith(".jsonl"))
      .map((file) => {
        const lines = fs.readFileSync(path.join(journals, file), "utf8").trimEnd().split("\n")
        return [file.slice(0, -".jsonl".length), (JSON.parse(lines.at(-1) ?? "{}") as { _tag?: string })._tag]
      })
  )
}

/** Runs the hanging delegation, interrupts the parent once both children are inside their tools. */
const cancelMidChildren = (stateDir: string, detach: boolean) =>
  Effect.gen(function* () {
    const started = yield* Deferred.make<void>()
    const { offered, script } = hangingChildren(started, { count: 0 })
    const run = Effect.scoped(
      Effect.gen(function* () {
        const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
        if (!detach) return yield* tessera.run("plan-1", "Plan the survey.", { children: offered })
        // The broken wiring: a child harness that runs each child detached from the call that asked for it.
        const detached: typeof tessera.harness = {
          ...tessera.harness,
          withChild: (parent, child, body) =>
            Effect.flatMap(Effect.forkDetach(tessera.harness.withChild(parent, child, body)), Fiber.join)
        }
        return yield* tessera.harness.withTask(taskId("plan-1"), (parent) =>
          Effect.gen(function* () {
            const delegate = yield* Delegation.tool(detached, parent, offered)
            return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Plan the survey.")]), {
              tools: Tool.registry(delegate),
              maxSteps: 4,
              durable: true
            })
          })
        )
      })
    ).pipe(Effect.provide(script), Effect.provide(NodeTessera.layer))
    const fiber = yield* Effect.forkChild(run)
    yield* Deferred.await(started)
    yield* Fiber.interrupt(fiber)
    return lastEntries(path.join(stateDir, NodeTessera.defaultNamespace))
  })

/** Every file a volume holds below its data folder (artifacts and summaries alike). */
const artifactsOrSummaries = (folder: string, volume: string) => {
  const root = path.join(folder, VolumeStore.volumesFolder, volume)
  return fs.existsSync(root)
    ? fs
        .readdirSync(root, { recursive: true, withFileTypes: true })
        .flatMap((entry) => (entry.isFile() ? [entry.name] : []))
    : []
}

/** `body` under a tracer that records every span it makes, with the spans it made by name. */
const traced = <A, E, R>(body: Effect.Effect<A, E, R>) => {
  const { named, tracer } = recordSpans()
  return Effect.map(Effect.withTracer(body, tracer), (result) => ({ result, named }))
}

/** The spans from `span` up to its root, by name and task. */
const ancestry = (span: Tracer.AnySpan | undefined): ReadonlyArray<string> => {
  const chain: Array<string> = []
  for (let at = span; at !== undefined; at = at._tag === "Span" ? Option.getOrUndefined(at.parent) : undefined) {
    chain.push(at._tag === "Span" ? `${at.name}@${String(at.attributes.get("tessera.task") ?? "")}` : "external")
  }
  return chain
}

/** The chain above each child's turn span: where a child's work shows in the parent's trace. */
const childTurnChains = (named: (name: string) => ReadonlyArray<Tracer.Span>) =>
  named("Executor.runTurn")
    .filter((span) => String(span.attributes.get("tessera.task")).includes("-child-"))
    .map((span) => ancestry(span))

describe("delegation", () => {
  it.effect(
    "delegation_children_are_their_own_tasks: each sub-task runs as a child task of its own agent, with its own private volume and journal; only the answers reach the parent",
    () =>
      Effect.gen(function* () {
        const { entries, folder, outcome, requests } = yield* delegateOnce(yield* tempDir)
        assert.strictEqual(outcome._tag === "Answered" ? outcome.text : outcome._tag, "Both children answered.")
        const parentRequests = requests.filter(isParent)
        const childRequests = requests.filter((request) => !isParent(request))
        assert.lengthOf(parentRequests, 2)
        assert.lengthOf(childRequests, 3)
        // The children's answers are the call's result, labelled with their agents and tasks.
        const result = parentRequests[1]?.parts.find((part) => part._tag === "ToolResult")
        assert.include(result?._tag === "ToolResult" ? result.content : "", "[scout, task plan-1-child-")
        assert.include(result?._tag === "ToolResult" ? result.content : "", "scout: all readings nominal.")
        assert.include(result?._tag === "ToolResult" ? result.content : "", "critic: the plan holds.")
        // The scout's large notes were offloaded to the scout task's own private volume, not the parent's.
        const scoutPointer = childRequests
          .flatMap((request) => request.parts)
          .find((part) => part._tag === "ToolResult" && part.callId === "n1")
        const pointed = ArtifactPointer.extractPaths(scoutPointer?._tag === "ToolResult" ? scoutPointer.content : "")
        assert.lengthOf(pointed, 1)
        const childTasks = fs
          .readdirSync(path.join(folder, VolumeStore.volumesFolder))
          .filter((volume) => volume.startsWith("plan-1-child-") && volume.endsWith("-scratch"))
        assert.lengthOf(childTasks, 2)
        assert.isTrue(
          childTasks.some((volume) => artifactsOf(folder, volume).some((body) => body.includes(childMarker)))
        )
        assert.isFalse(artifactsOf(folder, "lead-scratch").some((body) => body.includes(childMarker)))
        // Nothing of the child's private work reaches the parent: not its notes, not its pointer.
        for (const request of parentRequests) {
          const text = JSON.stringify(request.parts)
          assert.notInclude(text, childMarker)
          assert.notInclude(text, pointed[0] ?? "")
        }
        assert.notInclude(JSON.stringify(entries), childMarker)
        // The parent's journal records each delegation and each answer's digest, with the child's usage.
        const delegated = entries.flatMap((entry) => (entry._tag === "ChildDelegated" ? [entry] : []))
        const answered = entries.flatMap((entry) => (entry._tag === "ChildAnswered" ? [entry] : []))
        assert.deepStrictEqual(delegated.map((entry) => entry.agent).sort(), ["critic", "scout"])
        assert.deepStrictEqual(answered.map((entry) => entry.task).sort(), delegated.map((entry) => entry.task).sort())
        const scoutAnswer = new TextEncoder().encode("scout: all readings nominal.")
        const scoutEntry = answered.find((entry) => entry.usage?.inputTokens === 200)
        assert.strictEqual(scoutEntry?.size, scoutAnswer.length)
        assert.strictEqual(scoutEntry?.sha256, crypto.createHash("sha256").update(scoutAnswer).digest("hex"))
        const total = JournalEntry.totalUsage(entries)
        assert.deepStrictEqual(total.usage, {}, "the parent's own requests reported nothing")
        assert.deepStrictEqual(total.withChildren, { inputTokens: 207, outputTokens: 23 })
        assert.lengthOf(total.children, 2)
        // The inspector shows the parent's tree of children, each with its status and usage.
        const report = yield* Inspector.inspect(folder, { task: taskId("plan-1") }).pipe(
          Effect.provide(NodeTessera.layer)
        )
        const text = Inspector.render(report)
        assert.include(text, "with its children: in=207,out=23")
        assert.match(text, /children \(2\):\n {4}plan-1-child-\w+ \(agent (scout|critic)\): Answered, tokens in=/)
        const json = Inspector.toJson(report).tasks.find((task) => task.task === "plan-1")
        assert.deepStrictEqual(json?.children.map((child) => [child.agent, child.status]).sort(), [
          ["critic", "Answered"],
          ["scout", "Answered"]
        ])
        // Each child has its own journal, claimed by its own agent.
        const metas = fs.readdirSync(path.join(folder, ...VolumeStore.metaFolder))
        for (const volume of childTasks) {
          const meta = metas.find((file) => file.startsWith(volume))
          const descriptor = JSON.parse(
            fs.readFileSync(path.join(folder, ...VolumeStore.metaFolder, meta ?? ""), "utf8")
          ) as { kind: string; owner: { _tag: string; agent?: string } }
          assert.strictEqual(descriptor.kind, "AgentPrivate")
          assert.include(["scout", "critic"], descriptor.owner.agent)
        }
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_children_are_their_own_tasks negative control: a host that runs the child on the parent's binding puts the child's notes in the parent's volume",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const shared = Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
            return yield* tessera.harness.withTask(tessera.harness.runtime.scope.task, (parent) =>
              Effect.gen(function* () {
                const delegate = yield* Delegation.tool(sharingHarness(tessera.harness), parent, children)
                return yield* Tool.run(
                  Tool.registry(delegate),
                  Model.toolCall("d1", Delegation.toolName, {
                    tasks: [{ agent: "scout", task: "Summarize the field notes." }]
                  })
                ).pipe(
                  Effect.provideService(
                    Tool.CurrentCall,
                    Option.some({ task: parent.context.task, turn: 1, step: 1, callId: "d1" })
                  )
                )
              })
            )
          })
        )
        yield* Effect.ignore(shared.pipe(Effect.provide(model), Effect.provide(NodeTessera.layer)))
        const folder = path.join(stateDir, NodeTessera.defaultNamespace)
        assert.isTrue(artifactsOf(folder, "lead-scratch").some((body) => body.includes(childMarker)))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_isolation_both_ways: a child cannot read its parent's private artifact, nor the parent its child's (each refused NotFound, the other's marker in no request of its own)",
    () =>
      Effect.gen(function* () {
        const requests = yield* snoopRun(yield* tempDir, false)
        const [childRead] = resultsOf(
          requests.filter((request) => !isParent(request)),
          "c1"
        )
        assert.isTrue(childRead?.isError)
        assert.include(childRead?.content, "NotFound")
        const [parentRead] = resultsOf(requests.filter(isParent), "p1")
        assert.isTrue(parentRead?.isError)
        assert.include(parentRead?.content, "NotFound")
        for (const request of requests.filter((request) => !isParent(request))) {
          assert.notInclude(JSON.stringify(request.parts), parentMarker)
        }
        for (const request of requests.filter(isParent)) assert.notInclude(JSON.stringify(request.parts), childMarker)
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_isolation_both_ways negative control: on a host that runs the child on the parent's binding, each reads the other's artifact",
    () =>
      Effect.gen(function* () {
        const requests = yield* snoopRun(yield* tempDir, true)
        const [childRead] = resultsOf(requests, "c1")
        assert.isFalse(childRead?.isError)
        assert.include(childRead?.content, parentMarker)
        const [parentRead] = resultsOf(requests, "p1")
        assert.isFalse(parentRead?.isError)
        assert.include(parentRead?.content, childMarker)
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_call_is_idempotent: the same call run again (as a resume runs an in-flight call) finds its children by name and runs none again; control: another call id runs them anew",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const counted = Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
            const recorder = yield* ScriptedModel.ScriptedModelRecorder
            return yield* tessera.harness.withTask(tessera.harness.runtime.scope.task, (parent) =>
              Effect.gen(function* () {
                const delegate = yield* Delegation.tool(tessera.harness, parent, children)
                const call = (callId: string) =>
                  Tool.run(
                    Tool.registry(delegate),
                    Model.toolCall(callId, Delegation.toolName, {
                      tasks: [
                        { agent: "scout", task: "Summarize the field notes." },
                        { agent: "critic", task: "Review the plan." }
                      ]
                    })
                  ).pipe(
                    Effect.provideService(
                      Tool.CurrentCall,
                      Option.some({ task: parent.context.task, turn: 1, step: 1, callId })
                    )
                  )
                const first = yield* call("d1")
                const afterFirst = (yield* recorder.requests).length
                const again = yield* call("d1")
                const afterAgain = (yield* recorder.requests).length
                const other = yield* call("d2")
                const afterOther = (yield* recorder.requests).length
                return { first, again, other, afterFirst, afterAgain, afterOther }
              })
            )
          })
        ).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))
        const { afterAgain, afterFirst, afterOther, again, first, other } = yield* counted
        assert.strictEqual(afterFirst, 3)
        assert.strictEqual(afterAgain, afterFirst, "run again, the call sent no request")
        assert.strictEqual(again.content, first.content)
        assert.isTrue(Option.isNone(first.failure))
        assert.strictEqual(afterOther, afterFirst + 3, "another call runs its own children")
        assert.notStrictEqual(other.content, first.content)
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_cancel_closes_children: interrupting the parent mid-delegation interrupts both running children and abandons every turn, the parent's and each child's",
    () =>
      Effect.gen(function* () {
        const last = yield* cancelMidChildren(yield* tempDir, false)
        const children = Object.keys(last).filter((task) => task.startsWith("plan-1-child-"))
        assert.lengthOf(children, 2)
        assert.deepStrictEqual(Object.values(last), ["TurnAbandoned", "TurnAbandoned", "TurnAbandoned"])
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_cancel_closes_children negative control: a host that runs its children detached leaves their turns open after the parent is cancelled",
    () =>
      Effect.gen(function* () {
        const last = yield* cancelMidChildren(yield* tempDir, true)
        const children = Object.entries(last).filter(([task]) => task.startsWith("plan-1-child-"))
        assert.lengthOf(children, 2)
        assert.strictEqual(last["plan-1"], "TurnAbandoned")
        assert.isTrue(children.every(([, tag]) => tag !== "TurnAbandoned"))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_on_the_journal_forbidding_host: the host that grants no task its journal runs children the same way: each child's notes offloaded to its own private volume, only the answers reach the parent",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, requests } = yield* Effect.scoped(
          Effect.gen(function* () {
            const host = yield* JournalForbiddingHost.open({ stateDir, namespace: "sealed", agent: agentId("lead") })
            const recorder = yield* ScriptedModel.ScriptedModelRecorder
            yield* host.withTask(
              taskId("plan-1"),
              (parent) =>
                Effect.gen(function* () {
                  const delegate = yield* Delegation.tool(host, parent, children)
                  return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Plan the survey.")]), {
                    tools: Tool.registry(delegate),
                    maxSteps: 4,
                    durable: true,
                    offload: TaskExecution.defaultFrontDoorOffload
                  })
                }),
              // This host's runtime has no private volume: the parent brings its own, as a task that creates one.
              { createPrivate: true }
            )
            return { folder: host.folder, requests: yield* recorder.requests }
          })
        ).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))
        const childVolumes = fs
          .readdirSync(path.join(folder, VolumeStore.volumesFolder))
          .filter((volume) => volume.startsWith("plan-1-child-") && volume.endsWith("-scratch"))
        assert.lengthOf(childVolumes, 2)
        assert.isTrue(
          childVolumes.some((volume) => artifactsOf(folder, volume).some((body) => body.includes(childMarker)))
        )
        for (const request of requests.filter(isParent)) assert.notInclude(JSON.stringify(request.parts), childMarker)
        const answered = requests.filter(isParent).at(-1)
        assert.include(JSON.stringify(answered?.parts), "scout: all readings nominal.")
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_capability_reuse_both_ways: the parent's private writer staged under the child's journal, and the child's under the parent's, are refused CapabilityMismatch with no file written; control: each under its own journal stages",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const outcome = yield* Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
            const harness = tessera.harness
            return yield* harness.withTask(taskId("plan-1"), (parent) =>
              Effect.gen(function* () {
                const parentWriter = yield* PrivateSummaries.resolve(parent.context)
                const parentJournal = yield* Journal.Journal
                const key = (step: number) => ({ operation: Ids.OperationId.make("probe"), step })
                const stage = (
                  writer: PrivateSummaries.PrivateWriterCapability,
                  journal: Journal.JournalService,
                  step: number
                ) =>
                  Effect.flip(
                    PrivateSummaries.stageOnce(key(step), "private", { journal }).pipe(PrivateSummaries.provide(writer))
                  )
                return yield* harness.withChild(
                  parent,
                  { agent: agentId("scout"), task: taskId("plan-1-child-probe") },
                  (child) =>
                    Effect.gen(function* () {
                      const childWriter = yield* PrivateSummaries.resolve(child.context)
                      const childJournal = yield* Journal.Journal
                      const parentInChild = yield* stage(parentWriter, childJournal, 1)
                      const childInParent = yield* stage(childWriter, parentJournal, 2)
                      const filesAfterRefusals = [
                        ...artifactsOrSummaries(harness.folder, "lead-scratch"),
                        ...artifactsOrSummaries(harness.folder, "plan-1-child-probe-scratch")
                      ]
                      // Nor a journal byte: neither journal holds an entry (its file appears with its first one).
                      const journalBytesAfterRefusals = [parentJournal.file, childJournal.file].map((file) =>
                        fs.existsSync(file) ? fs.statSync(file).size : 0
                      )
                      // Control: each writer under its own task's journal stages.
                      const own = yield* Effect.all([
                        PrivateSummaries.stageOnce(key(3), "private", { journal: parentJournal }).pipe(
                          PrivateSummaries.provide(parentWriter)
                        ),
                        PrivateSummaries.stageOnce(key(4), "private", { journal: childJournal }).pipe(
                          PrivateSummaries.provide(childWriter)
                        )
                      ])
                      return { parentInChild, childInParent, filesAfterRefusals, journalBytesAfterRefusals, own }
                    })
                )
              })
            )
          })
        ).pipe(Effect.provide(NodeTessera.layer))
        assert.strictEqual(
          outcome.parentInChild._tag === "Unauthorized" ? outcome.parentInChild.reason : outcome.parentInChild._tag,
          "CapabilityMismatch"
        )
        assert.strictEqual(
          outcome.childInParent._tag === "Unauthorized" ? outcome.childInParent.reason : outcome.childInParent._tag,
          "CapabilityMismatch"
        )
        assert.deepStrictEqual(outcome.filesAfterRefusals, [])
        assert.deepStrictEqual(outcome.journalBytesAfterRefusals, [0, 0])
        assert.deepStrictEqual(
          outcome.own.map((file) => file.path),
          ["summaries/probe/3.txt", "summaries/probe/4.txt"]
        )
      }).pipe(Effect.scoped)
  )

  // Live: the critic's time limit runs on the real clock (it.effect's test clock never moves by itself).
  it.live(
    "delegation_depth_and_time: a child delegates to a grandchild within maxDepth, a child past its timeLimit is abandoned and reported, and offers deeper than maxDepth are refused before any request",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const offered: ReadonlyArray<Delegation.ChildAgent> = [
          {
            agent: "lead-scout",
            description: "leads the scouting",
            children: [{ agent: "scout", description: "reads the field notes", tools: [fetchNotes] }]
          },
          { agent: "critic", description: "reviews a plan", tools: [slow], timeLimit: "400 millis" }
        ]
        const deepModel = ScriptedModel.layer((request) => {
          const asked = firstUserText(request)
          const tasks =
            asked === "Plan the survey."
              ? [
                  { agent: "lead-scout", task: "Organize the scouting." },
                  { agent: "critic", task: "Review the plan." }
                ]
              : asked === "Organize the scouting."
                ? [{ agent: "scout", task: "Summarize the field notes." }]
                : undefined
          if (tasks !== undefined) {
            return hasResultOf(request, "d1")
              ? Model.response({ text: `${asked} done.` })
              : Model.response({ toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks })] })
          }
          if (asked === "Review the plan.") {
            const usage = { inputTokens: 11, outputTokens: 2 }
            return Model.response({ toolCalls: [Model.toolCall("s1", "slow_check", {})], usage })
          }
          return hasResultOf(request, "n1")
            ? Model.response({ text: "scout: all readings nominal." })
            : Model.response({ toolCalls: [Model.toolCall("n1", "fetch_notes", {})] })
        })
        const { entries, requests, refused, requestsBeforeRefusal } = yield* Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
            yield* tessera.run("plan-1", "Plan the survey.", { children: offered })
            const recorder = yield* ScriptedModel.ScriptedModelRecorder
            const requestsBeforeRefusal = (yield* recorder.requests).length
            const refused = yield* Effect.flip(
              tessera.run("plan-2", "Plan the survey.", { children: offered, delegation: { maxDepth: 1 } })
            )
            return {
              entries: yield* tessera.entries("plan-1"),
              requests: yield* recorder.requests,
              refused,
              requestsBeforeRefusal
            }
          })
        ).pipe(Effect.provide(deepModel), Effect.provide(NodeTessera.layer))
        const result = resultsOf(requests.filter(isParent), "d1").find((part) => part.content.includes("lead-scout"))
        // The grandchild's answer reached its parent (the lead scout), whose answer reached the lead.
        assert.include(result?.content, "[lead-scout, task plan-1-child-")
        assert.include(result?.content, "Organize the scouting. done.")
        assert.include(result?.content, "[critic, task plan-1-child-")
        assert.include(result?.content, "ran out of time (400ms)")
        const outcomes = entries.flatMap((entry) => (entry._tag === "ChildAnswered" ? [entry.outcome] : []))
        assert.deepStrictEqual([...outcomes].sort(), ["Answered", "TimedOut"])
        const last = lastEntries(path.join(stateDir, NodeTessera.defaultNamespace))
        // The lead scout's own child: a task named after the lead scout's call, below the lead scout's name.
        const grandchildren = Object.keys(last).filter((task) => /^plan-1-child-\w+-child-\w+$/.test(task))
        assert.lengthOf(grandchildren, 1)
        assert.strictEqual(last[grandchildren[0] ?? ""], "TurnClosed")
        // The inspector draws the tree: the grandchild under the lead scout, under the lead.
        const report = yield* Inspector.inspect(path.join(stateDir, NodeTessera.defaultNamespace)).pipe(
          Effect.provide(NodeTessera.layer)
        )
        assert.match(
          Inspector.render(report),
          /\n {4}plan-1-child-\w+ \(agent lead-scout\): Answered[^\n]*\n {6}plan-1-child-\w+-child-\w+ \(agent scout\): Answered/
        )
        // The critic's turn, once open, was abandoned: none is left open or closed (on a loaded machine its time may
        // run out before it opened one, which leaves no journal at all).
        const critic = entries.find((entry) => entry._tag === "ChildDelegated" && entry.agent === "critic")
        const criticTask = critic?._tag === "ChildDelegated" ? critic.task : ""
        assert.include([undefined, "TurnAbandoned"], last[criticTask], "the critic's turn was abandoned")
        // What the critic spent before its time ran out is its parent's to count (when it got as far as a response).
        const timedOut = entries.find((entry) => entry._tag === "ChildAnswered" && entry.outcome === "TimedOut")
        const spent = timedOut?._tag === "ChildAnswered" ? timedOut.usage : undefined
        const criticJournal = path.join(stateDir, NodeTessera.defaultNamespace, VolumeStore.volumesFolder, "journal")
        const criticFile = path.join(criticJournal, `${criticTask}.jsonl`)
        const responded =
          fs.existsSync(criticFile) && fs.readFileSync(criticFile, "utf8").includes('"ResponseReceived"')
        assert.deepStrictEqual(spent, responded ? { inputTokens: 11, outputTokens: 2 } : {})
        assert.strictEqual(refused._tag, "InvalidInput")
        if (refused._tag === "InvalidInput") assert.strictEqual(refused.field, "children[0].children")
        assert.strictEqual(requests.length, requestsBeforeRefusal, "the refusal sent no request")
      }).pipe(Effect.scoped)
  )

  it.live(
    "delegation_depth_and_time negative control: the same critic offered without its timeLimit holds the parent's call past any bound (the call is still running after 2 s), so the report above is the limit's",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const unbounded: ReadonlyArray<Delegation.ChildAgent> = [
          { agent: "critic", description: "reviews a plan", tools: [slow] }
        ]
        const stuckModel = ScriptedModel.layer((request) =>
          firstUserText(request) === "Review the plan."
            ? Model.response({ toolCalls: [Model.toolCall("s1", "slow_check", {})] })
            : hasResultOf(request, "d1")
              ? Model.response({ text: "done" })
              : Model.response({
                  toolCalls: [
                    Model.toolCall("d1", Delegation.toolName, {
                      tasks: [{ agent: "critic", task: "Review the plan." }]
                    })
                  ]
                })
        )
        const finished = yield* Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
            return yield* tessera.run("plan-1", "Plan the survey.", { children: unbounded })
          })
        ).pipe(Effect.provide(stuckModel), Effect.provide(NodeTessera.layer), Effect.timeoutOption("2 seconds"))
        assert.isTrue(Option.isNone(finished))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_spans_nest: each child's turn span lies under the parent's delegate call span, inside the parent's turn",
    () =>
      Effect.gen(function* () {
        const { named } = yield* traced(delegateOnce(yield* tempDir))
        const chains = childTurnChains(named)
        assert.lengthOf(chains, 2)
        for (const chain of chains) {
          assert.include(chain, "Executor.toolCall@plan-1")
          assert.include(chain, "Executor.runTurn@plan-1")
        }
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_spans_nest negative control: a host that starts each child's work as a root span cuts it off the parent's trace",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { named } = yield* traced(
          Effect.scoped(
            Effect.gen(function* () {
              const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
              const rooted: typeof tessera.harness = {
                ...tessera.harness,
                withChild: (parent, child, body) =>
                  tessera.harness.withChild(parent, child, (binding) =>
                    Effect.withSpan(body(binding), "detached child", { root: true })
                  )
              }
              return yield* tessera.harness.withTask(taskId("plan-1"), (parent) =>
                Effect.gen(function* () {
                  const delegate = yield* Delegation.tool(rooted, parent, children)
                  return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Plan the survey.")]), {
                    tools: Tool.registry(delegate),
                    maxSteps: 4,
                    durable: true
                  })
                })
              )
            })
          ).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))
        )
        const chains = childTurnChains(named)
        assert.lengthOf(chains, 2)
        for (const chain of chains) assert.notInclude(chain, "Executor.toolCall@plan-1")
      }).pipe(Effect.scoped)
  )
})
