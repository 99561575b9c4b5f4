/**
 * Resume after a crash: a durable turn killed with SIGKILL midway is
 * finished by the next start of the same program, with default options.
 *
 * Every start does the same thing: open the harness, and if the task's
 * journal shows an open turn, resume it (`TaskExecution.resume`), else run a
 * new one. Nothing is kept in memory between starts: the journal and the
 * transcript on disk are all the next start knows.
 *
 * To show it, the program first starts a copy of itself that crashes: that
 * copy is killed with SIGKILL inside a tool call, while it holds the
 * namespace's lock and the task's journal lock. The second start finds both
 * locks left by a process that is gone, replaces them (and says so:
 * `harness.lock.recovered` names the dead holder), sees the call that was in
 * flight, runs it again (the tool is idempotent) and finishes the turn. A
 * lock of a process that still runs, or of another machine, is never taken
 * over; `recoverStaleLock: false` refuses a stale one instead.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/resume-after-crash.ts
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { Ids } from "@tessera/core"
import { LocalHarness, NodeDurableFiles } from "@tessera/node"
import { History, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-resume-"))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("assistant")
const task = Schema.decodeUnknownSync(Ids.TaskId)("reports")
// The copy started with this flag plays the process that crashes.
const crashing = process.argv[2] === "--crash-mid-turn"

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  // Fetching twice is harmless: a call a crash cut short may simply run again on resume.
  idempotent: true,
  handler: ({ name }) =>
    Effect.sync(() => {
      if (crashing && name === "south") process.kill(process.pid, "SIGKILL")
      return `report ${name}: all systems nominal`
    })
})

/** The model: asks for the reports it has not seen yet, then answers. */
const model: ScriptedModel.Script = (request) => {
  const seen = new Set(request.parts.flatMap((part) => (part._tag === "ToolResult" ? [part.callId] : [])))
  if (!seen.has("c1")) return Model.response({ toolCalls: [Model.toolCall("c1", "fetch_report", { name: "north" })] })
  if (!seen.has("c2")) return Model.response({ toolCalls: [Model.toolCall("c2", "fetch_report", { name: "south" })] })
  return Model.response({ text: "North and south: all systems nominal." })
}

const config: TaskExecution.ExecutionConfig = {
  tools: Tool.registry(fetchReport),
  maxSteps: 6,
  durable: true // the transcript is stored, so a turn can be resumed from disk alone
}

/** One start of the program: resume the open turn if a crash left one, else run a new turn. */
const start = Effect.scoped(
  Effect.gen(function* () {
    // Default options: a lock a crashed process of this machine left is replaced, and reported.
    const harness = yield* LocalHarness.open({ stateDir, namespace: "resume-example", agent })
    if (Option.isSome(harness.lock.recovered)) {
      const dead = harness.lock.recovered.value
      console.log(`recovered the namespace lock of process ${dead.pid} on ${dead.host}, which is gone`)
    }
    return yield* harness.withTask(task, (binding) =>
      Effect.gen(function* () {
        const journal = yield* Journal.Journal
        if (Option.isSome(Journal.openTurn(yield* journal.state))) {
          const resumed = yield* TaskExecution.resume(binding, config)
          const again = resumed.inFlight.map((call) => call.callId).join(", ")
          console.log(`resumed the open turn: ${resumed.verifiedRequests} earlier request(s) checked byte for byte`)
          console.log(`in flight at the crash, run again: ${again.length > 0 ? again : "none"}`)
          return resumed.outcome
        }
        return yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "Check both reports.")]), config)
      }).pipe(Effect.provide(ScriptedModel.layer(model)))
    )
  })
)

const layers = Layer.merge(NodeServices.layer, NodeDurableFiles.layer)

if (crashing) {
  // Never returns: the process is killed inside the second tool call.
  Effect.runPromise(start.pipe(Effect.provide(layers))).then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(String(error))
      process.exit(1)
    }
  )
} else {
  const crashed = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--crash-mid-turn"], {
    env: { ...process.env, TESSERA_EXAMPLE_DIR: stateDir },
    encoding: "utf8"
  })
  if (crashed.signal !== "SIGKILL") {
    console.error(`the crashing start was expected to die of SIGKILL: ${crashed.status} ${crashed.stderr}`)
    process.exit(1)
  }
  console.log(`start 1 (process ${crashed.pid}): killed with SIGKILL in the middle of the turn`)
  Effect.runPromise(start.pipe(Effect.provide(layers))).then(
    (outcome) => {
      console.log(`start 2: ${outcome._tag}: ${outcome._tag === "Answered" ? outcome.text : "-"}`)
      if (process.env.TESSERA_EXAMPLE_DIR === undefined) fs.rmSync(stateDir, { recursive: true, force: true })
      process.exit(0)
    },
    (error: unknown) => {
      console.error(String(error))
      process.exit(1)
    }
  )
}
