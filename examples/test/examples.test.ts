import { spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const folder = fileURLToPath(new URL("..", import.meta.url))

/** Every runnable example at the top of examples/, each run as its own process. */
const examples = readdirSync(folder).filter((name) => name.endsWith(".ts") && !name.endsWith(".config.ts"))

/**
 * cluster.ts starts its own PostgreSQL; where none is installed,
 * vitest.workspace.ts has said so loudly (and left out the cluster test
 * project), and marked this run: the example is skipped too.
 */
const clusterSkipped = process.env.TESSERA_CLUSTER_SKIP_SAID === "1"

describe("examples run as smoke tests", () => {
  it("finds the examples", () => {
    assert.isAbove(examples.length, 0)
  })

  for (const example of examples) {
    // cluster.ts has its own test below (it takes a while: Postgres and three runner processes).
    if (example === "cluster.ts") continue
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

  it("ai-sdk.ts shows the AI SDK middleware offloading, compacting, reporting summary usage and refusing a writerless task", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-ai-sdk-example-"))
    try {
      const result = spawnSync(process.execPath, [join(folder, "ai-sdk.ts")], {
        cwd: scratch,
        encoding: "utf8",
        env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
        timeout: 120_000
      })
      assert.strictEqual(result.status, 0, result.stderr)
      const out = result.stdout
      assert.match(out, /answer: All 30 services are ok\./)
      assert.match(out, /tool results offloaded: 30/)
      assert.match(out, /summary requests: [1-9]\d* /)
      assert.match(out, /credentials in them: none \(redacted\)/)
      assert.match(out, /writerless task refused: Unauthorized; model requests sent: 0/)
      const sizes = /largest request: (\d+) bytes with Tessera, (\d+) bytes without/.exec(out)
      assert.isNotNull(sizes)
      assert.isBelow(Number(sizes?.[1]) * 5, Number(sizes?.[2]), "the wrapped model's largest request is a fraction")
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  it.skipIf(clusterSkipped)(
    "cluster.ts runs six tasks across three runners on Postgres, one of them killed mid-run, and every task answers",
    () => {
      const scratch = mkdtempSync(join(tmpdir(), "tessera-cluster-example-"))
      try {
        const result = spawnSync(process.execPath, [join(folder, "cluster.ts")], {
          cwd: scratch,
          encoding: "utf8",
          env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
          timeout: 120_000
        })
        assert.strictEqual(result.status, 0, result.stderr)
        const out = result.stdout
        assert.match(out, /3 runners joined/)
        assert.match(out, /killed with SIGKILL while tasks were running/)
        for (let index = 1; index <= 6; index++) {
          assert.match(out, new RegExp(`survey-${index}: All 3 sites are within tolerance\\.`))
        }
        assert.match(out, /journals: 18 results offloaded, [1-9]\d* summaries staged, 6 of 6 turns closed/)
        assert.match(
          out,
          /one process \(WorkflowEngine.layerMemory\): survey-local: All 3 sites are within tolerance\./
        )
      } finally {
        rmSync(scratch, { recursive: true, force: true })
      }
    },
    150_000
  )

  it("mcp-tools.ts shows an MCP server's tool result offloaded and scrubbed like any other", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-mcp-example-"))
    try {
      const result = spawnSync(process.execPath, [join(folder, "mcp-tools.ts")], {
        cwd: scratch,
        encoding: "utf8",
        env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
        timeout: 120_000
      })
      assert.strictEqual(result.status, 0, result.stderr)
      const out = result.stdout
      assert.match(out, /MCP server incidents offers: incidents__incident_log/)
      assert.match(out, /the model saw: \[artifact\] path="tool-results\/mcp-1-t1-s1-call\.2d1\.txt"/)
      assert.match(out, /400 lines; credentials in them: none \(redacted\)/)
      assert.match(out, /model requests carrying the log body: 0/)
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

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

  it("tracing.ts exports a turn's spans and metrics to a loopback OTLP/HTTP receiver: offload under the tool call, compaction under the step that compacted", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-tracing-test-"))
    try {
      const { OTEL_EXPORTER_OTLP_ENDPOINT: _ignored, ...env } = process.env
      const result = spawnSync(process.execPath, [join(folder, "tracing.ts")], {
        cwd: scratch,
        encoding: "utf8",
        env: { ...env, TESSERA_EXAMPLE_DIR: scratch },
        timeout: 120_000
      })
      assert.strictEqual(result.status, 0, result.stderr)
      const out = result.stdout
      assert.match(out, /^ {2}tessera\.turn gen_ai\.operation\.name=invoke_agent$/m)
      assert.match(
        out,
        /^ {4}tessera\.toolCall .*gen_ai\.tool\.name=fetch_report tessera\.step=1\n {6}ToolResultOffload\.offloadResult .*tessera\.offload\.outcome=Written$/m
      )
      assert.match(
        out,
        /^ {4}tessera\.modelStep gen_ai\.operation\.name=chat tessera\.step=4\n {6}Compaction\.compact tessera\.step=4\n {8}Compaction\.summarize\n {10}Compaction\.summaryRequest/m
      )
      assert.include(
        out,
        "metrics received: gen_ai.client.operation.duration, tessera.summary.requests, tessera.tool.duration"
      )
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
