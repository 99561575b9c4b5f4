/**
 * Issue 37, crash ergonomics: a namespace lock a crashed process of this
 * machine left is recovered on open by default, atomically and reported;
 * a live holder's lock, or one of another host, boot or pid namespace, never
 * is; `recoverStaleLock: false` refuses with an error naming the option.
 *
 * The holders are real processes (fixtures/lockContender.ts) killed with
 * SIGKILL while they hold the lock.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { hostname } from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { LocalHarness, NamespaceLock, StateNamespace } from "@tessera/node"
import { Journal, TaskExecution } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Logger, Option } from "effect"
import { crashTurnConfig, crashTurnScript } from "./support/crashTurn.ts"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const agent = agentId("researcher")
const namespace = "project-a"
const contender = path.join(import.meta.dirname, "fixtures", "lockContender.ts")
const crashMidTurn = path.join(import.meta.dirname, "fixtures", "crashMidTurn.ts")
const lockFileOf = (stateDir: string) => path.join(stateDir, namespace, StateNamespace.lockFileName)
const onLinux = process.platform === "linux"

interface Held {
  readonly held: true
  readonly pid: number
  readonly token: string
  readonly recovered: number | null
}
interface Refused {
  readonly held: false
  readonly tag: string
  readonly message: string
}
type Said = Held | Refused | { readonly judged: string }

/** A contender child: `go()` lets it take the lock, `said` what it printed, `end()` lets a holder release. */
interface Contender {
  readonly child: ChildProcess
  readonly said: Array<Said>
  /** Resolves once the child has loaded and waits for `go`. */
  readonly ready: Promise<void>
  readonly go: () => void
  readonly next: (count: number) => Promise<ReadonlyArray<Said>>
  readonly end: () => Promise<void>
  readonly killHard: () => Promise<void>
  readonly stderr: () => string
}

const startContender = (mode: "open" | "naive", stateDir: string): Contender => {
  const child = spawn(process.execPath, [contender, mode, stateDir, namespace], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, NODE_COMPILE_CACHE: path.join(stateDir, "..", "compile-cache") }
  })
  const said: Array<Said> = []
  const waiters: Array<() => void> = []
  let markReady = () => {}
  const ready = new Promise<void>((resolve) => {
    markReady = resolve
  })
  let buffered = ""
  let errors = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString()
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = JSON.parse(buffered.slice(0, end)) as Said | { readonly ready: true }
      if ("ready" in line) markReady()
      else said.push(line)
      buffered = buffered.slice(end + 1)
    }
    for (const waiter of waiters.splice(0)) waiter()
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    errors += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  child.once("exit", () => {
    for (const waiter of waiters.splice(0)) waiter()
  })
  const next = (count: number): Promise<ReadonlyArray<Said>> =>
    new Promise((resolve, reject) => {
      const check = () => {
        if (said.length >= count) resolve(said.slice(0, count))
        else if (child.exitCode !== null || child.signalCode !== null) {
          reject(
            new Error(
              `the contender exited (${child.exitCode ?? child.signalCode}) after ${said.length} lines: ${errors}`
            )
          )
        } else waiters.push(check)
      }
      check()
    })
  return {
    child,
    said,
    ready,
    go: () => child.stdin?.write("go\n"),
    next,
    end: () => {
      child.stdin?.end()
      return exited
    },
    killHard: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      return exited
    },
    stderr: () => errors
  }
}

const promise = <A>(thunk: () => Promise<A>) => Effect.promise(thunk)

/** Starts a contender that takes the namespace, then kills it with SIGKILL: its lock is left behind. */
const crashedHolder = (stateDir: string) =>
  promise(async () => {
    const holder = startContender("open", stateDir)
    holder.go()
    const [said] = await holder.next(1)
    assert.deepInclude(said, { held: true, recovered: null }, holder.stderr())
    await holder.killHard()
    assert.strictEqual(holder.child.signalCode, "SIGKILL")
    return holder.child.pid as number
  })

/** `undefined` when exactly one contender holds the lock and the file names it; else what is wrong. */
const exactlyOneHolder = (file: string, said: ReadonlyArray<Said>): string | undefined => {
  const holders = said.filter((line): line is Held => "held" in line && line.held)
  if (holders.length !== 1) return `${holders.length} contenders believe they hold the lock`
  const refused = said.filter((line): line is Refused => "held" in line && !line.held)
  const odd = refused.filter((line) => line.tag !== "NamespaceInUse")
  if (odd.length > 0) return `a loser failed ${odd.map((line) => line.tag).join(", ")}, not NamespaceInUse`
  const record = JSON.parse(fs.readFileSync(file, "utf8")) as NamespaceLock.LockRecord
  return record.token === holders[0]?.token ? undefined : "the lock file does not name the holder"
}

