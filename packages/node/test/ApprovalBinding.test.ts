/**
 * Approvals are bound to what was asked: to the agent the task runs for
 * (its journal records it), to the input the host was shown (its digest is
 * journaled with the request), and to one run (an approved call killed after
 * its effect and before its result is in flight like any other call).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { LocalHarness } from "@tessera/node"
import { Compaction, type EntryGate, History, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Schema } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const operator = agentId("operator-agent")
const intruder = agentId("intruder-agent")
const task = taskId("approval-task")
const start = History.make([Model.text("user", "Ship the release.")])

const withHarness = <A, E, R>(
  stateDir: string,
  agent: typeof operator,
  body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>
) =>
  Effect.scoped(
    Effect.flatMap(LocalHarness.open({ stateDir, namespace: "approvals", agent }), (harness) =>
      harness.withTask(task, body, { policy: Compaction.disabled })
    )
  )

const deployTool = (effects: Array<string>) =>
  Tool.make({
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

const script = [
  Model.response({ text: "deploying", toolCalls: [Model.toolCall("c1", "deploy", { target: "staging" })] }),
  Model.response({ text: "deployed" })
]

/** The journal file of the task under `stateDir` (found on disk, not computed). */
const journalFile = (stateDir: string): string => {
  const found: Array<string> = []
  const walk = (folder: string) => {
    for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name)
      if (entry.isDirectory()) walk(full)
      else if (entry.name === Journal.fileName(task)) found.push(full)
    }
  }
  walk(stateDir)
  assert.strictEqual(found.length, 1, `journal files: ${found.join(", ")}`)
  return found[0] as string
}

const reasonOf = (error: { readonly _tag: string; readonly reason?: string }) =>
  error._tag === "Unauthorized" ? error.reason : error._tag

/** A paused turn: `deploy` awaits approval; returns the history the caller keeps. */
const paused = (stateDir: string, effects: Array<string>) =>
  withHarness(stateDir, operator, (binding) =>
    TaskExecution.runTurn(binding, start, {
      tools: Tool.registry(deployTool(effects)),
      maxSteps: 4,
      durable: true
    }).pipe(Effect.provide(ScriptedModel.layer(script)))
  )

describe("approvals are bound to the task's agent", () => {
  it.live(
    "approval_bound_to_agent: a scope with the same task id issued to another agent cannot decide, resume or summarize; nothing is written",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const effects: Array<string> = []
        const first = yield* paused(stateDir, effects)
        assert.strictEqual(first._tag, "AwaitingApproval")
        const file = journalFile(stateDir)
        const before = fs.readFileSync(file)
        const opened = before.toString("utf8").split("\n")[0] ?? ""
        assert.include(opened, `"agent":"${operator}"`, "the journal records the agent the task runs for")
        const tools = Tool.registry(deployTool(effects))
        const attempts = yield* withHarness(stateDir, intruder, (binding) =>
          Effect.gen(function* () {
            const decided = yield* Effect.flip(
              TaskExecution.decide(binding, { callId: "c1", approved: true, by: "mallory" })
            )
            const resumed = yield* Effect.flip(TaskExecution.resume(binding, { tools, maxSteps: 4 }))
            const resumedTurn = yield* Effect.flip(
              TaskExecution.resumeTurn(binding, first.history, { tools, maxSteps: 4 })
            )
            return [decided, resumed, resumedTurn].map(reasonOf)
          }).pipe(Effect.provide(ScriptedModel.layer(script.slice(1))))
        )
        assert.deepStrictEqual(attempts, ["AgentMismatch", "AgentMismatch", "AgentMismatch"])
        assert.deepStrictEqual(fs.readFileSync(file), before, "a refused entry wrote journal bytes")
        assert.deepStrictEqual(effects, [])
        // Negative control: the agent the task runs for decides, and the same byte check sees the write.
        yield* withHarness(stateDir, operator, (binding) =>
          TaskExecution.decide(binding, { callId: "c1", approved: true, by: "alice" })
        )
        assert.notDeepEqual(fs.readFileSync(file), before)
      }).pipe(Effect.provide(nodeLayer))
  )
})

