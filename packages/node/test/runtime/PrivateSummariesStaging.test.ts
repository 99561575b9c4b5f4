import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactRedactor } from "@tessera/artifacts"
import { PrivateSummaries } from "@tessera/runtime"
import { Effect, Option } from "effect"
import { contentOf } from "./fixtures/stage-content.ts"
import { operationId, runInWorld, withTempDir } from "./support/world.ts"

const resolvedCapability = (world: Parameters<Parameters<typeof runInWorld>[0]>[0]) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const scope = yield* world.scopeFor([world.privateRef])
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return yield* PrivateSummaries.resolve(context)
  })

const key = { operation: operationId("compaction"), step: 3 }

describe("write-once private staging", () => {
  it("stages at summaries/<operation>/<step>.txt on the private volume, leaving no temporary file", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* resolvedCapability(world)
        const staged = yield* PrivateSummaries.stageOnce(key, "the summary").pipe(PrivateSummaries.provide(capability))
        assert.strictEqual(staged.path, "summaries/compaction/3.txt")
        assert.strictEqual(staged.outcome, "Published")
        assert.strictEqual(staged.size, 11)
        assert.deepStrictEqual(staged.volume, world.privateRef)
        assert.strictEqual(fs.readFileSync(staged.absolutePath, "utf8"), "the summary")
        assert.strictEqual(path.dirname(path.dirname(path.dirname(staged.absolutePath))), capability.folder)
        assert.deepStrictEqual(fs.readdirSync(path.dirname(staged.absolutePath)), ["3.txt"])
      })
    ))

  it("staging identical bytes again returns the existing file; different bytes are a conflict that changes nothing", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* resolvedCapability(world)
        const stage = (text: string) => PrivateSummaries.stageOnce(key, text).pipe(PrivateSummaries.provide(capability))
        const first = yield* stage("the summary")
        const again = yield* stage("the summary")
        assert.strictEqual(again.outcome, "AlreadyStaged")
        assert.strictEqual(again.sha256, first.sha256)
        const conflict = yield* Effect.flip(stage("another summary"))
        assert.strictEqual(conflict._tag, "StagingConflict")
        assert.strictEqual(fs.readFileSync(first.absolutePath, "utf8"), "the summary")
        assert.deepStrictEqual(fs.readdirSync(path.dirname(first.absolutePath)), ["3.txt"])
      })
    ))

  it("64 concurrent stagers of one key: exactly one winner every trial, and the file is the winner's", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* resolvedCapability(world)
        for (let trial = 0; trial < 12; trial++) {
          const trialKey = { operation: operationId("race"), step: trial + 1 }
          const outcomes = yield* Effect.forEach(
            Array.from({ length: 64 }, (_, stager) => stager),
            (stager) =>
              PrivateSummaries.stageOnce(trialKey, `stager ${stager % 8} wrote this summary\n`.repeat(64)).pipe(
                PrivateSummaries.provide(capability),
                Effect.map((staged) => ({ stager, outcome: staged.outcome as string })),
                Effect.catchTag("StagingConflict", () => Effect.succeed({ stager, outcome: "Conflict" }))
              ),
            { concurrency: "unbounded" }
          )
          const winners = outcomes.filter((o) => o.outcome === "Published")
          assert.strictEqual(winners.length, 1, `trial ${trial}: ${winners.length} winners`)
          const winner = winners[0]?.stager ?? -1
          const file = path.join(capability.folder, "summaries", "race", `${trial + 1}.txt`)
          const expected = `stager ${winner % 8} wrote this summary\n`.repeat(64)
          assert.strictEqual(fs.readFileSync(file, "utf8"), expected)
          for (const o of outcomes) {
            // Same bytes as the winner: found it; other bytes: a conflict.
            const same = o.stager % 8 === winner % 8
            if (o.stager !== winner) assert.strictEqual(o.outcome, same ? "AlreadyStaged" : "Conflict")
          }
          assert.deepStrictEqual(
            fs.readdirSync(path.dirname(file)).sort(),
            [...Array.from({ length: trial + 1 }, (_, t) => `${t + 1}.txt`)].sort()
          )
        }
      })
    ))

  it("a process killed at random points while staging leaves each file either absent or whole", () =>
    withTempDir(async (root) => {
      const child = fileURLToPath(new URL("./fixtures/stage-child.ts", import.meta.url))
      const folder = (operation: string) => {
        const volumes = path.join(root, "volumes", "researcher-private", "summaries", operation)
        return fs.existsSync(volumes) ? volumes : undefined
      }
      let inspected = 0
      let interrupted = 0
      for (let trial = 0; trial < 6; trial++) {
        await new Promise<void>((resolve, reject) => {
          const process_ = spawn(process.execPath, [child, root, "400", `killed-${trial}`], {
            stdio: ["ignore", "pipe", "pipe"]
          })
          let stderr = ""
          process_.stderr.on("data", (chunk) => {
            stderr += String(chunk)
          })
          // Kill a few milliseconds after a random file's staging began, so
          // the kill lands inside a write, a flush or a publish.
          const target = 2 + Math.floor(Math.random() * 4)
          let output = ""
          process_.stdout.on("data", (chunk) => {
            output += String(chunk)
            if (output.includes(`staging ${target}\n`)) {
              output = ""
              setTimeout(() => process_.kill("SIGKILL"), 5 + Math.floor(Math.random() * 35))
            }
          })
          process_.once("exit", (code, signal) => {
            if (signal === "SIGKILL" || code === 0) resolve()
            else reject(new Error(`child exited ${code}: ${stderr}`))
          })
        })
        const summaries = folder(`killed-${trial}`)
        if (summaries === undefined) continue
        for (const name of fs.readdirSync(summaries)) {
          if (name.startsWith(".")) {
            interrupted++ // a temporary name left by the kill: never a published file
            continue
          }
          const step = Number(name.replace(/\.txt$/, ""))
          assert.strictEqual(fs.readFileSync(path.join(summaries, name), "utf8"), contentOf(step), `${name} is torn`)
          inspected++
        }
      }
      assert.isAbove(inspected, 0, "the child never published a file before being killed")
      // Evidence that kills landed mid-staging (a temporary name left behind)
      // is timing-dependent, so it is reported rather than asserted.
      console.info(`kill test: ${inspected} published files whole, ${interrupted} stagings cut by the kill`)
    }))
})

