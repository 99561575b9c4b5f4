/**
 * The floor under Tessera's cold start: the modules of Effect and of
 * `@effect/platform-node` that Tessera's program loads (its Effect modules
 * are those of `Effect`, `Layer`, `Schema`, `FileSystem` and `Path`, and
 * `NodeTessera.layer` brings `NodeFileSystem` and `NodePath`), and one effect
 * run, without any of Tessera's own code. No change in Tessera's code starts
 * faster than this.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type { Answer, Probe } from "./Runner.ts"

const Reply = Schema.Struct({ text: Schema.String })

export const firstCall = async (probe: Probe): Promise<Answer> => {
  const reply = await Effect.runPromise(
    Effect.gen(function* () {
      yield* FileSystem.FileSystem
      yield* Path.Path
      probe()
      return Schema.decodeUnknownSync(Reply)({
        text: "The north report shows every measurement within tolerance."
      })
    }).pipe(Effect.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer)))
  )
  return { text: reply.text, library: import.meta.resolve("effect/Effect") }
}