/** A pid that certainly belonged to a process that has exited. */
const deadPid = (): number => spawnSync(process.execPath, ["-e", ""]).pid as number

const writeLock = (file: string, record: NamespaceLock.LockRecord) => {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, `${JSON.stringify(record)}\n`)
}

/** Runs `effect` with a logger collecting its messages. */
const withLogs = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const logs: Array<string> = []
    const collector = Logger.make(({ message }) => {
      logs.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
    const value = yield* effect.pipe(Effect.provide(Logger.layer([collector])))
    return { value, logs }
  })

describe("issue 37: a stale namespace lock is recovered on open", () => {
  it.live(
    "stale_lock_recovered_by_default: a holder killed with SIGKILL; recoverStaleLock false refuses naming the option, the pid and the host; the default open replaces the lock, logs it and reports the dead holder as lock.recovered",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const file = lockFileOf(stateDir)
        const dead = yield* crashedHolder(stateDir)
        const left = fs.readFileSync(file, "utf8")
        const record = JSON.parse(left) as NamespaceLock.LockRecord
        if (onLinux) {
          // What the judgement relies on is recorded: the boot, the pid namespace and the start time.
          const local = NamespaceLock.localIdentity()
          assert.strictEqual(record.boot, local.boot)
          assert.strictEqual(record.pidNamespace, local.pidNamespace)
          assert.match(record.processStart ?? "", /^\d+$/)
        }

        // Negative control: asked not to recover, the open refuses and changes nothing.
        const refused = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent, recoverStaleLock: false }))
        assert.strictEqual(refused._tag, "StaleNamespaceLock")
        assert.include(refused.message, "recoverStaleLock")
        assert.include(refused.message, `process ${dead} on ${hostname()}`)
        assert.strictEqual(fs.readFileSync(file, "utf8"), left)

        const { value: harness, logs } = yield* withLogs(LocalHarness.open({ stateDir, namespace, agent }))
        assert.isTrue(Option.isSome(harness.lock.recovered))
        assert.strictEqual(Option.getOrThrow(harness.lock.recovered).pid, dead)
        assert.strictEqual(Option.getOrThrow(harness.lock.recovered).token, record.token)
        assert.strictEqual(harness.lock.record.pid, process.pid)
        assert.include(fs.readFileSync(file, "utf8"), harness.lock.record.token)
        assert.isTrue(
          logs.some((line) => line.includes(`recovered the stale lock ${file} left by process ${dead}`)),
          logs.join("\n")
        )
        assert.deepStrictEqual(
          fs.readdirSync(harness.folder).filter((name) => name.startsWith(".") || name.endsWith(".recovery")),
          [],
          "no aside, temporary or recovery file is left behind"
        )
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.live("a live holder is never recovered: NamespaceInUse naming it as running, the file untouched", () =>
    Effect.gen(function* () {
      const stateDir = yield* tempDir
      const file = lockFileOf(stateDir)
      const holder = yield* Effect.acquireRelease(
        Effect.sync(() => startContender("open", stateDir)),
        (started) => Effect.promise(() => started.killHard())
      )
      holder.go()
      yield* promise(() => holder.next(1))
      const left = fs.readFileSync(file, "utf8")
      for (const recoverStaleLock of [undefined, true]) {
        const error = yield* Effect.flip(
          LocalHarness.open({
            stateDir,
            namespace,
            agent,
            ...(recoverStaleLock === undefined ? {} : { recoverStaleLock })
          })
        )
        assert.strictEqual(error._tag, "NamespaceInUse")
        if (error._tag !== "NamespaceInUse") return
        assert.strictEqual(error.pid, holder.child.pid)
        assert.strictEqual(error.reason, "the process is running")
        assert.strictEqual(fs.readFileSync(file, "utf8"), left)
      }
    }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.live(
    "a lock of another host, boot or pid namespace is never recovered: NamespaceInUse saying which; the same dead holder recorded as this machine is recovered (control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const file = lockFileOf(stateDir)
        const local = NamespaceLock.localIdentity()
        const pid = deadPid()
        const ours = {
          pid,
          host: local.host,
          startedAt: 0,
          ...(local.boot === undefined ? {} : { boot: local.boot }),
          ...(local.pidNamespace === undefined ? {} : { pidNamespace: local.pidNamespace })
        }
        const foreign: ReadonlyArray<readonly [NamespaceLock.LockRecord, string]> = [
          [{ ...ours, host: "elsewhere.example", token: "token-of-another-host-0001" }, "another host"],
          ...(onLinux
            ? ([
                [
                  { ...ours, boot: "00000000-0000-0000-0000-000000000000", token: "token-of-another-boot-01" },
                  "another boot id"
                ],
                [{ ...ours, pidNamespace: "pid:[1]", token: "token-of-another-pidns-01" }, "another pid namespace"]
              ] as const)
            : [])
        ]
        if (onLinux) assert.strictEqual(foreign.length, 3, "on Linux, boot and pid namespace are known")
        for (const [record, why] of foreign) {
          writeLock(file, record)
          const error = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent }))
          assert.strictEqual(error._tag, "NamespaceInUse")
          if (error._tag !== "NamespaceInUse") return
          assert.include(error.reason, why)
          assert.include(error.message, record.host)
          assert.include(fs.readFileSync(file, "utf8"), record.token)
        }
        // Control: the same dead pid, recorded as this machine, is recovered.
        writeLock(file, { ...ours, token: "token-of-this-machine-0001" })
        const recovered = yield* Effect.scoped(
          Effect.map(LocalHarness.open({ stateDir, namespace, agent }), (harness) => harness.lock.recovered)
        )
        assert.strictEqual(Option.getOrThrow(recovered).token, "token-of-this-machine-0001")
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.live.skipIf(!onLinux)(
    "pid reuse (Linux): a running pid with another start time than the holder's is judged gone and recovered; with the holder's own start time it is in use (control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const file = lockFileOf(stateDir)
        const local = NamespaceLock.localIdentity()
        const other = yield* Effect.acquireRelease(
          Effect.sync(() => spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" })),
          (child) => Effect.sync(() => child.kill("SIGKILL"))
        )
        const pid = other.pid as number
        const started = NamespaceLock.processStartOf(pid)
        assert.match(started ?? "", /^\d+$/)
        const record = {
          pid,
          host: local.host,
          startedAt: 0,
          ...(local.boot === undefined ? {} : { boot: local.boot })
        }

        writeLock(file, { ...record, processStart: started as string, token: "token-of-the-live-holder-1" })
        const inUse = yield* Effect.flip(LocalHarness.open({ stateDir, namespace, agent }))
        assert.strictEqual(inUse._tag, "NamespaceInUse")

        writeLock(file, { ...record, processStart: "1", token: "token-of-a-reused-pid-0001" })
        const recovered = yield* Effect.scoped(
          Effect.map(LocalHarness.open({ stateDir, namespace, agent }), (harness) => harness.lock.recovered)
        )
        assert.strictEqual(Option.getOrThrow(recovered).token, "token-of-a-reused-pid-0001")
        assert.strictEqual(
          NamespaceLock.standing({ ...record, processStart: "1", token: "x".repeat(16) }, local).reason,
          `its pid now belongs to a process started at tick ${started}, not 1`
        )
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.live.skipIf(!onLinux)(
    "a zombie holder (exited, not reaped by its parent) is judged gone and recovered, although kill(pid, 0) still answers for it (control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const file = lockFileOf(stateDir)
        const local = NamespaceLock.localIdentity()
        // `sleep 1` exits a second later, when its parent has become `sleep 30` by exec, which never reaps it. (A
        // child that exits before the exec may be reaped by the shell first, and leaves no zombie to test with.)
        const parent = yield* Effect.acquireRelease(
          Effect.sync(() =>
            spawn("sh", ["-c", "sleep 1 & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] })
          ),
          (child) => Effect.sync(() => child.kill("SIGKILL"))
        )
        const zombie = yield* promise(
          () =>
            new Promise<number>((resolve) => {
              parent.stdout?.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())))
            })
        )
        const isZombie = () => /\) Z /.test(fs.readFileSync(`/proc/${zombie}/stat`, "utf8"))
        for (let waited = 0; !isZombie() && waited < 250; waited++) yield* Effect.sleep("20 millis")
        assert.isTrue(isZombie(), "the child is a zombie")
        assert.isTrue(NamespaceLock.isProcessAlive(zombie), "kill(pid, 0) alone calls it alive")

        writeLock(file, {
          pid: zombie,
          host: local.host,
          startedAt: 0,
          token: "token-of-a-zombie-holder-01",
          ...(local.boot === undefined ? {} : { boot: local.boot })
        })
        const recovered = yield* Effect.scoped(
          Effect.map(LocalHarness.open({ stateDir, namespace, agent }), (harness) => harness.lock.recovered)
        )
        assert.strictEqual(Option.getOrThrow(recovered).pid, zombie)
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )

  it.live(
    "stale_lock_recovery_race: two processes recovering one stale lock at once (3 rounds): exactly one holds it and reports the recovery, the other fails NamespaceInUse; a check-then-replace recoverer makes two holders (negative control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const file = lockFileOf(stateDir)
        for (let round = 0; round < 3; round++) {
          const dead = yield* crashedHolder(stateDir)
          const racers = [startContender("open", stateDir), startContender("open", stateDir)]
          yield* Effect.ensuring(
            promise(async () => {
              // Both loaded and waiting: the two `go`s leave together, so the opens overlap.
              await Promise.all(racers.map((racer) => racer.ready))
              for (const racer of racers) racer.go()
              const said = (await Promise.all(racers.map((racer) => racer.next(1)))).flat()
              assert.isUndefined(exactlyOneHolder(file, said), `round ${round}: ${JSON.stringify(said)}`)
              const winner = racers.find((racer) => "held" in (racer.said[0] ?? {}) && (racer.said[0] as Held).held)
              assert.strictEqual((winner?.said[0] as Held | undefined)?.recovered, dead, `round ${round}`)
              assert.include(winner?.stderr(), `left by process ${dead}`, "the winner logged the recovery")
            }),
            promise(() => Promise.all(racers.map((racer) => racer.end()))).pipe(Effect.asVoid)
          )
          assert.isFalse(fs.existsSync(file), `round ${round}: the winner released the lock`)
        }

        // Negative control: two recoverers that judge, then remove and re-create, both end up "holding".
        yield* crashedHolder(stateDir)
        const naive = [startContender("naive", stateDir), startContender("naive", stateDir)] as const
        yield* Effect.ensuring(
          promise(async () => {
            await Promise.all(naive.map((racer) => racer.ready))
            for (const racer of naive) racer.go()
            for (const racer of naive) assert.deepStrictEqual((await racer.next(1))[0], { judged: "Gone" })
            naive[0].go()
            await naive[0].next(2)
            naive[1].go()
            await naive[1].next(2)
            const said = naive.map((racer) => racer.said[1] as Said)
            assert.strictEqual(exactlyOneHolder(file, said), "2 contenders believe they hold the lock")
          }),
          promise(() => Promise.all(naive.map((racer) => racer.killHard()))).pipe(Effect.asVoid)
        )
      }).pipe(Effect.scoped, Effect.provide(nodeLayer)),
    120_000
  )

  it.live(
    "resume_after_sigkill: a durable turn killed with SIGKILL inside a tool call is resumed by a fresh open with default options (both locks recovered, the call in flight reported); recoverStaleLock false refuses it (control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const crashed = spawnSync(process.execPath, [crashMidTurn, stateDir, namespace], { encoding: "utf8" })
        assert.strictEqual(crashed.signal, "SIGKILL", crashed.stderr)
        const task = taskId("reports")

        const refused = yield* Effect.flip(
          Effect.scoped(LocalHarness.open({ stateDir, namespace, agent, recoverStaleLock: false }))
        )
        assert.strictEqual(refused._tag, "StaleNamespaceLock")

        const { value: resumed, logs } = yield* withLogs(
          Effect.scoped(
            Effect.gen(function* () {
              const harness = yield* LocalHarness.open({ stateDir, namespace, agent })
              assert.strictEqual(Option.getOrThrow(harness.lock.recovered).pid, crashed.pid)
              return yield* harness.withTask(task, (binding) =>
                TaskExecution.resume(binding, crashTurnConfig(false)).pipe(
                  Effect.provide(ScriptedModel.layer(crashTurnScript.slice(2)))
                )
              )
            })
          )
        )
        assert.deepStrictEqual(
          resumed.inFlight.map((call) => call.callId),
          ["c2"]
        )
        assert.strictEqual(resumed.outcome._tag, "Answered")
        assert.strictEqual(resumed.outcome._tag === "Answered" ? resumed.outcome.text : "", "Both reports read.")
        // The task's journal lock was left by the killed child too, and recovered under the namespace lock.
        assert.isTrue(
          logs.some((line) =>
            line.includes(`${StateNamespace.taskLockFolderName}${path.sep}${task}.lock left by process ${crashed.pid}`)
          ),
          logs.join("\n")
        )
        const entries = yield* Journal.readEntries({
          folder: path.join(stateDir, namespace, "volumes", "journal"),
          task
        })
        assert.strictEqual(entries.at(-1)?._tag, "TurnClosed")
      }).pipe(Effect.scoped, Effect.provide(nodeLayer)),
    60_000
  )
})
