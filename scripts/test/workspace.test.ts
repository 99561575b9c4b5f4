import { readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import projects, { packageProjects } from "../../vitest.workspace.ts"

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
    for (const name of packageProjects) assert.include(roots, `./packages/${name}`)
  })
})

/**
 * The layers, lowest first; a package may depend only on packages before it.
 * The ecosystem adapters come after node: their sources need only runtime,
 * their tests use node for real durable files.
 */
const layers = ["core", "artifacts", "runtime", "node", "ai-sdk", "mcp"]

type Manifest = Partial<Record<"dependencies" | "devDependencies" | "peerDependencies", Record<string, string>>>

/** Every workspace dependency (of any kind) that does not point down the layers, as `from -> to (kind)`. */
const upwardDependencies = (manifests: Record<string, Manifest>): Array<string> =>
  Object.entries(manifests).flatMap(([from, manifest]) =>
    (["dependencies", "devDependencies", "peerDependencies"] as const).flatMap((kind) =>
      Object.keys(manifest[kind] ?? {})
        .filter((name) => name.startsWith("@tessera/"))
        .map((name) => name.slice("@tessera/".length))
        .filter((to) => !layers.includes(to) || layers.indexOf(to) >= layers.indexOf(from))
        .map((to) => `${from} -> ${to} (${kind})`)
    )
  )

const workspaceManifests = (): Record<string, Manifest> =>
  Object.fromEntries(
    layers.map((name) => [name, JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8"))])
  )

describe("workspace package graph", () => {
  it("has the packages in the layer list, and no other", () => {
    assert.deepStrictEqual([...packageFolders].sort(), [...layers].sort())
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
})