describe("the one write scrubs what it stores", () => {
  const masking = ArtifactRedactor.layer({ redact: (body) => Effect.succeed(body.replaceAll("hunter2", "[masked]")) })
  const failing = ArtifactRedactor.layer({
    redact: () => Effect.fail(new ArtifactRedactor.ArtifactRedactionFailed({ detail: "the rules did not load" }))
  })

  it("stage_scrubs_with_the_host_redactor: the stored bytes, size and digest are the redactor's text", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* resolvedCapability(world)
        const staged = yield* PrivateSummaries.stageOnce(key, "password hunter2 found").pipe(
          PrivateSummaries.provide(capability),
          Effect.provide(masking)
        )
        assert.strictEqual(fs.readFileSync(staged.absolutePath, "utf8"), "password [masked] found")
        assert.strictEqual(staged.size, Buffer.byteLength("password [masked] found"))
        // Negative control: without a redactor the same text is stored verbatim (a host's deliberate choice).
        const verbatim = yield* PrivateSummaries.stageOnce({ ...key, step: 4 }, "password hunter2 found").pipe(
          PrivateSummaries.provide(capability)
        )
        assert.strictEqual(fs.readFileSync(verbatim.absolutePath, "utf8"), "password hunter2 found")
      })
    ))

  it("stage_redactor_failure_writes_nothing: ArtifactRedactionFailed, and no file under the key", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* resolvedCapability(world)
        const refused = yield* Effect.flip(
          PrivateSummaries.stageOnce(key, "password hunter2").pipe(
            PrivateSummaries.provide(capability),
            Effect.provide(failing)
          )
        )
        assert.strictEqual(refused._tag, "ArtifactRedactionFailed")
        assert.isFalse(fs.existsSync(path.join(capability.folder, PrivateSummaries.stagedPath(key))))
      })
    ))

  it("stage_refuses_bytes_under_a_redactor: bytes cannot be scrubbed, so they are InvalidInput (content) and nothing is written", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* resolvedCapability(world)
        const bytes = new TextEncoder().encode("password hunter2")
        const refused = yield* Effect.flip(
          PrivateSummaries.stageOnce(key, bytes).pipe(PrivateSummaries.provide(capability), Effect.provide(masking))
        )
        assert.deepInclude(refused, {
          _tag: "InvalidInput",
          entry: "PrivateSummaries.stageOnce",
          field: "content",
          value: `${bytes.length} bytes`,
          detail: "bytes cannot be scrubbed by the host's redactor; stage text"
        })
        assert.isFalse(fs.existsSync(path.join(capability.folder, "summaries")))
        // Negative control: the same bytes with no redactor provided are stored as given.
        const stored = yield* PrivateSummaries.stageOnce(key, bytes).pipe(PrivateSummaries.provide(capability))
        assert.deepStrictEqual(new Uint8Array(fs.readFileSync(stored.absolutePath)), bytes)
      })
    ))

  it("stage_cuts_to_max_bytes: a text over maxBytes (after the scrub) is stored cut, with a note; without maxBytes, whole", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* resolvedCapability(world)
        const long = "a finding worth keeping. ".repeat(40)
        const cut = yield* PrivateSummaries.stageOnce(key, long, { maxBytes: 200 }).pipe(
          PrivateSummaries.provide(capability)
        )
        const stored = fs.readFileSync(cut.absolutePath, "utf8")
        assert.isAtMost(cut.size, 200)
        assert.isTrue(long.startsWith(stored.slice(0, 40)), stored)
        assert.notStrictEqual(stored, long)
        // Negative control: the same text with no bound is stored whole.
        const whole = yield* PrivateSummaries.stageOnce({ ...key, step: 4 }, long).pipe(
          PrivateSummaries.provide(capability)
        )
        assert.strictEqual(fs.readFileSync(whole.absolutePath, "utf8"), long)
        // A text within the bound is stored as it is.
        const within = yield* PrivateSummaries.stageOnce({ ...key, step: 5 }, "short", { maxBytes: 200 }).pipe(
          PrivateSummaries.provide(capability)
        )
        assert.strictEqual(fs.readFileSync(within.absolutePath, "utf8"), "short")
      })
    ))
})
