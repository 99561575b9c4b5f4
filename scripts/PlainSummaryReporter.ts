/**
 * Ends a vitest run with one plain line, `vitest: N passed, N failed, N skipped`,
 * after vitest's own summary, so tools that read only a run's closing line
 * (CI among them) see the counts, and whether the browser project was left out.
 */
import type { Reporter, TestModule } from "vitest/node"
import { browserSkipped } from "../vitest.workspace.ts"

export default class PlainSummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 }
    for (const testModule of testModules) {
      for (const test of testModule.children.allTests()) {
        const state = test.result().state
        if (state === "passed") counts.passed++
        else if (state === "failed") counts.failed++
        else counts.skipped++
      }
    }
    // A browser project left out (no Chromium) is said on the closing line too, never only above it.
    const browser = browserSkipped === undefined ? "" : `; BROWSER PROJECT SKIPPED: ${browserSkipped}`
    process.stdout.write(
      `\nvitest: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped${browser}\n`
    )
  }
}
