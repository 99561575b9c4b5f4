/**
 * Tool approvals: a tool requires approval (always, or by a predicate on its
 * input); the turn journals the pending calls and ends its step as
 * awaiting approval (a typed outcome, not an error); the host approves or
 * rejects each call later, in the same process or after a restart; the
 * turn continues and the model sees both outcomes.
 */
import { assert, describe, it } from "@effect/vitest"
import { LocalHarness } from "@tessera/node"
import { Compaction, type EntryGate, History, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Schema, Stream } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const agent = agentId("operator-agent")
const task = taskId("approval-task")
const start = History.make([Model.text("user", "Ship the release and clean up.")])

const withHarness = <A, E, R>(stateDir: string, body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.flatMap(LocalHarness.open({ stateDir, namespace: "approvals", agent }), (harness) =>
      harness.withTask(task, body, { policy: Compaction.disabled })
    )
  )

const toolsFor = (effects: Array<string>) => {
  const deploy = Tool.make({
    name: "deploy",
    description: "Deploys a release",
    input: Schema.Struct({ target: Schema.String }),
    needsApproval: true,
    handler: (input) =>
      Effect.sync(() => {
        effects.push(`deploy ${input.target}`)
        return `deployed to ${input.target}`
      })
  })
  const remove = Tool.make({
    name: "remove",
    description: "Removes a path",
    input: Schema.Struct({ path: Schema.String }),
    needsApproval: (input) => input.path.startsWith("/prod"),
    handler: (input) =>
      Effect.sync(() => {
        effects.push(`remove ${input.path}`)
        return `removed ${input.path}`
      })
  })
  return { deploy, remove }
}

const calls = [
  Model.toolCall("c1", "deploy", { target: "staging" }),
  Model.toolCall("c2", "remove", { path: "/prod/db" }),
  Model.toolCall("c3", "remove", { path: "/tmp/cache" })
]
const script = [
  Model.response({ text: "deploying and cleaning", toolCalls: calls }),
  Model.response({ text: "done: staging deployed, prod untouched" })
]

const config = (tools: Tool.Registry): TaskExecution.ExecutionConfig => ({ tools, maxSteps: 4, durable: true })

const recorded = Effect.flatMap(Effect.service(ScriptedModel.ScriptedModelRecorder), (recorder) => recorder.requests)

