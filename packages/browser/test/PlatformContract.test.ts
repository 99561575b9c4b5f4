/**
 * The platform contract (packages/runtime/test/contract) in headless
 * Chromium, on the Origin Private File System: the same scenarios the Node
 * project runs on node:fs.
 */
import { BrowserPlatform } from "@tessera/browser"
import { platformContract } from "../../runtime/test/contract/PlatformContract.ts"

platformContract({ name: "browser (OPFS in headless Chromium)", layer: BrowserPlatform.layer, stagers: 16 })
