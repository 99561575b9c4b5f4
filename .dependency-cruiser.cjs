// Import rules `npm test` enforces: no cycles between modules, and package
// dependencies that point one way (core <- artifacts <- runtime <- node), for
// tests as much as for sources: a test that needs a package above its own
// lives in that package (packages/node/test/runtime/, for one).
const layers = ["core", "artifacts", "runtime", "node"]
const below = (name) => layers.slice(layers.indexOf(name) + 1)

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "Modules must not import each other in a cycle, type-only imports included: a type an internal module needs " +
        "lives in that module (or a lower one) and the public module re-exports it, so dependencies point one way.",
      from: {},
      to: { circular: true }
    },
    ...layers.map((name) => ({
      name: `${name}-points-one-way`,
      severity: "error",
      comment: `packages/${name} (sources, tests, type tests, bin) must not depend on packages above it (${below(name).join(", ") || "none"}).`,
      from: { path: `^packages/${name}/` },
      to: { path: below(name).length === 0 ? "^$" : `^packages/(${below(name).join("|")})/` }
    })),
    {
      name: "platforms-apart",
      severity: "error",
      comment:
        "packages/node and packages/browser are two platforms over the same runtime: neither depends on the other, " +
        "and everything below them depends on neither.",
      from: { path: "^packages/(node|browser)/" },
      to: { path: "^packages/(node|browser)/", pathNot: "^packages/$1/" }
    },
    {
      name: "nothing-below-depends-on-browser",
      severity: "error",
      comment: "packages/core, artifacts and runtime must not depend on packages/browser.",
      from: { path: "^packages/(core|artifacts|runtime)/" },
      to: { path: "^packages/browser/" }
    },
    {
      name: "adapters-stay-above",
      severity: "error",
      comment:
        "The ecosystem adapters (packages/ai-sdk, packages/mcp, packages/effect-ai, packages/pi) build on runtime; the layers below never depend on them, and an " +
        "adapter's sources never on the Node package (its tests may, for real durable files).",
      from: { path: "^packages/(core|artifacts|runtime|node)/" },
      to: { path: "^packages/(ai-sdk|mcp|effect-ai|pi)/" }
    },
    {
      name: "workflow-stays-above",
      severity: "error",
      comment:
        "packages/workflow hosts tasks on Effect's workflow engine and cluster (Node runners): it builds on runtime and node; " +
        "no other package depends on it.",
      from: { path: "^packages/(core|artifacts|runtime|node|browser|ai-sdk|mcp)/" },
      to: { path: "^packages/workflow/" }
    },
    {
      name: "adapter-sources-platform-free",
      severity: "error",
      comment: "An adapter's sources run wherever the runtime runs: no import of @tessera/node or @tessera/browser.",
      from: { path: "^packages/(ai-sdk|mcp|effect-ai|pi)/src/" },
      to: { path: "^packages/(node|browser)/" }
    },
    {
      name: "no-foreign-internal",
      severity: "error",
      comment: "A package's internal/ modules are private to that package.",
      from: { path: "^packages/([^/]+)/", pathNot: "^packages/node/test/[^/]+/" },
      to: { path: "^packages/([^/]+)/src/internal/", pathNot: "^packages/$1/" }
    },
    {
      name: "no-foreign-internal-from-moved-tests",
      severity: "error",
      comment:
        "packages/node/test/<package>/ holds <package>'s tests that need real durable files; they may reach that " +
        "package's internal/ modules (as they did in its own test folder) and no other's.",
      from: { path: "^packages/node/test/([^/]+)/" },
      to: { path: "^packages/([^/]+)/src/internal/", pathNot: "^packages/(node|$1)/" }
    },
    {
      name: "src-not-from-tests",
      severity: "error",
      comment: "Library sources never import test code.",
      from: { path: "^packages/[^/]+/src/" },
      to: { path: "^packages/[^/]+/(test|typetest)/" }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(build|dist|node_modules)/" },
    tsPreCompilationDeps: true,
    combinedDependencies: true,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "types", "default"],
      extensions: [".ts", ".mjs", ".js", ".cjs"]
    }
  }
}
