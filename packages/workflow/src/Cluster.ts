/**
 * The task workflow on a cluster: `effect/cluster`'s `ClusterWorkflowEngine`
 * over runners that talk through sockets, with messages, replies (the stored
 * results of finished activities), runner registrations and shard locks in
 * Postgres (`SqlMessageStorage`, `SqlRunnerStorage` through
 * `@effect/sql-pg`).
 *
 * A runner serves the workflows registered beside {@link layer} (for tasks:
 * `TaskWorkflow.layer` with `TaskHosting`); a client ({@link layerClient})
 * starts workflows and waits for their results without serving any. When a
 * runner dies, its Postgres session ends, its shard locks are released, and
 * the runners still alive take its shards over: unfinished workflows run
 * again there, and every activity that had finished returns its stored
 * result instead of running again.
 *
 * @since 0.1.0
 */
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import { PgClient } from "@effect/sql-pg"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import type * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as TaskLock from "./TaskLock.ts"

/**
 * Timings for a cluster whose runners should take a dead runner's tasks
 * over within seconds (the defaults of `effect/cluster` are made for
 * rolling deployments: tens of seconds). Postgres advisory locks end with
 * the dead runner's session, so a short expiration costs little.
 *
 * @since 0.1.0
 * @category configuration
 */
export const fastFailover: Partial<ShardingConfig.ShardingConfig["Service"]> = {
  shardsPerGroup: 30,
  shardLockRefreshInterval: Duration.seconds(1),
  shardLockExpiration: Duration.seconds(4),
  refreshAssignmentsInterval: Duration.millis(500),
  runnerHealthCheckInterval: Duration.seconds(1),
  entityMessagePollInterval: Duration.millis(250),
  entityReplyPollInterval: Duration.millis(100),
  sendRetryInterval: Duration.millis(100),
  entityTerminationTimeout: Duration.seconds(2)
}

/**
 * Where the cluster's Postgres is.
 *
 * @since 0.1.0
 * @category models
 */
export interface PostgresOptions {
  /** `postgres://user[:password]@host:port/database` */
  readonly url: string
  readonly maxConnections?: number
}

/**
 * The Postgres client of a runner or client.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPostgres = (options: PostgresOptions) =>
  PgClient.layer({
    url: Redacted.make(options.url),
    maxConnections: options.maxConnections ?? 8,
    applicationName: "tessera-workflow"
  })

/**
 * How a runner joins the cluster: its address (other runners and clients
 * send it messages there; it listens on it), and sharding settings
 * (default: {@link fastFailover}).
 *
 * @since 0.1.0
 * @category models
 */
export interface RunnerOptions {
  readonly postgres: PostgresOptions
  readonly host: string
  readonly port: number
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Service"]>
}

/**
 * The task lock of a runner (`TaskLock.postgres`) on a connection pool of
 * its own (`connections`, default 16: one per activity running at once).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerTaskLock = (options: PostgresOptions & { readonly connections?: number }) =>
  Layer.effect(
    TaskLock.TaskLock,
    Effect.map(
      PgClient.make({
        url: Redacted.make(options.url),
        maxConnections: options.connections ?? 16,
        applicationName: "tessera-task-locks"
      }),
      TaskLock.postgres
    )
  ).pipe(Layer.provide(Reactivity.layer))

/**
 * A runner: the cluster workflow engine, the socket runner, Postgres
 * storage, and the task lock every activity holds (see `TaskLock`). Provide
 * the workflows' handler layers with it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: RunnerOptions) => Layer.merge(layerTaskLock(options.postgres), runnerLayer(options))

const runnerLayer = (options: RunnerOptions) =>
  ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(
      NodeClusterSocket.layer({
        storage: "sql",
        shardingConfig: {
          ...fastFailover,
          ...options.sharding,
          runnerAddress: Option.some(RunnerAddress.make(options.host, options.port))
        }
      })
    ),
    Layer.provide(layerPostgres(options.postgres))
  )

/**
 * How a client reaches the cluster: its Postgres, and sharding settings
 * (default: {@link fastFailover}).
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions {
  readonly postgres: PostgresOptions
  readonly sharding?: Partial<ShardingConfig.ShardingConfig["Service"]>
}

/**
 * A client: starts workflows (`TaskWorkflow.run`) and waits for their
 * results through Postgres, serving none itself.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerClient = (options: ClientOptions) =>
  ClusterWorkflowEngine.layer.pipe(
    Layer.provideMerge(
      NodeClusterSocket.layer({
        storage: "sql",
        clientOnly: true,
        shardingConfig: { ...fastFailover, ...options.sharding }
      })
    ),
    Layer.provide(layerPostgres(options.postgres))
  )
