/**
 * Scale-out: tasks per minute on the cluster with 1, 2 and 3 runner
 * processes (`ScaleOutRunner.ts`) on this machine, and how the database
 * load grows with them: statements (`pg_stat_statements`) and transactions
 * (`pg_stat_database`) per model step.
 *
 * Each runner count gets a fresh temporary PostgreSQL and store. One task
 * runs first, untimed (the cluster creates its tables, the runners warm
 * up); then the statistics are reset and `tasks` tasks are started at once
 * from a client in this process; the clock runs from the first start to the
 * last answer. The client's own polling for replies is part of the load, as
 * it is in a deployment.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createServer } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { PgClient } from "@effect/sql-pg"
import { Ids } from "@tessera/core"
import { Cluster, TaskWorkflow, TemporaryPostgres } from "@tessera/workflow"
import { Effect, Redacted, Schema } from "effect"
import { Reactivity } from "effect/reactivity"

export interface ScaleOutArgs {
  readonly tasks: number
  readonly calls: number
  readonly runners: ReadonlyArray<number>
}

/** What `npm run bench` runs: 30 tasks of 6 tool calls (7 model steps each), on 1, 2 and 3 runners. */
export const benchArgs: ScaleOutArgs = { tasks: 30, calls: 6, runners: [1, 2, 3] }

export interface ScaleOutRow {
  readonly runners: number
  readonly tasks: number
  readonly seconds: number
  readonly tasksPerMinute: number
  /** Model steps of the timed tasks (the journal's count). */
  readonly steps: number
  /** Statements Postgres executed during the timed run (`pg_stat_statements`, every statement counted). */
  readonly statements: number
  /** Transactions committed or rolled back during the timed run (`pg_stat_database`). */
  readonly transactions: number
}

export interface ScaleOutResult {
  readonly cores: number
  readonly rows: ReadonlyArray<ScaleOutRow>
}

/** The report's section for a result (Markdown lines). */
export const section = (result: ScaleOutResult): ReadonlyArray<string> => [
  "## Scale-out on the cluster (task workflows over Postgres)",
  "",
  `Tasks per minute with 1, 2 and 3 runner processes on this ${result.cores}-core machine, each count on a fresh ` +
    "temporary PostgreSQL and store (`bench/src/ScaleOut.ts`, job `scale-out`): " +
    `${result.rows[0]?.tasks ?? 0} tasks started at once, each 7 model steps and 6 tool calls with offload and ` +
    "compaction. Statements are every statement Postgres executed during the timed run (`pg_stat_statements`), " +
    "transactions those `pg_stat_database` counted, both divided by the model steps.",
  "",
  "| Runners | Tasks | Time | Tasks per minute | Model steps | Statements | Statements per step | Transactions per step |",
  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ...result.rows.map(
    (row) =>
      `| ${row.runners} | ${row.tasks} | ${row.seconds.toFixed(1)} s | ${row.tasksPerMinute.toFixed(0)} | ${row.steps} | ` +
      `${row.statements} | ${(row.statements / row.steps).toFixed(1)} | ${(row.transactions / row.steps).toFixed(1)} |`
  )
]

const runnerEntry = path.join(path.dirname(fileURLToPath(import.meta.url)), "ScaleOutRunner.ts")
const decodeTask = Schema.decodeUnknownSync(Ids.TaskId)

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
      const child = spawn(
        process.execPath,
        [runnerEntry, JSON.stringify({ postgres, store, port: await freePort() })],
        { stdio: ["ignore", "pipe", "inherit"] }
      )
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

const counters = (sql: PgClient.PgClient) =>
  Effect.gen(function* () {
    const [statements] = yield* sql<{
      readonly calls: string | null
    }>`select sum(calls)::text as calls from pg_stat_statements`
    const [transactions] = yield* sql<{ readonly count: string }>`
      select (xact_commit + xact_rollback)::text as count from pg_stat_database where datname = current_database()`
    return { statements: Number(statements?.calls ?? 0), transactions: Number(transactions?.count ?? 0) }
  })

const measure = (args: ScaleOutArgs, runners: number) =>
  Effect.gen(function* () {
    const folder = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "tessera-scale-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const pg = yield* TemporaryPostgres.make()
    const sql = yield* PgClient.make({ url: Redacted.make(pg.url), maxConnections: 1 })
    yield* sql`create extension if not exists pg_stat_statements`
    yield* Effect.all(
      Array.from({ length: runners }, () => startRunner(pg.url, path.join(folder, "store"))),
      { concurrency: "unbounded" }
    )
    const run = (name: string) => TaskWorkflow.run({ task: decodeTask(name), prompt: `records:${args.calls}` })
    return yield* Effect.gen(function* () {
      yield* run("warm-up")
      yield* sql`select pg_stat_statements_reset()`
      yield* sql`select pg_stat_reset()`
      // The statistics collector publishes counters with a delay; read both ends after the same pause.
      yield* Effect.sleep("700 millis")
      const before = yield* counters(sql)
      const started = performance.now()
      const answers = yield* Effect.all(
        Array.from({ length: args.tasks }, (_, index) => run(`task-${index + 1}`)),
        { concurrency: "unbounded" }
      )
      const seconds = (performance.now() - started) / 1000
      yield* Effect.sleep("700 millis")
      const after = yield* counters(sql)
      const row: ScaleOutRow = {
        runners,
        tasks: args.tasks,
        seconds,
        tasksPerMinute: (args.tasks / seconds) * 60,
        steps: answers.reduce((sum, answer) => sum + answer.steps, 0),
        statements: after.statements - before.statements,
        transactions: after.transactions - before.transactions
      }
      return row
    }).pipe(Effect.provide(Cluster.layerClient({ postgres: { url: pg.url } })))
  }).pipe(Effect.scoped)

export const run = (args: ScaleOutArgs): Promise<ScaleOutResult> =>
  Effect.runPromise(
    Effect.forEach(args.runners, (runners) => measure(args, runners)).pipe(
      Effect.map((rows) => ({ cores: os.availableParallelism(), rows })),
      Effect.provide(NodeServices.layer),
      Effect.provide(Reactivity.layer)
    )
  )
