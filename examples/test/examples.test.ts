import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const folder = fileURLToPath(new URL("..", import.meta.url))

/** Examples that talk to a model server: run below against a loopback server, not in the plain loop. */
const needServer = new Set(["real-provider.ts"])

/** Every runnable example at the top of examples/, each run as its own process. */
const examples = readdirSync(folder).filter(
  (name) => name.endsWith(".ts") && !name.endsWith(".config.ts") && !needServer.has(name)
)

/**
 * A loopback server speaking OpenAI chat completions or Anthropic messages
 * (the AI SDK package's test server, as a process) replaying `replies` to the turn's requests and
 * `summary` to summary requests; `requests()` lists what it received.
 */
const withLoopback = async <A>(
  format: "openai" | "anthropic",
  replies: ReadonlyArray<unknown>,
  summary: unknown,
  body: (baseUrl: string, requests: () => ReadonlyArray<{ model: string; stream: boolean; summary: boolean }>) => A
): Promise<A> => {
  const serve = join(folder, "..", "packages", "ai-sdk", "test", "support", "serve.ts")
  const child: ChildProcess = spawn(process.execPath, [serve], {
    env: { ...process.env, TESSERA_LOOPBACK_PLAN: JSON.stringify({ format, replies, summary }) },
    stdio: ["ignore", "pipe", "inherit"]
  })
  try {
    let out = ""
    const baseUrl = await new Promise<string>((resolve, reject) => {
      child.stdout?.setEncoding("utf8")
      child.stdout?.on("data", (piece: string) => {
        out += piece
        const first = out.split("\n")[0]
        if (out.includes("\n") && first !== undefined) resolve((JSON.parse(first) as { baseUrl: string }).baseUrl)
      })
      child.on("exit", (code) => reject(new Error(`the loopback server exited ${code}`)))
    })
    const requests = () =>
      out
        .split("\n")
        .slice(1)
        .filter((line) => line.length > 0)
        .map((line) => JSON.parse(line) as { model: string; stream: boolean; summary: boolean })
    const result = body(baseUrl, requests)
    // The server reports requests every 10 ms: let it catch up before the caller reads them.
    await new Promise((resolve) => setTimeout(resolve, 50))
    return result
  } finally {
    child.kill()
  }
}

