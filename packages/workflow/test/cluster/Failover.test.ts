/**
 * The failover test: three runner processes on a temporary Postgres share
 * one store folder and run 20 tasks with offload and compaction; runners are
 * killed with SIGKILL at random points, at least ten times, each replaced by
 * a fresh one. Every task must end with the answer a single-process run
 * gives, no tool call may act twice, every summary key must hold exactly one
 * summary, and every journal must reopen.
 *
 * The negative control runs the same cluster with a tool that ignores its
 * idempotency key, and kills the runners right after a call acted: the call
 * acts again.
 *
 * Skipped, loudly, when no PostgreSQL server is installed (see
 * `vitest.workspace.ts`: the whole cluster project is then left out).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import { Digest, DurableFiles } from "@tessera/core"
import { Journal, type JournalEntry } from "@tessera/runtime"
import { SharedStore, TaskHosting, TaskWorkflow, TemporaryPostgres } from "@tessera/workflow"
import { Effect, Fiber, Layer, Random } from "effect"
import * as cluster from "../support/cluster.ts"
import * as world from "../support/world.ts"

const tasks = 20
const kills = 10
/** The tool holds each call this long after its side effect, so kills land between the effect and its record. */
const pauseMs = 2_000

const names = Array.from({ length: tasks }, (_, index) => `failover ${index + 1}`)
const taskOf = (name: string) => world.taskId(name.replaceAll(" ", "-"))
const request = (name: string) => ({ task: taskOf(name), prompt: `${world.promptPrefix}${name}` })

/** The answers of a single-process run (the in-memory engine) of the same tasks. */
const singleProcessAnswers = (dir: string) =>
  Effect.gen(function* () {
    const shared = yield* SharedStore.open({
      root: path.join(dir, "store"),
      storeId: world.storeId,
      agent: world.agentId("agent-1"),
      config: world.config(path.join(dir, "effects.log")),
      gate: { policy: world.policy }
    })
    const services = Layer.mergeAll(
      Layer.succeed(TaskHosting.TaskHosting)(shared.hosting),
      ArtifactPathPolicy.layer(shared.pathPolicy)
    )
    return yield* Effect.forEach(names, (name) => TaskWorkflow.run(request(name)), { concurrency: 4 }).pipe(
      Effect.provide(TaskWorkflow.layerMemory.pipe(Layer.provide(services))),
      Effect.provide(services)
    )
  }).pipe(Effect.provide(world.modelLayer))

/** What the store and the journals must show once every task finished. */
const checkStore = (store: string, log: string) =>
  Effect.gen(function* () {
    const counts = world.effectCounts(log)
    assert.strictEqual(counts.size, tasks * world.callsPerTask, "every call acted")
    const twice = [...counts].filter(([, count]) => count !== 1)
    assert.deepStrictEqual(twice, [], "no call acted twice")
    const journalFolder = path.join(store, "volumes", "journal")
    const privateFolder = path.join(store, "volumes", SharedStore.privateVolumeId(world.agentId("agent-1")))
    let summaries = 0
    /** Tool calls an attempt started that a later attempt ran again; requests lost and sent again; cut tails. */
    const rerun = { calls: 0, requests: 0, cutTails: 0 }
    for (const name of names) {
      const task = taskOf(name)
      // Every journal reopens for writing (a cut tail is recovered, never corrupt) and its turn is closed.
      const state = yield* Effect.scoped(
        Effect.flatMap(Journal.open({ folder: journalFolder, task }), (journal) => journal.state)
      )
      assert.strictEqual(state.turns.at(-1)?.status, "Closed", `${task}: turn closed`)
      const entries = yield* Journal.readEntries({ folder: journalFolder, task })
      // Exactly one summary per key: one staged record (one digest) per key, and the file holds those bytes.
      const staged = new Map<string, Set<string>>()
      for (const entry of entries) {
        if (entry._tag !== "SummaryStaged") continue
        const key = `${entry.path}`
        staged.set(key, (staged.get(key) ?? new Set()).add(entry.sha256))
      }
      for (const [key, digests] of staged) {
        assert.strictEqual(digests.size, 1, `${task}: ${key} staged with one content`)
        const bytes = fs.readFileSync(path.join(privateFolder, key))
        const digest = yield* Digest.sha256(bytes)
        assert.isTrue(digests.has(digest), `${task}: ${key} holds the staged bytes`)
        summaries += 1
      }
      assert.isAtLeast(staged.size, 1, `${task}: compacted at least once`)
      const count = (tag: JournalEntry.Entry["_tag"]) => entries.filter((entry) => entry._tag === tag).length
      rerun.calls += count("ToolCalled") - count("ToolResulted")
      rerun.requests += count("TurnResumed")
      rerun.cutTails += count("TruncationRecovered")
      const offloaded = entries.filter((entry) => entry._tag === "ArtifactOffloaded").length
      assert.isAtLeast(offloaded, world.callsPerTask, `${task}: every result offloaded`)
    }
    // Every summary file under a final name is a whole summary (temporary names may remain after a kill).
    const summaryFiles = fs
      .readdirSync(path.join(privateFolder, "summaries"), { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".txt") && !DurableFiles.isTemporaryName(path.basename(name)))
    for (const name of summaryFiles) {
      assert.match(fs.readFileSync(path.join(privateFolder, "summaries", name), "utf8"), /^SUMMARY /)
    }
    return { summaries, summaryFiles: summaryFiles.length, rerun }
  })

