/**
 * The host's authority: which grants may exist at all.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Access } from "./Grant.ts"
import type { AgentId, TaskId } from "./Ids.ts"
import type { VolumeDescriptor } from "./Volume.ts"

/**
 * A grant a host is about to issue, with the facts about its volume.
 *
 * @since 0.1.0
 * @category models
 */
export interface GrantRequest {
  readonly task: TaskId
  readonly agent: AgentId
  readonly volume: VolumeDescriptor
  readonly access: Access
}

/**
 * Decides, per requested grant, whether it may be issued. `Some(reason)`
 * refuses it; issuing a scope with a refused grant fails `Unauthorized`
 * with reason `GrantForbidden`.
 *
 * @since 0.1.0
 * @category services
 */
export class HostAuthority extends Context.Service<
  HostAuthority,
  {
    readonly refuse: (request: GrantRequest) => Option.Option<string>
  }
>()("@tessera/core/HostAuthority") {}

/**
 * An authority that allows every grant. Custody, ownership and grant checks
 * still apply when the grants are used.
 *
 * @example
 * ```ts
 * import { HostAuthority } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { TaskHost } from "@tessera/runtime"
 * import { Effect, Layer } from "effect"
 *
 * // A host takes its authority from the context when it is opened.
 * export const host = TaskHost.open({ root: "/srv/tessera/store" }).pipe(
 *   Effect.provide(Layer.merge(NodeTessera.layer, HostAuthority.permissive))
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const permissive: Layer.Layer<HostAuthority> = Layer.succeed(HostAuthority)({
  refuse: () => Option.none()
})

/**
 * An authority that forbids task grants on journal storage: the journal is
 * the host's own record and no task may read or write it directly.
 *
 * @example
 * ```ts
 * import { HostAuthority, Ids, Volume } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { TaskHost } from "@tessera/runtime"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 * const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
 *
 * export const refused = Effect.gen(function* () {
 *   const host = yield* TaskHost.open({ root: "/srv/tessera/store" })
 *   const journal = yield* host.store.create({
 *     id: Schema.decodeUnknownSync(Ids.VolumeId)("journal"),
 *     kind: "Journal",
 *     owner: Volume.hostOwner
 *   })
 *   // Refused when the scope is issued, before any task runs.
 *   const error = yield* Effect.flip(host.issueScope(task, [{ volume: journal, access: ["read"] }], agent))
 *   return error._tag === "Unauthorized" ? error.reason : error._tag // "GrantForbidden"
 * }).pipe(Effect.provide(Layer.merge(NodeTessera.layer, HostAuthority.forbidJournalGrants)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const forbidJournalGrants: Layer.Layer<HostAuthority> = Layer.succeed(HostAuthority)({
  refuse: (request) =>
    request.volume.kind === "Journal"
      ? Option.some(`this host forbids task grants on journal storage (volume ${request.volume.id})`)
      : Option.none()
})
