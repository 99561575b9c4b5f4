#!/usr/bin/env node
// Every check `npm test` runs, in order; the vitest run comes last so the
// output ends with its summary line. Stops at the first failing step.
import { spawnSync } from "node:child_process"
import { existsSync, mkdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const bin = (name) => join(root, "node_modules", ".bin", name)

// Tools that keep caches under the home folder (vitest's results, for one)
// write inside the checkout instead, so a check run leaves the user's home alone.
const xdg = join(root, "node_modules", ".cache", "xdg")
const env = { ...process.env }
for (const name of ["XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"]) {
  const folder = join(xdg, name.slice(4, -5).toLowerCase())
  mkdirSync(folder, { recursive: true })
  env[name] = folder
}

// The browser project drives Debian's Chromium (Playwright's own download
// cannot be relied on). Install it when missing and we may (root with
// apt-get, as in CI); otherwise say what to install: vitest.workspace.ts then
// leaves out the browser project, and says so loudly, never silently.
const chromium = process.env.TESSERA_CHROMIUM ?? "/usr/bin/chromium"
const ensureChromium = () => {
  if (existsSync(chromium)) return
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0
  const apt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0
  if (isRoot && apt && process.env.TESSERA_CHROMIUM === undefined) {
    process.stdout.write("\n[tessera] installing Chromium for the browser tests (apt-get install -y chromium)\n")
    const aptEnv = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
    for (const args of [["update"], ["install", "-y", "chromium"]]) {
      const result = spawnSync("apt-get", args, { cwd: root, env: aptEnv, stdio: "inherit" })
      if (result.status !== 0) break
    }
    if (existsSync(chromium)) return
  }
  const banner = "!".repeat(78)
  process.stdout.write(
    `\n${banner}\n[tessera] no Chromium at ${chromium}, and it could not be installed here` +
      `${isRoot ? "" : " (installing needs root)"}.\n[tessera] Install it (Debian/Ubuntu: sudo apt-get install -y chromium) or set ` +
      `TESSERA_CHROMIUM to a Chromium binary.\n[tessera] THE BROWSER TEST PROJECT WILL BE SKIPPED IN THIS RUN.\n${banner}\n`
  )
}

// The workflow package's cluster tests start their own PostgreSQL from a temporary folder
// (packages/workflow/src/TemporaryPostgres.ts looks in /usr/lib/postgresql/<version>/bin, or
// TESSERA_PG_BIN). Install Debian's server when it is missing and we may (root with apt-get, as in
// CI); otherwise say so: vitest.workspace.ts then leaves out only the cluster project, loudly.
const postgresFolders =
  process.env.TESSERA_PG_BIN === undefined
    ? ["17", "16", "15"].map((version) => `/usr/lib/postgresql/${version}/bin`)
    : [process.env.TESSERA_PG_BIN]
const hasPostgres = () => postgresFolders.some((folder) => existsSync(join(folder, "initdb")))
const ensurePostgres = () => {
  if (hasPostgres()) return
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0
  const apt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0
  if (isRoot && apt && process.env.TESSERA_PG_BIN === undefined) {
    process.stdout.write("\n[tessera] installing PostgreSQL for the cluster tests (apt-get install -y postgresql)\n")
    const aptEnv = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
    for (const args of [["update"], ["install", "-y", "postgresql"]]) {
      const result = spawnSync("apt-get", args, { cwd: root, env: aptEnv, stdio: "inherit" })
      if (result.status !== 0) break
    }
    if (hasPostgres()) return
  }
  const banner = "!".repeat(78)
  process.stdout.write(
    `\n${banner}\n[tessera] no PostgreSQL server in ${postgresFolders.join(", ")}, and it could not be installed here` +
      `${isRoot ? "" : " (installing needs root)"}.\n[tessera] Install it (Debian/Ubuntu: sudo apt-get install -y postgresql) or set ` +
      `TESSERA_PG_BIN to its bin folder.\n[tessera] THE CLUSTER TEST PROJECT (packages/workflow/test/cluster) WILL BE SKIPPED IN THIS RUN.\n${banner}\n`
  )
}

const steps = [
  ["type-check (tsc -b: sources, tests, type tests, examples)", bin("tsc"), ["-b"]],
  ["lint and format (biome ci)", bin("biome"), ["ci", "--colors=off", "--no-errors-on-unmatched", "."]],
  [
    "import cycles and package direction (dependency-cruiser)",
    bin("depcruise"),
    ["--config", ".dependency-cruiser.cjs", "--output-type", "err", "packages", "examples", "scripts", "bench"]
  ],
  ["tests, property tests and example smoke runs (vitest)", bin("vitest"), ["run", ...process.argv.slice(2)]]
]

ensureChromium()
ensurePostgres()

for (const [title, command, args] of steps) {
  process.stdout.write(`\n[tessera] ${title}\n`)
  const result = spawnSync(command, args, { cwd: root, env, stdio: "inherit" })
  if (result.error) throw result.error
  if (result.status !== 0) {
    process.stdout.write(`[tessera] failed: ${title}\n`)
    process.exit(result.status ?? 1)
  }
}
