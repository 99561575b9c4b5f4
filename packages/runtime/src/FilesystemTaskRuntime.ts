/**
 * A task runtime over a filesystem volume store.
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
import type * as Grant from "@tessera/core/Grant"
import { HostAuthority } from "@tessera/core/HostAuthority"
import type { InvalidInput } from "@tessera/core/InvalidInput"
import { decode } from "@tessera/core/InvalidInput"
import type { VerifiedPrivateWriter } from "@tessera/core/PrivateWriter"
import type { Unauthorized } from "@tessera/core/Unauthorized"
import type * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import { issuerOf } from "./internal/issuedScopes.ts"
import type { RuntimeTypeId } from "./internal/storeRuntime.ts"
import { bindRuntime, scopeNotIssued } from "./internal/storeRuntime.ts"
import type * as TaskContext from "./TaskContext.ts"
import type * as TaskHost from "./TaskHost.ts"
import * as VolumeStore from "./VolumeStore.ts"

/**
 * What a runtime is opened with.
 *
 * - `private` (required): the volume that receives the runtime's private
 *   content (summaries), or `Option.none()` for a runtime without one. When
 *   it is `Some`, the volume must be in custody, `AgentPrivate`, owned by
 *   the scope's agent, and write-granted to the scope's task.
 * - `scope`: the runtime's scope, issued by a host over the same store
 *   ({@link TaskHost.TaskHost.issueScope}); any other scope (built by hand,
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
 * {@link Options} plus where the store lives (see
 * {@link VolumeStore.OpenOptions}).
 *
 * @since 0.1.0
 * @category models
 */
export interface OpenOptions extends Options, VolumeStore.OpenOptions {}

/**
 * What binding a runtime or a task can fail with: a check refused
 * (`Unauthorized`, whose `reason` names the check), an option did not decode
 * (`InvalidInput`, naming the field), or the store could not produce the
 * facts to check.
 *
 * @since 0.1.0
 * @category errors
 */
export type BindError = Unauthorized | InvalidInput | VolumeStore.VolumeMetadataInvalid | VolumeStore.StoreIoError

/**
 * An opened runtime. Everything here was validated when the runtime was
 * opened and does not change afterwards.
 *
 * @since 0.1.0
 * @category models
 */
export interface FilesystemTaskRuntime {
  readonly [RuntimeTypeId]: typeof RuntimeTypeId
  readonly host: TaskHost.TaskHost
  readonly scope: Grant.Scope
  /** The private volume, with the facts the verdict accepted; `None` when opened without one. */
  readonly privateVolume: Option.Option<VerifiedPrivateWriter>
  /** The runtime's output binding, checked against its scope. */
  readonly output: Option.Option<TaskContext.OutputBinding>
  /**
   * Binds a task to this runtime. The output binding (the task's own, or
   * the runtime's when omitted) is checked with the core output verdict;
   * a refusal is `Unauthorized`.
   */
  readonly bindTask: (options: TaskContext.BindOptions) => Effect.Effect<TaskContext.TaskContext, BindError>
}

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
 * @since 0.1.0
 * @category constructors
 */
export const fromHost = (host: TaskHost.TaskHost, options: Options): Effect.Effect<FilesystemTaskRuntime, BindError> =>
  bindRuntime(host, options)
