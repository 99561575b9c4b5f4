/**
 * The one list of test projects. `vitest.config.ts` imports it (Vitest 5 no
 * longer reads this file by itself), and `scripts/test/workspace.test.ts`
 * fails when a folder under `packages/` is missing from it.
 */
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
export const packageProjects: ReadonlyArray<string> = ["core", "artifacts", "runtime", "node", "ai-sdk", "mcp"]

export default [
  ...packageProjects.map((name) => project(name, `./packages/${name}`)),
  project("examples", "./examples"),
  project("bench", "./bench"),
  project("workspace", "./scripts")
]
