import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Volume } from "@tessera/core"
import { PrivateSummaries } from "@tessera/runtime"
import { Effect, Option } from "effect"
import { agent, agentId, operationId, runInWorld, task, volumeId } from "./support/world.ts"

describe("PrivateSummaries.resolve", () => {
  it("prefers the task's created private content over the runtime's private volume", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.some(world.privateRef))
        // A second agent-private volume of the same agent, created by the task.
        const created = yield* world.host.store.create({
          id: volumeId("researcher-task-private"),
          kind: "AgentPrivate",
          owner: Volume.agentOwner(agent)
        })
        const scope = yield* world.scopeFor([created, world.privateRef])
        const context = yield* runtime.bindTask({ scope, createdPrivate: [created], output: Option.none() })
        const capability = yield* PrivateSummaries.resolve(context)
        assert.strictEqual(capability.source, "CreatedPrivate")
        assert.strictEqual(capability.volume.volume, created.volume)
      })
    ))

  it("falls back to the runtime's private volume, then to an agent-private output binding", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const withPrivate = yield* world.openRuntime(Option.some(world.privateRef))
        const scope = yield* world.scopeFor([world.privateRef])
        const context = yield* withPrivate.bindTask({ scope, output: Option.none() })
        assert.strictEqual((yield* PrivateSummaries.resolve(context)).source, "RuntimePrivate")

        const withoutPrivate = yield* world.openRuntime(Option.none(), [])
        const outputScope = yield* world.scopeFor([world.privateRef])
        const outputContext = yield* withoutPrivate.bindTask({
          scope: outputScope,
          output: Option.some(world.privateRef)
        })
        assert.strictEqual((yield* PrivateSummaries.resolve(outputContext)).source, "OutputBinding")
      })
    ))

  it("a writerless task is Unauthorized(NoPrivateWriter), naming why each candidate was refused", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.none(), [])
        const scope = yield* world.scopeFor([world.scratchRef, world.otherPrivateRef])
        const context = yield* runtime.bindTask({
          scope,
          createdPrivate: [world.otherPrivateRef],
          output: Option.some(world.scratchRef)
        })
        const error = yield* Effect.flip(PrivateSummaries.resolve(context))
        assert.strictEqual(error._tag, "Unauthorized")
        if (error._tag !== "Unauthorized") return
        assert.strictEqual(error.reason, "NoPrivateWriter")
        assert.include(error.message, "CreatedPrivate")
        assert.include(error.message, "NotOwnerBound")
        assert.include(error.message, "OutputBinding")
        assert.include(error.message, "NotAgentPrivate")
      })
    ))

  it("the runtime's private volume does not serve a task of another agent", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.some(world.privateRef))
        const foreign = yield* world.host.issueScope(task, [], agentId("reviewer"))
        const context = yield* runtime.bindTask({ scope: foreign, output: Option.none() })
        const error = yield* Effect.flip(PrivateSummaries.resolve(context))
        assert.isTrue(error._tag === "Unauthorized" && error.reason === "NoPrivateWriter")
      })
    ))

  it("a forged capability (a cast) is refused Unauthorized NotMinted before anything is written", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const forged = {
          volume: world.privateRef,
          folder: world.root,
          source: "RuntimePrivate"
        } as unknown as PrivateSummaries.PrivateWriterCapability
        const error = yield* Effect.flip(
          PrivateSummaries.stageOnce({ operation: operationId("forged"), step: 1 }, "x").pipe(
            PrivateSummaries.provide(forged)
          )
        )
        assert.isTrue(error._tag === "Unauthorized" && error.reason === "NotMinted")
        assert.isFalse(fs.existsSync(path.join(world.root, "summaries")))
      })
    ))
})
