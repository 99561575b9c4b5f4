/**
 * The task workflow on `WorkflowEngine.layerMemory` over a fresh shared
 * store, for the tests that run it in one process.
 */
import * as path from "node:path"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import type { EntryGate, TaskExecution } from "@tessera/runtime"
import { SharedStore, TaskHosting, TaskWorkflow } from "@tessera/workflow"
import { Effect, Layer } from "effect"
import * as world from "./world.ts"

/** Opens a shared store in `dir` and runs `body` with the workflow on the in-memory engine. */
export const onMemoryEngine = <A, E, R>(
  dir: string,
  options: {
    readonly idempotent?: boolean
    readonly gate?: EntryGate.BindOptions
    readonly privateVolume?: boolean
    readonly config?: (log: string) => TaskExecution.ExecutionConfig
    readonly bindTask?: (shared: SharedStore.SharedStore) => TaskHosting.TaskHosting["Service"]["bindTask"]
    readonly modelRetry?: TaskHosting.TaskHosting["Service"]["modelRetry"]
  },
  body: (shared: SharedStore.SharedStore) => Effect.Effect<A, E, R>
) =>
  Effect.gen(function* () {
    const log = path.join(dir, "effects.log")
    const shared = yield* SharedStore.open({
      root: path.join(dir, "store"),
      agent: world.agent,
      storeId: world.storeId,
      config: options.config?.(log) ?? world.config(log, options),
      gate: options.gate ?? { policy: world.policy },
      ...(options.privateVolume === undefined ? {} : { privateVolume: options.privateVolume })
    })
    const hosting = {
      ...shared.hosting,
      ...(options.bindTask === undefined ? {} : { bindTask: options.bindTask(shared) }),
      ...(options.modelRetry === undefined ? {} : { modelRetry: options.modelRetry })
    }
    const services = Layer.mergeAll(
      Layer.succeed(TaskHosting.TaskHosting)(hosting),
      ArtifactPathPolicy.layer(shared.pathPolicy)
    )
    return yield* body(shared).pipe(
      Effect.provide(TaskWorkflow.layerMemory.pipe(Layer.provide(services))),
      Effect.provide(services)
    )
  })
