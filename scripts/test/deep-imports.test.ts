/**
 * The rewrite of Effect's barrel imports into deep ones
 * (`scripts/deep-imports.ts`), and the lint rule that keeps barrel imports
 * out of the packages' sources.
 */
import { spawnSync } from "node:child_process"
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { rewrite } from "../deep-imports.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))

describe("deep-imports rewrite", () => {
  it("turns each name of an `effect` import into an import of its own module, type-only names into `import type`", () => {
    assert.strictEqual(
      rewrite('import { Effect, type Scope, Option as O, pipe } from "effect"\n'),
      `${[
        'import * as Effect from "effect/Effect"',
        'import type * as Scope from "effect/Scope"',
        'import * as O from "effect/Option"',
        'import { pipe } from "effect/Function"'
      ].join("\n")}\n`
    )
    assert.strictEqual(
      rewrite('import type { FileSystem, Path } from "effect"'),
      'import type * as FileSystem from "effect/FileSystem"\nimport type * as Path from "effect/Path"'
    )
  })

  it("rewrites the sub-barrels and @effect/platform-node's index, across lines", () => {
    assert.strictEqual(
      rewrite('import {\n  AiError,\n  type Prompt\n} from "effect/ai"'),
      'import * as AiError from "effect/ai/AiError"\nimport type * as Prompt from "effect/ai/Prompt"'
    )
    assert.strictEqual(
      rewrite('import { NodeClusterSocket } from "@effect/platform-node"'),
      'import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"'
    )
  })

  it("leaves deep imports and other packages alone, so a second run changes nothing", () => {
    const source = 'import { Effect, Layer } from "effect"\nimport { x } from "effect-other"\n'
    const once = rewrite(source)
    assert.include(once, 'import { x } from "effect-other"')
    assert.strictEqual(rewrite(once), once)
  })

  it("refuses a name the barrel does not export instead of guessing", () => {
    assert.throws(() => rewrite('import { NoSuchModule } from "effect"'), /exports no "NoSuchModule"/)
  })
})

describe("lint: no barrel imports in the packages' sources", () => {
  /** Lints `files` (path under a scratch folder -> source) with the repository's biome.json; returns the report. */
  const lint = (files: Record<string, string>) => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-lint-"))
    try {
      copyFileSync(join(root, "biome.json"), join(scratch, "biome.json"))
      for (const [file, source] of Object.entries(files)) {
        mkdirSync(dirname(join(scratch, file)), { recursive: true })
        writeFileSync(join(scratch, file), source)
      }
      const result = spawnSync(join(root, "node_modules", ".bin", "biome"), ["lint", "--vcs-enabled=false", "."], {
        cwd: scratch,
        encoding: "utf8"
      })
      return { status: result.status, output: `${result.stdout}${result.stderr}` }
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  }

  it("refuses `effect` and `@effect/platform-node` by their index in packages/*/src, type-only imports too", () => {
    for (const source of [
      'import { Effect } from "effect"\n\nexport const a = Effect.void\n',
      'import type { Scope } from "effect"\n\nexport type A = Scope.Scope\n',
      'import { AiError } from "effect/ai"\n\nexport const a = AiError\n',
      'import { NodeServices } from "@effect/platform-node"\n\nexport const a = NodeServices.layer\n'
    ]) {
      const result = lint({ "packages/core/src/Probe.ts": source })
      assert.notStrictEqual(result.status, 0, source)
      assert.include(result.output, "lint/style/noRestrictedImports", source)
    }
  })

  it("accepts deep imports there, and the index in tests", () => {
    const result = lint({
      "packages/core/src/Probe.ts": 'import * as Effect from "effect/Effect"\n\nexport const a = Effect.void\n',
      "packages/core/test/Probe.test.ts": 'import { Effect } from "effect"\n\nexport const a = Effect.void\n'
    })
    assert.strictEqual(result.status, 0, result.output)
  })
})