describe("tool approvals", () => {
  it.live(
    "approvals_across_restart: the step ends awaiting approval with nothing run; after a restart one call is approved and one rejected (journaled with who); after another the turn continues and the model sees both outcomes",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const effects: Array<string> = []
        const { deploy, remove } = toolsFor(effects)
        const tools = Tool.registry(deploy, remove)

        // Process 1: the turn pauses.
        const first = yield* withHarness(stateDir, (binding) =>
          TaskExecution.runTurn(binding, start, config(tools)).pipe(Effect.provide(ScriptedModel.layer(script)))
        )
        assert.strictEqual(first._tag, "AwaitingApproval")
        if (first._tag === "AwaitingApproval") {
          assert.deepStrictEqual(
            first.awaiting.map((pending) => [pending.call.id, pending.reason]),
            [
              ["c1", "Tool"],
              ["c2", "Tool"]
            ]
          )
        }
        assert.deepStrictEqual(effects, [], "nothing of the step ran, not even the call that needs no approval")

        // Process 2: the host decides.
        yield* withHarness(stateDir, (binding) =>
          Effect.gen(function* () {
            const journal = yield* Journal.Journal
            const refused = yield* Effect.flip(
              TaskExecution.decide(binding, { callId: "c3", approved: true, by: "alice" })
            )
            assert.strictEqual(refused._tag, "NotAwaitingApproval")
            const before = (yield* journal.state).entries
            const bad = yield* Effect.flip(TaskExecution.decide(binding, { callId: "c1", approved: true, by: "" }))
            assert.strictEqual(bad._tag, "InvalidInput")
            assert.strictEqual((yield* journal.state).entries, before, "a refused decision writes nothing")
            yield* TaskExecution.decide(binding, { callId: "c1", approved: true, by: "alice" })
            yield* TaskExecution.decide(binding, {
              callId: "c2",
              approved: false,
              by: "bob",
              note: "never delete in prod"
            })
          })
        )
        assert.deepStrictEqual(effects, [])

        // Process 3: the turn continues from disk.
        const resumed = yield* withHarness(stateDir, (binding) =>
          Effect.gen(function* () {
            const outcome = yield* TaskExecution.resume(binding, config(tools))
            const journal = yield* Journal.Journal
            const entries = yield* Journal.readEntries({
              folder: journal.file.slice(0, journal.file.lastIndexOf("/")),
              task
            })
            return { outcome, requests: yield* recorded, entries }
          }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
        )
        assert.strictEqual(resumed.outcome.outcome._tag, "Answered")
        assert.strictEqual(resumed.outcome.outcome.text, "done: staging deployed, prod untouched")
        assert.deepStrictEqual(effects, ["deploy staging", "remove /tmp/cache"])
        const results = (resumed.requests[0]?.parts ?? []).filter(
          (part): part is Model.ToolResultPart => part._tag === "ToolResult"
        )
        assert.deepStrictEqual(
          results.map((part) => [part.callId, part.isError]),
          [
            ["c1", false],
            ["c2", true],
            ["c3", false]
          ]
        )
        assert.strictEqual(results[0]?.content, "deployed to staging")
        assert.include(results[1]?.content, "rejected by bob: never delete in prod")
        const decided = resumed.entries.flatMap((entry) =>
          entry._tag === "ApprovalDecided" ? [[entry.callId, entry.approved, entry.by]] : []
        )
        assert.deepStrictEqual(decided, [
          ["c1", true, "alice"],
          ["c2", false, "bob"]
        ])
        const rejected = resumed.entries.find((entry) => entry._tag === "ToolResulted" && entry.callId === "c2")
        assert.strictEqual(rejected?._tag === "ToolResulted" ? rejected.failure : undefined, "Rejected")
        assert.isUndefined(
          resumed.entries.find((entry) => entry._tag === "ToolCalled" && entry.callId === "c2"),
          "the rejected call never ran"
        )
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "in one process: decide, then resume the same turn (the pause reaches onEvent as an event, not an error)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const effects: Array<string> = []
        const { deploy, remove } = toolsFor(effects)
        const tools = Tool.registry(deploy, remove)
        const outcome = yield* withHarness(stateDir, (binding) =>
          Effect.gen(function* () {
            const events: Array<string> = []
            const paused = yield* TaskExecution.runTurn(binding, start, {
              ...config(tools),
              onEvent: (event) => Effect.sync(() => events.push(event._tag))
            })
            assert.strictEqual(paused._tag, "AwaitingApproval")
            assert.strictEqual(events.at(-1), "AwaitingApproval")
            yield* TaskExecution.decide(binding, { callId: "c1", approved: false, by: "policy-bot" })
            yield* TaskExecution.decide(binding, { callId: "c2", approved: false, by: "policy-bot" })
            return yield* TaskExecution.resume(binding, config(tools))
          }).pipe(Effect.provide(ScriptedModel.layer(script)))
        )
        assert.strictEqual(outcome.outcome._tag, "Answered")
        assert.deepStrictEqual(effects, ["remove /tmp/cache"])
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live("a streamed turn that pauses ends its stream with an AwaitingApproval event, not a failure", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const effects: Array<string> = []
      const { deploy, remove } = toolsFor(effects)
      const events = yield* withHarness(stateDir, (binding) =>
        Stream.runCollect(TaskExecution.streamTurn(binding, start, config(Tool.registry(deploy, remove)))).pipe(
          Effect.provide(ScriptedModel.layer(script))
        )
      )
      const tags = Array.from(events, (event) => event._tag)
      assert.strictEqual(tags.at(-1), "AwaitingApproval")
      assert.notInclude(tags, "TurnClosed")
      assert.notInclude(tags, "ToolCalled")
      assert.deepStrictEqual(effects, [])
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "negative control: the same turn with the approval declarations stripped from the tools runs every call at once (the test's checks fail on it)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const effects: Array<string> = []
        const { deploy, remove } = toolsFor(effects)
        const { needsApproval: _deploy, ...deployAnyway } = deploy
        const { needsApproval: _remove, ...removeAnyway } = remove
        const outcome = yield* withHarness(stateDir, (binding) =>
          TaskExecution.runTurn(binding, start, config(Tool.registry(deployAnyway, removeAnyway))).pipe(
            Effect.provide(ScriptedModel.layer(script))
          )
        )
        assert.strictEqual(outcome._tag, "Answered")
        assert.deepStrictEqual(effects, ["deploy staging", "remove /prod/db", "remove /tmp/cache"])
      }).pipe(Effect.provide(nodeLayer))
  )
})
