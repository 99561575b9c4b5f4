/**
 * A runner process of the scale-out benchmark (see `ScaleOut.ts`): serves
 * the task workflow on the shared store until it is killed, and prints
 * `ready` once it joined the cluster. Argument: `{ postgres, store, port }`
 * as JSON.
 *
 * Each task calls `fetch_record` for records 1 to `calls` (named in its
 * prompt, `records:<calls>`), one call per model step, each result over the
 * offload threshold, and compacts on the agent's private volume.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { HostAuthority, Ids } from "@tessera/core"
import { NodeDigest, NodeDurableFiles } from "@tessera/node"
import { Compaction, Model, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Cluster, SharedStore, TaskWorkflow } from "@tessera/workflow"
import { Effect, Layer, Schema } from "effect"

export const storeId = Schema.decodeUnknownSync(Ids.StoreId)("scale-out")
export const agent = Schema.decodeUnknownSync(Ids.AgentId)("bench")

const fetchRecord = Tool.make({
  name: "fetch_record",
  description: "Fetches one record",
  input: Schema.Struct({ n: Schema.Int }),
  handler: ({ n }) => Effect.succeed(`<record ${n}> ${"r".repeat(2_000)}`)
})

const seen = (request: Model.ModelRequest): number => {
  let count = 0
  for (const part of request.parts) {
    const text = part._tag === "Text" ? part.text : part._tag === "ToolResult" ? part.content : ""
    for (const match of text.matchAll(/<record (\d+)>/g)) count = Math.max(count, Number(match[1]))
  }
  return count
}

const script: ScriptedModel.Script = (request) => {
  const done = seen(request)
  if (Compaction.isSummaryRequest(request)) return Model.response({ text: `<record ${done}> seen so far` })
  const prompt = request.parts.find((part) => part._tag === "Text" && part.text.startsWith("records:"))
  const calls = prompt?._tag === "Text" ? Number(prompt.text.slice("records:".length)) : 0
  return done >= calls
    ? Model.response({ text: `fetched ${done} records` })
    : Model.response({ toolCalls: [Model.toolCall(`fetch-${done + 1}`, "fetch_record", { n: done + 1 })] })
}

const runner = (args: { readonly postgres: string; readonly store: string; readonly port: number }) =>
  Effect.gen(function* () {
    yield* Layer.build(
      TaskWorkflow.layer.pipe(
        Layer.provideMerge(Cluster.layer({ postgres: { url: args.postgres }, host: "127.0.0.1", port: args.port })),
        Layer.provide(
          SharedStore.layer({
            root: args.store,
            storeId,
            agent,
            config: {
              tools: Tool.registry(fetchRecord),
              maxSteps: 100,
              offload: { threshold: 1_024, readTool: "read_artifact", destination: "Private" }
            },
            gate: {
              policy: Compaction.threshold({ measure: "bytes", limit: 2_000, keepRecent: 0, pieceLimit: 20_000 })
            }
          })
        ),
        Layer.provide(ScriptedModel.layer(script)),
        Layer.provide(
          Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, NodeDigest.layer, HostAuthority.permissive)
        )
      )
    )
    process.stdout.write("ready\n")
    return yield* Effect.never
  }).pipe(Effect.scoped)

if (process.argv[2] !== undefined) NodeRuntime.runMain(runner(JSON.parse(process.argv[2])))
