import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { hostname } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Volume } from "@tessera/core"
import { LocalHarness, NamespaceLock, StateNamespace } from "@tessera/node"
import { PrivateSummaries } from "@tessera/runtime"
import { Effect, Exit, Option, Scope } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const agent = agentId("researcher")
const namespace = "project-a"
const holder = fileURLToPath(new URL("./fixtures/holdNamespace.ts", import.meta.url))

const lockFileOf = (stateDir: string) => path.join(stateDir, namespace, StateNamespace.lockFileName)

/** Opens a harness in its own scope; returns it with the scope's closer. */
const openInScope = (options: LocalHarness.OpenOptions) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const harness = yield* LocalHarness.open(options).pipe(Scope.provide(scope))
    return { harness, close: Scope.close(scope, Exit.void) }
  })

/** Starts the holder child on the namespace and resolves once it holds the lock. */
const startHolder = (stateDir: string) =>
  Effect.callback<ChildProcess, Error>((resume) => {
    const child = spawn(process.execPath, [holder, stateDir, namespace], { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("ready")) resume(Effect.succeed(child))
    })
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString()
    })
    child.on("exit", (code) => resume(Effect.fail(new Error(`holder exited ${code} before holding: ${output}`))))
  })

const killHard = (child: ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

/** A pid that certainly belonged to a process that has exited. */
const deadPid = (): number => {
  const finished = spawnSync(process.execPath, ["-e", ""])
  assert.isNumber(finished.pid)
  return finished.pid as number
}

const writeLock = (file: string, record: NamespaceLock.LockRecord) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `${JSON.stringify(record)}\n`)
}

describe("default state folder", () => {
  it("uses $XDG_STATE_HOME/tessera when it is absolute, else <home>/.local/state/tessera (a relative XDG value is ignored)", () => {
    assert.strictEqual(
      StateNamespace.stateDirFor({ xdgStateHome: "/var/state", home: "/home/ada" }),
      "/var/state/tessera"
    )
    assert.strictEqual(
      StateNamespace.stateDirFor({ xdgStateHome: undefined, home: "/home/ada" }),
      "/home/ada/.local/state/tessera"
    )
    assert.strictEqual(
      StateNamespace.stateDirFor({ xdgStateHome: "relative/state", home: "/home/ada" }),
      "/home/ada/.local/state/tessera"
    )
    assert.strictEqual(
      StateNamespace.stateDirFor({ xdgStateHome: "", home: "/home/ada" }),
      "/home/ada/.local/state/tessera"
    )
  })
})

