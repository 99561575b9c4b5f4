import { NodeServices } from "@effect/platform-node"
import { ArtifactOffload } from "@tessera/artifacts"
import { NodeDurableFiles } from "@tessera/node"
import { Effect } from "effect"

declare const runnable: (effect: Effect.Effect<ArtifactOffload.OffloadResult, never, never>) => void

const offload = ArtifactOffload.offload({
  content: "body",
  threshold: 1,
  root: "/artifacts",
  target: "tool-results/c1.txt",
  readTool: "read_file"
})

// @ts-expect-error the offload cannot run before the durable file primitives, a file system and a path are provided
runnable(offload)

// @ts-expect-error the durable file primitives alone are not enough: the file system and path are still missing
runnable(offload.pipe(Effect.provide(NodeDurableFiles.layer)))

// With everything provided it runs, and it never fails: refusals come back as Inline results.
runnable(offload.pipe(Effect.provide([NodeServices.layer, NodeDurableFiles.layer])))

// @ts-expect-error the read tool is a required parameter, never a built-in name
ArtifactOffload.offload({ content: "body", threshold: 1, root: "/artifacts", target: "x.txt" })
