/**
 * An exclusive, crash-aware lock on a state namespace: one runtime per
 * namespace at a time.
 *
 * The lock is a small JSON file naming its holder (pid, host name, and on
 * Linux the boot id, the pid namespace and the process's start time; a
 * random token), Schema-encoded. It is published the way the volume store
 * publishes its metadata: written and synced under a temporary `wx` name,
 * then hard-linked to the lock name. The link is atomic and fails when the
 * name exists, so exactly one opener wins and nobody ever reads a
 * half-written lock.
 *
 * A lock is stale when its holder is a process of this machine that is gone:
 * the same host name, the same boot and pid namespace where both sides
 * record them, and `kill(pid, 0)` answers `ESRCH` (`EPERM` is a live process
 * of another user), or the pid is an exited process its parent has not
 * reaped yet (a zombie), or it is running but started at another time than
 * the holder did (the pid was reused). A stale lock is replaced when the
 * caller asks for recovery (`recoverStale`, on by default for namespaces,
 * see `StateNamespace.OpenOptions.recoverStaleLock`), else opening fails
 * {@link StaleNamespaceLock}. Recovery runs under a second lock file
 * (`<lock>.recovery`, taken the same atomic way): only one recoverer at a
 * time, and it checks the file still holds the dead holder's token, then
 * renames its own record over it. The name is never free meanwhile (a plain
 * opener's link keeps failing), so two openers never both hold the
 * namespace: of two processes recovering one stale lock at once, one holds
 * it and the other fails {@link NamespaceInUse}. The recovery is logged (a
 * warning) and reported as {@link HeldLock.recovered}.
 *
 * Limits, by design on the safe side (each refusal is a
 * {@link NamespaceInUse} whose `reason` says which):
 *
 * - a lock written on another host, under another boot id (another machine
 *   with the same host name, or this one before a reboot) or in another pid
 *   namespace (another container sharing the folder) is never judged stale:
 *   its process cannot be probed from here. Remove the file by hand once no
 *   process uses the namespace.
 * - pid reuse is seen only where `/proc/<pid>/stat` is readable (Linux) and
 *   the lock recorded the start time; elsewhere a recycled pid makes a stale
 *   lock look alive.
 * - a lock of an older version records neither boot, pid namespace nor
 *   start time, and is judged by host name and pid alone.
 * - a `.recovery` file a killed recoverer left is not recovered (a person
 *   removes it), except where the caller guarantees a single recoverer
 *   (`recoverInterruptedRecovery`).
 *
 * @since 0.1.0
 */
import * as nodeFs from "node:fs"
import { hostname } from "node:os"
import * as DurableFiles from "@tessera/core/DurableFiles"
import * as Clock from "effect/Clock"
import * as SecureRandom from "effect/crypto/SecureRandom"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import type { PlatformError } from "effect/PlatformError"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/**
 * The contents of a lock file.
 *
 * - `pid`, `host`: the process holding the namespace.
 * - `startedAt`: when it took the lock, epoch milliseconds.
 * - `token`: random; a holder removes the file on release only when it still
 *   holds this token, and recovery replaces a stale file only when it still
 *   holds the token that was judged stale.
 * - `boot`, `pidNamespace`: which boot of which kernel, and which pid
 *   namespace, the pid belongs to (Linux; absent where unknown): a lock of
 *   another boot or namespace is never judged stale.
 * - `processStart`: the holder's start time in clock ticks since boot
 *   (field 22 of `/proc/<pid>/stat`; absent where unknown): a running process
 *   with that pid but another start time reused the pid, and the holder is
 *   gone.
 *
 * @since 0.1.0
 * @category models
 */