describe("LocalHarness.open", () => {
  it.live(
    "creates the standard volumes and opens the runtime with the agent's scratch volume as its private volume",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const harness = yield* LocalHarness.open({ stateDir, namespace, agent })
        assert.strictEqual(harness.folder, path.join(stateDir, namespace))
        assert.strictEqual(harness.host.store.id, namespace)
        const volumes = yield* harness.host.store.list()
        assert.deepStrictEqual(
          volumes.map((volume) => [volume.id, volume.kind, Volume.formatOwner(volume.owner)]),
          [
            ["journal", "Journal", "the host"],
            ["output", "Output", "the host"],
            ["researcher-scratch", "AgentPrivate", "agent researcher"]
          ]
        )
        assert.isTrue(Option.isSome(harness.runtime.privateVolume))
        if (Option.isSome(harness.runtime.privateVolume)) {
          assert.deepStrictEqual(harness.runtime.privateVolume.value.ref, harness.volumes.scratch)
        }
        assert.strictEqual(harness.journalFolder, yield* harness.host.store.folderOf(harness.volumes.journal))
        assert.isTrue(fs.existsSync(lockFileOf(stateDir)))

        // A bound task resolves the scratch volume as its private writer, holds
        // no grant on the journal, and defaults to compaction.
        const binding = yield* harness.bindTask(taskId("task-1"))
        assert.strictEqual(binding.policy._tag, "Threshold")
        const capability = yield* PrivateSummaries.resolve(binding.context)
        assert.strictEqual(capability.source, "RuntimePrivate")
        assert.deepStrictEqual(capability.writer.ref, harness.volumes.scratch)
        assert.isFalse(binding.context.grants.some((grant) => grant.volume.volume === harness.volumes.journal.volume))
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live("reopening after release finds the same store and volumes, and creates nothing new", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const first = yield* openInScope({ stateDir, namespace, agent })
      const before = yield* first.harness.host.store.list()
      yield* first.close
      const second = yield* openInScope({ stateDir, namespace, agent })
      assert.deepStrictEqual(yield* second.harness.host.store.list(), before)
      assert.deepStrictEqual(second.harness.volumes, first.harness.volumes)
      yield* second.close
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live("a standard volume that exists with another owner is a VolumeConflict, and its metadata is kept", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const first = yield* openInScope({ stateDir, namespace, agent })
      const meta = path.join(first.harness.folder, "meta", "volumes", "researcher-scratch.json")
      yield* first.close
      const original = fs.readFileSync(meta, "utf8")
      fs.writeFileSync(meta, original.replace('"agent": "researcher"', '"agent": "intruder"'))
      const error = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent }))
      assert.strictEqual(error._tag, "VolumeConflict")
      assert.include(error.message, "agent intruder")
      assert.include(fs.readFileSync(meta, "utf8"), "intruder")
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live("an invalid namespace name fails InvalidNamespace before anything is created", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const error = yield* Effect.flip(LocalHarness.open({ stateDir, namespace: "../escape", agent }))
      assert.strictEqual(error._tag, "InvalidNamespace")
      assert.deepStrictEqual(fs.readdirSync(stateDir), [])
    }).pipe(Effect.provide(nodeLayer))
  )
})

describe("LocalHarness.withTask input", () => {
  it.live("a path-shaped task id fails InvalidInput naming the task, and nothing is created for it", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const harness = yield* LocalHarness.open({ stateDir, namespace, agent })
      const before = fs.readdirSync(path.join(stateDir, namespace), { recursive: true }).sort()
      for (const bad of ["../../escape", "a/b", "", ".hidden"]) {
        const error = yield* Effect.flip(harness.withTask(bad as never, () => Effect.void))
        assert.strictEqual(error._tag, "InvalidInput")
        if (error._tag === "InvalidInput") assert.strictEqual(error.field, "task", error.message)
      }
      assert.deepStrictEqual(fs.readdirSync(path.join(stateDir, namespace), { recursive: true }).sort(), before)
      assert.isFalse(fs.existsSync(path.join(stateDir, "escape.jsonl")))
      // Negative control: a well-formed id runs its body.
      assert.strictEqual(yield* harness.withTask(taskId("fine"), () => Effect.succeed("ran")), "ran")
    }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )
})

