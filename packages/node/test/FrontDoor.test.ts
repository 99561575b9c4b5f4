/**
 * The front door (`NodeTessera.open`): a harness on a folder for an agent,
 * get-or-create on every open, turns with offload, compaction and
 * durability on, and the host's redaction decision stated, applied and
 * journaled.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { NodeTessera } from "@tessera/node"
import { Model, Tool, VolumeStore } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"
import { fetchReport as crashReport } from "./support/crashTurn.ts"
import { tempDir } from "./support/temp.ts"

/** A report long enough to be offloaded, holding an AWS access key id. */
const secret = "AKIAIOSFODNN7EXAMPLE"
const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) =>
    Effect.succeed(`Report ${name}, key ${secret}\n${"measurement 42.0 within tolerance\n".repeat(600)}`)
})

const script = () =>
  ScriptedModel.layer([
    ScriptedModel.calling("fetch_report", { name: "north" }),
    "The north report shows every measurement within tolerance.",
    "Still within tolerance."
  ])

/** Every file below the agent's scratch volume's artifact folder, with its text. */
const artifacts = (folder: string) => {
  const root = path.join(folder, VolumeStore.volumesFolder, "researcher-scratch", VolumeStore.artifactFolder)
  return fs.existsSync(root)
    ? fs
        .readdirSync(root, { recursive: true, withFileTypes: true })
        .flatMap((entry) => (entry.isFile() ? [fs.readFileSync(path.join(entry.parentPath, entry.name), "utf8")] : []))
    : []
}

const twoRuns = (stateDir: string, redactor: NodeTessera.OpenOptions<unknown>["redactor"]) =>
  Effect.gen(function* () {
    const opened = Effect.scoped(
      Effect.gen(function* () {
        const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "researcher", redactor })
        const outcome = yield* tessera.run("survey-1", "Summarize the north report.", { tools: [fetchReport] })
        return { tessera, outcome, entries: yield* tessera.entries("survey-1") }
      })
    )
    const first = yield* opened.pipe(Effect.provide(script()))
    // A second program on the same folder: volumes, scope and journal are found, the conversation continues.
    const second = yield* Effect.scoped(
      Effect.gen(function* () {
        const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "researcher", redactor })
        const outcome = yield* tessera.run("survey-1", "And now?", { tools: [fetchReport] })
        const [request] = yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
        const said = (request?.parts ?? []).flatMap((part) => (part._tag === "Text" ? [part.text] : []))
        return { outcome, said, entries: yield* tessera.entries("survey-1") }
      })
    ).pipe(Effect.provide(ScriptedModel.layer(["Still within tolerance."])))
    return { first, second, folder: first.tessera.folder }
  }).pipe(Effect.provide(NodeTessera.layer))

/** Deploys: staging runs at once, anything else waits for a person; `ran` lists what actually ran. */
const deployer = () => {
  const ran: Array<string> = []
  const deploy = Tool.make({
    name: "deploy",
    description: "Deploys a release to an environment",
    input: Schema.Struct({ environment: Schema.String }),
    needsApproval: ({ environment }) => environment !== "staging",
    handler: ({ environment }) => Effect.sync(() => ran.push(environment)).pipe(Effect.as(`deployed to ${environment}`))
  })
  return { deploy, ran }
}

/** The same two call ids every turn, as models that number their calls per response give them. */
const releaseScript = () =>
  ScriptedModel.layer([
    Model.response({
      toolCalls: [
        Model.toolCall("d1", "deploy", { environment: "production" }),
        Model.toolCall("d2", "deploy", { environment: "eu-production" })
      ]
    }),
    "Production is deployed; eu-production was rejected."
  ])

/** One program on `stateDir`: `body` with the front door open and its own scripted model (the release by default). */
const releaseProgram = <A, E, R>(
  stateDir: string,
  body: (tessera: NodeTessera.Tessera) => Effect.Effect<A, E, R>,
  model = releaseScript()
) =>
  Effect.scoped(
    Effect.flatMap(NodeTessera.open({ folder: stateDir, agent: "release-bot", redactor: Option.none() }), body)
  ).pipe(Effect.provide(model))

