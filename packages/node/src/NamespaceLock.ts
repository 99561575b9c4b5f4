/**
 * An exclusive, crash-aware lock on a state namespace: one runtime per
 * namespace at a time.
 *
 * The lock is a small JSON file (pid, host name, start time and a random
 * token, Schema-encoded). It is published the way the volume store publishes
 * its metadata: written and synced under a temporary `wx` name, then
 * hard-linked to the lock name. The link is atomic and fails when the name
 * exists, so exactly one opener wins and nobody ever reads a half-written
 * lock.
 *
 * A lock whose process is gone (same host, `kill(pid, 0)` answers `ESRCH`)
 * is stale. It is never replaced silently: opening fails with
 * {@link StaleNamespaceLock} unless the caller asks for recovery. Recovery
 * runs under a second lock file (`<lock>.recovery`), so only one recoverer at
 * a time moves a stale file aside, and it moves it only after checking the
 * file still holds the dead holder's token. While a stale file is present no
 * plain opener can win (creation needs the name to be free), so there is no
 * moment where two openers both hold the namespace.
 *
 * Limits, by design on the safe side: a lock written on another host is
 * never considered stale (its process cannot be probed from here), and a
 * recycled pid makes a stale lock look alive (the open fails
 * {@link NamespaceInUse}; remove the file by hand after checking).
 *
 * @since 0.1.0
 */
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
 *   holds this token, and recovery moves a stale file only when it still
 *   holds the token that was judged stale.
 *
 * @since 0.1.0
 * @category models
 */
