/**
 * `tessera-inspect --task <id> --html <file>` writes the task's page: the
 * whole journal drawn, its redaction decision on it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { inspectedFolder, redactedTask, runBin, verbatimTask } from "./support/inspectedFolder.ts"
import { nodeLayer, tempDir } from "./support/temp.ts"

describe("Inspector --html", () => {
  it.live(
    "inspector_html_cli: --html with --task writes one self-contained page of that task, naming its redaction decision; without --task it writes nothing and exits 1 (control)",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder } = yield* inspectedFolder(stateDir)
        const scrubbed = path.join(stateDir, "task-1.html")
        const written = runBin(folder, "--task", redactedTask, "--html", scrubbed)
        assert.strictEqual(written.status, 0, written.stderr)
        assert.strictEqual(written.stdout.trim(), scrubbed)
        const page = fs.readFileSync(scrubbed, "utf8")
        assert.isTrue(page.startsWith("<!doctype html>"))
        assert.include(page, `<code id="task">${redactedTask}</code>`)
        assert.include(page, "<svg")
        assert.match(page, /id="redaction">[^<]*scrubbed/)
        const verbatim = path.join(stateDir, "task-2.html")
        assert.strictEqual(runBin(folder, "--task", verbatimTask, "--html", verbatim).status, 0)
        assert.match(fs.readFileSync(verbatim, "utf8"), /id="redaction">[^<]*verbatim/)
        // Control: without a task there is no page to write.
        const nowhere = path.join(stateDir, "none.html")
        const refused = runBin(folder, "--html", nowhere)
        assert.strictEqual(refused.status, 1)
        assert.include(refused.stderr, "--html needs --task")
        assert.isFalse(fs.existsSync(nowhere))
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )
})
