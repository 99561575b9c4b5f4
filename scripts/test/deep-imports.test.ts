/**
 * The rewrite of Effect's barrel imports into deep ones
 * (`scripts/deep-imports.ts`), and the lint rule that keeps barrel imports
 * out of the packages' sources.
 */
import { assert, describe, it } from "@effect/vitest"
import { rewrite } from "../deep-imports.ts"

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