export const LockRecord = Schema.Struct({
  pid: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  host: Schema.String,
  startedAt: Schema.Number,
  token: Schema.String.check(Schema.isMinLength(16))
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
 * The namespace is held by a running process (or by a process on another
 * host, which cannot be probed). `file` is the lock file; `pid`, `host` and
 * `since` name the holder.
 *
 * @since 0.1.0
 * @category errors
 */
export class NamespaceInUse extends Schema.TaggedError<NamespaceInUse>()("NamespaceInUse", {
  file: Schema.String,
  pid: Schema.Int,
  host: Schema.String,
  since: Schema.String
}) {
  override get message(): string {
    return `namespace in use: ${this.file} is held by process ${this.pid} on ${this.host} since ${this.since}`
  }
}

/**
 * The lock was left by a process of this host that is no longer running (it
 * crashed or was killed). Nothing was changed. For the namespace lock, open
 * again with stale-lock recovery to replace it; a stale `.recovery` file
 * means a recovery itself was interrupted, and is left for a person to
 * remove.
 *
 * @since 0.1.0
 * @category errors
 */
export class StaleNamespaceLock extends Schema.TaggedError<StaleNamespaceLock>()("StaleNamespaceLock", {
  file: Schema.String,
  pid: Schema.Int,
  host: Schema.String,
  since: Schema.String,
  hint: Schema.String
}) {
  override get message(): string {
    return `stale namespace lock: ${this.file} was left by process ${this.pid} on ${this.host} (since ${this.since}), which is no longer running; ${this.hint}`
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
 * A lock this process holds.
 *
 * @since 0.1.0
 * @category models
 */
export interface HeldLock {
  readonly file: string
  readonly record: LockRecord
}

/**
 * Options of {@link acquire}.
 *
 * @since 0.1.0
 * @category models
 */
export interface AcquireOptions {
  /** Replace a stale lock (holder dead, same host) instead of failing {@link StaleNamespaceLock}. */
  readonly recoverStale?: boolean
  /**
   * With `recoverStale`, also remove a `.recovery` file a dead process of this
   * host left (a recovery killed midway) instead of failing. Only safe where
   * no other recoverer can run meanwhile: the caller holds an enclosing lock
   * and takes this one from a single fiber at a time (the local hosts' task
   * locks, under the namespace lock).
   */
  readonly recoverInterruptedRecovery?: boolean
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

const attempts = 5

/**
 * Takes the lock at `file` for the lifetime of the current scope. On scope
 * close the file is removed, but only when it still holds this lock's token.
 *
 * Fails {@link NamespaceInUse} when a live process holds it,
 * {@link StaleNamespaceLock} when a dead one left it (unless
 * `recoverStale`), {@link NamespaceLockInvalid} when the file does not decode.
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
  const record: LockRecord = {
    pid: process.pid,
    host: hostname(),
    startedAt: yield* Clock.currentTimeMillis,
    token: SecureRandom.uuidV4Unsafe()
  }

  /** Publishes `record` at `target` atomically; `false` when the name is taken. */
  const publish = (target: string) =>
    Effect.gen(function* () {
      const temp = path.join(path.dirname(target), DurableFiles.temporaryName(path.basename(target), record.token))
      const write = Effect.scoped(
        Effect.gen(function* () {
          const handle = yield* fs.open(temp, { flag: "wx", mode: 0o644 })
          yield* handle.writeAll(new TextEncoder().encode(`${encodeLock(record)}\n`))
          yield* handle.sync
        })
      ).pipe(
        Effect.andThen(fs.link(temp, target)),
        Effect.as(true),
        Effect.catchIf(
          (error) => error.reason._tag === "AlreadyExists",
          () => Effect.succeed(false)
        )
      )
      return yield* write.pipe(
        Effect.mapError(io("create", target)),
        Effect.ensuring(fs.remove(temp).pipe(Effect.ignore))
      )
    })

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

  /** Why `holder` keeps the lock: alive (or elsewhere), or dead on this host. */
  const judge = (
    target: string,
    holder: LockRecord,
    hint: string
  ): Effect.Effect<never, NamespaceInUse | StaleNamespaceLock> => {
    const facts = { file: target, pid: holder.pid, host: holder.host, since: since(holder) }
    if (holder.host !== record.host || isProcessAlive(holder.pid)) return Effect.fail(new NamespaceInUse(facts))
    return Effect.fail(new StaleNamespaceLock({ ...facts, hint }))
  }

  const recoveryFile = `${file}.recovery`
  /** Moves the stale lock aside, under the recovery lock, if it still holds `stale.token`. */
  const recover = (stale: LockRecord) =>
    Effect.gen(function* () {
      if (!(yield* publish(recoveryFile))) {
        const other = yield* read(recoveryFile)
        if (Option.isNone(other)) return
        const refusal = yield* Effect.flip(
          judge(
            recoveryFile,
            other.value,
            "a recovery of this namespace was interrupted; remove this file by hand once no process uses the namespace"
          )
        )
        if (refusal._tag === "NamespaceInUse" || options.recoverInterruptedRecovery !== true) {
          return yield* Effect.fail(refusal)
        }
        // The caller guarantees no other recoverer: the interrupted recovery's file goes, and the next attempt
        // recovers the lock itself.
        yield* fs.remove(recoveryFile).pipe(Effect.mapError(io("remove an interrupted recovery", recoveryFile)))
        return
      }
      yield* Effect.gen(function* () {
        const current = yield* read(file)
        if (Option.isNone(current) || current.value.token !== stale.token) return
        const aside = path.join(path.dirname(file), `.${path.basename(file)}.stale-${stale.token}`)
        yield* fs.rename(file, aside).pipe(Effect.mapError(io("move the stale lock aside", file)))
        yield* fs.remove(aside).pipe(Effect.ignore)
      }).pipe(
        Effect.ensuring(
          fs.readFileString(recoveryFile).pipe(
            Effect.flatMap((text) => (text.includes(record.token) ? fs.remove(recoveryFile) : Effect.void)),
            Effect.ignore
          )
        )
      )
    })

  for (let attempt = 0; attempt < attempts; attempt++) {
    if (yield* publish(file)) {
      const held: HeldLock = { file, record }
      return held
    }
    const holder = yield* read(file)
    if (Option.isNone(holder)) continue
    const refusal = yield* Effect.flip(
      judge(file, holder.value, "open it again with stale-lock recovery to replace it")
    )
    if (refusal._tag === "NamespaceInUse" || options.recoverStale !== true) return yield* Effect.fail(refusal)
    yield* recover(holder.value)
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
