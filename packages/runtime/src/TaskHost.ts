/**
 * A host: a volume store plus the authority that decides which grants may
 * exist. Scopes (the grants a task holds) are issued here and nowhere else.
 *
 * @since 0.1.0
 */
import type * as Grant from "@tessera/core/Grant"
import { Capability } from "@tessera/core/Grant"
import { HostAuthority } from "@tessera/core/HostAuthority"
import * as Ids from "@tessera/core/Ids"
import { decode } from "@tessera/core/InvalidInput"
import { Unauthorized } from "@tessera/core/Unauthorized"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { hosts, issuerOf, recordIssued, stores, type TaskHost } from "./internal/issuedScopes.ts"
import * as VolumeStore from "./VolumeStore.ts"

/**
 * A store and its authority, able to issue scopes; declared in the package's internals with the scopes it issued.
 *
 * @since 0.1.0
 * @category models
 */
export type { TaskHost }

const decodeTask = decode(Ids.TaskId, "issueScope", "task")
const decodeAgent = decode(Ids.AgentId, "issueScope", "agent")
const decodeCapabilities = decode(Schema.Array(Capability), "issueScope", "capabilities")

/**
 * A host over a store the library opened ({@link VolumeStore.open}), with
 * the authority from the context. The host is bound to that store for its
 * lifetime. A store built by hand (or a copy of an opened one) is refused
 * `Unauthorized` `NotMinted`: its `custody` and `folderOf` could answer
 * anything, and every grant the host issues rests on them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (store: VolumeStore.VolumeStore): Effect.Effect<TaskHost, Unauthorized, HostAuthority> =>
  stores.require(store, { entry: "TaskHost.make" }).pipe(Effect.flatMap(makeOver))

/** A host over `store`, which the caller knows the library opened. */
const makeOver = (store: VolumeStore.VolumeStore): Effect.Effect<TaskHost, never, HostAuthority> =>
  Effect.gen(function* () {
    const authority = yield* HostAuthority
    const issueScope = (
      givenTask: Ids.TaskId,
      givenCapabilities: ReadonlyArray<Grant.Capability>,
      givenAgent: Ids.AgentId
    ) =>
      Effect.all([decodeTask(givenTask), decodeCapabilities(givenCapabilities), decodeAgent(givenAgent)]).pipe(
        Effect.flatMap(([task, capabilities, agent]) => issueDecoded(task, capabilities, agent))
      )
    const issueDecoded = (task: Ids.TaskId, capabilities: ReadonlyArray<Grant.Capability>, agent: Ids.AgentId) =>
      Effect.forEach(capabilities, (capability) =>
        Effect.gen(function* () {
          const descriptor = yield* store.custody(capability.volume)
          if (Option.isNone(descriptor)) {
            return yield* new Unauthorized({
              reason: "OutOfCustody",
              detail: `cannot grant access to a volume outside the custody of store ${store.id}`,
              task,
              volume: capability.volume
            })
          }
          const access = [...new Set(capability.access)]
          for (const one of access) {
            const refusal = authority.refuse({ task, agent, volume: descriptor.value, access: one })
            if (Option.isSome(refusal)) {
              return yield* new Unauthorized({
                reason: "GrantForbidden",
                detail: refusal.value,
                task,
                volume: capability.volume
              })
            }
          }
          return access.length === 0 ? [] : [{ task, volume: capability.volume, access }]
        })
      ).pipe(
        Effect.map((grants) => {
          const scope: Grant.Scope = Object.freeze({ task, agent, grants: Object.freeze(grants.flat()) })
          recordIssued(scope, host)
          return scope
        })
      )
    const host: TaskHost = hosts.mint<TaskHost>({
      store,
      authority,
      issueScope,
      issued: (scope) => issuerOf(scope) === host
    })
    return host
  })

/**
 * Opens the store on `options.root` (see {@link VolumeStore.open}) and
 * makes a host over it.
 *
 * @example
 * ```ts
 * import { HostAuthority, Ids, Volume } from "@tessera/core"
 * import { NodeTessera } from "@tessera/node"
 * import { TaskHost } from "@tessera/runtime"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *
 * // A host: the store on `root`, and the authority from the context, which decides which grants may exist.
 * const program = Effect.gen(function* () {
 *   const host = yield* TaskHost.open({ root: "/srv/tessera/store" })
 *   const scratch = yield* host.store.create({
 *     id: Schema.decodeUnknownSync(Ids.VolumeId)("researcher-private"),
 *     kind: "AgentPrivate",
 *     owner: Volume.agentOwner(agent)
 *   })
 *   // Scopes are issued here and nowhere else.
 *   return yield* host.issueScope(
 *     Schema.decodeUnknownSync(Ids.TaskId)("task-1"),
 *     [{ volume: scratch, access: ["read", "write"] }],
 *     agent
 *   )
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Layer.merge(NodeTessera.layer, HostAuthority.permissive))))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const open = (options: VolumeStore.OpenOptions) => VolumeStore.open(options).pipe(Effect.flatMap(makeOver))