describe("one runtime per namespace", () => {
  it.live(
    "a second open in the same process while the first holds the namespace fails NamespaceInUse naming this process",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        yield* LocalHarness.open({ stateDir, namespace, agent })
        const error = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent }))
        assert.strictEqual(error._tag, "NamespaceInUse")
        if (error._tag !== "NamespaceInUse") return
        assert.strictEqual(error.pid, process.pid)
        assert.strictEqual(error.file, lockFileOf(stateDir))
        assert.include(error.message, `process ${process.pid}`)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live("the lock is released when the harness's scope closes, and the namespace opens again", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const first = yield* openInScope({ stateDir, namespace, agent })
      assert.isTrue(fs.existsSync(lockFileOf(stateDir)))
      yield* first.close
      assert.isFalse(fs.existsSync(lockFileOf(stateDir)))
      const second = yield* openInScope({ stateDir, namespace, agent })
      assert.isTrue(fs.existsSync(lockFileOf(stateDir)))
      yield* second.close
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live("release leaves alone a lock file that no longer holds our token", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const opened = yield* openInScope({ stateDir, namespace, agent })
      const foreign = { ...opened.harness.lock.record, token: "someone-else-entirely-0000" }
      fs.writeFileSync(lockFileOf(stateDir), `${JSON.stringify(foreign)}\n`)
      yield* opened.close
      assert.isTrue(fs.existsSync(lockFileOf(stateDir)))
      assert.include(fs.readFileSync(lockFileOf(stateDir), "utf8"), "someone-else-entirely-0000")
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live("a corrupt lock file fails NamespaceLockInvalid naming the file, and is not deleted", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const file = lockFileOf(stateDir)
      for (const garbage of ["not json at all", '{"pid":"twelve","host":"h","startedAt":0,"token":"x"}', ""]) {
        fs.mkdirSync(path.dirname(file), { recursive: true })
        fs.writeFileSync(file, garbage)
        for (const recoverStaleLock of [false, true]) {
          const error = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent, recoverStaleLock }))
          assert.strictEqual(error._tag, "NamespaceLockInvalid")
          assert.include(error.message, file)
          assert.strictEqual(fs.readFileSync(file, "utf8"), garbage)
        }
      }
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live("a lock written on another host is never judged stale, even with recovery asked for", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const file = lockFileOf(stateDir)
      writeLock(file, { pid: deadPid(), host: "elsewhere.example", startedAt: 0, token: "token-of-another-host-0001" })
      const error = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent, recoverStaleLock: true }))
      assert.strictEqual(error._tag, "NamespaceInUse")
      assert.include(error.message, "elsewhere.example")
      assert.include(fs.readFileSync(file, "utf8"), "token-of-another-host-0001")
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "a child process holding the namespace: NamespaceInUse names its pid; killed with SIGKILL: with recoverStaleLock false, StaleNamespaceLock naming the option, kept; recovery then opens",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const child = yield* Effect.acquireRelease(startHolder(stateDir), killHard)
        const inUse = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent }))
        assert.strictEqual(inUse._tag, "NamespaceInUse")
        if (inUse._tag === "NamespaceInUse") assert.strictEqual(inUse.pid, child.pid)
        // Recovery never takes a live holder's lock.
        const stillInUse = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent, recoverStaleLock: true }))
        assert.strictEqual(stillInUse._tag, "NamespaceInUse")

        yield* killHard(child)
        const leftBehind = fs.readFileSync(lockFileOf(stateDir), "utf8")
        const stale = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent, recoverStaleLock: false }))
        assert.strictEqual(stale._tag, "StaleNamespaceLock")
        if (stale._tag === "StaleNamespaceLock") {
          assert.strictEqual(stale.pid, child.pid)
          assert.include(stale.message, "no longer running")
          assert.include(stale.message, "recoverStaleLock")
          assert.include(stale.message, `process ${child.pid} on ${hostname()}`)
        }
        assert.strictEqual(fs.readFileSync(lockFileOf(stateDir), "utf8"), leftBehind)

        const recovered = yield* LocalHarness.open({ stateDir, namespace, agent, recoverStaleLock: true })
        assert.strictEqual(recovered.lock.record.pid, process.pid)
        assert.include(fs.readFileSync(lockFileOf(stateDir), "utf8"), recovered.lock.record.token)
        assert.deepStrictEqual(
          fs.readdirSync(recovered.folder).filter((name) => name.startsWith(".")),
          [],
          "no aside or temporary file is left behind"
        )
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live("several concurrent recoveries of one stale lock: exactly one opener wins, the others see it in use", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const file = path.join(stateDir, "namespace.lock")
      const rounds = 5
      for (let round = 0; round < rounds; round++) {
        writeLock(file, { pid: deadPid(), host: hostname(), startedAt: 0, token: `stale-token-round-${round}-000` })
        const outcomes = yield* Effect.scoped(
          Effect.forEach(
            Array.from({ length: 6 }, (_, index) => index),
            () => Effect.result(NamespaceLock.acquire(file, { recoverStale: true })),
            { concurrency: "unbounded" }
          )
        )
        const winners = outcomes.filter((outcome) => outcome._tag === "Success")
        assert.strictEqual(winners.length, 1, `round ${round}`)
        for (const outcome of outcomes) {
          if (outcome._tag === "Failure") assert.strictEqual(outcome.failure._tag, "NamespaceInUse")
        }
        assert.isFalse(fs.existsSync(file), "the winner released its lock with its scope")
      }
    }).pipe(Effect.provide(nodeLayer))
  )
})
