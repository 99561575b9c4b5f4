/**
 * The isolation rules of delegation against a hostile host's code, through
 * the public API: a child bound to write its private content into its
 * parent's or a sibling's private volume, a parent bound to write into a
 * child's, and a child whose output binding names a volume outside what it
 * was granted. Each is refused typed before anything happens: no model
 * request, no journal byte, the volume tree unchanged. Each negative
 * control runs the same attack on deliberately broken wiring (the attacker
 * bound as the victim volume's own agent, or granted the write) and shows
 * the same checks catch what then happens.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import { Ids, type Volume } from "@tessera/core"
import { NodeDigest, NodeTessera } from "@tessera/node"
import { Delegation, EntryGate, History, type Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Exit, type FileSystem, Layer, Option, type Path, Schema } from "effect"
import { agentId, taskId, tempDir } from "./support/temp.ts"

const parentTask = taskId("plan-1")
const position = { task: parentTask, turn: 1, step: 1, callId: "d1" }

/** Every model request is a large tool result away from an offload into the task's private writer. */
const bulky = Tool.make({
  name: "bulky",
  description: "Produces a large result",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(`VICTIM-WRITE\n${"row\n".repeat(4_000)}`)
})
const model = ScriptedModel.layer((request) =>
  request.parts.some((part) => part._tag === "ToolResult")
    ? Model.response({ text: "done" })
    : Model.response({ toolCalls: [Model.toolCall("b1", "bulky", {})] })
)

/** Every file below `folder` with a digest of its bytes: what "unchanged" is checked against. */
const tree = (folder: string): ReadonlyMap<string, string> =>
  new Map(
    fs
      .readdirSync(folder, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => {
        const file = path.join(entry.parentPath, entry.name)
        return [path.relative(folder, file), crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex")]
      })
  )

/** Who attacks whom: the attacking task and agent, the victim volume, and how the hostile host binds. */
interface Attack {
  readonly task: Ids.TaskId
  readonly agent: Ids.AgentId
  readonly victim: Ids.VolumeId
  /** `private`: the victim named as the attacker's own created private content; `output`: as its output binding. */
  readonly as: "private" | "output"
}

const leadScratch = Schema.decodeUnknownSync(Ids.VolumeId)("lead-scratch")
// The host's output volume, which every task of the host's own may write: never a child's to publish to.
const sharedOutput = Schema.decodeUnknownSync(Ids.VolumeId)("output")
const scoutTask = await Effect.runPromise(Delegation.childTaskId(position, 0))
const criticTask = await Effect.runPromise(Delegation.childTaskId(position, 1))

const rules: ReadonlyArray<readonly [string, Attack]> = [
  ["child into parent", { task: scoutTask, agent: agentId("scout"), victim: leadScratch, as: "private" }],
  [
    "child into sibling",
    { task: scoutTask, agent: agentId("scout"), victim: Delegation.childVolumes(criticTask).private, as: "private" }
  ],
  [
    "parent into child",
    { task: parentTask, agent: agentId("lead"), victim: Delegation.childVolumes(scoutTask).private, as: "private" }
  ],
  ["publish outside the binding", { task: scoutTask, agent: agentId("scout"), victim: sharedOutput, as: "output" }]
]

/**
 * The attack on a namespace where the parent bound both children (their volumes exist): the hostile host binds
 * the attacker as `attack` says (`wiring` `broken`: as the victim volume's own agent, with a write grant on it)
 * and runs a durable turn with private offload; returns how it ended, the requests it sent, and the tree before
 * and after.
 */
const runAttack = (stateDir: string, attack: Attack, wiring: "library" | "broken") =>
  Effect.scoped(
    Effect.gen(function* () {
      const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
      const harness = tessera.harness
      yield* harness.withTask(parentTask, (parent) =>
        Effect.all([
          Delegation.bindChild(parent, { agent: agentId("scout"), task: scoutTask }),
          Delegation.bindChild(parent, { agent: agentId("critic"), task: criticTask })
        ])
      )
      const store = harness.runtime.host.store
      const victim: Volume.VolumeRef = { store: store.id, volume: attack.victim }
      const owner = yield* store.custody(victim)
      if (Option.isNone(owner)) return assert.fail("no victim volume")
      const before = tree(tessera.folder)
      const recorder = yield* ScriptedModel.ScriptedModelRecorder
      const sent = (yield* recorder.requests).length
      const victimOwner = owner.value.owner
      const agent = wiring === "broken" && victimOwner._tag === "Agent" ? victimOwner.agent : attack.agent
      const access = wiring === "broken" || attack.as === "private" ? (["read", "write"] as const) : (["read"] as const)
      const exit = yield* Effect.exit(
        Effect.gen(function* () {
          // An output attacker keeps its own private volume (a durable turn's transcript needs one).
          const own: Volume.VolumeRef = { store: store.id, volume: Delegation.childVolumes(attack.task).private }
          const grants = [
            { volume: victim, access },
            ...(attack.as === "output" ? [{ volume: own, access: ["read", "write"] as const }] : [])
          ]
          const scope = yield* harness.runtime.host.issueScope(attack.task, grants, agent)
          const context = yield* harness.runtime.bindTask(
            attack.as === "private"
              ? { scope, createdPrivate: [victim], output: Option.none() }
              : { scope, createdPrivate: [own], output: Option.some(victim) }
          )
          const binding = yield* EntryGate.bind(context)
          return yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "Write it down.")]), {
            tools: Tool.registry(bulky),
            maxSteps: 3,
            durable: true,
            offload: {
              ...TaskExecution.defaultFrontDoorOffload,
              destination: attack.as === "private" ? "Private" : "Output"
            }
          })
        }).pipe(
          Effect.provide(
            Layer.mergeAll(
              harness.journalLayer(attack.task),
              ArtifactPathPolicy.layer(harness.pathPolicy),
              NodeDigest.layer
            )
          )
        )
      )
      const after = tree(tessera.folder)
      return { exit, requests: (yield* recorder.requests).length - sent, before, after, victim: attack.victim }
    })
  ).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))

