import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { McpTools } from "@tessera/mcp"
import { NodeDurableFiles } from "@tessera/node"
import {
  EntryGate,
  FilesystemTaskRuntime,
  History,
  Journal,
  Model,
  TaskExecution,
  TaskHost,
  Tool,
  VolumeStore
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, Schema } from "effect"
import { McpClient, McpProtocol } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { ChildProcess } from "effect/process"
import { serveHttp } from "./fixtures/reportServer.ts"

const fixture = fileURLToPath(new URL("./fixtures/reportServer.ts", import.meta.url))
const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)
const platformLayer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

const stdioClient = McpClient.layerStdio({
  name: "tessera-test",
  version: "0.1.0",
  protocol: McpProtocol.v2025_11_25,
  command: ChildProcess.make(process.execPath, [fixture, "stdio"])
}).pipe(Layer.provide(NodeServices.layer))

const httpClient = (url: string) =>
  McpClient.layerHttp({ name: "tessera-test", version: "0.1.0", protocol: McpProtocol.v2025_11_25, url }).pipe(
    Layer.provide(FetchHttpClient.layer)
  )

const offload = { threshold: 4_000, readTool: "read_artifact", destination: "Private" } as const

/**
 * A turn of a bound task whose scripted model calls the MCP tool
 * `reports__big_report` once (600 lines) and then answers; returns what
 * the model was sent and what landed on disk.
 */
const turnWithMcp = (tools: Tool.Registry, config: { readonly offload?: typeof offload }) =>
  Effect.acquireUseRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "tessera-mcp-"))),
    (root) => turnIn(root, tools, config),
    (root) => Effect.sync(() => fs.rmSync(root, { recursive: true, force: true }))
  )

const turnIn = (root: string, tools: Tool.Registry, config: { readonly offload?: typeof offload }) =>
  Effect.gen(function* () {
    const host = yield* TaskHost.open({ root })
    const privateRef = yield* host.store.create({
      id: volumeId("researcher-private"),
      kind: "AgentPrivate",
      owner: Volume.agentOwner(agent)
    })
    const journalRef = yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
    const scope = yield* host.issueScope(task, [{ volume: privateRef, access: ["read", "write"] as const }], agent)
    const runtime = yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(privateRef), scope })
    const binding = yield* EntryGate.bind(yield* runtime.bindTask({ scope, output: Option.none() }), {
      policy: { _tag: "Disabled" }
    })
    const journalFolder = yield* host.store.folderOf(journalRef)
    let step = 0
    const sent: Array<Model.ModelRequest> = []
    const script: ScriptedModel.Script = (request) => {
      sent.push(request)
      step++
      return step === 1
        ? Model.response({ toolCalls: [Model.toolCall("mcp-1", "reports__big_report", { lines: 600 })] })
        : Model.response({ text: "The report says every service is ok." })
    }
    const outcome = yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "Read the report.")]), {
      tools,
      maxSteps: 4,
      ...config
    }).pipe(
      Effect.provide(
        Layer.mergeAll(
          ScriptedModel.layer(script),
          Journal.layer({ folder: journalFolder, task }),
          DefaultRedactor.layer()
        )
      )
    )
    const artifacts = path.join(root, VolumeStore.volumesFolder, privateRef.volume, "artifacts", "tool-results")
    const stored = fs.existsSync(artifacts)
      ? fs.readdirSync(artifacts).map((file) => fs.readFileSync(path.join(artifacts, file), "utf8"))
      : []
    const journal = fs.readFileSync(path.join(journalFolder, Journal.fileName(task)), "utf8")
    return { outcome, sent, stored, journal }
  })

const requestText = (request: Model.ModelRequest | undefined): string => JSON.stringify(request?.parts ?? [])

const mcpRegistry = McpClient.McpClient.pipe(
  Effect.flatMap((client) => McpTools.tools(client, { prefix: "reports__" })),
  Effect.map((tools) => Tool.registry(...tools))
)