describe("an approved call runs with the approved input only", () => {
  it.live(
    "approved_input_is_the_journaled_one: a resume whose history changed the approved call's input is ApprovalInputMismatch; nothing runs, nothing is written",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const effects: Array<string> = []
        const first = yield* paused(stateDir, effects)
        assert.strictEqual(first._tag, "AwaitingApproval")
        yield* withHarness(stateDir, operator, (binding) =>
          TaskExecution.decide(binding, { callId: "c1", approved: true, by: "alice" })
        )
        const file = journalFile(stateDir)
        const before = fs.readFileSync(file)
        // The caller's copy of the history now asks to deploy somewhere nobody approved.
        const tampered: History.History = {
          ...first.history,
          parts: first.history.parts.map((part) =>
            part._tag === "ToolCall" && part.id === "c1"
              ? Model.toolCall("c1", "deploy", { target: "production" })
              : part
          )
        }
        const tools = Tool.registry(deployTool(effects))
        const refused = yield* withHarness(stateDir, operator, (binding) =>
          Effect.flip(TaskExecution.resumeTurn(binding, tampered, { tools, maxSteps: 4 })).pipe(
            Effect.provide(ScriptedModel.layer(script.slice(1)))
          )
        )
        assert.strictEqual(refused._tag, "ApprovalInputMismatch", refused.message)
        if (refused._tag === "ApprovalInputMismatch") {
          assert.strictEqual(refused.callId, "c1")
          assert.strictEqual(refused.step, 1)
        }
        assert.deepStrictEqual(effects, [], "the unapproved input ran")
        assert.deepStrictEqual(fs.readFileSync(file), before, "the refusal wrote journal bytes")
        // Negative control: with the history as approved, the same resume runs the call.
        const resumed = yield* withHarness(stateDir, operator, (binding) =>
          TaskExecution.resumeTurn(binding, first.history, { tools, maxSteps: 4 }).pipe(
            Effect.provide(ScriptedModel.layer(script.slice(1)))
          )
        )
        assert.strictEqual(resumed._tag, "Answered")
        assert.deepStrictEqual(effects, ["deploy staging"])
      }).pipe(Effect.provide(nodeLayer))
  )
})

describe("an approval covers one run", () => {
  const child = path.join(import.meta.dirname, "fixtures", "approvedKill.ts")
  const runChild = (stateDir: string, phase: string, ending: string, kind: string) =>
    spawnSync(process.execPath, [child, stateDir, phase, ending, kind], { encoding: "utf8", timeout: 60_000 })
  const deploys = (stateDir: string): ReadonlyArray<string> => {
    const log = path.join(stateDir, "deploys.log")
    return fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []
  }
  /** Pause, approve, then a resume killed (SIGKILL) right after the deploy's effect; then a clean resume. */
  const scenario = (kind: "plain" | "idempotent") => {
    const stateDir = fs.mkdtempSync(path.join(fs.realpathSync(process.env.TMPDIR ?? "/tmp"), "tessera-approved-kill-"))
    try {
      assert.strictEqual(runChild(stateDir, "pause", "finish", kind).stdout.trim(), "AwaitingApproval")
      assert.strictEqual(runChild(stateDir, "decide", "finish", kind).stdout.trim(), "decided")
      const killed = runChild(stateDir, "resume", "kill", kind)
      assert.strictEqual(killed.signal, "SIGKILL", killed.stderr)
      assert.deepStrictEqual(deploys(stateDir), ["deploy prod"])
      const after = runChild(stateDir, "resume", "finish", kind)
      assert.strictEqual(after.status, 0, after.stderr)
      return { said: JSON.parse(after.stdout.trim()) as Record<string, unknown>, deploys: deploys(stateDir) }
    } finally {
      fs.rmSync(stateDir, { recursive: true, force: true })
    }
  }

  it("approved_in_flight_asks_again: an approved, non-idempotent call killed after its effect is asked again (InFlight), not run twice", () => {
    const { said, deploys: ran } = scenario("plain")
    assert.deepStrictEqual(said, { outcome: "AwaitingApproval", awaiting: ["InFlight"], inFlight: ["c1"] })
    assert.deepStrictEqual(ran, ["deploy prod"], "the approved call took effect twice")
  }, 120_000)

  it("negative control: declared idempotent, the same kill runs it again, and the same effect check sees two runs", () => {
    const { said, deploys: ran } = scenario("idempotent")
    assert.strictEqual(said.outcome, "Answered")
    assert.throws(() => assert.deepStrictEqual(ran, ["deploy prod"]))
  }, 120_000)
})
