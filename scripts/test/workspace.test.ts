import { readdirSync, statSync } from "node:fs"
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
