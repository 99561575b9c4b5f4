/**
 * The browser example (example/index.html + runExample.ts) in headless
 * Chromium: a turn with offload and compaction, the files it left in the
 * origin's storage, and a screenshot of the rendered page.
 */
import { assert, describe, it } from "@effect/vitest"
import { page } from "vitest/browser"
import { renderReport, runExample } from "../example/runExample.ts"
import { withRoot } from "./support.ts"

describe("browser example", () => {
  it("browser_example: a turn with offload and compaction writes its files to OPFS, and the page shows them (screenshot)", () =>
    withRoot("example", async (root) => {
      const report = await runExample({ root })
      const whats = report.requests.map((request) => request.what)
      assert.include(whats, "summary request", "the turn compacted")
      assert.match(report.finalStartsWith, /^summaries\/research-t1\/\d+\.txt$/)
      assert.strictEqual(report.answer, "Both deployments are healthy.")
      const files = report.files.map((one) => one.file)
      assert.isTrue(
        files.some((file) => /^volumes\/researcher-scratch\/artifacts\//.test(file)),
        `an offloaded artifact on the private volume: ${files.join(", ")}`
      )
      assert.isTrue(files.some((file) => file === `volumes/researcher-scratch/${report.finalStartsWith}`))
      assert.isTrue(files.some((file) => file.startsWith("volumes/journal/")))
      // Read back through the raw OPFS API, not through the layer that wrote it.
      let folder = await navigator.storage.getDirectory()
      for (const name of `${report.folder}/volumes/researcher-scratch`.split("/").filter(Boolean)) {
        folder = await folder.getDirectoryHandle(name)
      }
      let summaries = folder
      for (const name of report.finalStartsWith.split("/").slice(0, -1))
        summaries = await summaries.getDirectoryHandle(name)
      const summary = await (await summaries.getFileHandle(report.finalStartsWith.split("/").at(-1) ?? "")).getFile()
      assert.include(await summary.text(), "both deployments are healthy")

      const app = document.createElement("main")
      document.body.replaceChildren(app)
      renderReport(app, report)
      assert.include(app.textContent ?? "", "Files in the origin's storage")
      const shot = await page.screenshot({ path: "../build/screenshots/browser-example.png", base64: true })
      const png = Uint8Array.from(atob(shot.base64), (c) => c.charCodeAt(0))
      assert.deepStrictEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47], "a PNG")
      assert.isAbove(png.length, 10_000, "a rendered page, not a blank one")
    }))
})