const usage = (input: number, output: number) => ({ input, output })
const call = (id: string, name: string, input: unknown) => ({ id, name, input })

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

  it("ai-sdk.ts shows the AI SDK middleware offloading, compacting, reporting summary usage, streaming, and refusing a writerless task", () => {
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
      assert.match(
        out,
        /streamText: All 30 services are ok\. \(5 deltas as streamed\); tool results offloaded: 30; steps reporting summary usage: [1-9]/
      )
      const sizes = /largest request: (\d+) bytes with Tessera, (\d+) bytes without/.exec(out)
      assert.isNotNull(sizes)
      assert.isBelow(Number(sizes?.[1]) * 5, Number(sizes?.[2]), "the wrapped model's largest request is a fraction")
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  it("effect-ai.ts shows a Chat on a wrapped Effect AI LanguageModel offloading, compacting and reporting summary usage, a Tessera turn on an Effect AI provider, and a writerless task refused", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-effect-ai-example-"))
    try {
      const result = spawnSync(process.execPath, [join(folder, "effect-ai.ts")], {
        cwd: scratch,
        encoding: "utf8",
        env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
        timeout: 120_000
      })
      assert.strictEqual(result.status, 0, result.stderr)
      const out = result.stdout
      assert.match(out, /answer: All 30 services are ok\./)
      assert.match(out, /summary usage on the step's finish part: \{"summaryRequests":[1-9]\d*,/)
      assert.match(out, /tool results offloaded: 30; credentials in them: none \(redacted\)/)
      assert.match(out, /log bodies in it: none/)
      assert.match(out, /Tessera turn on the Effect AI provider: All 30 services are ok\. \(31 steps\)/)
      assert.match(out, /writerless task refused: Unauthorized; model requests sent: 0/)
      const sizes = /largest request: (\d+) bytes with Tessera, (\d+) bytes without/.exec(out)
      assert.isNotNull(sizes)
      assert.isBelow(Number(sizes?.[1]) * 5, Number(sizes?.[2]), "the wrapped model's largest request is a fraction")
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  it("pi.ts shows Pi's agent core with Tessera's hooks offloading, compacting, reporting summary usage and refusing a writerless task", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-pi-example-"))
    try {
      const result = spawnSync(process.execPath, [join(folder, "pi.ts")], {
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
      assert.match(out, /Pi's transcript holds the bodies: no \(pointers\)/)
      // Pi's call ids hold ":"; the artifact's name encodes it.
      assert.match(out, /first artifact: pi-1-t1-s1-log\.3a1\.txt/)
      assert.match(out, /credentials in them: none \(redacted\)/)
      assert.match(out, /writerless task refused: Unauthorized; model requests sent: 0/)
      const sizes = /largest request: (\d+) bytes with Tessera, (\d+) bytes without/.exec(out)
      assert.isNotNull(sizes)
      assert.isBelow(Number(sizes?.[1]) * 5, Number(sizes?.[2]), "the agent's largest request is a fraction")
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  it("resume-after-crash.ts resumes a durable turn killed with SIGKILL, with default options: the dead holder's locks are recovered and reported, the call in flight runs again; a second run in the same folder does it again", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-resume-example-"))
    try {
      for (let run = 1; run <= 2; run++) {
        const result = spawnSync(process.execPath, [join(folder, "resume-after-crash.ts")], {
          cwd: scratch,
          encoding: "utf8",
          env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
          timeout: 120_000
        })
        assert.strictEqual(result.status, 0, `run ${run}: ${result.stdout}\n${result.stderr}`)
        const out = result.stdout
        const crashed = /start 1 \(process (\d+)\): killed with SIGKILL in the middle of the turn/.exec(out)
        assert.isNotNull(crashed, out)
        assert.include(out, `recovered the namespace lock of process ${crashed?.[1]}`)
        assert.match(out, /recovered the stale lock \S+task-locks\/reports\.lock left by process/)
        assert.match(out, /resumed the open turn: 2 earlier request\(s\) checked byte for byte/)
        assert.match(out, /in flight at the crash, run again: c2/)
        assert.match(out, /start 2: Answered: North and south: all systems nominal\./)
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })

  it("durable-tasks.ts resumes a failed turn from disk (requests checked byte for byte) and continues a turn after one approval and one rejection", () => {
    const scratch = mkdtempSync(join(tmpdir(), "tessera-durable-example-"))
    try {
      const result = spawnSync(process.execPath, [join(folder, "durable-tasks.ts")], {
        cwd: scratch,
        encoding: "utf8",
        env: { ...process.env, TESSERA_EXAMPLE_DIR: scratch },
        timeout: 120_000
      })
      assert.strictEqual(result.status, 0, result.stderr)
      const out = result.stdout
      assert.match(
        out,
        /process 2: resumed from disk, 2 earlier request\(s\) checked byte for byte; answer: North and south/
      )
      assert.match(out, /process 1: awaiting approval for d1, d2/)
      assert.match(out, /process 3: Production is deployed; eu-production was rejected/)
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
      assert.match(out, /^ {2}Executor\.runTurn gen_ai\.operation\.name=invoke_agent$/m)
      assert.match(
        out,
        /^ {4}Executor\.toolCall .*gen_ai\.tool\.name=fetch_report tessera\.step=1\n {6}ToolResults\.offloadResult .*tessera\.offload\.outcome=Written$/m
      )
      assert.match(
        out,
        /^ {4}Executor\.modelStep gen_ai\.operation\.name=chat tessera\.step=4\n {6}Compaction\.compact tessera\.step=4\n {8}Compaction\.summarize\n {10}Compaction\.summaryRequest/m
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

  for (const provider of ["openai-compatible", "anthropic"] as const) {
    it(`demo.ts --provider ${provider} runs the research task against a server speaking its wire format: streamed, offloaded, compacted, usage reported`, async () => {
      const replies = [
        {
          _tag: "Reply",
          text: "Start with the logs.",
          toolCalls: [call("log-north", "fetch_log", { service: "north" })],
          usage: usage(900, 20)
        },
        { _tag: "Reply", toolCalls: [call("log-south", "fetch_log", { service: "south" })], usage: usage(1_000, 20) },
        { _tag: "Reply", toolCalls: [call("notes-1", "search_notes", { query: "rollout" })], usage: usage(1_100, 20) },
        { _tag: "Reply", toolCalls: [call("notes-2", "search_notes", { query: "regions" })], usage: usage(1_200, 20) },
        { _tag: "Reply", toolCalls: [call("notes-3", "search_notes", { query: "latency" })], usage: usage(1_300, 20) },
        { _tag: "Reply", text: "Both services are healthy; the rollout went well.", usage: usage(1_400, 30) }
      ]
      const summary = {
        _tag: "Reply",
        text: "Summary: north and south logs fetched, notes read.",
        usage: usage(3_000, 40)
      }
      const scratch = mkdtempSync(join(tmpdir(), "tessera-demo-provider-test-"))
      try {
        const { requests, result } = await withLoopback(
          provider === "anthropic" ? "anthropic" : "openai",
          replies,
          summary,
          (baseUrl, requests) => ({
            requests,
            result: spawnSync(
              process.execPath,
              [
                join(folder, "demo.ts"),
                "--provider",
                provider,
                "--base-url",
                baseUrl,
                "--model",
                "loopback-model",
                "--api-key",
                "test-key"
              ],
              { cwd: scratch, encoding: "utf8", env: { ...process.env, TESSERA_DEMO_DIR: scratch }, timeout: 120_000 }
            )
          })
        )
        assert.strictEqual(result.status, 0, `${result.stdout}\n${result.stderr}`)
        const out = result.stdout
        assert.include(
          out,
          provider === "anthropic" ? "model: loopback-model (Anthropic)" : "model: loopback-model at http://127.0.0.1:"
        )
        assert.include(out, "Both services are healthy; the rollout went well.")
        assert.include(out, "[tool] fetch_log")
        assert.include(out, "[step 1] tool-calls; in=900,out=20", "the provider's usage, step by step")
        assert.include(out, "2. The four-request turn: skipped")
        assert.match(out, /summaries staged: +[1-9]/)
        assert.match(out, /artifacts offloaded: +[1-9]\d*, leaked credentials in them: none \(redacted\)/)
        const sent = requests()
        assert.isTrue(sent.every((request) => request.model === "loopback-model"))
        assert.isTrue(
          sent.some((request) => request.summary),
          "summary requests reached the server"
        )
        assert.isTrue(
          sent.filter((request) => !request.summary).every((request) => request.stream),
          "the turn streamed"
        )
      } finally {
        rmSync(scratch, { recursive: true, force: true })
      }
    })
  }

  it("real-provider.ts (the getting-started snippet) runs a streamed turn against an OpenAI-compatible server and reports the journal's usage", async () => {
    const replies = [
      {
        _tag: "Reply",
        text: "Fetching.",
        toolCalls: [call("c1", "fetch_log", { service: "north" })],
        usage: usage(500, 10)
      },
      { _tag: "Reply", toolCalls: [call("c2", "fetch_log", { service: "south" })], usage: usage(700, 10) },
      { _tag: "Reply", text: "Both are healthy.", usage: usage(900, 15) }
    ]
    const summary = { _tag: "Reply", text: "Summary.", usage: usage(1_000, 5) }
    const scratch = mkdtempSync(join(tmpdir(), "tessera-real-provider-test-"))
    try {
      const { requests, result } = await withLoopback("openai", replies, summary, (baseUrl, requests) => ({
        requests,
        result: spawnSync(process.execPath, [join(folder, "real-provider.ts")], {
          cwd: scratch,
          encoding: "utf8",
          env: {
            ...process.env,
            TESSERA_EXAMPLE_DIR: scratch,
            TESSERA_BASE_URL: baseUrl,
            TESSERA_MODEL: "loopback-model"
          },
          timeout: 120_000
        })
      }))
      assert.strictEqual(result.status, 0, `${result.stdout}\n${result.stderr}`)
      const out = result.stdout
      assert.include(out, "Fetching.")
      assert.include(out, "Both are healthy.")
      assert.strictEqual(out.split("[offloaded] ").length - 1, 2, out)
      const sent = requests()
      const expectedIn = 500 + 700 + 900 + 1_000 * sent.filter((request) => request.summary).length
      const expectedOut = 10 + 10 + 15 + 5 * sent.filter((request) => request.summary).length
      assert.include(out, `tokens: ${expectedIn} in, ${expectedOut} out, ${sent.length} responses`)
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })
})
