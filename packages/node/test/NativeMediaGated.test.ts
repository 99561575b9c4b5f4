/**
 * The reference's headline regression, through the whole gated path: a
 * runtime opened with its private volume runs a stock turn behind the entry
 * gate (`TaskExecution.runTurn`) whose task carries native media parts and
 * which compacts mid-turn. The turn completes, the summary lands on the
 * agent-owned private volume, and every request reaches the adapter with
 * the harness's own media objects, unconverted.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import {
  Compaction,
  EntryGate,
  type Executor,
  FilesystemTaskRuntime,
  History,
  Journal,
  Model,
  TaskExecution,
  TaskHost,
  Tool
} from "@tessera/runtime"
import { Effect, Layer, Option, Schema } from "effect"
import { assertMediaUnconverted, mediaParts } from "./support/media.ts"

const agent = Schema.decodeUnknownSync(Ids.AgentId)("viewer")
const task = Schema.decodeUnknownSync(Ids.TaskId)("media-gated")

const produce = Tool.make({
  name: "produce",
  description: "Produces a large result",
  input: Schema.Struct({ size: Schema.Int }),
  handler: ({ size }) => Effect.succeed("m".repeat(size))
})

const runGated = (hooks: Executor.Hooks | undefined) =>
  Effect.gen(function* () {
    const root = fs.mkdtempSync(nodePath.join(os.tmpdir(), "tessera-media-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true })))
    const host = yield* TaskHost.open({ root })
    const privateRef = yield* host.store.create({
      id: Schema.decodeUnknownSync(Ids.VolumeId)("viewer-private"),
      kind: "AgentPrivate",
      owner: Volume.agentOwner(agent)
    })
    const journalRef = yield* host.store.create({
      id: Schema.decodeUnknownSync(Ids.VolumeId)("journal"),
      kind: "Journal",
      owner: Volume.hostOwner
    })
    const scope = yield* host.issueScope(task, [{ volume: privateRef, access: ["read", "write"] }], agent)
    const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(privateRef), scope })
    const context = yield* runtime.bindTask({ scope })
    const binding = yield* EntryGate.bind(context, {
      policy: Compaction.threshold({ measure: "bytes", limit: 8_000, keepRecent: 0 })
    })
    const media = mediaParts()
    const received: Array<Model.ModelRequest> = []
    let turnSteps = 0
    const model = Model.layerFromGenerate((request) =>
      Effect.sync(() => {
        received.push(request)
        if (Compaction.isSummaryRequest(request)) return Model.response({ text: "two large results were produced" })
        turnSteps++
        return turnSteps <= 2
          ? Model.response({ toolCalls: [Model.toolCall(`c${turnSteps}`, "produce", { size: 6_000 })] })
          : Model.response({ text: "a red pixel and a report" })
      })
    )
    const history = History.make([Model.text("user", "What is in these?"), ...media])
    const outcome = yield* TaskExecution.runTurn(binding, history, {
      tools: Tool.registry(produce),
      maxSteps: 5,
      ...(hooks === undefined ? {} : { hooks })
    }).pipe(Effect.provide(Layer.merge(model, Journal.layer({ folder: yield* host.store.folderOf(journalRef), task }))))
    return { outcome, media, received, root }
  })

const layer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

describe("native media through the gated, compacting path", () => {
  it.effect(
    "a runtime opened with its private volume compacts mid-turn; media reach the adapter unconverted on every request",
    () =>
      Effect.gen(function* () {
        const { media, outcome, received, root } = yield* runGated(undefined)
        assert.strictEqual(outcome.text, "a red pixel and a report")
        assert.strictEqual(received.length, 4, "two tool steps, one summary request, the answer")
        assert.isTrue(Compaction.isSummaryRequest(received[2] as Model.ModelRequest))
        const last = received[3] as Model.ModelRequest
        assert.isTrue(last.parts.some((part) => part._tag === "FileReference" && part.path.startsWith("summaries/")))
        assert.isTrue(fs.existsSync(nodePath.join(root, "volumes", "viewer-private", "summaries")))
        assertMediaUnconverted(media, received)
      }).pipe(Effect.scoped, Effect.provide(layer))
  )

  it.effect("negative control: the same gated turn with a converting hook (JSON round trip of media) is caught", () =>
    Effect.gen(function* () {
      const converting: Executor.Hooks = {
        beforeModelStep: (_context, history) =>
          Effect.succeed({
            ...history,
            task: history.task.map((part) =>
              part._tag === "Media"
                ? (JSON.parse(
                    JSON.stringify(part, (_k, v: unknown) => (typeof v === "bigint" ? Number(v) : v))
                  ) as Model.Part)
                : part
            )
          })
      }
      const { media, received } = yield* runGated(converting)
      assert.throws(() => assertMediaUnconverted(media, received))
    }).pipe(Effect.scoped, Effect.provide(layer))
  )
})
