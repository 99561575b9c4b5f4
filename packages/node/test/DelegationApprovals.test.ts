/**
 * A child's approval request surfaces to the parent's host and is decided
 * once: the parent's `delegate` call waits with its child (the parent's turn
 * is `AwaitingApproval`, the call journaled `ApprovalRequested` with reason
 * `Delegated` naming the child's calls), the host decides the parent's call,
 * and the decision goes on to exactly those child calls when the call runs
 * again. The negative control strips the delegation of its approval
 * declaration, so the loop dispatches it where nothing can wait.
 */
import { assert, describe, it } from "@effect/vitest"
import { NodeTessera } from "@tessera/node"
import { Delegation, History, type JournalEntry, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"
import { tempDir } from "./support/temp.ts"

/** Every deploy the child ran, by environment. */
const makeDeploy = (ran: Array<string>) =>
  Tool.make({
    name: "deploy",
    description: "Deploys a release to an environment",
    input: Schema.Struct({ environment: Schema.String }),
    needsApproval: ({ environment }) => environment !== "staging",
    handler: ({ environment }) =>
      Effect.sync(() => {
        ran.push(environment)
        return `deployed to ${environment}`
      })
  })

/** The child agent the parent delegates to, and the deploys it ran. */
const releaser = () => {
  const ran: Array<string> = []
  const children: ReadonlyArray<Delegation.ChildAgent> = [
    { agent: "releaser", description: "ships releases", tools: [makeDeploy(ran)] }
  ]
  return { children, ran }
}

const isParent = (request: Model.ModelRequest) => request.tools.some((tool) => tool.name === Delegation.toolName)
const resultOf = (request: Model.ModelRequest, callId: string) =>
  request.parts.find((part): part is Model.ToolResultPart => part._tag === "ToolResult" && part.callId === callId)

/** The parent delegates a release; the child deploys to production (approval needed), then to eu (again), then answers. */
const model = ScriptedModel.layer((request) => {
  if (isParent(request)) {
    const delegated = resultOf(request, "d1")
    if (delegated === undefined) {
      return Model.response({
        toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks: [{ agent: "releaser", task: "Ship it." }] })]
      })
    }
    return Model.response({ text: `lead heard: ${delegated.content}` })
  }
  const first = resultOf(request, "x1")
  if (first === undefined) {
    return Model.response({ toolCalls: [Model.toolCall("x1", "deploy", { environment: "production" })] })
  }
  const second = resultOf(request, "x2")
  if (second === undefined)
    return Model.response({ toolCalls: [Model.toolCall("x2", "deploy", { environment: "eu" })] })
  return Model.response({ text: `releaser: ${first.content}; ${second.content}` })
})

type Entry = JournalEntry.Entry
const delegatedRequests = (entries: ReadonlyArray<Entry>) =>
  entries.filter(
    (entry): entry is Entry & { readonly _tag: "ApprovalRequested" } =>
      entry._tag === "ApprovalRequested" && entry.reason === "Delegated"
  )

describe("delegation approvals", () => {
  it.effect(
    "delegation_child_approval_surfaces_to_the_parent: the parent's turn waits on its delegate call for each approval its child asks, the host decides the parent's call, and each child call is decided once, by that decision",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { children, ran } = releaser()
        const result = yield* Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
            const paused = yield* tessera.run("plan-1", "Release.", { children })
            assert.strictEqual(paused._tag, "AwaitingApproval")
            if (paused._tag !== "AwaitingApproval") return assert.fail("the parent did not wait")
            assert.deepStrictEqual(
              paused.awaiting.map(({ call, reason }) => [call.id, reason]),
              [["d1", "Delegated"]]
            )
            assert.deepStrictEqual(ran, [])
            const first = delegatedRequests(yield* tessera.entries("plan-1"))
            const child = first[0]?.children?.[0]
            assert.strictEqual(child?.callId, "x1")
            // Decided on the parent's call; the child asks again for its second deploy.
            yield* tessera.decide("plan-1", { callId: "d1", approved: true, by: "alice" })
            const again = yield* tessera.resume("plan-1", { children })
            assert.isTrue(Option.isSome(again) && again.value.outcome._tag === "AwaitingApproval")
            assert.deepStrictEqual(ran, ["production"])
            const second = delegatedRequests(yield* tessera.entries("plan-1"))
            assert.deepStrictEqual(
              second.map((entry) => entry.children?.map((call) => call.callId)),
              [["x1"], ["x2"]]
            )
            yield* tessera.decide("plan-1", { callId: "d1", approved: false, by: "bob", note: "EU freeze" })
            const done = yield* tessera.resume("plan-1", { children })
            // Decided once: nothing waits any more, so a second decision is refused.
            const stray = yield* Effect.flip(tessera.decide("plan-1", { callId: "d1", approved: true, by: "eve" }))
            return { done, stray, childEntries: yield* tessera.entries(child?.task ?? "") }
          })
        ).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))
        assert.deepStrictEqual(ran, ["production"])
        const answered = Option.getOrUndefined(result.done)?.outcome
        assert.strictEqual(answered?._tag, "Answered")
        assert.include(answered?._tag === "Answered" ? answered.text : "", "deployed to production")
        assert.include(answered?._tag === "Answered" ? answered.text : "", "rejected by bob: EU freeze")
        assert.strictEqual(result.stray._tag, "NotAwaitingApproval")
        // Each child call has exactly one decision, the parent's host's, with who made it.
        const decisions = result.childEntries.filter((entry) => entry._tag === "ApprovalDecided")
        assert.deepStrictEqual(
          decisions.map((entry) => (entry._tag === "ApprovalDecided" ? [entry.callId, entry.approved, entry.by] : [])),
          [
            ["x1", true, "alice"],
            ["x2", false, "bob"]
          ]
        )
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_child_approval_surfaces_to_the_parent negative control: a delegation stripped of its approval declaration is dispatched where nothing can wait, so the parent answers without the host ever deciding",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { children, ran } = releaser()
        const outcome = yield* Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
            return yield* tessera.harness.withTask(tessera.harness.runtime.scope.task, (parent) =>
              Effect.gen(function* () {
                const { needsApproval: _, ...stripped } = yield* Delegation.tool(tessera.harness, parent, children)
                return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Release.")]), {
                  tools: Tool.registry(stripped),
                  maxSteps: 4,
                  durable: true,
                  offload: TaskExecution.defaultFrontDoorOffload
                })
              })
            )
          })
        ).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))
        assert.strictEqual(outcome._tag, "Answered")
        assert.include(outcome._tag === "Answered" ? outcome.text : "", "waits for an approval")
        assert.deepStrictEqual(ran, [])
      }).pipe(Effect.scoped)
  )
})
