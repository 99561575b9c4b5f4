/**
 * A task runtime over a filesystem volume store, and the task contexts it
 * binds (`TaskContext`): the only values the library's guarded entry points
 * (private summaries, tool-result offload, the artifact reader, the entry
 * gate) accept as a task.
 *
 * The private volume is decided when the runtime is constructed, by a
 * required option: `private: Option<VolumeRef>`. A caller cannot forget the
 * decision, and there is no method that binds a private volume later, so a
 * runtime that compacts cannot discover mid-turn that it has no writer. Both
 * constructors validate through the same internal bind function, which asks
 * the core verdicts (`PrivateWriter.checkPrivateWriter`,
 * `PrivateWriter.checkOutputBinding`) and nothing else.
 *
 * @since 0.1.0
 */
import { HostAuthority } from "@tessera/core/HostAuthority"
import { decode } from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import { issuerOf } from "./internal/issuedScopes.ts"
import {
  type BindError,
  type BindTaskOptions,
  bindRuntime,
  contexts,
  type FilesystemTaskRuntime,
  type Options,
  type OutputBinding,
  scopeNotIssued,
  type TaskContext
} from "./internal/storeRuntime.ts"
import type * as TaskHost from "./TaskHost.ts"
import * as VolumeStore from "./VolumeStore.ts"

/**
 * What a runtime is opened with ({@link Options}), what binding it or a task can fail with
 * ({@link BindError}) and the opened runtime ({@link FilesystemTaskRuntime}). Declared where
 * runtimes are bound, in the package's internals.
 *
 * @since 0.1.0
 * @category models
 */
export type { BindError, FilesystemTaskRuntime, Options }

/**
 * {@link Options} plus where the store lives (see
 * {@link VolumeStore.OpenOptions}).
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions extends Options, VolumeStore.OpenOptions {}

/**
 * Binds a runtime to the host that issued `options.scope`, after checking
 * that this host is the one the caller means: its store is the one on
 * `options.root` (the manifest re-read from disk, so a folder replaced
 * since holds another store: `StoreIdMismatch`) and its authority is the
 * `HostAuthority` in the context. A scope issued by a host with another
 * authority (a permissive second host over the same store) or over another
 * store is `Unauthorized` `ScopeNotIssued`, before anything on disk is
 * touched.
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = (
  options: OpenOptions
): Effect.Effect<
  FilesystemTaskRuntime,
  BindError | VolumeStore.OpenError,
  HostAuthority | FileSystem.FileSystem | Path.Path
> =>
  Effect.gen(function* () {
    const given = yield* decodeOpenOptions(options)
    const authority = yield* HostAuthority
    const path = yield* Path.Path
    const issuer = issuerOf(given.scope)
    if (
      issuer === undefined ||
      issuer.authority !== authority ||
      issuer.store.root !== path.resolve(given.root) ||
      (given.storeId !== undefined && given.storeId !== issuer.store.id)
    ) {
      return yield* scopeNotIssued(given.scope, `the host over ${given.root} with this context's authority`)
    }
    yield* VolumeStore.open({ root: issuer.store.root, storeId: issuer.store.id })
    return yield* bindRuntime(issuer, options)
  })

const decodeOpenOptions = decode(
  Schema.Struct({ root: Schema.String, storeId: Schema.optionalKey(Schema.String), scope: Schema.Unknown }),
  "FilesystemTaskRuntime.open",
  "options"
)

/**
 * Binds a runtime on an existing host, with the same options and the same
 * checks as {@link open}.
 *
 * @example
 * ```ts
 * import { HostAuthority, Ids, Volume } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { FilesystemTaskRuntime, TaskHost } from "@tessera/runtime"
 * import { Effect, Layer, Option, Schema } from "effect"
 *
 * const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *
 * const program = Effect.gen(function* () {
 *   const host = yield* TaskHost.open({ root: "/srv/tessera/store" })
 *   const privateVolume = yield* host.store.create({
 *     id: Schema.decodeUnknownSync(Ids.VolumeId)("researcher-private"),
 *     kind: "AgentPrivate",
 *     owner: Volume.agentOwner(agent)
 *   })
 *   const scope = yield* host.issueScope(
 *     Schema.decodeUnknownSync(Ids.TaskId)("task-1"),
 *     [{ volume: privateVolume, access: ["read", "write"] }],
 *     agent
 *   )
 *   // `private` is required: the volume's custody, kind, owner and the write grant are checked right here.
 *   // `Option.none()` is legitimate too: such a runtime runs without compaction.
 *   return yield* FilesystemTaskRuntime.fromHost(host, { private: Option.some(privateVolume), scope })
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Layer.merge(NodeTessera.layer, HostAuthority.permissive))))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromHost = (host: TaskHost.TaskHost, options: Options): Effect.Effect<FilesystemTaskRuntime, BindError> =>
  bindRuntime(host, options)

/**
 * A task bound to a runtime ({@link TaskContext}): who it is, what it may
 * touch, where its private content and its output go; what binding one takes
 * ({@link BindTaskOptions}, the argument of `bindTask`) and the output volume
 * it may write ({@link OutputBinding}). Declared where contexts are made, in
 * the package's internals.
 *
 * A task context is frozen, read-only data plus the runtime it is bound to.
 * Only a runtime's `bindTask` makes one, after checking the scope
 * (issued by the runtime's host) and the output binding, and records it by
 * identity: every guard refuses a context it did not record (a spread copy
 * with another agent, a hand-built one) with `Unauthorized` `NotMinted`.
 *
 * @since 0.1.0
 * @category models
 */
export type { BindTaskOptions, OutputBinding, TaskContext }

/**
 * Whether a value is a task context a runtime made: checked by identity, so
 * a copy of a genuine context (or an object with its marker) is not one.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTaskContext = (value: unknown): value is TaskContext => contexts.has(value)
