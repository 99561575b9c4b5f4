/**
 * The inspector's view of durable tasks (their resumable state), and its
 * command line: relative folders, parent folders, `--help`.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Inspector, LocalHarness } from "@tessera/node"
import { Compaction, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Path, Schema } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const bin = fileURLToPath(new URL("../bin/tessera-inspect.ts", import.meta.url))
const agent = agentId("inspected")
const task = taskId("paused-task")
const secretText = "the body nobody should see by default"

const deploy = Tool.make({
  name: "deploy",
  description: "Deploys",
  input: Schema.Struct({ target: Schema.String }),
  needsApproval: true,
  handler: (input) => Effect.succeed(`deployed ${input.target}`)
})
const read = Tool.make({
  name: "read",
  description: "Reads",
  input: Schema.Struct({ path: Schema.String }),
  handler: () => Effect.succeed(`${"r".repeat(6000)} ${secretText}`)
})

/** A durable task whose turn read one large file (offloaded), then paused for a deploy's approval. */
const paused = (stateDir: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const harness = yield* LocalHarness.open({ stateDir, namespace: "ns-a", agent })
      const outcome = yield* harness
        .withTask(
          task,
          (binding) =>
            TaskExecution.runTurn(binding, History.make([Model.text("user", `Deploy. ${secretText}`)]), {
              tools: Tool.registry(deploy, read),
              maxSteps: 4,
              durable: true,
              offload: { threshold: 4096, readTool: "read_artifact", destination: "Private" }
            }),
          { policy: Compaction.disabled }
        )
        .pipe(
          Effect.provide(
            ScriptedModel.layer([
              Model.response({ toolCalls: [Model.toolCall("r1", "read", { path: "notes.txt" })] }),
              Model.response({ toolCalls: [Model.toolCall("d1", "deploy", { target: "prod" })] })
            ])
          )
        )
      assert.strictEqual(outcome._tag, "AwaitingApproval")
      return harness.folder
    })
  )

const runBin = (options: { readonly cwd: string; readonly env?: NodeJS.ProcessEnv }, ...args: ReadonlyArray<string>) =>
  spawnSync(process.execPath, [bin, ...args], {
    encoding: "utf8",
    timeout: 60_000,
    cwd: options.cwd,
    env: { ...process.env, INIT_CWD: undefined, ...options.env }
  })

describe("Inspector: resumable state", () => {
  it.live(
    "inspector_resumable_state: shows the open turn, its step, the calls awaiting approval and the conversation as the model last saw it, pointers as pointers, bodies only with --bodies (control: with it, the body appears)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const folder = yield* paused(stateDir)
        const report = yield* Inspector.inspect(folder, { task })
        const journal = report.journals[0]
        assert.isDefined(journal)
        const state = journal?.resumable
        assert.deepStrictEqual(
          state?.awaitingApproval.map((call) => [call.callId, call.approval?.reason]),
          [["d1", "Tool"]]
        )
        assert.strictEqual(Option.getOrThrow(state?.lastTurn ?? Option.none()).status, "Open")
        assert.strictEqual(state?.conversation._tag, "Rebuilt")
        const text = Inspector.render(report)
        assert.include(text, "open turn 1: step 2")
        assert.include(text, "awaiting approval: d1 deploy (Tool)")
        assert.include(text, "conversation as the model last saw it (turn 1, 4 parts")
        assert.match(text, /result r1 read offloaded: tool-results\/paused-task-t1-s1-r1\.txt/)
        assert.include(text, "call d1 deploy input")
        assert.notInclude(text, secretText, "no body without --bodies")
        assert.notInclude(report.artifacts.map((file) => file.path).join(" "), "transcripts/")
        assert.isAbove(report.transcripts.length, 0)

        const withBodies = Inspector.render(yield* Inspector.inspect(folder, { task, bodies: true }))
        assert.include(withBodies, secretText, "the control: --bodies shows the user's text")
        assert.include(withBodies, '{"target":"prod"}')
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live("a task whose turns were not run durably shows its state, and its conversation as not recorded", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const folder = yield* Effect.scoped(
        Effect.gen(function* () {
          const harness = yield* LocalHarness.open({ stateDir, namespace: "ns-b", agent })
          yield* harness
            .withTask(task, (binding) =>
              TaskExecution.runTurn(binding, History.make([Model.text("user", "hi")]), {
                tools: Tool.registry(read),
                maxSteps: 2
              })
            )
            .pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: "hello" })])))
          return harness.folder
        })
      )
      const text = Inspector.render(yield* Inspector.inspect(folder))
      assert.include(text, "no open turn: turn 1 closed after 1 step")
      assert.include(text, "conversation: not recorded")
    }).pipe(Effect.provide(nodeLayer))
  )
})

