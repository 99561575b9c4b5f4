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
import type * as Ids from "@tessera/core/Ids"
import { decode, type InvalidInput } from "@tessera/core/InvalidInput"
import { checkOutputBinding, checkPrivateWriter, type VerifiedPrivateWriter } from "@tessera/core/PrivateWriter"
import { Unauthorized } from "@tessera/core/Unauthorized"
import type * as Volume from "@tessera/core/Volume"
import { VolumeRef } from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { hosts, issuerOf, type TaskHost } from "./issuedScopes.ts"
import type { StoreIoError, VolumeMetadataInvalid } from "./storeModel.ts"
import { makeRegistry } from "./trusted.ts"

/** Marks runtimes made here; not importable from outside the package. */
export const RuntimeTypeId: unique symbol = Symbol.for("@tessera/runtime/FilesystemTaskRuntime")

/** Marks task contexts made here; not importable from outside the package. */
export const TaskContextTypeId: unique symbol = Symbol.for("@tessera/runtime/TaskContext")

// The runtime's and the context's types are declared here and re-exported by `FilesystemTaskRuntime` under the
// same names: the public modules import their internals, never the reverse.

/**
 * What a runtime is opened with.
 *
 * - `private` (required): the volume that receives the runtime's private
 *   content (summaries), or `Option.none()` for a runtime without one. When
 *   it is `Some`, the volume must be in custody, `AgentPrivate`, owned by
 *   the scope's agent, and write-granted to the scope's task.
 * - `scope`: the runtime's scope, issued by a host over the same store
 *   ({@link TaskHost.issueScope}); any other scope (built by hand,
 *   copied, or issued for another store) fails `Unauthorized`
 *   `ScopeNotIssued`, so grants cannot bypass the host authority. Task
 *   scopes given to `bindTask` are held to the same rule.
 * - `output`: an optional output volume; it must be in custody and
 *   write-granted to the scope's task.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly private: Option.Option<Volume.VolumeRef>
  readonly scope: Grant.Scope
  readonly output?: Option.Option<Volume.VolumeRef>
}

/**
 * What binding a runtime or a task can fail with: a check refused
 * (`Unauthorized`, whose `reason` names the check), an option did not decode
 * (`InvalidInput`, naming the field), or the store could not produce the
 * facts to check.
 *
 * @since 0.1.0
 * @category errors
 */
export type BindError = Unauthorized | InvalidInput | VolumeMetadataInvalid | StoreIoError

/**
 * An opened runtime. Everything here was validated when the runtime was
 * opened and does not change afterwards.
 *
 * @since 0.1.0
 * @category models
 */
export interface FilesystemTaskRuntime {
  readonly [RuntimeTypeId]: typeof RuntimeTypeId
  readonly host: TaskHost
  readonly scope: Grant.Scope
  /** The private volume, with the facts the verdict accepted; `None` when opened without one. */
  readonly privateVolume: Option.Option<VerifiedPrivateWriter>
  /** The runtime's output binding, checked against its scope. */
  readonly output: Option.Option<OutputBinding>
  /**
   * Binds a task to this runtime. The output binding (the task's own, or
   * the runtime's when omitted) is checked with the core output verdict;
   * a refusal is `Unauthorized`.
   */
  readonly bindTask: (options: BindTaskOptions) => Effect.Effect<TaskContext, BindError>
}

/**
 * A volume a task may write its output to, with the store's facts about it
 * as they were when the binding was checked (in custody, write-granted).
 *
 * @since 0.1.0
 * @category models
 */
export interface OutputBinding {
  readonly ref: Volume.VolumeRef
  readonly descriptor: Volume.VolumeDescriptor
}

/**
 * What binding a task takes.
 *
 * - `scope`: the scope the host issued to the task (its id, agent, grants).
 * - `createdPrivate`: private content volumes the task itself created;
 *   recorded as given, and checked by the private-writer verdict when a
 *   writer is resolved from them.
 * - `output`: the task's output volume. Omitted, the task inherits the
 *   runtime's output binding; `Option.none()` binds no output. Either way the
 *   binding is checked against the task's own scope, since grants are per
 *   task.
 *
 * @since 0.1.0
 * @category models
 */
export interface BindTaskOptions {
  readonly scope: Grant.Scope
  readonly createdPrivate?: ReadonlyArray<Volume.VolumeRef>
  readonly output?: Option.Option<Volume.VolumeRef>
}

/**
 * A task bound to a runtime.
 *
 * @since 0.1.0
 * @category models
 */
export interface TaskContext {
  readonly [TaskContextTypeId]: typeof TaskContextTypeId
  /** The runtime the task is bound to, with its verified private volume. */
  readonly runtime: FilesystemTaskRuntime
  readonly task: Ids.TaskId
  readonly agent: Ids.AgentId
  /** The scope the task was bound with. */
  readonly scope: Grant.Scope
  /** The grants of that scope. */
  readonly grants: ReadonlyArray<Grant.Grant>
  readonly createdPrivate: ReadonlyArray<Volume.VolumeRef>
  readonly output: Option.Option<OutputBinding>
}

/** Every runtime the library bound. */
export const runtimes = makeRegistry<FilesystemTaskRuntime>("task runtime")

/** Every task context a runtime bound. */
export const contexts = makeRegistry<TaskContext>("task context")

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
    onNone: () => Effect.succeed(Option.none<OutputBinding>()),
    onSome: (ref) =>
      host.store.custody(ref).pipe(
        Effect.flatMap((custody) => Effect.fromResult(checkOutputBinding({ ref, custody, scope }))),
        Effect.map((descriptor) => Option.some<OutputBinding>({ ref, descriptor }))
      )
  })

/**
 * Validates the options against the host's custody facts and returns the
 * runtime. The private volume is judged by `checkPrivateWriter` alone.
 */
export const bindRuntime = (host: TaskHost, options: Options): Effect.Effect<FilesystemTaskRuntime, BindError> =>
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

    const runtime: FilesystemTaskRuntime = {
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
          return contexts.mint<TaskContext>({
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
