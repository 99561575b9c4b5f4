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

  it("demo.ts shows offload, compaction, the four-request turn and the refusals", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-demo-test-"))
    try {
      const result = spawnSync(process.execPath, [join(folder, "demo.ts")], {
        cwd: scratch,
        encoding: "utf8",
        env: { ...process.env, TESSERA_DEMO_DIR: scratch },
        timeout: 120_000
      })
      assert.strictEqual(result.status, 0, result.stderr)
      const out = result.stdout
      assert.match(out, /\[artifact\] path="tool-results\/research-t1-s1-log\.2dnorth\.txt"/)
      assert.match(out, /system message, then summaries\/research-t1\//)
      assert.match(
        out,
        /exactly 4 model requests; the last starts with the system message, then summaries\/four-requests-t1\/3\.txt/
      )
      assert.match(out, /NotOwnerBound/)
      assert.match(out, /model requests sent before the refusal: 0/)
      assert.match(out, /leaked credentials in them: none \(redacted\)/)
      assert.notInclude(out, "AKIAIOSFODNN7EXAMPLE")
      // The inspector renders the demo's folder.
      const stateFolder = /state folder:\s+(\S+)/.exec(out)?.[1] ?? ""
      const inspector = fileURLToPath(new URL("../../packages/node/bin/tessera-inspect.ts", import.meta.url))
      const inspected = spawnSync(process.execPath, [inspector, stateFolder], { encoding: "utf8", timeout: 60_000 })
      assert.strictEqual(inspected.status, 0, inspected.stderr)
      assert.include(inspected.stdout, "researcher-scratch       AgentPrivate owned by agent researcher")
      assert.include(inspected.stdout, "summaries/four-requests-t1/3.txt")
      assert.include(inspected.stdout, "ArtifactOffloaded")
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  it("host-policy.ts scrubs with the host's own rules and refuses the host's state with the specific error", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-host-policy-test-"))
    try {
      const result = spawnSync(process.execPath, [join(folder, "host-policy.ts")], {
        cwd: scratch,
        encoding: "utf8",
        env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
        timeout: 120_000
      })
      assert.strictEqual(result.status, 0, result.stderr)
      assert.include(result.stdout, "[REDACTED:registered-secret]")
      assert.include(result.stdout, "[REDACTED:internal-ticket-token]")
      assert.include(result.stdout, "stored file leaks the password: no")
      assert.include(result.stdout, "stored file leaks the ticket token: no")
      assert.include(result.stdout, "refused (ArtifactInternalState)")
      assert.include(result.stdout, "credentials.json was created: no")
      assert.notInclude(result.stdout, "s3cret-db-pass")
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })
})
