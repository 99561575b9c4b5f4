// @ts-check
/**
 * Mutation testing of the trust and containment guards: `npm run mutation`
 * (docs/development.md, "Mutation testing"). Not part of `npm test`: a full
 * run takes far longer than the checks.
 *
 * @type {import("@stryker-mutator/api/core").PartialStrykerOptions}
 */
export default {
  testRunner: "vitest",
  // Stryker looks for plugins next to its own package, which pnpm keeps
  // apart from its siblings; the runner is resolved from here instead.
  plugins: [import.meta.resolve("@stryker-mutator/vitest-runner")],
  // forks, as `npm test` runs them: a worker thread has another stack size,
  // and one guard test is about what overflows the stack.
  vitest: { configFile: "vitest.mutation.config.ts", pool: "forks" },
  // The modules that decide what a caller may reach and what a task may keep;
  // `--mutate <file>` on the command line narrows a run to some of them.
  mutate: [
    "packages/runtime/src/EntryGate.ts",
    "packages/runtime/src/internal/trusted.ts",
    "packages/runtime/src/internal/issuedScopes.ts",
    "packages/runtime/src/internal/storeRuntime.ts",
    "packages/runtime/src/PrivateSummaries.ts",
    "packages/runtime/src/internal/privateSummaries.ts",
    "packages/runtime/src/internal/privateFiles.ts",
    "packages/artifacts/src/ArtifactPath.ts",
    "packages/artifacts/src/ArtifactPathPolicy.ts",
    "packages/runtime/src/internal/readTool.ts",
    "packages/runtime/src/internal/artifactAccess.ts",
    "packages/runtime/src/internal/offload.ts",
    "packages/runtime/src/Transcript.ts",
    "packages/runtime/src/internal/transcriptRecords.ts",
    "packages/runtime/src/internal/transcriptScrub.ts",
    "packages/runtime/src/internal/transcriptStore.ts",
    "packages/runtime/src/internal/transcriptChecks.ts",
    "packages/runtime/src/internal/transcriptRebuild.ts",
    "packages/artifacts/src/internal/secretRules.ts",
    "packages/artifacts/src/internal/rulePatterns.ts"
  ],
  // Only what the guard tests load goes into the sandbox.
  ignorePatterns: [
    "/*",
    "!/packages",
    "/packages/*",
    "!/packages/core",
    "!/packages/artifacts",
    "!/packages/runtime",
    "!/packages/node",
    "build",
    "dist",
    "*.tsbuildinfo",
    // The redactor's tests read the docs, the README and the lockfile: the ordinary-text corpus, and the rule
    // list of the security model.
    "!/docs",
    "!/README.md",
    "!/pnpm-lock.yaml",
    "!/package.json",
    "!/tsconfig.base.json",
    "!/vitest.workspace.ts",
    "!/vitest.mutation.config.ts"
  ],
  coverageAnalysis: "perTest",
  // Two cores: one test process per core.
  concurrency: 2,
  // The guard tests touch the file system; a loaded machine runs them slowly.
  timeoutFactor: 3,
  timeoutMS: 20_000,
  dryRunTimeoutMinutes: 15,
  reporters: ["clear-text", "progress-append-only", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/index.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  tempDirName: ".stryker-tmp",
  cleanTempDir: true
}
