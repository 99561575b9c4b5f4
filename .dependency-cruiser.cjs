// Import rules `npm test` enforces: no cycles between modules, and package
// dependencies that point one way (core <- artifacts <- runtime <- node).
const layers = ["core", "artifacts", "runtime", "node"]
const below = (name) => layers.slice(layers.indexOf(name) + 1)

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "Modules must not import each other in a cycle at run time. Type-only imports (erased on compile) may refer back, " +
        "as mutually referring interfaces do; a cycle needs at least one value import on every edge to count.",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } }
    },
    ...layers.map((name) => ({
      name: `${name}-points-one-way`,
      severity: "error",
      comment: `packages/${name}/src must not depend on packages above it (${below(name).join(", ") || "none"}).`,
      from: { path: `^packages/${name}/src/` },
      to: { path: below(name).length === 0 ? "^$" : `^packages/(${below(name).join("|")})/` }
    })),
    {
      name: "no-foreign-internal",
      severity: "error",
      comment: "A package's internal/ modules are private to that package.",
      from: { path: "^packages/([^/]+)/" },
      to: { path: "^packages/([^/]+)/src/internal/", pathNot: "^packages/$1/" }
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
