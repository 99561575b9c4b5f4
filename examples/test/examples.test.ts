import { spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const folder = fileURLToPath(new URL("..", import.meta.url))

/** Every runnable example at the top of examples/, each run as its own process. */
const examples = readdirSync(folder).filter((name) => name.endsWith(".ts") && !name.endsWith(".config.ts"))

describe("examples run as smoke tests", () => {
  it("finds the examples", () => {
    assert.isAbove(examples.length, 0)
  })

  for (const example of examples) {
    it(example, () => {
      const scratch = mkdtempSync(join(tmpdir(), "tessera-example-"))
      try {
        const result = spawnSync(process.execPath, [join(folder, example)], {
          cwd: scratch,
          encoding: "utf8",
          env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
          timeout: 120_000
        })
        assert.strictEqual(result.status, 0, `${example} exited ${result.status}\n${result.stdout}\n${result.stderr}`)
        assert.isAbove(result.stdout.length, 0, `${example} printed nothing`)
      } finally {
        rmSync(scratch, { recursive: true, force: true })
      }
    })
  }
})
