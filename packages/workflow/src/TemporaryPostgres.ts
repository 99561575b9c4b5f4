/**
 * A throwaway PostgreSQL server for tests, examples and benchmarks: made by
 * `initdb` in a temporary folder, listening on 127.0.0.1 at a free port,
 * stopped and deleted when the scope closes.
 *
 * PostgreSQL refuses to run as root: when this process is root, the server
 * runs as the `postgres` system user (Debian's package creates it) through
 * `runuser`, and the temporary folder is handed to that user. The server
 * loads `pg_stat_statements`, so a benchmark can count the statements a
 * workload sent.
 *
 * Node.js only (child processes). Nothing here is needed to run Tessera on
 * a real database: give the cluster layer a `PgClient` of your own.
 *
 * @since 0.1.0
 */
import { spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * Where the PostgreSQL server binaries are looked for, first to last
 * (Debian's and Ubuntu's layout); when `TESSERA_PG_BIN` is set, only there.
 * The Tessera repository's `vitest.workspace.ts` and `scripts/check.mjs`
 * look in the same places.
 *
 * @since 0.1.0
 * @category configuration
 */
export const binFolders: ReadonlyArray<string> =
  process.env.TESSERA_PG_BIN === undefined
    ? ["/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"]
    : [process.env.TESSERA_PG_BIN]

/**
 * The folder holding `initdb`, `pg_ctl` and `postgres`, or `undefined` when
 * no PostgreSQL server is installed here.
 *
 * @since 0.1.0
 * @category configuration
 */
export const findBinFolder = (): string | undefined =>
  binFolders.find((folder) => existsSync(join(folder, "initdb")) && existsSync(join(folder, "pg_ctl")))

/**
 * The server could not be made, started or stopped; `step` says which
 * command failed and `detail` carries its output.
 *
 * @since 0.1.0
 * @category errors
 */
export class PostgresFailed extends Schema.TaggedError<PostgresFailed>()("PostgresFailed", {
  step: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `temporary PostgreSQL: ${this.step} failed: ${this.detail}`
  }
}

/**
 * A running temporary server: where to connect, and its data folder.
 *
 * @since 0.1.0
 * @category models
 */
export interface TemporaryPostgres {
  readonly host: "127.0.0.1"
  readonly port: number
  readonly database: "postgres"
  readonly username: string
  readonly folder: string
  /** `postgres://<user>@127.0.0.1:<port>/postgres` */
  readonly url: string
}

const isRoot = (): boolean => typeof process.getuid === "function" && process.getuid() === 0

/** The user the server runs as: `postgres` under root, else whoever runs this process. */
const serverUser = (): string => (isRoot() ? "postgres" : (process.env.USER ?? "postgres"))

const run = (bin: string, command: string, args: ReadonlyArray<string>, step: string) =>
  Effect.suspend(() => {
    const [file, argv] = isRoot()
      ? ["runuser", ["-u", "postgres", "--", join(bin, command), ...args]]
      : [join(bin, command), [...args]]
    const result = spawnSync(file, argv, { encoding: "utf8", timeout: 60_000, cwd: tmpdir() })
    return result.status === 0
      ? Effect.succeed(result.stdout)
      : Effect.fail(
          new PostgresFailed({
            step,
            detail: `${result.error?.message ?? `exit ${result.status}`}: ${result.stdout}${result.stderr}`.slice(
              0,
              4000
            )
          })
        )
  })

/** A port the kernel just handed out on 127.0.0.1 (the server binds it next; a lost race is retried). */
const freePort = Effect.callback<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * Makes and starts a temporary server for the scope. Fails
 * {@link PostgresFailed} when no server is installed (see
 * {@link findBinFolder}) or a step fails; the folder is removed either way.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function* (options: { readonly maxConnections?: number } = {}) {
  const bin = findBinFolder()
  if (bin === undefined) {
    return yield* new PostgresFailed({ step: "find", detail: `no initdb/pg_ctl in ${binFolders.join(", ")}` })
  }
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const created = mkdtempSync(join(tmpdir(), "tessera-pg-"))
      if (isRoot()) {
        const ids = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" })
        const gids = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" })
        chownSync(created, Number(ids.stdout.trim()), Number(gids.stdout.trim()))
      }
      chmodSync(created, 0o700)
      return created
    }),
    (created) => Effect.sync(() => rmSync(created, { recursive: true, force: true }))
  )
  const data = join(folder, "data")
  const user = serverUser()
  yield* run(bin, "initdb", ["-D", data, "-U", user, "--auth=trust", "--no-sync", "-E", "UTF8"], "initdb")
  const settings = [
    "-c listen_addresses=127.0.0.1",
    `-k ${folder}`,
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    `-c max_connections=${options.maxConnections ?? 200}`,
    "-c shared_preload_libraries=pg_stat_statements",
    "-c pg_stat_statements.track=all"
  ]
  let port = 0
  for (let attempt = 1; ; attempt++) {
    port = yield* freePort
    const started = yield* Effect.result(
      run(
        bin,
        "pg_ctl",
        [
          "-D",
          data,
          "-l",
          join(folder, "server.log"),
          "-w",
          "-t",
          "60",
          "-o",
          `-p ${port} ${settings.join(" ")}`,
          "start"
        ],
        "pg_ctl start"
      )
    )
    if (started._tag === "Success") break
    if (attempt >= 3) return yield* started.failure
  }
  yield* Effect.addFinalizer(() =>
    Effect.ignore(run(bin, "pg_ctl", ["-D", data, "-m", "immediate", "-w", "-t", "30", "stop"], "pg_ctl stop"))
  )
  const server: TemporaryPostgres = {
    host: "127.0.0.1",
    port,
    database: "postgres",
    username: user,
    folder,
    url: `postgres://${user}@127.0.0.1:${port}/postgres`
  }
  return server
})
