/**
 * A small cluster on this machine: a temporary PostgreSQL, three runner
 * processes on loopback sharing one store folder, and this process as the
 * client that starts six tasks and waits for their answers. Halfway through,
 * one runner is killed with SIGKILL: its tasks move to the others, which
 * reuse every step it had finished, and every task still answers.
 *
 * Each task is a durable workflow (`@tessera/workflow`): each model step and
 * each tool call an activity, large tool results offloaded to the agent's
 * private volume, history compacted into summaries there, and a journal per
 * task in the shared folder. The model is the scripted one (no network).
 *
 * Needs a PostgreSQL server installed (Debian/Ubuntu: `apt-get install
 * postgresql`); the example starts and stops its own from a temporary
 * folder. State goes to $TESSERA_EXAMPLE_DIR, or to a fresh temporary folder.
 *
 * Run: node examples/cluster.ts
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createServer } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import { HostAuthority, Ids } from "@tessera/core"
import { NodeDigest, NodeDurableFiles } from "@tessera/node"
import { Compaction, Journal, Model, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Cluster, SharedStore, TaskHosting, TaskWorkflow, TemporaryPostgres, ToolCallKey } from "@tessera/workflow"
import { Effect, Fiber, Layer, Option, Schema } from "effect"
import type { WorkflowEngine } from "effect/workflow"

const agent = Schema.decodeUnknownSync(Ids.AgentId)("surveyor")
const storeId = Schema.decodeUnknownSync(Ids.StoreId)("survey-cluster")
const sites = ["north", "south", "east"] as const

// --- what every runner serves ---------------------------------------------------------------

/** The tool: measures a site (a large report). Its key makes a re-run after a crash return the first answer. */
const measure = Tool.make({
  name: "measure_site",
  description: "Measures one site and returns its full report",
  input: Schema.Struct({ site: Schema.String }),
  handler: ({ site }) =>
    Effect.map(ToolCallKey.current, (key) =>
      [
        `REPORT ${site}: within tolerance (${Option.isSome(key) ? "idempotent call" : "local call"})`,
        ...Array.from({ length: 80 }, (_, index) => `${site} sensor ${index + 1}: 21.${index % 10} C nominal`)
      ].join("\n")
    )
})

/** The model: measures each site not yet reported (reports survive compaction in the summary), then answers. */
const script: ScriptedModel.Script = (request) => {
  const text = request.parts
    .map((part) => (part._tag === "Text" ? part.text : part._tag === "ToolResult" ? part.content : ""))
    .join("\n")
  const reported = sites.filter((site) => text.includes(`REPORT ${site}`))
  if (Compaction.isSummaryRequest(request)) {
    return Model.response({ text: reported.map((site) => `REPORT ${site}: within tolerance`).join("; ") })
  }
  const next = sites.find((site) => !reported.includes(site))
  return next === undefined
    ? Model.response({ text: `All ${sites.length} sites are within tolerance.` })
    : Model.response({ toolCalls: [Model.toolCall(`measure-${next}`, "measure_site", { site: next })] })
}

const turnConfig = {
  tools: Tool.registry(measure),
  maxSteps: 20,
  offload: { threshold: 1_024, readTool: "read_artifact", destination: "Private" as const }
}
const gate = { policy: Compaction.threshold({ measure: "bytes", limit: 900, keepRecent: 0, pieceLimit: 20_000 }) }
const platform = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, NodeDigest.layer, HostAuthority.permissive)

// #region cluster-runner
const runnerLayer = (args: { readonly postgres: string; readonly store: string; readonly port: number }) =>
  TaskWorkflow.layer.pipe(
    // ClusterWorkflowEngine, the socket runner on host:port, messages and shard locks in Postgres
    Layer.provideMerge(Cluster.layer({ postgres: { url: args.postgres }, host: "127.0.0.1", port: args.port })),
    // TaskHosting and the artifact path policy, from the store every runner mounts
    Layer.provide(SharedStore.layer({ root: args.store, storeId, agent, config: turnConfig, gate })),
    Layer.provide(ScriptedModel.layer(script)),
    Layer.provide(platform)
  )
// #endregion cluster-runner

const runner = (args: { readonly postgres: string; readonly store: string; readonly port: number }) =>
  Effect.gen(function* () {
    yield* Layer.build(runnerLayer(args))
    process.stdout.write("ready\n")
    return yield* Effect.never
  }).pipe(Effect.scoped)

