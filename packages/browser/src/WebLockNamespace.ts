/**
 * One runtime per namespace in a browser: the namespace lock on the Web
 * Locks API.
 *
 * A Web Lock is shared by every tab, frame and worker of an origin, and the
 * browser releases it when its holder's page or worker goes away. So the
 * local harness's behaviour carries over without its stale-lock case: a
 * second holder of a namespace fails {@link NamespaceInUse} at once (it
 * never waits), naming the lock and the clients that hold it, and a crashed
 * tab leaves no lock behind.
 *
 * @since 0.1.0
 */

import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/**
 * The namespace is held by another runtime of this origin (another tab,
 * frame or worker, or this one). Nothing was opened.
 *
 * @since 0.1.0
 * @category errors
 */
export class NamespaceInUse extends Schema.TaggedError<NamespaceInUse>()("NamespaceInUse", {
  namespace: Schema.String,
  /** The Web Lock's name. */
  lock: Schema.String,
  /** The browser's ids of the clients holding it (empty when the browser does not say). */
  holders: Schema.Array(Schema.String)
}) {
  override get message(): string {
    const by = this.holders.length === 0 ? "another client" : `client ${this.holders.join(", ")}`
    return `namespace in use: ${this.namespace} (Web Lock ${this.lock}) is held by ${by} of this origin`
  }
}

/**
 * The browser has no Web Locks API (an insecure origin, or an old browser).
 *
 * @since 0.1.0
 * @category errors
 */
export class LocksUnavailable extends Schema.TaggedError<LocksUnavailable>()("LocksUnavailable", {
  lock: Schema.String
}) {
  override get message(): string {
    return `cannot take the Web Lock ${this.lock}: navigator.locks is missing (Web Locks need a secure context)`
  }
}

/**
 * A held namespace lock; released when the scope it was taken in closes.
 *
 * @since 0.1.0
 * @category models
 */
export interface HeldNamespace {
  readonly namespace: string
  readonly lock: string
}

/**
 * The Web Lock name of a namespace.
 *
 * @since 0.1.0
 * @category locking
 */
export const lockName = (namespace: string): string => `tessera-namespace:${namespace}`

const locks = (): LockManager | undefined => (globalThis as { navigator?: Navigator }).navigator?.locks

/**
 * Holds the Web Lock `name` for the lifetime of the scope when no client of
 * the origin holds it (`Some`), or answers at once with the ids of the
 * clients that do (`None` is never waited on).
 *
 * @since 0.1.0
 * @category locking
 */
export const holdIfAvailable = (
  name: string
): Effect.Effect<Result.Result<void, ReadonlyArray<string>>, LocksUnavailable, Scope.Scope> => {
  const take = Effect.callback<(() => Promise<unknown>) | undefined, LocksUnavailable>((resume) => {
    const manager = locks()
    if (manager === undefined) {
      resume(Effect.fail(new LocksUnavailable({ lock: name })))
      return
    }
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const request = manager.request(name, { mode: "exclusive", ifAvailable: true }, async (granted) => {
      if (granted === null) {
        resume(Effect.succeed(undefined))
        return
      }
      // Releasing resolves the callback; the lock is free once the request itself settles.
      resume(
        Effect.succeed(() => {
          release()
          return request
        })
      )
      await released
    })
    request.catch(() => resume(Effect.fail(new LocksUnavailable({ lock: name }))))
  })
  // The scope closes once the lock is free again, so the next holder (this program reopening) finds it free.
  return Effect.acquireRelease(take, (release) =>
    release === undefined ? Effect.void : Effect.promise(() => release().catch(() => undefined))
  ).pipe(
    Effect.flatMap(
      (release): Effect.Effect<Result.Result<void, ReadonlyArray<string>>> =>
        release !== undefined
          ? Effect.succeed(Result.succeed(undefined))
          : Effect.promise(async () => (await locks()?.query())?.held ?? []).pipe(
              Effect.map((held) =>
                Result.fail(
                  held.filter((one) => one.name === name).flatMap((one) => (one.clientId ? [one.clientId] : []))
                )
              )
            )
    )
  )
}

/**
 * Takes the namespace's lock for the lifetime of the scope, or fails
 * {@link NamespaceInUse} without waiting when any client of the origin
 * holds it.
 *
 * @since 0.1.0
 * @category locking
 */
export const acquire = (
  namespace: string
): Effect.Effect<HeldNamespace, NamespaceInUse | LocksUnavailable, Scope.Scope> => {
  const lock = lockName(namespace)
  return Effect.flatMap(holdIfAvailable(lock), (held) =>
    Result.isSuccess(held)
      ? Effect.succeed({ namespace, lock })
      : Effect.fail(new NamespaceInUse({ namespace, lock, holders: held.failure }))
  )
}
