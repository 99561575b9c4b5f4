import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const root = fileURLToPath(new URL("../..", import.meta.url))
const depcruise = join(root, "node_modules", ".bin", "depcruise")

const cruise = (folder: string) =>
  spawnSync(depcruise, ["--config", join(root, ".dependency-cruiser.cjs"), "--output-type", "err", folder], {
    cwd: folder,
    encoding: "utf8"
  })

describe("import cycle check", () => {
  it("fails on two modules that import each other", () => {
    const folder = mkdtempSync(join(tmpdir(), "tessera-cycle-"))
    try {
      writeFileSync(join(folder, "a.ts"), 'import { b } from "./b.ts"\nexport const a = () => b\n')
      writeFileSync(join(folder, "b.ts"), 'import { a } from "./a.ts"\nexport const b = () => a\n')
      const result = cruise(folder)
      assert.notStrictEqual(result.status, 0)
      assert.include(result.stdout + result.stderr, "no-circular")
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it("passes the same modules without the cycle", () => {
    const folder = mkdtempSync(join(tmpdir(), "tessera-cycle-"))
    try {
      writeFileSync(join(folder, "a.ts"), 'import { b } from "./b.ts"\nexport const a = () => b\n')
      writeFileSync(join(folder, "b.ts"), "export const b = () => 1\n")
      assert.strictEqual(cruise(folder).status, 0)
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it("fails on a type-only import back too, and passes once the type moved down to the module that needs it", () => {
    const folder = mkdtempSync(join(tmpdir(), "tessera-cycle-"))
    try {
      writeFileSync(
        join(folder, "a.ts"),
        'import { b } from "./b.ts"\nexport interface A { readonly n: number }\nexport const a = () => b\n'
      )
      writeFileSync(join(folder, "b.ts"), 'import type { A } from "./a.ts"\nexport const b = (x: A) => x.n\n')
      const result = cruise(folder)
      assert.notStrictEqual(result.status, 0)
      assert.include(result.stdout + result.stderr, "no-circular")
      // The way out the rule asks for: `b` declares the type, and `a` re-exports it under the same name.
      writeFileSync(
        join(folder, "a.ts"),
        'import { b } from "./b.ts"\nexport type { A } from "./b.ts"\nexport const a = () => b\n'
      )
      writeFileSync(join(folder, "b.ts"), "export interface A { readonly n: number }\nexport const b = (x: A) => x.n\n")
      const moved = cruise(folder)
      assert.strictEqual(moved.status, 0, moved.stdout + moved.stderr)
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })
})

describe("package direction check, tests included", () => {
  // A miniature of the workspace layout: the rules match paths under packages/.
  const layout = (testImport: string) => {
    const folder = mkdtempSync(join(tmpdir(), "tessera-direction-"))
    for (const name of ["runtime", "node"]) mkdirSync(join(folder, "packages", name, "src"), { recursive: true })
    mkdirSync(join(folder, "packages", "runtime", "test"))
    writeFileSync(join(folder, "packages", "runtime", "src", "index.ts"), "export const runtime = 1\n")
    writeFileSync(
      join(folder, "packages", "node", "src", "index.ts"),
      'import { runtime } from "../../runtime/src/index.ts"\nexport const node = runtime\n'
    )
    writeFileSync(join(folder, "packages", "runtime", "test", "a.test.ts"), testImport)
    return folder
  }

  it("fails on a runtime test that imports the node package (the dependency would point up)", () => {
    const folder = layout('import { node } from "../../node/src/index.ts"\nexport const a = node\n')
    try {
      const result = cruise(folder)
      assert.notStrictEqual(result.status, 0)
      assert.include(result.stdout + result.stderr, "runtime-points-one-way")
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  it("passes the same runtime test importing only its own package", () => {
    const folder = layout('import { runtime } from "../src/index.ts"\nexport const a = runtime\n')
    try {
      const result = cruise(folder)
      assert.strictEqual(result.status, 0, result.stdout + result.stderr)
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })
})
