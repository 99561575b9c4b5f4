/**
 * What the browser project runs in, checked rather than assumed: real
 * headless Chromium, a secure context, OPFS and Web Locks, and the
 * platform layer writing into OPFS itself (read back through the raw API).
 */
import { assert, describe, it } from "@effect/vitest"
import { BrowserPlatform } from "@tessera/browser"
import { Effect, FileSystem } from "effect"
import { withRoot } from "./support.ts"

describe("the browser test environment", () => {
  it("real_headless_chromium: a Chromium user agent in a secure context with OPFS and Web Locks, not Node", () => {
    assert.match(navigator.userAgent, /HeadlessChrome\/\d+|Chrome\/\d+/)
    assert.isTrue(isSecureContext)
    assert.isFunction(navigator.storage.getDirectory)
    assert.isDefined(navigator.locks)
    assert.isUndefined((globalThis as { process?: { versions?: { node?: string } } }).process?.versions?.node)
  })

  it("the platform layer's files are OPFS files: what it writes, the raw OPFS API reads", () =>
    withRoot("environment", async (root) => {
      await Effect.runPromise(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          yield* fs.makeDirectory(`${root}/a`, { recursive: true })
          yield* fs.writeFileString(`${root}/a/b.txt`, "through the layer")
        }).pipe(Effect.provide(BrowserPlatform.layer))
      )
      const top = await navigator.storage.getDirectory()
      const folder = await (await top.getDirectoryHandle(root.slice(1))).getDirectoryHandle("a")
      assert.strictEqual(await (await (await folder.getFileHandle("b.txt")).getFile()).text(), "through the layer")
    }))
})