describe("the task workflow on a cluster of three runners over Postgres", () => {
  it.live(
    "failover_three_runners_twenty_tasks_ten_kills",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const expected = yield* singleProcessAnswers(path.join(dir, "single"))
        const pg = yield* TemporaryPostgres.make()
        const options = { store: path.join(dir, "store"), log: path.join(dir, "effects.log"), pauseMs }
        const runners = yield* Effect.all(
          [0, 1, 2].map((index) => cluster.startRunner(pg, options, index)),
          { concurrency: 3 }
        )
        const live = [...runners]
        const running = yield* Effect.forEach(names, (name) => TaskWorkflow.run(request(name)), {
          concurrency: "unbounded"
        }).pipe(Effect.provide(cluster.client(pg)), Effect.forkChild)
        // Kill a random runner at a random point, ten times, while tasks are still running. Each is replaced by a
        // fresh runner, started in the background; one runner is always left alive.
        let killed = 0
        let next = 3
        while (killed < kills) {
          yield* Effect.sleep(yield* Random.nextBetween(300, 1_500))
          if (live.length < 2) continue
          assert.isUndefined(running.pollUnsafe(), `every task finished after only ${killed} kills`)
          const victim = live.splice(yield* Random.nextIntBetween(0, live.length - 1), 1)[0]
          if (victim === undefined) continue
          yield* cluster.kill(victim)
          killed += 1
          yield* Effect.forkChild(
            Effect.tap(cluster.startRunner(pg, options, next++), (runner) => Effect.sync(() => live.push(runner)))
          )
        }
        const answers = yield* Fiber.join(running)
        assert.deepStrictEqual(
          answers.map((answer) => answer.text),
          expected.map((answer) => answer.text),
          "the same answers as a single-process run"
        )
        const found = yield* checkStore(options.store, options.log)
        assert.isAtLeast(found.summaries, tasks)
        // The kills landed mid-turn: some call ran again after its first attempt died (and acted once all the same).
        assert.isAtLeast(found.rerun.calls, 1)
        yield* Effect.logInfo(
          `failover: ${kills} kills, ${found.rerun.calls} tool calls and ${found.rerun.requests} model requests run again, ` +
            `${found.rerun.cutTails} cut journal tails recovered, ${found.summaries} summaries`
        )
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer)),
    { timeout: 170_000 }
  )

  it.live(
    "failover_negative_control_without_idempotency_keys_a_call_acts_twice",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const pg = yield* TemporaryPostgres.make()
        const log = path.join(dir, "effects.log")
        // A shorter pause than the main test's: the kill is timed into it, not left to chance.
        const options = { store: path.join(dir, "store"), log, pauseMs: 600, idempotent: false }
        const runners = yield* Effect.all(
          [0, 1, 2].map((index) => cluster.startRunner(pg, options, index)),
          { concurrency: 3 }
        )
        const few = names.slice(0, 3)
        const running = yield* Effect.forEach(few, (name) => TaskWorkflow.run(request(name)), {
          concurrency: "unbounded"
        }).pipe(Effect.provide(cluster.client(pg)), Effect.forkChild)
        // The same kill, timed into the window between a call's side effect and the engine's record of it:
        // as soon as calls acted, every runner dies, and three fresh ones take over.
        while (!fs.existsSync(log) || fs.readFileSync(log, "utf8").split("\n").length < 3) yield* Effect.sleep(20)
        const t0 = Date.now()
        yield* Effect.forEach(runners, cluster.kill, { discard: true })
        yield* Effect.all(
          [3, 4, 5].map((index) => cluster.startRunner(pg, options, index)),
          { concurrency: 3 }
        )
        const t1 = Date.now()
        yield* Fiber.join(running)
        yield* Effect.logInfo(`negative control: restart ${t1 - t0} ms, finish ${Date.now() - t1} ms`)
        const twice = [...world.effectCounts(log)].filter(([, count]) => count > 1)
        assert.isAbove(twice.length, 0, "a call acted twice without idempotency keys")
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer)),
    { timeout: 120_000 }
  )
})
