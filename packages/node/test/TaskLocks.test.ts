/**
 * Issue 17 at the host: one writer per task journal through the harness
 * (fibers and processes), the explicit repair, and temporary names that are
 * never content and are removed when the namespace is opened.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { hostname } from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles } from "@tessera/core"
import { Inspector, LocalHarness, NamespaceLock, StateNamespace } from "@tessera/node"
import { Journal } from "@tessera/runtime"
import { Deferred, Effect, Exit, Fiber, Option } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const agent = agentId("researcher")
const task = taskId("task-1")
const open = (stateDir: string, recoverStaleLock = false) =>
  LocalHarness.open({ stateDir, namespace: "project-a", agent, recoverStaleLock })

const taskLockOf = (stateDir: string) =>
  path.join(stateDir, "project-a", StateNamespace.taskLockFolderName, `${task}.lock`)

const writeLock = (file: string, pid: number) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const record = { pid, host: hostname(), startedAt: Date.now(), token: "0123456789abcdef0123" }
  fs.writeFileSync(file, `${JSON.stringify(record)}\n`)
}

const failureTag = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? (reason.error as { readonly _tag: string })._tag : reason?._tag
}

describe("finding 1 at the host: one writer per task journal", () => {
  it.effect(
    "two fibers running withTask on one task: the second fails TaskInUse (this process), the first is unharmed",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const harness = yield* open(stateDir)
        const holding = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const first = yield* harness
          .withTask(task, () =>
            Effect.gen(function* () {
              const journal = yield* Journal.Journal
              yield* journal.openTurn
              yield* Deferred.succeed(holding, undefined)
              yield* Deferred.await(release)
              return yield* journal.abandonTurn("done")
            })
          )
          .pipe(Effect.forkChild)
        yield* Deferred.await(holding)
        const second = yield* Effect.exit(
          harness.withTask(task, () =>
            Effect.flatMap(Journal.Journal.use(Effect.succeed), (journal) => journal.openTurn)
          )
        )
        assert.strictEqual(failureTag(second), "TaskInUse")
        assert.include(String(Exit.isFailure(second) ? second.cause : ""), "this process")
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(first)
        const entries = yield* Journal.readEntries({ folder: harness.journalFolder, task })
        assert.deepStrictEqual(
          entries.map((entry) => entry._tag),
          ["TurnOpened", "TurnAbandoned"]
        )
        // Released with its scope: the task runs again.
        yield* harness.withTask(task, () => Effect.void)
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.effect(
    "another live process holding the task's lock: TaskInUse names its pid; once it is dead, the lock is stale and recovery opens",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const other: ChildProcess = yield* Effect.acquireRelease(
          Effect.sync(() => spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })),
          (child) => Effect.sync(() => child.kill("SIGKILL"))
        )
        const pid = other.pid as number
        writeLock(taskLockOf(stateDir), pid)
        const busy = yield* Effect.exit(
          Effect.scoped(Effect.flatMap(open(stateDir), (h) => h.withTask(task, () => Effect.void)))
        )
        assert.strictEqual(failureTag(busy), "TaskInUse")
        assert.include(String(Exit.isFailure(busy) ? busy.cause : ""), `process ${pid}`)

        const dead = spawnSync(process.execPath, ["-e", ""]).pid as number
        writeLock(taskLockOf(stateDir), dead)
        const stale = yield* Effect.exit(
          Effect.scoped(Effect.flatMap(open(stateDir), (h) => h.withTask(task, () => Effect.void)))
        )
        assert.strictEqual(failureTag(stale), "StaleNamespaceLock")
        yield* Effect.scoped(Effect.flatMap(open(stateDir, true), (h) => h.withTask(task, () => Effect.void)))
        assert.isFalse(fs.existsSync(taskLockOf(stateDir)), "the lock is released with the task")
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.effect(
    "a task lock recovery a kill interrupted is finished by the next recovering harness; the namespace lock's rule (a person removes it) would stay stuck",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const dead = spawnSync(process.execPath, ["-e", ""]).pid as number
        writeLock(taskLockOf(stateDir), dead)
        writeLock(`${taskLockOf(stateDir)}.recovery`, dead)
        // Negative control: the namespace lock's own rule refuses an interrupted recovery.
        const stuck = yield* Effect.exit(
          Effect.scoped(NamespaceLock.acquire(taskLockOf(stateDir), { recoverStale: true }))
        )
        assert.strictEqual(failureTag(stuck), "StaleNamespaceLock")
        assert.include(String(Exit.isFailure(stuck) ? stuck.cause : ""), "recovery")
        yield* Effect.scoped(Effect.flatMap(open(stateDir, true), (h) => h.withTask(task, () => Effect.void)))
        assert.isFalse(fs.existsSync(`${taskLockOf(stateDir)}.recovery`))
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.effect("repairJournal takes the task's lock, keeps the longest valid prefix and journals the repair", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const harness = yield* open(stateDir)
      yield* harness.withTask(task, () =>
        Effect.flatMap(Journal.Journal.use(Effect.succeed), (journal) =>
          Effect.andThen(journal.openTurn, journal.abandonTurn("x"))
        )
      )
      const file = path.join(harness.journalFolder, Journal.fileName(task))
      fs.appendFileSync(file, fs.readFileSync(file))
      assert.strictEqual(failureTag(yield* Effect.exit(harness.withTask(task, () => Effect.void))), "JournalCorrupt")
      const repaired = yield* harness.repairJournal(task)
      assert.isTrue(Option.isSome(repaired))
      yield* harness.withTask(task, () => Effect.void)
      const entries = yield* Journal.readEntries({ folder: harness.journalFolder, task })
      assert.strictEqual(entries.at(-1)?._tag, "JournalRepaired")
    }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )
})

describe("finding 4 at the host: temporary names", () => {
  it.effect(
    "opening the namespace removes temporary names a crash left; the inspector never lists one as content",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const folder = yield* Effect.scoped(Effect.map(open(stateDir), (harness) => harness.folder))
        const summaries = path.join(folder, "volumes", "researcher-scratch", "summaries", "op")
        fs.mkdirSync(summaries, { recursive: true })
        fs.writeFileSync(path.join(summaries, "3.txt"), "a whole summary")
        const leftover = path.join(summaries, DurableFiles.temporaryName("4.txt", "0b1e"))
        fs.writeFileSync(leftover, "a summary cut by a kill")

        const report = yield* Inspector.inspect(folder)
        assert.deepStrictEqual(
          report.summaries.map((file) => file.path),
          ["summaries/op/3.txt"]
        )
        // Negative control: a plain listing of the folder does show the leftover.
        assert.include(fs.readdirSync(summaries), path.basename(leftover))

        yield* Effect.scoped(open(stateDir))
        assert.deepStrictEqual(fs.readdirSync(summaries), ["3.txt"])
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )
})
