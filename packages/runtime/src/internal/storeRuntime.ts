/**
 * The one place a runtime is bound: both `FilesystemTaskRuntime`
 * constructors call {@link bindRuntime}.
 *
 * The verdict is a parameter so the owner-matrix test can run against a
 * deliberately broken verdict (its negative control). This module is not
 * exported from the package (`./internal/*` is blocked), so the public
 * constructors always pass `checkPrivateWriter`.
 *
 * @internal
 */
import type { Grant, Volume } from "@tessera/core"
import type { PrivateWriterVerdict } from "@tessera/core/PrivateWriter"
import { checkOutputBinding } from "@tessera/core/PrivateWriter"
import { Unauthorized } from "@tessera/core/Unauthorized"
import { Effect, Option } from "effect"
import type * as FilesystemTaskRuntime from "../FilesystemTaskRuntime.ts"
import type * as TaskContext from "../TaskContext.ts"
import type { TaskHost } from "../TaskHost.ts"

/** Marks runtimes made here; not importable from outside the package. */
export const RuntimeTypeId: unique symbol = Symbol.for("@tessera/runtime/FilesystemTaskRuntime")

/** Marks task contexts made here; not importable from outside the package. */
export const TaskContextTypeId: unique symbol = Symbol.for("@tessera/runtime/TaskContext")

const requireIssued = (host: TaskHost, scope: Grant.Scope) =>
  host.issued(scope)
    ? Effect.void
    : Effect.fail(
        new Unauthorized({
          reason: "ScopeNotIssued",
          detail: `the scope of task ${scope.task} was not issued by this runtime's host; issue it with host.issueScope`,
          task: scope.task
        })
      )

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
 * runtime. The private volume is judged by `verdict` alone.
 */
export const bindRuntime = (
  host: TaskHost,
  options: FilesystemTaskRuntime.Options,
  verdict: PrivateWriterVerdict
): Effect.Effect<FilesystemTaskRuntime.FilesystemTaskRuntime, FilesystemTaskRuntime.BindError> =>
  Effect.gen(function* () {
    const scope = options.scope
    yield* requireIssued(host, scope)
    const privateVolume = yield* Option.match(options.private, {
      onNone: () => Effect.succeed(Option.none()),
      onSome: (ref) =>
        host.store.custody(ref).pipe(
          Effect.flatMap((custody) => Effect.fromResult(verdict({ ref, custody, scope }))),
          Effect.map(Option.some)
        )
    })
    const output = yield* bindOutput(host, scope, options.output ?? Option.none())

    const runtime: FilesystemTaskRuntime.FilesystemTaskRuntime = {
      [RuntimeTypeId]: RuntimeTypeId,
      host,
      scope,
      privateVolume,
      output,
      bindTask: (task) =>
        requireIssued(host, task.scope).pipe(
          Effect.andThen(bindOutput(host, task.scope, task.output ?? Option.map(output, (binding) => binding.ref))),
          Effect.map((taskOutput) => {
            const context: TaskContext.TaskContext = {
              [TaskContextTypeId]: TaskContextTypeId,
              runtime,
              task: task.scope.task,
              agent: task.scope.agent,
              scope: task.scope,
              grants: task.scope.grants,
              createdPrivate: task.createdPrivate ?? [],
              output: taskOutput
            }
            return Object.freeze(context)
          })
        )
    }
    return Object.freeze(runtime)
  })
