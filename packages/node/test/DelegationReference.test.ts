/**
 * The reference design's headline scenario with a child in it, end to end
 * on the local harness: a parent turn whose task carries native media parts
 * gets a child's response in the middle of the turn (one `delegate` call),
 * then compacts mid-turn into the parent's own private volume, and answers.
 * Exactly the expected requests reach the adapter, in order; every parent
 * request carries the harness's own media objects, unconverted; the
 * child's private content is absent from every parent request, the summary
 * request included. Negative controls break the wiring: a hook that
 * converts media, and a parent bound without a compaction policy.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { NodeTessera } from "@tessera/node"
import {
  Compaction,
  Delegation,
  type EntryGate,
  type Executor,
  History,
  Model,
  TaskExecution,
  Tool,
  VolumeStore
} from "@tessera/runtime"
import { Effect, Option, Schema } from "effect"
import { assertMediaUnconverted, mediaParts } from "./support/media.ts"
import { taskId, tempDir } from "./support/temp.ts"

const childMarker = "SCOUT-PRIVATE-5c21"

const measure = Tool.make({
  name: "measure",
  description: "Measures the site",
  input: Schema.Struct({ size: Schema.Int }),
  handler: ({ size }) => Effect.succeed("m".repeat(size))
})
const fieldNotes = Tool.make({
  name: "field_notes",
  description: "Reads the scout's own field notes",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(`${childMarker}\n${"soil sample nominal\n".repeat(1_000)}`)
})
const children: ReadonlyArray<Delegation.ChildAgent> = [
  { agent: "scout", description: "reads the field notes", tools: [fieldNotes] }
]

type Kind = "parent" | "child" | "summary"
const kindOf = (request: Model.ModelRequest): Kind =>
  Compaction.isSummaryRequest(request)
    ? "summary"
    : request.tools.some((tool) => tool.name === Delegation.toolName)
      ? "parent"
      : "child"
const resultOf = (request: Model.ModelRequest, callId: string) =>
  request.parts.some((part) => part._tag === "ToolResult" && part.callId === callId)

/**
 * Parent: measure (4,000 bytes), delegate to the scout, measure again (past the 8,000-byte limit: compaction),
 * answer. Scout: read its notes (offloaded to its own volume), answer.
 */
const model = (received: Array<Model.ModelRequest>) => {
  // The parent's steps by count: a summary replaces the rounds it covers, so the history alone cannot say.
  let parentSteps = 0
  return Model.layerFromGenerate((request) =>
    Effect.sync(() => {
      received.push(request)
      switch (kindOf(request)) {
        case "summary":
          return Model.response({ text: "the site was measured twice; the scout reported" })
        case "child":
          return resultOf(request, "n1")
            ? Model.response({ text: "scout: the soil is nominal." })
            : Model.response({ toolCalls: [Model.toolCall("n1", "field_notes", {})] })
        case "parent": {
          parentSteps++
          if (parentSteps === 1) {
            return Model.response({ toolCalls: [Model.toolCall("m1", "measure", { size: 4_000 })] })
          }
          if (parentSteps === 2) {
            const tasks = [{ agent: "scout", task: "Read the field notes." }]
            return Model.response({ toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks })] })
          }
          if (parentSteps === 3) {
            return Model.response({ toolCalls: [Model.toolCall("m2", "measure", { size: 4_000 })] })
          }
          return Model.response({ text: "the site is ready, and the soil is nominal" })
        }
      }
    })
  )
}