export const LockRecord = Schema.Struct({
  pid: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  host: Schema.String,
  startedAt: Schema.Number,
  token: Schema.String.check(Schema.isMinLength(16)),
  boot: Schema.optionalKey(Schema.String),
  pidNamespace: Schema.optionalKey(Schema.String),
  processStart: Schema.optionalKey(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type LockRecord = typeof LockRecord.Type

const LockFile = Schema.fromJsonString(LockRecord)
const decodeLock = Schema.decodeUnknownResult(LockFile)
const encodeLock = Schema.encodeSync(LockFile)

const since = (record: LockRecord): string => new Date(record.startedAt).toISOString()

/**
 * The namespace is held by a running process, or by one this process cannot
 * probe (another host, boot or pid namespace). `file` is the lock file;
 * `pid`, `host` and `since` name the holder, `reason` says why the lock is
 * not taken over.
 *
 * @since 0.1.0
 * @category errors
 */
export class NamespaceInUse extends Schema.TaggedError<NamespaceInUse>()("NamespaceInUse", {
  file: Schema.String,
  pid: Schema.Int,
  host: Schema.String,
  since: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `namespace in use: ${this.file} is held by process ${this.pid} on ${this.host} since ${this.since} (${this.reason})`
  }
}

/**
 * The lock was left by a process of this host that is no longer running (it
 * crashed or was killed), and recovery was not asked for. Nothing was
 * changed; `reason` says how the holder was found gone, `hint` which option
 * replaces the lock. A stale `.recovery` file means a recovery itself was
 * interrupted, and is left for a person to remove.
 *
 * @since 0.1.0
 * @category errors
 */
export class StaleNamespaceLock extends Schema.TaggedError<StaleNamespaceLock>()("StaleNamespaceLock", {
  file: Schema.String,
  pid: Schema.Int,
  host: Schema.String,
  since: Schema.String,
  reason: Schema.String,
  hint: Schema.String
}) {
  override get message(): string {
    return `stale namespace lock: ${this.file} was left by process ${this.pid} on ${this.host} (since ${this.since}), which is no longer running (${this.reason}); ${this.hint}`
  }
}

/**
 * A lock file exists but does not decode. It was left untouched: a person
 * should look at it before anything removes it.
 *
 * @since 0.1.0
 * @category errors
 */
export class NamespaceLockInvalid extends Schema.TaggedError<NamespaceLockInvalid>()("NamespaceLockInvalid", {
  file: Schema.String,
  problem: Schema.String
}) {
  override get message(): string {
    return `namespace lock ${this.file} is not a valid lock file (left untouched; remove it by hand once no process uses the namespace): ${this.problem}`
  }
}

/**
 * The file system refused a lock operation, or the lock kept changing under
 * repeated attempts.
 *
 * @since 0.1.0
 * @category errors
 */
export class NamespaceLockIoError extends Schema.TaggedError<NamespaceLockIoError>()("NamespaceLockIoError", {
  file: Schema.String,
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `namespace lock ${this.file}: could not ${this.operation}: ${this.detail}`
  }
}

/**
 * Everything acquiring a lock can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type LockError = NamespaceInUse | StaleNamespaceLock | NamespaceLockInvalid | NamespaceLockIoError

/**
 * A lock this process holds. `recovered` is the stale lock it replaced (the
 * holder that crashed), `None` when the name was free.
 *
 * @since 0.1.0
 * @category models
 */
export interface HeldLock {
  readonly file: string
  readonly record: LockRecord
  readonly recovered: Option.Option<LockRecord>
}

/**
 * Options of {@link acquire}.
 *
 * @since 0.1.0
 * @category models
 */
export interface AcquireOptions {
  /** Replace a stale lock (holder gone, this machine) instead of failing {@link StaleNamespaceLock}. */
  readonly recoverStale?: boolean
  /**
   * With `recoverStale`, also remove a `.recovery` file a dead process of this
   * host left (a recovery killed midway) instead of failing. Only safe where
   * no other recoverer can run meanwhile: the caller holds an enclosing lock
   * and takes this one from a single fiber at a time (the local hosts' task
   * locks, under the namespace lock).
   */
  readonly recoverInterruptedRecovery?: boolean
  /**
   * The `hint` of a {@link StaleNamespaceLock} refused because `recoverStale`
   * is off: how the caller's own caller asks for recovery (the name of its
   * option).
   */
  readonly staleHint?: string
}

/**
 * Whether a process of this host is running. `EPERM` means it runs under
 * another user: alive.
 *
 * @since 0.1.0
 * @category probes
 */
export const isProcessAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return !(typeof error === "object" && error !== null && "code" in error && error.code === "ESRCH")
  }
}

const readOptional = (read: () => string): string | undefined => {
  try {
    const text = read().trim()
    return text.length > 0 ? text : undefined
  } catch {
    return undefined
  }
}

/**
 * The start time of process `pid` in clock ticks since boot (field 22 of
 * `/proc/<pid>/stat`), or `undefined` where it cannot be read (not Linux, no
 * such process, `/proc` hidden).
 *
 * @since 0.1.0
 * @category probes
 */
export const processStartOf = (pid: number): string | undefined => readOptional(() => statFields(pid)[19] ?? "")

/** The fields of `/proc/<pid>/stat` from field 3 (the state) on; throws where there is none. */
const statFields = (pid: number): ReadonlyArray<string> => {
  const stat = nodeFs.readFileSync(`/proc/${pid}/stat`, "utf8")
  // The command name (field 2) is parenthesized and may hold spaces and parentheses: count from the last `)`.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}

/** A zombie (exited, not yet reaped by its parent) still answers `kill(pid, 0)`, but holds nothing any more. */
const isZombie = (pid: number): boolean => {
  const state = readOptional(() => statFields(pid)[0] ?? "")
  return state === "Z" || state === "X"
}

/**
 * What this process records about the machine it runs on, and what a lock
 * must match to be judged by probing its pid here (`undefined`: unknown on
 * this platform).
 *
 * @since 0.1.0
 * @category probes
 */
export interface LocalIdentity {
  readonly host: string
  readonly boot: string | undefined
  readonly pidNamespace: string | undefined
}

/**
 * This process's {@link LocalIdentity}: the host name, and on Linux the boot
 * id (`/proc/sys/kernel/random/boot_id`) and the pid namespace
 * (`/proc/self/ns/pid`).
 *
 * @since 0.1.0
 * @category probes
 */
export const localIdentity = (): LocalIdentity => ({
  host: hostname(),
  boot: readOptional(() => nodeFs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8")),
  pidNamespace: readOptional(() => nodeFs.readlinkSync("/proc/self/ns/pid"))
})

/**
 * How `holder` stands, seen from a process whose own record is `local`:
 * `Foreign` (its pid cannot be probed here), `Alive`, or `Gone`, each with a
 * sentence saying why.
 *
 * @since 0.1.0
 * @category probes
 */
export const standing = (
  holder: LockRecord,
  local: LocalIdentity
): { readonly _tag: "Foreign" | "Alive" | "Gone"; readonly reason: string } => {
  const differs = (a: string | undefined, b: string | undefined) => a !== undefined && b !== undefined && a !== b
  if (holder.host !== local.host) {
    return { _tag: "Foreign", reason: "written on another host: its process cannot be probed from here" }
  }
  if (differs(holder.boot, local.boot)) {
    return {
      _tag: "Foreign",
      reason: `written under another boot id (${holder.boot}: another machine named ${holder.host}, or this one before a reboot): its process cannot be probed from here; remove the file by hand once no process uses the namespace`
    }
  }
  if (differs(holder.pidNamespace, local.pidNamespace)) {
    return {
      _tag: "Foreign",
      reason: `written in another pid namespace (${holder.pidNamespace}: another container): its process cannot be probed from here`
    }
  }
  if (!isProcessAlive(holder.pid)) return { _tag: "Gone", reason: "no process has that pid" }
  if (isZombie(holder.pid))
    return { _tag: "Gone", reason: "the process has exited (a zombie its parent has not reaped)" }
  const started = holder.processStart === undefined ? undefined : processStartOf(holder.pid)
  if (differs(holder.processStart, started)) {
    return {
      _tag: "Gone",
      reason: `its pid now belongs to a process started at tick ${started}, not ${holder.processStart}`
    }
  }
  return { _tag: "Alive", reason: "the process is running" }
}

const attempts = 5

/**
 * Takes the lock at `file` for the lifetime of the current scope. On scope
 * close the file is removed, but only when it still holds this lock's token.
 *
 * Fails {@link NamespaceInUse} when a live process holds it (or one of
 * another host, boot or pid namespace), {@link StaleNamespaceLock} when a
 * gone one left it (unless `recoverStale`), {@link NamespaceLockInvalid}
 * when the file does not decode. A replaced stale lock is logged as a
 * warning and returned as {@link HeldLock.recovered}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const acquire = (
  file: string,
  options: AcquireOptions = {}
): Effect.Effect<HeldLock, LockError, FileSystem.FileSystem | Path.Path | Scope.Scope> =>
  Effect.acquireRelease(take(file, options), (held) => release(held).pipe(Effect.ignore))

const take = Effect.fnUntraced(function* (file: string, options: AcquireOptions) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const io = (operation: string, target: string) => (error: PlatformError) =>
    new NamespaceLockIoError({ file: target, operation, detail: error.message })
  const local = localIdentity()
  const processStart = processStartOf(process.pid)
  const record: LockRecord = {
    pid: process.pid,
    host: local.host,
    startedAt: yield* Clock.currentTimeMillis,
    token: SecureRandom.uuidV4Unsafe(),
    ...(local.boot === undefined ? {} : { boot: local.boot }),
    ...(local.pidNamespace === undefined ? {} : { pidNamespace: local.pidNamespace }),
    ...(processStart === undefined ? {} : { processStart })
  }

  /** Writes and syncs `record` under a temporary name next to `target`, runs `use` on it, then removes it. */
  const withTemporary = <A>(target: string, use: (temp: string) => Effect.Effect<A, PlatformError>) => {
    const temp = path.join(path.dirname(target), DurableFiles.temporaryName(path.basename(target), record.token))
    return Effect.scoped(
      Effect.gen(function* () {
        const handle = yield* fs.open(temp, { flag: "wx", mode: 0o644 })
        yield* handle.writeAll(new TextEncoder().encode(`${encodeLock(record)}\n`))
        yield* handle.sync
      })
    ).pipe(Effect.andThen(use(temp)), Effect.ensuring(fs.remove(temp).pipe(Effect.ignore)))
  }

  /** Publishes `record` at `target` atomically; `false` when the name is taken. */
  const publish = (target: string) =>
    withTemporary(target, (temp) =>
      fs.link(temp, target).pipe(
        Effect.as(true),
        Effect.catchIf(
          (error) => error.reason._tag === "AlreadyExists",
          () => Effect.succeed(false)
        )
      )
    ).pipe(Effect.mapError(io("create", target)))

  /** The record at `target`; `None` when the file vanished. */
  const read = (target: string) =>
    fs.readFileString(target).pipe(
      Effect.map(Option.some),
      Effect.catchIf(
        (error) => error.reason._tag === "NotFound",
        () => Effect.succeed(Option.none<string>())
      ),
      Effect.mapError(io("read", target)),
      Effect.flatMap(
        Option.match({
          onNone: () => Effect.succeed(Option.none<LockRecord>()),
          onSome: (text) => {
            const decoded = decodeLock(text.trim())
            return Result.isSuccess(decoded)
              ? Effect.succeed(Option.some(decoded.success))
              : Effect.fail(new NamespaceLockInvalid({ file: target, problem: decoded.failure.message }))
          }
        })
      )
    )

  /** Why `holder` keeps the lock: alive (or not probeable from here), or gone from this machine. */
  const judge = (
    target: string,
    holder: LockRecord,
    hint: string
  ): Effect.Effect<never, NamespaceInUse | StaleNamespaceLock> => {
    const facts = { file: target, pid: holder.pid, host: holder.host, since: since(holder) }
    const judged = standing(holder, local)
    if (judged._tag !== "Gone") return Effect.fail(new NamespaceInUse({ ...facts, reason: judged.reason }))
    return Effect.fail(new StaleNamespaceLock({ ...facts, reason: judged.reason, hint }))
  }

  const recoveryFile = `${file}.recovery`
  /**
   * Under the recovery lock, replaces the stale lock with ours if it still
   * holds `stale.token`: `Some` when this process now holds the lock, `None`
   * when the next attempt must look again.
   */
  const recover = (stale: StaleNamespaceLock, holder: LockRecord) =>
    Effect.gen(function* () {
      if (!(yield* publish(recoveryFile))) {
        const other = yield* read(recoveryFile)
        if (Option.isNone(other)) return Option.none<HeldLock>()
        const refusal = yield* Effect.flip(
          judge(
            recoveryFile,
            other.value,
            "a recovery of this namespace was interrupted; remove this file by hand once no process uses the namespace"
          )
        )
        if (refusal._tag === "NamespaceInUse") {
          // Another recoverer is at work: it will hold the lock, and this opener sees its holder.
          return yield* new NamespaceInUse({
            file,
            pid: other.value.pid,
            host: other.value.host,
            since: since(other.value),
            reason: `the process is recovering the stale lock process ${holder.pid} left`
          })
        }
        if (options.recoverInterruptedRecovery !== true) return yield* Effect.fail(refusal)
        // The caller guarantees no other recoverer: the interrupted recovery's file goes, and the next attempt
        // recovers the lock itself.
        yield* fs.remove(recoveryFile).pipe(Effect.mapError(io("remove an interrupted recovery", recoveryFile)))
        return Option.none<HeldLock>()
      }
      return yield* Effect.gen(function* () {
        const current = yield* read(file)
        if (Option.isNone(current) || current.value.token !== holder.token) return Option.none<HeldLock>()
        // The name stays taken throughout: the rename swaps the dead holder's record for ours in one step, so no
        // plain opener can link its own in between, and no other recoverer runs while we hold the recovery file.
        yield* withTemporary(file, (temp) => fs.rename(temp, file)).pipe(
          Effect.mapError(io("replace the stale lock", file))
        )
        yield* Effect.logWarning(
          `recovered the stale lock ${file} left by process ${holder.pid} on ${holder.host} (since ${stale.since}), which is gone (${stale.reason}); now held by process ${record.pid}`
        )
        return Option.some<HeldLock>({ file, record, recovered: Option.some(holder) })
      }).pipe(
        Effect.ensuring(
          fs.readFileString(recoveryFile).pipe(
            Effect.flatMap((text) => (text.includes(record.token) ? fs.remove(recoveryFile) : Effect.void)),
            Effect.ignore
          )
        )
      )
    })

  const staleHint = options.staleHint ?? "acquire it with stale-lock recovery (recoverStale) to replace it"
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (yield* publish(file)) {
      const held: HeldLock = { file, record, recovered: Option.none() }
      return held
    }
    const holder = yield* read(file)
    if (Option.isNone(holder)) continue
    const refusal = yield* Effect.flip(judge(file, holder.value, staleHint))
    if (refusal._tag === "NamespaceInUse" || options.recoverStale !== true) return yield* Effect.fail(refusal)
    const recovered = yield* recover(refusal, holder.value)
    if (Option.isSome(recovered)) return recovered.value
  }
  return yield* new NamespaceLockIoError({
    file,
    operation: "take the lock",
    detail: `the lock file kept changing during ${attempts} attempts`
  })
})

/**
 * Removes the lock file when it still holds `held`'s token (a file that is
 * not ours any more is left alone).
 *
 * @since 0.1.0
 * @category destructors
 */
export const release = Effect.fnUntraced(function* (held: HeldLock) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(held.file)
  const decoded = decodeLock(text.trim())
  if (Result.isSuccess(decoded) && decoded.success.token === held.record.token) yield* fs.remove(held.file)
})