describe("Inspector command line", () => {
  it("resolveFolder: a relative folder resolves against INIT_CWD when set, else the working directory; an absolute one is kept", () =>
    Effect.runSync(
      Effect.gen(function* () {
        const path_ = yield* Path.Path
        assert.strictEqual(
          Inspector.resolveFolder(path_, "state/ns", { cwd: "/repo", initCwd: "/home/me/work" }),
          "/home/me/work/state/ns"
        )
        assert.strictEqual(Inspector.resolveFolder(path_, "state/ns", { cwd: "/repo" }), "/repo/state/ns")
        assert.strictEqual(Inspector.resolveFolder(path_, "/abs/ns", { cwd: "/repo", initCwd: "/x" }), "/abs/ns")
      }).pipe(Effect.provide(Path.layer))
    ))

  it.live(
    "the bin reads a relative folder from the caller's directory (INIT_CWD, as npm run sets it), not from where it runs (control: without INIT_CWD the same argument is not found)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        yield* paused(stateDir)
        const elsewhere = yield* tempDir
        const viaNpm = runBin({ cwd: elsewhere, env: { INIT_CWD: stateDir } }, "ns-a", "--task", task)
        assert.strictEqual(viaNpm.status, 0, viaNpm.stderr)
        assert.include(viaNpm.stdout, `store ns-a at ${path.join(stateDir, "ns-a")}`)
        const plain = runBin({ cwd: elsewhere }, "ns-a")
        assert.strictEqual(plain.status, 1)
        assert.include(plain.stderr, `${path.join(elsewhere, "ns-a")}: no such folder`)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "pointing at a namespace's parent folder names the namespaces inside it (control: an empty folder names none)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        yield* paused(stateDir)
        fs.writeFileSync(path.join(stateDir, "notes.txt"), "not a namespace")
        fs.mkdirSync(path.join(stateDir, "empty"))
        const error = yield* Effect.flip(Inspector.inspect(stateDir))
        assert.strictEqual(error._tag, "NotAStoreFolder")
        if (error._tag === "NotAStoreFolder") {
          assert.deepStrictEqual(error.namespaces, ["ns-a"])
          assert.include(error.message, `inspect one of them, for example ${path.join(stateDir, "ns-a")}`)
        }
        const empty = yield* Effect.flip(Inspector.inspect(path.join(stateDir, "empty")))
        assert.strictEqual(empty._tag, "NotAStoreFolder")
        if (empty._tag === "NotAStoreFolder") assert.isUndefined(empty.namespaces)
      }).pipe(Effect.provide(nodeLayer))
  )

  it("--help lists the inspector's own options only; the built-in flags still work (--version)", () => {
    const help = runBin({ cwd: process.cwd() }, "--help")
    assert.strictEqual(help.status, 0, help.stderr)
    for (const own of ["--task", "--bodies", "namespace-folder"]) assert.include(help.stdout, own)
    for (const builtIn of ["GLOBAL FLAGS", "--completions", "--log-level", "--wizard"]) {
      assert.notInclude(help.stdout, builtIn)
    }
    const version = runBin({ cwd: process.cwd() }, "--version")
    assert.strictEqual(version.status, 0)
    assert.include(version.stdout, "0.3.0")
  })
})
