/**
 * Tools of a Model Context Protocol server as Tessera tools.
 *
 * This example starts an MCP server (built with the reference
 * `@modelcontextprotocol/sdk`, in `examples/servers/report-server.ts`) on
 * stdio, connects effect's own MCP client to it, and offers the server's
 * tools to a turn of the local harness. The scripted model calls the
 * server's `incident_log`; the large result is an ordinary tool result of
 * the turn, so it is offloaded to the task's private volume (scrubbed of
 * the credential in it first) and the model sees only the pointer.
 *
 * State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/mcp-tools.ts
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { DefaultRedactor } from "@tessera/artifacts"
import { Ids } from "@tessera/core"
import { McpTools } from "@tessera/mcp"
import { LocalHarness, NodeDurableFiles } from "@tessera/node"
import { type EntryGate, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Schema } from "effect"
import { McpClient, McpProtocol } from "effect/ai"
import { ChildProcess } from "effect/process"

const stateDir = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-mcp-"))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("mcp-1")
const server = fileURLToPath(new URL("./servers/report-server.ts", import.meta.url))

const mcp = McpClient.layerStdio({
  name: "tessera-example",
  version: "0.1.0",
  protocol: McpProtocol.v2025_11_25,
  command: ChildProcess.make(process.execPath, [server])
})

const sent: Array<Model.ModelRequest> = []
const script: ScriptedModel.Script = (request) => {
  sent.push(request)
  return sent.length === 1
    ? Model.response({
        toolCalls: [Model.toolCall("call-1", "incidents__incident_log", { service: "billing", lines: 400 })]
      })
    : Model.response({ text: "Billing was restarted 400 times by the deploy bot." })
}

// #region mcp-tools
const discover = Effect.gen(function* () {
  const client = yield* McpClient.McpClient
  return yield* McpTools.tools(client, { prefix: "incidents__" })
})

const turn = (binding: EntryGate.TaskBinding, tools: ReadonlyArray<Tool.Tool>) =>
  TaskExecution.runTurn(binding, History.make([Model.text("user", "What happened to billing?")]), {
    tools: Tool.registry(...tools),
    maxSteps: 4,
    offload: { threshold: 4_000, readTool: "read_artifact", destination: "Private" }
  })
// #endregion mcp-tools

const program = Effect.gen(function* () {
  const client = yield* McpClient.McpClient
  const tools = yield* discover
  console.log(`MCP server ${client.serverInfo?.name ?? "?"} offers: ${tools.map((tool) => tool.name).join(", ")}`)
  const harness = yield* LocalHarness.open({ stateDir, namespace: "mcp", agent })
  const outcome = yield* harness
    .withTask(task, (binding) => turn(binding, tools))
    .pipe(Effect.provide(Layer.merge(ScriptedModel.layer(script), DefaultRedactor.layer())))
  console.log(`answer: ${outcome.text}`)
  const result = sent[1]?.parts.find((part) => part._tag === "ToolResult")
  console.log(`the model saw: ${result?._tag === "ToolResult" ? result.content.slice(0, 120) : "nothing"}...`)
  const folder = path.join(harness.folder, "volumes", harness.volumes.scratch.volume, "artifacts", "tool-results")
  const files = fs.readdirSync(folder)
  const stored = files.map((file) => fs.readFileSync(path.join(folder, file), "utf8"))
  console.log(
    `artifacts: ${files.join(", ")}; ${stored[0]?.split("\n").length ?? 0} lines; credentials in them: ${stored.some((body) => body.includes("AKIAIOSFODNN7EXAMPLE")) ? "YES" : "none (redacted)"}`
  )
  console.log(
    `model requests carrying the log body: ${sent.filter((request) => JSON.stringify(request.parts).includes("billing 399:")).length}`
  )
})

Effect.runPromise(
  Effect.scoped(program).pipe(
    Effect.provide(
      Layer.mergeAll(mcp.pipe(Layer.provide(NodeServices.layer)), NodeServices.layer, NodeDurableFiles.layer)
    )
  )
).then(
  () => {
    if (process.env.TESSERA_EXAMPLE_DIR === undefined) fs.rmSync(stateDir, { recursive: true, force: true })
  },
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  }
)