const run = (stateDir: string, wiring: { readonly hooks?: Executor.Hooks; readonly compaction?: boolean } = {}) =>
  Effect.gen(function* () {
    const received: Array<Model.ModelRequest> = []
    const media = mediaParts({ durable: true })
    const outcome = yield* Effect.scoped(
      Effect.gen(function* () {
        const tessera = yield* NodeTessera.open({ folder: stateDir, agent: "lead", redactor: Option.none() })
        const harness = tessera.harness
        const turn = (parent: EntryGate.TaskBinding) =>
          Effect.gen(function* () {
            const delegate = yield* Delegation.tool(harness, parent, children)
            return yield* TaskExecution.runTurn(
              parent,
              History.make([Model.text("user", "Prepare the site."), ...media]),
              {
                tools: Tool.registry(measure, delegate),
                maxSteps: 8,
                durable: true,
                offload: TaskExecution.defaultFrontDoorOffload,
                ...(wiring.hooks === undefined ? {} : { hooks: wiring.hooks })
              }
            )
          })
        const policy = Compaction.threshold({ measure: "bytes", limit: 8_000, keepRecent: 0 })
        return yield* harness.withTask(taskId("site-1"), turn, wiring.compaction === false ? {} : { policy })
      })
    ).pipe(Effect.provide(model(received)), Effect.provide(NodeTessera.layer))
    return { outcome, received, media, folder: path.join(stateDir, NodeTessera.defaultNamespace) }
  })

/** Every parent request (a summary request is one) holds the very media parts the harness built, in order. */
const assertParentMediaUnconverted = (
  media: ReadonlyArray<Model.MediaPart>,
  received: ReadonlyArray<Model.ModelRequest>
) =>
  assertMediaUnconverted(
    media,
    received.filter((request) => kindOf(request) !== "child")
  )

/** The turn compacted once, after the child's response, into the parent's own private volume. */
const assertCompactedMidTurn = (received: ReadonlyArray<Model.ModelRequest>, folder: string) => {
  assert.deepStrictEqual(received.map(kindOf), ["parent", "parent", "child", "child", "parent", "summary", "parent"])
  const last = received.at(-1)
  assert.isTrue(last?.parts.some((part) => part._tag === "FileReference" && part.path.startsWith("summaries/")))
  const summaries = path.join(folder, VolumeStore.volumesFolder, "lead-scratch", "summaries")
  assert.isTrue(fs.existsSync(summaries) && fs.readdirSync(summaries).length > 0)
}

describe("delegation in the reference scenario", () => {
  it.effect(
    "delegation_reference_scenario: a parent turn with native media gets a child's response, compacts mid-turn into its own private volume and answers: exactly the expected requests, media unconverted, the child's private content in no parent request",
    () =>
      Effect.gen(function* () {
        const { folder, media, outcome, received } = yield* run(yield* tempDir)
        assert.strictEqual(outcome.text, "the site is ready, and the soil is nominal")
        assertCompactedMidTurn(received, folder)
        assertParentMediaUnconverted(media, received)
        // The child's response reached the parent; its private notes (offloaded to its own volume) did not.
        const parents = received.filter((request) => kindOf(request) !== "child")
        assert.include(JSON.stringify(parents[2]?.parts), "scout: the soil is nominal.")
        for (const request of parents) assert.notInclude(JSON.stringify(request.parts), childMarker)
        const children = received.filter((request) => kindOf(request) === "child")
        assert.isTrue(children.every((request) => !request.parts.some((part) => part._tag === "Media")))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_reference_scenario negative control: a hook that converts media (a JSON round trip) is caught on the parent's requests",
    () =>
      Effect.gen(function* () {
        const converting: Executor.Hooks = {
          beforeModelStep: (_context, history) =>
            Effect.succeed({
              ...history,
              task: history.task.map((part) =>
                part._tag === "Media"
                  ? (JSON.parse(JSON.stringify({ ...part, providerOptions: {} })) as Model.Part)
                  : part
              )
            })
        }
        const { media, received } = yield* run(yield* tempDir, { hooks: converting })
        assert.throws(() => assertParentMediaUnconverted(media, received))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_reference_scenario negative control: a parent bound without its compaction policy never compacts, and the request check fails",
    () =>
      Effect.gen(function* () {
        const { folder, received } = yield* run(yield* tempDir, { compaction: false })
        assert.throws(() => assertCompactedMidTurn(received, folder))
      }).pipe(Effect.scoped)
  )
})
