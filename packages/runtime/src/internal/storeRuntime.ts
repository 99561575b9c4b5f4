/**
 * The one place a runtime is bound and a task context is made: both
 * `FilesystemTaskRuntime` constructors call {@link bindRuntime}, and a
 * runtime's `bindTask` is defined here. Runtimes and contexts are minted
 * into registries ({@link runtimes}, {@link contexts}); the guards accept no
 * other.
 *
 * @internal
 */
import type * as Grant from "@tessera/core/Grant"
import { decode } from "@tessera/core/InvalidInput"
import { checkOutputBinding, checkPrivateWriter } from "@tessera/core/PrivateWriter"
import { Unauthorized } from "@tessera/core/Unauthorized"
import type * as Volume from "@tessera/core/Volume"
import { VolumeRef } from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as FilesystemTaskRuntime from "../FilesystemTaskRuntime.ts"
import type * as TaskContext from "../TaskContext.ts"
import type { TaskHost } from "../TaskHost.ts"
import { hosts, issuerOf } from "./issuedScopes.ts"
import { makeRegistry } from "./trusted.ts"

/** Marks runtimes made here; not importable from outside the package. */
export const RuntimeTypeId: unique symbol = Symbol.for("@tessera/runtime/FilesystemTaskRuntime")

/** Marks task contexts made here; not importable from outside the package. */
export const TaskContextTypeId: unique symbol = Symbol.for("@tessera/runtime/TaskContext")

/** Every runtime the library bound. */
export const runtimes = makeRegistry<FilesystemTaskRuntime.FilesystemTaskRuntime>("task runtime")

/** Every task context a runtime bound. */
export const contexts = makeRegistry<TaskContext.TaskContext>("task context")

const decodeCreatedPrivate = decode(Schema.Array(VolumeRef), "bindTask", "createdPrivate")
const decodeOutput = decode(Schema.Option(VolumeRef), "bindTask", "output")
const decodeRuntimeOptions = decode(
  Schema.Struct({
    private: Schema.Option(VolumeRef),
    output: Schema.optionalKey(Schema.Option(VolumeRef))
  }),
  "FilesystemTaskRuntime",
  "options"
)

/** A scope is honoured only by the host that issued it (by identity): not a hand-built one, not another host's. */
export const requireIssued = (host: TaskHost, scope: Grant.Scope) =>
  issuerOf(scope) === host ? Effect.void : Effect.fail(scopeNotIssued(scope, "this runtime's host"))

export const scopeNotIssued = (scope: unknown, by: string) => {
  const issuer = issuerOf(scope)
  const task = issuer === undefined ? undefined : (scope as Grant.Scope).task
  return new Unauthorized({
    reason: "ScopeNotIssued",
    detail:
      issuer === undefined
        ? `the scope was not issued by any host (built by hand or copied); issue it with host.issueScope`
        : `the scope of task ${task} was issued by another host than ${by} (a host over another store, or with another authority); issue it with that host's issueScope`,
    ...(task === undefined ? {} : { task })
  })
}

const bindOutput = (host: TaskHost, scope: Grant.Scope, output: Option.Option<Volume.VolumeRef>) =>
  Option.match(output, {
    onNone: () => Effect.succeed(Option.none<TaskContext.OutputBinding>()),
    onSome: (ref) =>
      host.store.custody(ref).pipe(
        Effect.flatMap((custody) => Effect.fromResult(checkOutputBinding({ ref, custody, scope }))),
        Effect.map((descriptor) => Option.some<TaskContext.OutputBinding>({ ref, descriptor }))
      )
  })

/**
 * Validates the options against the host's custody facts and returns the
 * runtime. The private volume is judged by `checkPrivateWriter` alone.
 */
export const bindRuntime = (
  host: TaskHost,
  options: FilesystemTaskRuntime.Options
): Effect.Effect<FilesystemTaskRuntime.FilesystemTaskRuntime, FilesystemTaskRuntime.BindError> =>
  Effect.gen(function* () {
    yield* hosts.require(host, { entry: "FilesystemTaskRuntime.fromHost" })
    const scope = options.scope
    yield* requireIssued(host, scope)
    // A JavaScript caller can leave `private` out or pass a bare reference: refused by name, not a TypeError.
    const decided = yield* decodeRuntimeOptions(options)
    const privateVolume = yield* Option.match(decided.private, {
      onNone: () => Effect.succeed(Option.none()),
      onSome: (ref) =>
        host.store.custody(ref).pipe(
          Effect.flatMap((custody) => Effect.fromResult(checkPrivateWriter({ ref, custody, scope }))),
          Effect.map(Option.some)
        )
    })
    const output = yield* bindOutput(host, scope, decided.output ?? Option.none())

    const runtime: FilesystemTaskRuntime.FilesystemTaskRuntime = {
      [RuntimeTypeId]: RuntimeTypeId,
      host,
      scope,
      privateVolume,
      output,
      bindTask: (task) =>
        Effect.gen(function* () {
          yield* requireIssued(host, task.scope)
          const createdPrivate = yield* decodeCreatedPrivate(task.createdPrivate ?? [])
          const requested = task.output === undefined ? Option.map(output, (binding) => binding.ref) : task.output
          const taskOutput = yield* bindOutput(host, task.scope, yield* decodeOutput(requested))
          return contexts.mint<TaskContext.TaskContext>({
            [TaskContextTypeId]: TaskContextTypeId,
            runtime,
            task: task.scope.task,
            agent: task.scope.agent,
            scope: task.scope,
            grants: task.scope.grants,
            createdPrivate: Object.freeze(createdPrivate),
            output: taskOutput
          })
        })
    }
    return runtimes.mint(runtime)
  })
