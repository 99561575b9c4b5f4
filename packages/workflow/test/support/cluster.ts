/**
 * A small cluster for the tests and the benchmark: a temporary Postgres,
 * runner processes (`test/fixtures/runner.ts`) on loopback sharing one store
 * folder, and a client layer for the test process. Every process is killed
 * when the scope closes.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import * as path from "node:path"
import { Cluster, type TemporaryPostgres } from "@tessera/workflow"
import { Effect } from "effect"
import type { RunnerArgs } from "../fixtures/runner.ts"

const runnerScript = path.join(import.meta.dirname, "..", "fixtures", "runner.ts")

/** A port the kernel just handed out on 127.0.0.1 (bound to 0, then released for the runner to listen on). */
export const freePort = Effect.callback<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

export interface Runner {
  readonly index: number
  readonly port: number
  readonly process: ChildProcess
  /** Everything the process printed. */
  readonly output: () => string
  readonly exited: Promise<void>
}

export interface ClusterOptions {
  readonly store: string
  readonly log: string
  readonly idempotent?: boolean
  readonly pauseMs?: number
  readonly approvals?: boolean
}

/**
 * Starts runner process `index` of `script` with `args` (its one argument, as JSON, with the port it is to listen
 * on added) and waits until it printed `ready`; killed (SIGKILL) when the scope closes.
 */
export const spawnRunner = <Args extends object>(script: string, args: (port: number) => Args, index: number) =>
  Effect.gen(function* () {
    const port = yield* freePort
    const runner = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [script, JSON.stringify(args(port))], {
          stdio: ["ignore", "pipe", "pipe"]
        })
        let output = ""
        const collect = (chunk: Buffer) => {
          output += chunk.toString()
        }
        child.stdout?.on("data", collect)
        child.stderr?.on("data", collect)
        const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
        const started: Runner = { index, port, process: child, output: () => output, exited }
        return started
      }),
      (started) =>
        Effect.promise(() => {
          if (started.process.exitCode === null && started.process.signalCode === null) {
            started.process.kill("SIGKILL")
          }
          return started.exited
        })
    )
    yield* Effect.promise(
      () =>
        new Promise<void>((resolve, reject) => {
          const check = setInterval(() => {
            if (runner.output().includes("ready")) {
              clearInterval(check)
              resolve()
            } else if (runner.process.exitCode !== null || runner.process.signalCode !== null) {
              clearInterval(check)
              reject(new Error(`runner ${index} exited before it was ready: ${runner.output()}`))
            }
          }, 20)
        })
    )
    return runner
  })

/** Starts runner `index` (`test/fixtures/runner.ts`) and waits until it printed `ready`; SIGKILLed at scope end. */
export const startRunner = (postgres: TemporaryPostgres.TemporaryPostgres, options: ClusterOptions, index: number) =>
  spawnRunner(
    runnerScript,
    (port): RunnerArgs => ({
      postgres: postgres.url,
      store: options.store,
      log: options.log,
      port,
      idempotent: options.idempotent ?? true,
      pauseMs: options.pauseMs ?? 0,
      ...(options.approvals === undefined ? {} : { approvals: options.approvals })
    }),
    index
  )

/** Kills a runner with SIGKILL and waits for its exit. */
export const kill = (runner: Runner) =>
  Effect.promise(() => {
    runner.process.kill("SIGKILL")
    return runner.exited
  })

/** The client layer of the test process. */
export const client = (postgres: TemporaryPostgres.TemporaryPostgres) =>
  Cluster.layerClient({ postgres: { url: postgres.url } })