describe("the front door", () => {
  it.effect(
    "front_door_first_program: one open and one run offload the large result (scrubbed), answer, and record Scrubbed; a second program on the folder continues the task",
    () =>
      Effect.gen(function* () {
        const { first, folder, second } = yield* twoRuns(yield* tempDir, Option.some(NodeTessera.defaultRedactor))
        assert.strictEqual(first.outcome._tag, "Answered")
        if (first.outcome._tag === "Answered") {
          assert.strictEqual(first.outcome.text, "The north report shows every measurement within tolerance.")
        }
        const tags = first.entries.map((entry) => entry._tag)
        assert.include(tags, "ArtifactOffloaded")
        const opened = first.entries.filter((entry) => entry._tag === "TurnOpened")
        assert.deepStrictEqual(
          opened.map((entry) => entry._tag === "TurnOpened" && entry.redaction),
          ["Scrubbed"]
        )
        assert.strictEqual(first.tessera.redaction, "Scrubbed")
        // The artifact on disk is scrubbed: the key never reached the volume.
        const stored = artifacts(folder)
        assert.lengthOf(stored, 1)
        assert.notInclude(stored[0], secret)
        // The second run is the task's second turn, over the first turn's conversation.
        assert.strictEqual(second.outcome._tag, "Answered")
        assert.strictEqual(second.entries.filter((entry) => entry._tag === "TurnOpened").length, 2)
        assert.includeMembers(second.said, [
          "Summarize the north report.",
          "The north report shows every measurement within tolerance.",
          "And now?"
        ])
      }).pipe(Effect.scoped)
  )

  it.effect(
    "front_door_first_program negative control: Option.none() is a decision too: the same program stores the key verbatim, and the journal says Verbatim",
    () =>
      Effect.gen(function* () {
        const { first, folder } = yield* twoRuns(yield* tempDir, Option.none())
        assert.strictEqual(first.tessera.redaction, "Verbatim")
        const opened = first.entries.find((entry) => entry._tag === "TurnOpened")
        assert.strictEqual(opened?._tag === "TurnOpened" ? opened.redaction : undefined, "Verbatim")
        assert.include(artifacts(folder)[0], secret)
      }).pipe(Effect.scoped)
  )

  it.effect(
    "front_door_decision_required: a missing redactor, an agent that is no identifier and an empty folder are InvalidInput naming the field, with nothing created",
    () =>
      Effect.gen(function* () {
        const stateDir = path.join(yield* tempDir, "state")
        const refusedWith = (options: unknown) =>
          Effect.flip(Effect.scoped(NodeTessera.open(options as NodeTessera.OpenOptions))).pipe(
            Effect.provide(NodeTessera.layer)
          )
        const missing = yield* refusedWith({ folder: stateDir, agent: "researcher" })
        assert.strictEqual(missing._tag, "InvalidInput")
        if (missing._tag === "InvalidInput") {
          assert.strictEqual(missing.field, "redactor")
          assert.include(missing.detail, "Option.none() stores bodies verbatim")
        }
        const agent = yield* refusedWith({ folder: stateDir, agent: "../etc", redactor: Option.none() })
        assert.strictEqual(agent._tag === "InvalidInput" ? agent.field : agent._tag, "agent")
        const folder = yield* refusedWith({ folder: "", agent: "researcher", redactor: Option.none() })
        assert.strictEqual(folder._tag === "InvalidInput" ? folder.field : folder._tag, "folder")
        assert.isFalse(fs.existsSync(stateDir))
        // Control: the same options with the decision made open the folder.
        yield* Effect.scoped(NodeTessera.open({ folder: stateDir, agent: "researcher", redactor: Option.none() })).pipe(
          Effect.provide(NodeTessera.layer)
        )
        assert.isTrue(fs.existsSync(stateDir))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "front_door_resumes_after_sigkill: a turn killed mid-call is finished by resume in a new process (its locks recovered), and the next resume finds nothing open (control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const fixture = fileURLToPath(new URL("./fixtures/frontDoorCrash.ts", import.meta.url))
        const crashed = spawnSync(process.execPath, [fixture, stateDir], { encoding: "utf8", timeout: 60_000 })
        assert.strictEqual(crashed.signal, "SIGKILL", crashed.stderr)
        const fetchSouth = crashReport(false)
        const { again, resumed } = yield* Effect.scoped(
          Effect.gen(function* () {
            const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "researcher", redactor: Option.none() })
            const resumed = yield* tessera.resume("survey-1", { tools: [fetchSouth] })
            return { resumed, again: yield* tessera.resume("survey-1", { tools: [fetchSouth] }) }
          })
        ).pipe(Effect.provide(ScriptedModel.layer(["North and south: all systems nominal."])))
        assert.isTrue(Option.isSome(resumed))
        if (Option.isSome(resumed)) {
          assert.strictEqual(resumed.value.outcome._tag, "Answered")
          assert.deepStrictEqual(
            resumed.value.inFlight.map((call) => call.callId),
            ["c2"]
          )
        }
        assert.isTrue(Option.isNone(again))
      }).pipe(Effect.scoped, Effect.provide(NodeTessera.layer))
  )

  it.effect(
    "front_door_approvals: a paused turn decided by a later program resumes (the approved call runs once, the model hears who rejected the other), and a second turn reusing the call ids does the same",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { deploy, ran } = deployer()
        for (const turn of [1, 2]) {
          const paused = yield* releaseProgram(stateDir, (tessera) =>
            tessera.run("release", "Ship the release.", { tools: [deploy] })
          )
          assert.strictEqual(paused._tag, "AwaitingApproval", `turn ${turn}`)
          const resumed = yield* releaseProgram(
            stateDir,
            (tessera) =>
              Effect.gen(function* () {
                yield* tessera.decide("release", { callId: "d1", approved: true, by: "alice" })
                yield* tessera.decide("release", { callId: "d2", approved: false, by: "bob", note: "freeze in the EU" })
                const resumed = yield* tessera.resume("release", { tools: [deploy] })
                const [request] = yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
                return { resumed, request }
              }),
            ScriptedModel.layer(["Production is deployed; eu-production was rejected."])
          )
          assert.strictEqual(
            Option.isSome(resumed.resumed) ? resumed.resumed.value.outcome._tag : "None",
            "Answered",
            `turn ${turn}`
          )
          const results = (resumed.request?.parts ?? []).flatMap((part) => (part._tag === "ToolResult" ? [part] : []))
          const rejection = results.filter((part) => part.isError).at(-1)
          assert.include(rejection?.content, "bob")
          assert.include(rejection?.content, "freeze in the EU")
        }
        assert.deepStrictEqual(ran, ["production", "production"])
        const decided = yield* releaseProgram(stateDir, (tessera) => tessera.entries("release"))
        assert.deepStrictEqual(
          decided.flatMap((entry) => (entry._tag === "ApprovalDecided" ? [`${entry.callId}:${entry.by}`] : [])),
          ["d1:alice", "d2:bob", "d1:alice", "d2:bob"]
        )
      }).pipe(Effect.scoped, Effect.provide(NodeTessera.layer))
  )

  it.effect(
    "front_door_approvals negative control: undecided, the resumed turn still waits and nothing ran; a decision on a call that is not waiting is NotAwaitingApproval",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { deploy, ran } = deployer()
        yield* releaseProgram(stateDir, (tessera) => tessera.run("release", "Ship the release.", { tools: [deploy] }))
        const { resumed, stray } = yield* releaseProgram(stateDir, (tessera) =>
          Effect.gen(function* () {
            const resumed = yield* tessera.resume("release", { tools: [deploy] })
            const stray = yield* Effect.flip(tessera.decide("release", { callId: "d9", approved: true, by: "alice" }))
            return { resumed, stray }
          })
        )
        assert.strictEqual(Option.isSome(resumed) ? resumed.value.outcome._tag : "None", "AwaitingApproval")
        assert.strictEqual(stray._tag, "NotAwaitingApproval")
        assert.deepStrictEqual(ran, [])
      }).pipe(Effect.scoped, Effect.provide(NodeTessera.layer))
  )
})
