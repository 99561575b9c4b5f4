/**
 * Delegation on a cluster over Postgres: a runner process is killed with
 * SIGKILL while both children of a parent's `delegate` call are inside
 * their tools (each acted, then holds its call); another runner takes the
 * task over, the delegate call's activity runs again there, and the tool
 * finishes each child's open turn from its journal. The child and the
 * parent complete once: one closed turn each, each child's tool acted once
 * (its marker line, fsynced), each journal's requests those of an
 * uninterrupted run, the parent's answer the uninterrupted run's.
 *
 * The control runs the same kill on a runner whose host forgets its
 * children between runs (each child's journal set aside before it is
 * bound): the re-run finds no child to finish, starts them anew, and a
 * child's tool acts twice.
 *
 * Skipped, loudly, when no PostgreSQL server is installed (see
 * `vitest.workspace.ts`).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Journal, type JournalEntry } from "@tessera/runtime"
import { TaskWorkflow, TemporaryPostgres } from "@tessera/workflow"
import { Effect } from "effect"
import * as cluster from "../support/cluster.ts"
import * as scenario from "../support/delegation.ts"
import * as world from "../support/world.ts"

/** A child's tool holds its call this long after it acted: the kill lands inside it. */
const pauseMs = 4_000

/** The lines of the marker file: one per child tool effect. */
const lines = (log: string) =>
  fs.existsSync(log)
    ? fs
        .readFileSync(log, "utf8")
        .split("\n")
        .filter((line) => line.length > 0)
    : []

/**
 * The scenario on a cluster: runner 0 alone until both children's tools acted, then SIGKILLed mid-child;
 * runner 1 takes over and the parent's run returns its answer.
 */
const killMidChild = (dir: string, forgetful: boolean) =>
  Effect.gen(function* () {
    const pg = yield* TemporaryPostgres.make()
    const options = { store: path.join(dir, "store"), log: path.join(dir, "notes.log"), pauseMs, forgetful }
    const first = yield* scenario.startRunner(pg, options, 0)
    return yield* Effect.gen(function* () {
      const started = Date.now()
      yield* TaskWorkflow.TaskWorkflow.execute(scenario.request, { discard: true })
      // Both children are inside their tools once both marker lines are there: the runner dies mid-child.
      while (lines(options.log).length < 2) {
        if (Date.now() - started > 60_000) return yield* Effect.die(new Error(`no child acted: ${first.output()}`))
        yield* Effect.sleep(20)
      }
      const inFlight = yield* Journal.readEntries({
        folder: path.join(options.store, "volumes", "journal"),
        task: scenario.parentTask
      })
      yield* cluster.kill(first)
      const killedAt = Date.now()
      yield* scenario.startRunner(pg, options, 1)
      const answer = yield* TaskWorkflow.run(scenario.request).pipe(Effect.timeout("90 seconds"))
      const finishedAt = Date.now()
      const run = yield* scenario.journalsOf(path.join(options.store, "volumes", "journal"), answer)
      return { run, inFlight, takeoverMs: finishedAt - killedAt, store: options.store, log: options.log }
    }).pipe(Effect.provide(cluster.client(pg)))
  })

/** The uninterrupted run: the same scenario on the in-memory engine, in this process. */
const uninterrupted = (dir: string) =>
  scenario
    .onMemoryEngine(dir, {}, (shared) =>
      Effect.flatMap(TaskWorkflow.run(scenario.request), (answer) => scenario.journalsOf(shared.journalFolder, answer))
    )
    .pipe(Effect.provide(scenario.model))

describe("delegation on a cluster over Postgres", () => {
  it.live(
    "cluster_failover_mid_child",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const expected = yield* uninterrupted(path.join(dir, "single"))
        const { inFlight, log, run, store, takeoverMs } = yield* killMidChild(path.join(dir, "cluster"), false)
        // The kill landed mid-child: the delegate call had started, no child had answered.
        assert.isTrue(inFlight.some((entry) => entry._tag === "ChildDelegated"))
        assert.isFalse(inFlight.some((entry) => entry._tag === "ChildAnswered"))
        assert.strictEqual(run.answer.text, expected.answer.text, "the uninterrupted run's answer")
        assert.deepStrictEqual(scenario.violations(store, run), [])
        // Each child's tool acted once, across the kill; its call, in flight at the kill, ran again on the new
        // runner under the same key.
        for (const agent of ["scout", "critic"]) {
          assert.lengthOf(scenario.actedKeys(log).get(agent) ?? [], 1, `${agent}'s tool acted once`)
          const entries = run.children.get(agent)?.entries ?? []
          const called = entries.filter((entry) => entry._tag === "ToolCalled").length
          assert.isAbove(called, 1, `${agent}'s call was in flight at the kill and ran again`)
          assert.strictEqual(entries.filter((entry) => entry._tag === "ToolResulted").length, 1)
          assert.deepStrictEqual(
            scenario.requestDigests(entries),
            scenario.requestDigests(expected.children.get(agent)?.entries ?? []),
            `${agent} sent the uninterrupted run's requests`
          )
        }
        assert.deepStrictEqual(scenario.requestDigests(run.parent), scenario.requestDigests(expected.parent))
        // Only the children's current activities ran again: the parent's journal at the kill is a prefix of its
        // final one (its delegate's start was not run again: each ChildDelegated once), and no child lost a request
        // or resumed its turn (each child's first model step, stored by its own execution, was not sent again).
        const strip = (entries: ReadonlyArray<JournalEntry.Entry>) => entries.map(({ at: _at, ...rest }) => rest)
        assert.deepStrictEqual(strip(run.parent.slice(0, inFlight.length)), strip(inFlight))
        assert.strictEqual(run.parent.filter((entry) => entry._tag === "ChildDelegated").length, 2)
        for (const agent of ["scout", "critic"]) {
          const entries = run.children.get(agent)?.entries ?? []
          assert.isFalse(
            entries.some((entry) => entry._tag === "TurnResumed"),
            `${agent} resumed no turn`
          )
          const requested = entries.filter((entry) => entry._tag === "RequestDispatched").length
          const uninterrupted = (expected.children.get(agent)?.entries ?? []).filter(
            (entry) => entry._tag === "RequestDispatched"
          ).length
          assert.strictEqual(requested, uninterrupted, `${agent} sent no request twice`)
        }
        yield* Effect.logInfo(`delegation failover: answer ${takeoverMs} ms after the kill`)
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer)),
    { timeout: 150_000 }
  )

  it.live(
    "cluster_failover_mid_child_negative_control_a_host_that_forgets_its_children_starts_them_again",
    () =>
      Effect.gen(function* () {
        const dir = yield* world.tempDir
        const { run } = yield* killMidChild(dir, true)
        // Each child's workflow binds it on every run of its body, and the parent's collect binds it again: a host
        // that forgets it in between leaves no child turn whole, which the run's checks find.
        const found = scenario.violations(path.join(dir, "store"), run)
        assert.includeMembers([...found], ["scout: turn not closed", "critic: turn not closed"], found.join("; "))
      }).pipe(Effect.scoped, Effect.provide(world.platformLayer)),
    { timeout: 150_000 }
  )
})