const assertOffloaded = (result: Effect.Success<ReturnType<typeof turnIn>>) => {
  assert.strictEqual(result.outcome.text, "The report says every service is ok.")
  assert.strictEqual(result.sent.length, 2)
  const second = requestText(result.sent[1])
  assert.include(second, "[artifact] path=")
  assert.include(second, "read_artifact")
  assert.notInclude(second, "line 599:", "the body is behind the pointer")
  assert.notInclude(second, "AKIAIOSFODNN7EXAMPLE")
  assert.strictEqual(result.stored.length, 1)
  assert.include(result.stored[0], "line 599: service ok")
  assert.notInclude(result.stored[0], "AKIAIOSFODNN7EXAMPLE", "scrubbed before it was written")
  assert.include(result.journal, '"_tag":"ArtifactOffloaded"')
  assert.include(result.journal, '"name":"reports__big_report"')
}

describe("MCP tools (effect/ai McpClient against the reference @modelcontextprotocol/sdk server)", () => {
  it(
    "mcp_stdio_offload: a server on stdio; the large result of its tool is offloaded, scrubbed before disk, and the model sees the pointer",
    () =>
      Effect.runPromise(
        Effect.gen(function* () {
          const tools = yield* mcpRegistry
          return yield* turnWithMcp(tools, { offload })
        }).pipe(Effect.provide(Layer.merge(stdioClient, platformLayer)), Effect.map(assertOffloaded))
      ),
    60_000
  )

  it("mcp_http_offload: a server on loopback Streamable HTTP; the same turn offloads the same way", async () => {
    const server = await serveHttp()
    try {
      await Effect.runPromise(
        Effect.gen(function* () {
          const tools = yield* mcpRegistry
          return yield* turnWithMcp(tools, { offload })
        }).pipe(Effect.provide(Layer.merge(httpClient(server.url), platformLayer)), Effect.map(assertOffloaded))
      )
    } finally {
      await server.close()
    }
  }, 60_000)

  it(
    "negative control: the same stdio turn without offload sends the whole report to the model",
    () =>
      Effect.runPromise(
        Effect.gen(function* () {
          const tools = yield* mcpRegistry
          const result = yield* turnWithMcp(tools, {})
          assert.strictEqual(result.stored.length, 0)
          assert.include(requestText(result.sent[1]), "line 599: service ok")
          assert.notInclude(result.journal, "ArtifactOffloaded")
        }).pipe(Effect.provide(Layer.merge(stdioClient, platformLayer)))
      ),
    60_000
  )

  it(
    "listing: names get the prefix, the server's JSON Schema is sent as given, errors become tool-error results",
    () =>
      Effect.runPromise(
        Effect.gen(function* () {
          const client = yield* McpClient.McpClient
          const tools = yield* McpTools.tools(client, { prefix: "reports__" })
          assert.deepStrictEqual(
            tools.map((tool) => tool.name),
            ["reports__big_report", "reports__broken"]
          )
          const big = tools[0] as Tool.Tool
          assert.deepStrictEqual(big.spec.inputSchema.required, ["lines"])
          const broken = yield* (tools[1] as Tool.Tool).run({})
          assert.deepStrictEqual(broken.failure, Option.some("Failed"))
          assert.include(broken.content, "the report store is offline")
          const notObject = yield* big.run([1, 2])
          assert.deepStrictEqual(notObject.failure, Option.some("InvalidInput"))
          assert.include(notObject.content, "an array")
          const rejected = yield* big.run({ lines: "many" })
          assert.deepStrictEqual(rejected.failure, Option.some("Failed"), "the server's own validation refuses it")
          const small = yield* big.run({ lines: 2 })
          assert.deepStrictEqual(small.failure, Option.none())
          assert.strictEqual(small.content.split("\n").length, 2)
        }).pipe(Effect.provide(stdioClient))
      ),
    60_000
  )
})
