/**
 * The Vitest configuration StrykerJS runs (`npm run mutation`, see
 * `stryker.config.mjs`): the `node`, `runtime` and `artifacts` projects of
 * `vitest.workspace.ts`, narrowed to the tests that exercise the trust and
 * containment guards, so each mutant is judged by the tests written for it
 * and the dry run stays short on a two-core machine.
 */
import { fileURLToPath } from "node:url"
import { defineConfig, type UserWorkspaceConfig } from "vitest/config"
import projects from "./vitest.workspace.ts"

/** Guard tests per project, relative to the project's root. */
const guardTests: Readonly<Record<string, ReadonlyArray<string>>> = {
  node: [
    "test/runtime/TranscriptMutants.test.ts",
    "test/TranscriptPolicy.test.ts",
    "test/Approvals.test.ts",
    "test/ArtifactReadMutants.test.ts",
    "test/HostileCaller.test.ts",
    "test/ApprovalBinding.test.ts",
    "test/PlatformContract.test.ts",
    "test/ArtifactReadTool.test.ts",
    "test/ArtifactReadBounds.test.ts",
    "test/artifacts/ArtifactPath.test.ts",
    "test/artifacts/ArtifactOffload.test.ts",
    "test/TranscriptTamper.test.ts",
    "test/runtime/PrivateSummariesStaging.test.ts",
    "test/runtime/PrivateWriteCount.test.ts",
    "test/runtime/SummaryFileDigest.test.ts",
    "test/runtime/PrivateSummaries.test.ts",
    "test/TrustMutants.test.ts",
    "test/runtime/SummaryEntries.test.ts",
    "test/artifacts/PathMutants.test.ts",
    "test/runtime/ToolResultOffload.test.ts",
    "test/runtime/OffloadMutants.test.ts",
    "test/artifacts/SecretRuleClasses.test.ts",
    "test/artifacts/RealFormatCorpus.test.ts",
    "test/artifacts/SecretRuleMutants.test.ts",
    "test/artifacts/SecretRules.test.ts",
    "test/artifacts/OrdinaryText.test.ts",
    "test/artifacts/DefaultRedactor.test.ts"
  ],
  runtime: ["test/FilesystemTaskRuntime.test.ts"],
  artifacts: ["test/SecretRulesForms.test.ts"]
}

// This file's folder: the repository, or the StrykerJS sandbox copy of it.
const root = fileURLToPath(new URL(".", import.meta.url))

// Stryker symlinks each package's node_modules into its sandbox, and pnpm's
// `@tessera/*` links in there are relative, so they would resolve to the
// ORIGINAL packages and no test would ever see a mutant. The aliases point
// the workspace packages at the sources next to this file instead, with the
// same mapping as their `exports` (`.` -> src/index.ts, `./*` -> src/*.ts).
const workspacePackages = [
  { find: /^@tessera\/([\w-]+)$/, replacement: `${root}packages/$1/src/index.ts` },
  { find: /^@tessera\/([\w-]+)\/(?!internal\/)(.+)$/, replacement: `${root}packages/$1/src/$2.ts` }
]

/**
 * `TESSERA_MUTATION_TESTS=<substring>,...` keeps only the guard tests whose
 * path contains one of them (`SecretRule,RealFormatCorpus` for the redactor's
 * rule engine): a run of static
 * mutants, which reloads the tests for each mutant, then loads only the tests
 * written for the mutated module.
 */
const only = process.env.TESSERA_MUTATION_TESTS?.split(",")

const narrowed = (project: UserWorkspaceConfig): UserWorkspaceConfig | undefined => {
  const name = project.test?.name
  const listed = typeof name === "string" ? guardTests[name] : undefined
  const include = only === undefined ? listed : listed?.filter((file) => only.some((part) => file.includes(part)))
  if (include === undefined || include.length === 0) return undefined
  return {
    ...project,
    resolve: { alias: workspacePackages },
    test: { ...project.test, include: [...include] }
  }
}

const guardProjects = projects.flatMap((project) => narrowed(project) ?? [])

// A narrowed run may leave a project without tests; the full run must find every project.
const missing = Object.keys(guardTests).filter(
  (name) => only === undefined && !guardProjects.some((project) => project.test?.name === name)
)
if (missing.length > 0) {
  throw new Error(`vitest.mutation.config.ts: vitest.workspace.ts has no project named ${missing.join(", ")}`)
}

export default defineConfig({
  test: {
    projects: guardProjects,
    testTimeout: 60_000,
    hookTimeout: 60_000
  }
})
