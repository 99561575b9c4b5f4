import { spawnSync } from "node:child_process"
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import projects, { browserSkipped, clusterSkipped, packageProjects } from "../../vitest.workspace.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

const packageFolders = readdirSync(join(root, "packages")).filter((name) =>
  statSync(join(root, "packages", name)).isDirectory()
)

describe("vitest.workspace.ts", () => {
  it("lists a test project for every folder under packages/", () => {
    const missing = packageFolders.filter((name) => !packageProjects.includes(name))
    assert.deepStrictEqual(missing, [], `package folders missing from vitest.workspace.ts: ${missing.join(", ")}`)
  })

  it("lists no project whose folder does not exist", () => {
    const stale = packageProjects.filter((name) => !packageFolders.includes(name))
    assert.deepStrictEqual(stale, [])
  })

  it("is the list vitest.config.ts runs", async () => {
    const { default: config } = await import("../../vitest.config.ts")
    assert.strictEqual(config.test?.projects, projects)
    const roots = projects.map((project) => project.test?.root)
    // The browser project is left out only when Chromium is missing, and that run says so loudly.
    for (const name of packageProjects) {
      if (name !== "browser" || browserSkipped === undefined) assert.include(roots, `./packages/${name}`)
    }
  })
})

/** The project names vitest.workspace.ts yields in a fresh Node process with `chromium` as the browser's path, and its stderr. */
const projectsWith = (chromium: string, extraEnv: Record<string, string> = {}) => {
  const { TESSERA_BROWSER_SKIP_SAID: _, TESSERA_CLUSTER_SKIP_SAID: __, ...env } = process.env
  const url = pathToFileURL(join(root, "vitest.workspace.ts")).href
  const result = spawnSync(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      `const m = await import(${JSON.stringify(url)}); console.log(JSON.stringify(m.default.map((p) => p.test.name)))`
    ],
    { cwd: root, env: { ...env, TESSERA_CHROMIUM: chromium, ...extraEnv }, encoding: "utf8" }
  )
  return { names: JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "[]") as Array<string>, stderr: result.stderr }
}

describe("the cluster project without PostgreSQL", () => {
  it("cluster_skip_is_loud: with no PostgreSQL server, only the cluster project is left out, and stderr says so once", () => {
    const { names, stderr } = projectsWith(process.execPath, { TESSERA_PG_BIN: join(root, "no-such-postgres") })
    assert.include(names, "workflow")
    assert.notInclude(names, "workflow-cluster")
    assert.include(names, "browser")
    assert.strictEqual(stderr.split("SKIPPING THE CLUSTER TEST PROJECT").length - 1, 1, stderr)
    assert.include(stderr, "apt-get install -y postgresql")
  })

  it("control: with the server installed here, the cluster project runs and nothing is said", () => {
    if (clusterSkipped !== undefined) return
    const { names, stderr } = projectsWith(process.execPath)
    assert.include(names, "workflow-cluster")
    assert.notInclude(stderr, "SKIPPING THE CLUSTER")
  })
})

describe("the browser project without Chromium", () => {
  it("browser_skip_is_loud: with no Chromium, only the browser project is left out, and stderr says so once", () => {
    const { names, stderr } = projectsWith(join(root, "no-such-chromium"))
    assert.deepStrictEqual(names, [
      "core",
      "artifacts",
      "runtime",
      "node",
      "ai-sdk",
      "mcp",
      "effect-ai",
      "pi",
      "workflow",
      ...(clusterSkipped === undefined ? ["workflow-cluster"] : []),
      "examples",
      "bench",
      "workspace"
    ])
    assert.strictEqual(stderr.split("SKIPPING THE BROWSER TEST PROJECT").length - 1, 1, stderr)
    assert.include(stderr, "apt-get install -y chromium")
  })

  it("control: with a Chromium at the path, the browser project runs and nothing is said", () => {
    const { names, stderr } = projectsWith(process.execPath)
    assert.include(names, "browser")
    assert.notInclude(stderr, "SKIPPING")
  })
})

/**
 * Each package's layer, lowest first; a package may depend only on packages
 * of a lower layer. node and browser are two platforms side by side; the
 * ecosystem adapters (ai-sdk, mcp, effect-ai, pi) come after node: their sources need only
 * runtime, their tests use node for real durable files. The workflow package
 * (tasks on Effect's workflow engine and cluster) hosts tasks on Node runners:
 * it builds on node.
 */
const layers: Record<string, number> = {
  core: 0,
  artifacts: 1,
  runtime: 2,
  node: 3,
  browser: 3,
  "ai-sdk": 4,
  mcp: 4,
  "effect-ai": 4,
  pi: 4,
  workflow: 4
}
const layerOf = (name: string): number => layers[name] ?? Number.POSITIVE_INFINITY

type Manifest = Partial<Record<"dependencies" | "devDependencies" | "peerDependencies", Record<string, string>>>

/** Every workspace dependency (of any kind) that does not point down the layers, as `from -> to (kind)`. */
const upwardDependencies = (manifests: Record<string, Manifest>): Array<string> =>
  Object.entries(manifests).flatMap(([from, manifest]) =>
    (["dependencies", "devDependencies", "peerDependencies"] as const).flatMap((kind) =>
      Object.keys(manifest[kind] ?? {})
        .filter((name) => name.startsWith("@tessera/"))
        .map((name) => name.slice("@tessera/".length))
        .filter((to) => layerOf(to) >= layerOf(from))
        .map((to) => `${from} -> ${to} (${kind})`)
    )
  )

const workspaceManifests = (): Record<string, Manifest> =>
  Object.fromEntries(
    Object.keys(layers).map((name) => [
      name,
      JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8"))
    ])
  )

describe("workspace package graph", () => {
  it("has the packages in the layer list, and no other", () => {
    assert.deepStrictEqual([...packageFolders].sort(), Object.keys(layers).sort())
  })

  it("points one way, dev dependencies included, so pnpm sees no cycle", () => {
    assert.deepStrictEqual(upwardDependencies(workspaceManifests()), [])
  })

  it("negative control: a runtime dev dependency on the node package is reported", () => {
    const manifests = workspaceManifests()
    const runtime = manifests.runtime ?? {}
    const broken = {
      ...manifests,
      runtime: { ...runtime, devDependencies: { ...runtime.devDependencies, "@tessera/node": "workspace:^" } }
    }
    assert.deepStrictEqual(upwardDependencies(broken), ["runtime -> node (devDependencies)"])
  })

  it("negative control: a browser dependency on the node package (a platform on a platform) is reported", () => {
    const manifests = workspaceManifests()
    const browser = manifests.browser ?? {}
    const broken = {
      ...manifests,
      browser: { ...browser, dependencies: { ...browser.dependencies, "@tessera/node": "workspace:^" } }
    }
    assert.deepStrictEqual(upwardDependencies(broken), ["browser -> node (dependencies)"])
  })
})