/** The files of the tree that appeared or changed. */
const changed = (before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>) =>
  [...after].filter(([file, digest]) => before.get(file) !== digest).map(([file]) => file)

describe("delegation refusals", () => {
  for (const [rule, attack] of rules) {
    it.effect(
      `delegation_refuses_${rule.replaceAll(" ", "_")}: refused Unauthorized before anything happens: no model request, no journal byte, the volume tree unchanged`,
      () =>
        Effect.gen(function* () {
          const { after, before, exit, requests } = yield* runAttack(yield* tempDir, attack, "library")
          assert.isTrue(Exit.isFailure(exit))
          const error = Exit.isFailure(exit) ? exit.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
          assert.strictEqual(error?._tag === "Fail" ? (error.error as { _tag: string })._tag : "none", "Unauthorized")
          assert.strictEqual(requests, 0)
          assert.deepStrictEqual(changed(before, after), [])
        }).pipe(Effect.scoped)
    )

    it.effect(
      `delegation_refuses_${rule.replaceAll(" ", "_")} negative control: bound as the victim volume's own agent (or granted the write), the turn runs, sends requests and writes into the victim volume, which the checks above catch`,
      () =>
        Effect.gen(function* () {
          const { after, before, exit, requests, victim } = yield* runAttack(yield* tempDir, attack, "broken")
          assert.isTrue(Exit.isSuccess(exit), String(exit))
          assert.isAbove(requests, 0)
          const written = changed(before, after)
          assert.isTrue(
            written.some((file) => file.includes(`${path.sep}${victim}${path.sep}`)),
            written.join("\n")
          )
        }).pipe(Effect.scoped)
    )
  }
})

/** The parent delegates once; the child answers at once. */
const delegatingModel = ScriptedModel.layer((request) =>
  request.tools.some((tool) => tool.name === Delegation.toolName)
    ? request.parts.some((part) => part._tag === "ToolResult")
      ? Model.response({ text: "done" })
      : Model.response({
          toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks: [{ agent: "scout", task: "Look." }] })]
        })
    : Model.response({ text: "scout: seen." })
)

/** A parent's delegation through `harness` (the honest one, or one that binds another task than it is asked). */
const delegateThrough = (stateDir: string, wiring: "honest" | "another task") =>
  Effect.scoped(
    Effect.gen(function* () {
      const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
      const honest = tessera.harness
      const harness: Delegation.ChildHarness<
        Effect.Error<ReturnType<typeof honest.withChild>>,
        Journal.Journal | FileSystem.FileSystem | Path.Path,
        Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy
      > = wiring === "honest"
        ? honest
        : {
            withChild: (parent, child, body) => honest.withChild(parent, { ...child, task: taskId("elsewhere") }, body)
          }
      const outcome = yield* honest.withTask(parentTask, (parent) =>
        Effect.gen(function* () {
          const delegate = yield* Delegation.tool(harness, parent, [{ agent: "scout", description: "looks" }])
          return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Delegate.")]), {
            tools: Tool.registry(delegate),
            maxSteps: 3,
            durable: true,
            offload: TaskExecution.defaultFrontDoorOffload
          })
        })
      )
      const requests = yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
      return { outcome, requests, entries: yield* tessera.entries(parentTask) }
    })
  ).pipe(Effect.provide(delegatingModel), Effect.provide(NodeTessera.layer))

describe("delegation refusals of a lying harness", () => {
  it.effect(
    "delegation_refuses_a_harness_that_binds_another_task: the call fails ChildBindingMismatch before the child sends a request or the parent records the delegation",
    () =>
      Effect.gen(function* () {
        const { entries, requests } = yield* delegateThrough(yield* tempDir, "another task")
        const result = requests
          .flatMap((request) => request.parts)
          .find((part) => part._tag === "ToolResult" && part.callId === "d1")
        assert.isTrue(result?._tag === "ToolResult" && result.isError)
        assert.include(result?._tag === "ToolResult" ? result.content : "", "a child runs only as itself")
        assert.isFalse(requests.some((request) => !request.tools.some((tool) => tool.name === Delegation.toolName)))
        assert.isFalse(entries.some((entry) => entry._tag === "ChildDelegated"))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_refuses_a_harness_that_binds_another_task negative control: the honest harness runs the child, which sends its request and is recorded",
    () =>
      Effect.gen(function* () {
        const { entries, requests } = yield* delegateThrough(yield* tempDir, "honest")
        assert.isTrue(requests.some((request) => !request.tools.some((tool) => tool.name === Delegation.toolName)))
        assert.isTrue(entries.some((entry) => entry._tag === "ChildDelegated"))
      }).pipe(Effect.scoped)
  )
})
