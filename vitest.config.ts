import { defineConfig } from "vitest/config"
import PlainSummaryReporter from "./scripts/PlainSummaryReporter.ts"
import projects from "./vitest.workspace.ts"

export default defineConfig({
  test: {
    projects,
    reporters: ["default", new PlainSummaryReporter()],
    // Two cores: one worker per core keeps file-system heavy suites honest.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