// --- the client: Postgres, three runners, six tasks ----------------------------------------

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

const startRunner = (postgres: string, store: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const args = JSON.stringify({ postgres, store, port: await freePort() })
      const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "runner", args], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      await new Promise<void>((resolve, reject) => {
        child.stdout?.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("ready")) resolve()
        })
        child.once("exit", (code) => reject(new Error(`a runner exited (${code}) before it was ready`)))
      })
      return child
    }),
    (child: ChildProcess) => Effect.sync(() => child.kill("SIGKILL"))
  )

// #region cluster-client
/** Starts the tasks from this process (a client: it serves none), kills a runner while they run, and waits. */
const runAcross = <A, E>(
  url: string,
  runners: ReadonlyArray<ChildProcess>,
  tasks: ReadonlyArray<Effect.Effect<A, E, WorkflowEngine.WorkflowEngine>>
) =>
  Effect.gen(function* () {
    const running = yield* Effect.forkChild(Effect.all(tasks, { concurrency: "unbounded" }))
    yield* Effect.sleep("400 millis")
    runners[0]?.kill("SIGKILL")
    console.log(`runner ${runners[0]?.pid} killed with SIGKILL while tasks were running`)
    return yield* Fiber.join(running)
  }).pipe(Effect.provide(Cluster.layerClient({ postgres: { url } })))
// #endregion cluster-client

const client = Effect.gen(function* () {
  const folder = process.env.TESSERA_EXAMPLE_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), "tessera-cluster-"))
  const store = path.join(folder, "store")
  const postgres = yield* TemporaryPostgres.make()
  console.log(`postgres on 127.0.0.1:${postgres.port}; shared store in ${store}`)
  const runners = yield* Effect.all(
    [0, 1, 2].map(() => startRunner(postgres.url, store)),
    { concurrency: 3 }
  )
  console.log(`3 runners joined (pids ${runners.map((child) => child.pid).join(", ")})`)
  const tasks = Array.from({ length: 6 }, (_, index) =>
    TaskWorkflow.run({
      task: Schema.decodeUnknownSync(Ids.TaskId)(`survey-${index + 1}`),
      prompt: `Survey ${sites.join(", ")} and tell me whether every site is within tolerance.`
    })
  )
  const answers = yield* runAcross(postgres.url, runners, tasks)
  for (const answer of answers) console.log(`${answer.task}: ${answer.text} (${answer.steps} model steps)`)
  const journals = path.join(store, "volumes", "journal")
  const entries = yield* Effect.forEach(answers, (answer) =>
    Journal.readEntries({ folder: journals, task: answer.task })
  )
  const count = (tag: string) => entries.flat().filter((entry) => entry._tag === tag).length
  console.log(
    `journals: ${count("ArtifactOffloaded")} results offloaded, ${count("SummaryStaged")} summaries staged, ` +
      `${count("TurnClosed")} of ${answers.length} turns closed`
  )
  yield* oneProcess(path.join(folder, "one-process"))
}).pipe(Effect.scoped, Effect.provide(NodeServices.layer))

// #region one-process
/** The same task in this process, on the in-memory workflow engine (no database). */
const oneProcess = (root: string) =>
  Effect.gen(function* () {
    const shared = yield* SharedStore.open({ root, storeId, agent, config: turnConfig, gate })
    const services = Layer.mergeAll(
      Layer.succeed(TaskHosting.TaskHosting)(shared.hosting),
      ArtifactPathPolicy.layer(shared.pathPolicy)
    )
    const task = Schema.decodeUnknownSync(Ids.TaskId)("survey-local")
    const answer = yield* TaskWorkflow.run({ task, prompt: "Survey every site." }).pipe(
      Effect.provide(TaskWorkflow.layerMemory.pipe(Layer.provide(services)))
    )
    console.log(`one process (WorkflowEngine.layerMemory): ${answer.task}: ${answer.text}`)
  }).pipe(Effect.provide(ScriptedModel.layer(script)), Effect.provide(platform))
// #endregion one-process

if (process.argv[2] === "runner") {
  NodeRuntime.runMain(runner(JSON.parse(process.argv[3] ?? "{}")))
} else {
  NodeRuntime.runMain(client)
}
