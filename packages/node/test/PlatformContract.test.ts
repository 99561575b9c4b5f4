/**
 * The platform contract (packages/runtime/test/contract) on Node: the same
 * scenarios the browser project runs on OPFS in headless Chromium.
 */
import { NodeServices } from "@effect/platform-node"
import { NodeDigest, NodeDurableFiles, NodeJournalFile } from "@tessera/node"
import { Layer } from "effect"
import { platformContract } from "../../runtime/test/contract/PlatformContract.ts"

platformContract({
  name: "Node (node:fs)",
  layer: Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, NodeJournalFile.layer, NodeDigest.layer)
})
