/**
 * The one list of test projects. `vitest.config.ts` imports it (Vitest 5 no
 * longer reads this file by itself), and `scripts/test/workspace.test.ts`
 * fails when a folder under `packages/` is missing from it.
 */
import { existsSync } from "node:fs"
import { playwright } from "@vitest/browser-playwright"
import { defineProject } from "vitest/config"

const project = (name: string, root: string) =>
  defineProject({
    test: {
      name,
      root,
      include: ["test/**/*.test.ts"]
    }
  })

/** Package folders under `packages/` that have a test project. */
export const packageProjects: ReadonlyArray<string> = [
  "core",
  "artifacts",
  "runtime",
  "node",
  "browser",
  "ai-sdk",
  "mcp",
  "effect-ai",
  "pi",
  "workflow"
]

/**
 * The Chromium the browser project drives (Debian's `chromium` package;
 * Playwright's own browser download is not used). `TESSERA_CHROMIUM`
 * overrides the path.
 */
export const chromiumPath: string = process.env.TESSERA_CHROMIUM ?? "/usr/bin/chromium"

/**
 * Why the browser project is left out of this run, or `undefined` when it
 * runs. `npm test` installs Chromium first when it can (scripts/check.mjs);
 * when it could not, the project is skipped, and said so loudly.
 */
export const browserSkipped: string | undefined = existsSync(chromiumPath)
  ? undefined
  : `no Chromium at ${chromiumPath}: install it (Debian/Ubuntu: sudo apt-get install -y chromium) or set TESSERA_CHROMIUM`

// Said once per run: vitest's workers inherit the marker and stay quiet.
if (browserSkipped !== undefined && process.env.TESSERA_BROWSER_SKIP_SAID === undefined) {
  process.env.TESSERA_BROWSER_SKIP_SAID = "1"
  process.stderr.write(
    `\n${"!".repeat(78)}\n[tessera] SKIPPING THE BROWSER TEST PROJECT (packages/browser): ${browserSkipped}\n${"!".repeat(78)}\n\n`
  )
}

/**
 * Why the workflow package's cluster tests (`packages/workflow/test/cluster`:
 * runner processes on a temporary PostgreSQL) are left out of this run, or
 * `undefined` when they run. `npm test` installs PostgreSQL first when it
 * can (scripts/check.mjs); when it could not, only that project is skipped,
 * and said so loudly.
 */
// The folders `TemporaryPostgres.binFolders` (packages/workflow) searches, and scripts/check.mjs installs into.
const postgresFolders =
  process.env.TESSERA_PG_BIN === undefined
    ? ["17", "16", "15"].map((version) => `/usr/lib/postgresql/${version}/bin`)
    : [process.env.TESSERA_PG_BIN]

export const clusterSkipped: string | undefined = !postgresFolders.some(
  (folder) => existsSync(`${folder}/initdb`) && existsSync(`${folder}/pg_ctl`)
)
  ? `no PostgreSQL server (initdb, pg_ctl) in ${postgresFolders.join(", ")}: install it (Debian/Ubuntu: sudo apt-get install -y postgresql) or set TESSERA_PG_BIN`
  : undefined

if (clusterSkipped !== undefined && process.env.TESSERA_CLUSTER_SKIP_SAID === undefined) {
  process.env.TESSERA_CLUSTER_SKIP_SAID = "1"
  process.stderr.write(
    `\n${"!".repeat(78)}\n[tessera] SKIPPING THE CLUSTER TEST PROJECT (packages/workflow/test/cluster): ${clusterSkipped}\n${"!".repeat(78)}\n\n`
  )
}

const workflowProjects = [
  defineProject({
    test: {
      name: "workflow",
      root: "./packages/workflow",
      include: ["test/**/*.test.ts"],
      exclude: ["test/cluster/**"]
    }
  }),
  ...(clusterSkipped === undefined
    ? [
        defineProject({
          test: { name: "workflow-cluster", root: "./packages/workflow", include: ["test/cluster/**/*.test.ts"] }
        })
      ]
    : [])
]

const browserProject = defineProject({
  test: {
    name: "browser",
    root: "./packages/browser",
    include: ["test/**/*.test.ts"],
    browser: {
      enabled: true,
      headless: true,
      screenshotFailures: false,
      provider: playwright({ launchOptions: { executablePath: chromiumPath, args: ["--no-sandbox"] } }),
      instances: [{ browser: "chromium" }]
    }
  }
})

export default [
  ...packageProjects
    .filter((name) => name !== "browser" && name !== "workflow")
    .map((name) => project(name, `./packages/${name}`)),
  ...workflowProjects,
  ...(browserSkipped === undefined ? [browserProject] : []),
  project("examples", "./examples"),
  project("bench", "./bench"),
  project("workspace", "./scripts")
]
