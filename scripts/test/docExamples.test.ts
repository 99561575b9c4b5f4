/**
 * The public API's doc comments, checked the way Effect's docgen checks its
 * own: every export of every published entry point has a doc comment that
 * says something (tags alone do not count), every ```ts block under an
 * `@example` tag type-checks as a module of its own
 * (importing the packages by their public names, under the repo's strict
 * flags), and every export docs/getting-started.md names has an example.
 *
 * The examples are type-checked in one `ts.createProgram` over a temporary
 * folder whose imports resolve as `examples/` resolves them (the workspace
 * packages' sources), so the check costs one program, not a compiler per
 * example.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import ts from "typescript"

const root = fileURLToPath(new URL("../..", import.meta.url))

/**
 * issue 36: doc comments to add. Exports with no doc comment, in files other
 * helpers own; the check fails when one of them gets its doc comment, so the
 * list only shrinks.
 */
const pendingDocs: ReadonlyArray<string> = []

/**
 * issue 36: examples to add. Exports docs/getting-started.md names that have
 * no `@example` yet (proposals in /tmp/examples-proposals/); the check fails
 * when one of them gets its example, so the list only shrinks.
 */
const pendingExamples: ReadonlyArray<string> = []

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

interface Entry {
  /** `core/Volume`: the package folder and the module's name. */
  readonly module: string
  readonly file: string
}

/** A package's public entry points, from its package.json `exports` (`null` targets block a subpath). */
const entryPoints = (packageFolder: string): ReadonlyArray<Entry> => {
  const manifest = JSON.parse(readFileSync(join(packageFolder, "package.json"), "utf8"))
  const exportsField: Record<string, string | null> =
    typeof manifest.exports === "string" ? { ".": manifest.exports } : (manifest.exports ?? {})
  const blocked = Object.entries(exportsField)
    .filter(([, target]) => target === null)
    .map(([subpath]) => subpath)
  const isBlocked = (subpath: string) =>
    blocked.some((pattern) =>
      pattern.includes("*") ? subpath.startsWith(pattern.slice(0, pattern.indexOf("*"))) : subpath === pattern
    )
  const name = basename(packageFolder)
  const entries = new Map<string, Entry>()
  for (const [subpath, target] of Object.entries(exportsField)) {
    if (target === null || !target.endsWith(".ts")) continue
    if (!subpath.includes("*")) {
      const module = subpath === "." ? "index" : subpath.slice(2)
      entries.set(join(packageFolder, target), { module: `${name}/${module}`, file: join(packageFolder, target) })
      continue
    }
    const [targetPrefix = "", targetSuffix = ""] = target.split("*")
    const [subpathPrefix = "", subpathSuffix = ""] = subpath.split("*")
    const base = join(packageFolder, targetPrefix)
    const walk = (folder: string): ReadonlyArray<string> =>
      readdirSync(folder).flatMap((child) => {
        const path = join(folder, child)
        return statSync(path).isDirectory() ? walk(path) : [path]
      })
    for (const file of walk(base)) {
      const relativePath = relative(base, file)
      if (!relativePath.endsWith(targetSuffix)) continue
      const middle = relativePath.slice(0, relativePath.length - targetSuffix.length)
      const exported = `${subpathPrefix}${middle}${subpathSuffix}`
      if (isBlocked(exported) || entries.has(file)) continue
      entries.set(file, { module: `${name}/${exported.slice(2)}`, file })
    }
  }
  return [...entries.values()]
}

/** The published packages: every folder under packages/ (bench lives outside it and publishes nothing). */
const workspaceEntries = (): ReadonlyArray<Entry> =>
  readdirSync(join(root, "packages"))
    .filter((name) => name !== "bench" && statSync(join(root, "packages", name, "package.json")).isFile())
    .flatMap((name) => entryPoints(join(root, "packages", name)))

// ---------------------------------------------------------------------------
// Compiler setup
// ---------------------------------------------------------------------------

/**
 * The repo's flags (tsconfig.base.json) plus the consumer test's
 * `noPropertyAccessFromIndexSignature`: examples are code a consumer writes.
 * Nothing is emitted and no build state is kept.
 */
const compilerOptions = (): ts.CompilerOptions => {
  const configPath = join(root, "tsconfig.base.json")
  const config = ts.readConfigFile(configPath, ts.sys.readFile)
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root, undefined, configPath)
  const {
    composite: _composite,
    incremental: _incremental,
    declaration: _declaration,
    declarationMap: _declarationMap,
    sourceMap: _sourceMap,
    tsBuildInfoFile: _tsBuildInfoFile,
    ...options
  } = parsed.options
  return {
    ...options,
    noPropertyAccessFromIndexSignature: true,
    noEmit: true,
    typeRoots: [join(root, "node_modules", "@types")]
  }
}

/** Examples resolve their imports as a file in examples/ does: the workspace packages, effect, platform-node. */
const resolveExamplesFrom = join(root, "examples", "doc-example.ts")

/**
 * A compiler host for a set of example folders: a file in one of them
 * resolves its imports from `resolveExamplesFrom`, every other file as usual.
 * Source files are cached across programs, so the negative controls re-parse
 * only their own files.
 */
const makeHost = (options: ts.CompilerOptions, exampleFolders: () => ReadonlyArray<string>): ts.CompilerHost => {
  const host = ts.createCompilerHost(options, true)
  const cache = ts.createModuleResolutionCache(root, (name) => name, options)
  const parsed = new Map<string, ts.SourceFile>()
  const getSourceFile = host.getSourceFile.bind(host)
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const inExamples = exampleFolders().some((folder) => fileName.startsWith(folder))
    const cached = inExamples ? undefined : parsed.get(fileName)
    if (cached !== undefined) return cached
    const file = getSourceFile(fileName, languageVersion, onError, shouldCreate)
    if (file !== undefined && !inExamples) parsed.set(fileName, file)
    return file
  }
  host.resolveModuleNameLiterals = (literals, containingFile, redirectedReference, resolutionOptions, sourceFile) => {
    const from = exampleFolders().some((folder) => containingFile.startsWith(folder))
      ? resolveExamplesFrom
      : containingFile
    return literals.map((literal) =>
      ts.resolveModuleName(
        literal.text,
        from,
        resolutionOptions,
        host,
        cache,
        redirectedReference,
        ts.getModeForUsageLocation(sourceFile, literal, resolutionOptions)
      )
    )
  }
  return host
}

// ---------------------------------------------------------------------------
// Doc comments
// ---------------------------------------------------------------------------

interface Example {
  /** `core/Volume.agentOwner` */
  readonly owner: string
  /** The file and 1-based line of the example's first code line. */
  readonly file: string
  readonly line: number
  readonly code: string
}

interface ApiReport {
  /** `package/Module.name (file:line)` of each export without a doc comment. */
  readonly undocumented: ReadonlyArray<{ readonly name: string; readonly at: string }>
  /** Every export, by `package/Module.name`. */
  readonly exports: ReadonlySet<string>
  /** The exports that have at least one `@example` with a ```ts block. */
  readonly withExample: ReadonlySet<string>
  readonly examples: ReadonlyArray<Example>
}

const jsDocsOf = (node: ts.Node): ReadonlyArray<ts.JSDoc> =>
  ts.getJSDocCommentsAndTags(node).filter((doc): doc is ts.JSDoc => ts.isJSDoc(doc))

/** The node a declaration's doc comment is attached to. */
const documentedNode = (declaration: ts.Declaration): ts.Node =>
  ts.isExportSpecifier(declaration)
    ? declaration.parent.parent
    : ts.isNamespaceExport(declaration)
      ? declaration.parent
      : declaration

/** A doc comment counts when it says something: a description, not only tags such as `@since`. */
const says = (doc: ts.JSDoc): boolean => (ts.getTextOfJSDocComment(doc.comment) ?? "").trim().length > 0

/**
 * `export type X = typeof X.Type` (or `.Encoded`): the type of the schema
 * const of the same name, documented by that const.
 */
const isSchemaTwin = (declaration: ts.Declaration, name: string): boolean =>
  ts.isTypeAliasDeclaration(declaration) &&
  ts.isTypeQueryNode(declaration.type) &&
  ts.isQualifiedName(declaration.type.exprName) &&
  ts.isIdentifier(declaration.type.exprName.left) &&
  declaration.type.exprName.left.text === name

const fence = /^```(ts|typescript)\s*$/
const fenceEnd = /^```\s*$/

/** The ```ts blocks under `@example` tags of one doc comment, with their first code line in the file. */
const examplesOf = (doc: ts.JSDoc, sourceFile: ts.SourceFile): ReadonlyArray<{ line: number; code: string }> => {
  const text = sourceFile.text.slice(doc.getStart(sourceFile), doc.end)
  const firstLine = sourceFile.getLineAndCharacterOfPosition(doc.getStart(sourceFile)).line + 1
  const lines = text
    .replace(/^\/\*\*/, "")
    .replace(/\*\/$/, "")
    .split("\n")
    .map((line) => line.replace(/^\s*\* ?/, ""))
  const blocks: Array<{ line: number; code: string }> = []
  let tag: string | undefined
  let block: { line: number; code: Array<string> } | undefined
  lines.forEach((line, index) => {
    if (block !== undefined) {
      if (fenceEnd.test(line.trim())) {
        blocks.push({ line: block.line, code: `${block.code.join("\n")}\n` })
        block = undefined
      } else {
        block.code.push(line)
      }
      return
    }
    const tagMatch = /^@(\w+)/.exec(line.trim())
    if (tagMatch !== null) tag = tagMatch[1]
    else if (tag === "example" && fence.test(line.trim())) block = { line: firstLine + index + 1, code: [] }
  })
  return blocks
}

/**
 * Walks every export of the given entry points: doc comments, examples. An
 * `export * as X from "./X.ts"` is followed into X (as `package/X`; a module
 * reached under two names is walked once, under the first, the index's); a
 * re-export counts as documented when either it or the declaration it names
 * carries a doc comment.
 */
const inspectApi = (program: ts.Program, entries: ReadonlyArray<Entry>): ApiReport => {
  const checker = program.getTypeChecker()
  const undocumented: Array<{ name: string; at: string }> = []
  const exports = new Set<string>()
  const withExample = new Set<string>()
  // By file and line: a declaration two public modules export is one example.
  const examples = new Map<string, Example>()
  const visited = new Set<ts.Symbol>()
  const location = (node: ts.Node) => {
    const sourceFile = node.getSourceFile()
    const { line } = sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile))
    return `${relative(root, sourceFile.fileName)}:${line + 1}`
  }
  const docsOf = (declaration: ts.Declaration) => jsDocsOf(documentedNode(declaration))
  const visitModule = (packageName: string, module: string, moduleSymbol: ts.Symbol) => {
    if (visited.has(moduleSymbol)) return
    visited.add(moduleSymbol)
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const name = `${packageName}/${module}.${exported.name}`
      const isAlias = (exported.flags & ts.SymbolFlags.Alias) !== 0
      const own = exported.declarations ?? []
      const target = isAlias ? checker.getAliasedSymbol(exported) : exported
      const declarations = target.declarations ?? []
      if (declarations.some(ts.isSourceFile)) {
        // `export * as X from "./X.ts"`: the module's own header says what it is, so any doc comment will do here
        // (the indexes carry `@since` only).
        if (!own.some((declaration) => docsOf(declaration).length > 0) && own[0] !== undefined) {
          undocumented.push({ name, at: location(own[0]) })
        }
        visitModule(packageName, exported.name, target)
        continue
      }
      exports.add(name)
      const reexportDocs = isAlias ? own.flatMap(docsOf) : []
      // Overloads share one doc comment; every other declaration (a const and its interface) needs its own,
      // except a schema's `typeof X.Type` twin beside the const.
      const overloadDocs = declarations.filter(ts.isFunctionDeclaration).flatMap(docsOf)
      const hasConst = declarations.some((declaration) => !isSchemaTwin(declaration, exported.name))
      const missing = declarations.filter(
        (declaration) =>
          !(hasConst && isSchemaTwin(declaration, exported.name)) &&
          ![...(ts.isFunctionDeclaration(declaration) ? overloadDocs : docsOf(declaration)), ...reexportDocs].some(says)
      )
      const reported = own.find(ts.isExportSpecifier) ?? missing[0]
      if (missing.length > 0 && reported !== undefined) undocumented.push({ name, at: location(reported) })
      for (const doc of new Set([...reexportDocs, ...declarations.flatMap(docsOf)])) {
        const sourceFile = doc.getSourceFile()
        for (const block of examplesOf(doc, sourceFile)) {
          withExample.add(name)
          const key = `${sourceFile.fileName}:${block.line}`
          if (!examples.has(key)) examples.set(key, { owner: name, file: sourceFile.fileName, ...block })
        }
      }
    }
  }
  // The index first: its namespace names (`Volume` in `Volume.agentOwner`) are the ones callers write.
  const ordered = [...entries].sort((a, b) => Number(b.module.endsWith("/index")) - Number(a.module.endsWith("/index")))
  for (const entry of ordered) {
    const sourceFile = program.getSourceFile(entry.file)
    const symbol = sourceFile === undefined ? undefined : checker.getSymbolAtLocation(sourceFile)
    if (symbol === undefined) throw new Error(`${entry.file} is not a module the program loaded`)
    const slash = entry.module.indexOf("/")
    visitModule(entry.module.slice(0, slash), entry.module.slice(slash + 1), symbol)
  }
  return { undocumented, exports, withExample, examples: [...examples.values()] }
}

// ---------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------

/** Writes each example as a module of its own; returns the files, in the examples' order. */
const writeExamples = (folder: string, examples: ReadonlyArray<Example>): ReadonlyArray<string> => {
  mkdirSync(folder, { recursive: true })
  // The examples are ES modules, as files in examples/ are.
  writeFileSync(join(folder, "package.json"), '{ "type": "module" }\n')
  return examples.map((example, index) => {
    const file = join(folder, `${example.owner.replace(/[^\w]+/g, "_")}_${index}.ts`)
    writeFileSync(file, example.code)
    return file
  })
}

/** One message per failing example: the export, the example's line in its source file, the diagnostic. */
const exampleFailures = (
  program: ts.Program,
  examples: ReadonlyArray<Example>,
  files: ReadonlyArray<string>
): ReadonlyArray<string> => [
  ...program
    .getOptionsDiagnostics()
    .map((d) => `compiler options: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`),
  ...program.getGlobalDiagnostics().map((d) => `global: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`),
  ...examples.flatMap((example, index) => {
    const sourceFile = program.getSourceFile(files[index] ?? "")
    if (sourceFile === undefined) return [`${example.owner}: its example was not compiled`]
    return [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)].map(
      (diagnostic) => {
        const line =
          diagnostic.start === undefined ? 0 : sourceFile.getLineAndCharacterOfPosition(diagnostic.start).line
        const at = `${relative(root, example.file)}:${example.line + line}`
        return `${example.owner} @example (${at}): TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`
      }
    )
  })
]

// ---------------------------------------------------------------------------
// docs/getting-started.md
// ---------------------------------------------------------------------------

/**
 * The exports a document names as `Module.member`, in its code blocks or
 * its prose (snippets are copies of example regions, docs.test.ts checks,
 * so the document's text covers the examples it quotes).
 */
const namedExports = (text: string, exports: ReadonlySet<string>): ReadonlyArray<string> => {
  const byModuleMember = new Map<string, Array<string>>()
  for (const name of exports) {
    const moduleMember = name.slice(name.indexOf("/") + 1)
    byModuleMember.set(moduleMember, [...(byModuleMember.get(moduleMember) ?? []), name])
  }
  const named = new Set<string>()
  for (const [, module, member] of text.matchAll(/(?<![\w$]|[\w)\]]\.)([A-Z]\w*)\.(\w+)/g)) {
    for (const name of byModuleMember.get(`${module}.${member}`) ?? []) named.add(name)
  }
  return [...named].sort()
}

/** What the getting-started check reports: exports without an example, and pending entries to drop. */
const exampleGaps = (
  required: ReadonlyArray<string>,
  withExample: ReadonlySet<string>,
  pending: ReadonlyArray<string>
) => ({
  missing: required.filter((name) => !withExample.has(name) && !pending.includes(name)),
  done: pending.filter((name) => withExample.has(name)),
  stale: pending.filter((name) => !required.includes(name))
})

// ---------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------

const options = compilerOptions()
const exampleFolders: Array<string> = []
const host = makeHost(options, () => exampleFolders)
const scratch = mkdtempSync(join(tmpdir(), "tessera-doc-examples-"))

/** Inspects the entry points' exports, then type-checks their examples in one program. */
const check = (entries: ReadonlyArray<Entry>, name: string) => {
  const rootNames = entries.map((entry) => entry.file)
  const apiProgram = ts.createProgram({ rootNames, options, host })
  const api = inspectApi(apiProgram, entries)
  const folder = join(scratch, name)
  exampleFolders.push(folder)
  const files = writeExamples(folder, api.examples)
  const program = ts.createProgram({ rootNames: [...rootNames, ...files], options, host, oldProgram: apiProgram })
  return { api, failures: exampleFailures(program, api.examples, files) }
}

afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const listed = (items: ReadonlyArray<string>) => items.map((item) => `\n  ${item}`).join("")

describe("public API doc comments", () => {
  let workspace: ReturnType<typeof check>
  beforeAll(() => {
    workspace = check(workspaceEntries(), "workspace")
  })

  it("every export of every published entry point has a doc comment", () => {
    const offenders = workspace.api.undocumented
      .filter(({ name }) => !pendingDocs.includes(name))
      .map(({ name, at }) => `${name} (${at})`)
    assert.deepStrictEqual(offenders, [], `exports without a doc comment:${listed(offenders)}`)
    const undocumented = new Set(workspace.api.undocumented.map(({ name }) => name))
    const done = pendingDocs.filter((name) => !undocumented.has(name))
    assert.deepStrictEqual(done, [], `documented now, remove them from pendingDocs:${listed(done)}`)
  })

  it("every @example type-checks under the strict flags, importing the packages by their public names", () => {
    assert.isAbove(workspace.api.examples.length, 0)
    assert.deepStrictEqual(workspace.failures, [], `examples that do not compile:${listed(workspace.failures)}`)
  })

  it("every export docs/getting-started.md names has an @example", () => {
    const document = readFileSync(join(root, "docs", "getting-started.md"), "utf8")
    const required = namedExports(document, workspace.api.exports)
    const { missing, done, stale } = exampleGaps(required, workspace.api.withExample, pendingExamples)
    assert.deepStrictEqual(
      missing,
      [],
      `exports named in docs/getting-started.md without an @example:${listed(missing)}`
    )
    assert.deepStrictEqual(done, [], `these have an @example now, remove them from pendingExamples:${listed(done)}`)
    assert.deepStrictEqual(
      stale,
      [],
      `not named in docs/getting-started.md, remove them from pendingExamples:${listed(stale)}`
    )
  })
})

/**
 * Negative controls: a package written into a temporary folder, with an
 * undocumented export, a doc comment that only has tags, and an example with
 * a type error, beside the forms that count as documented.
 */
const fixtureModule = `/**
 * A module of the fixture package.
 *
 * @since 0.1.0
 */

/**
 * A documented export whose example compiles.
 *
 * @example
 * \`\`\`ts
 * import { Ids } from "@tessera/core"
 * import { Schema } from "effect"
 *
 * export const agent: Ids.AgentId = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 * \`\`\`
 *
 * @since 0.1.0
 */
export const documented = 1

export const undocumented = 2

/**
 * @since 0.1.0
 */
export const onlyTags = 3

/**
 * A schema-like const; its \`typeof Id.Type\` twin needs no doc of its own.
 *
 * @since 0.1.0
 */
export const Id = { Type: "" as string }
export type Id = typeof Id.Type

export { helper } from "./internal/helper.ts"

/** Re-exported undocumented, documented here. */
export { bare } from "./internal/helper.ts"

/**
 * A const whose interface has no doc of its own.
 *
 * @since 0.1.0
 */
export const Widget = { size: 1 }
export interface Widget {
  readonly size: number
}

/**
 * Overloads share this doc comment.
 *
 * @since 0.1.0
 */
export function overloaded(value: string): string
export function overloaded(value: number): number
export function overloaded(value: string | number): string | number {
  return value
}

/**
 * A documented export whose example does not compile.
 *
 * @example
 * \`\`\`ts
 * import { Ids } from "@tessera/core"
 * import { Schema } from "effect"
 *
 * export const agent: number = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 * \`\`\`
 *
 * @since 0.1.0
 */
export const broken = 4
`

describe("public API doc comments: negative controls", () => {
  let fixture: ReturnType<typeof check>
  let source: string
  beforeAll(() => {
    const folder = join(scratch, "packages", "fixture")
    mkdirSync(join(folder, "src", "internal"), { recursive: true })
    writeFileSync(
      join(folder, "package.json"),
      JSON.stringify({ exports: { ".": "./src/index.ts", "./*": "./src/*.ts", "./internal/*": null } })
    )
    writeFileSync(join(folder, "src", "index.ts"), '/**\n * @since 0.1.0\n */\nexport * as Thing from "./Thing.ts"\n')
    writeFileSync(
      join(folder, "src", "internal", "helper.ts"),
      "/** A documented helper. */\nexport const helper = 5\nexport const bare = 6\nexport const hidden = 7\n"
    )
    // An entry point the index does not re-export ("./*" in `exports`) is walked too.
    writeFileSync(join(folder, "src", "Extra.ts"), "export const loose = 8\n")
    source = join(folder, "src", "Thing.ts")
    writeFileSync(source, fixtureModule)
    fixture = check(entryPoints(folder), "fixture-examples")
  })
  const lineOf = (text: string) => fixtureModule.split("\n").findIndex((line) => line.includes(text)) + 1
  const fixturePath = () => relative(root, source)
  const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

  it("reports an export without a doc comment, one whose doc comment has only tags, and an undocumented twin", () => {
    assert.deepStrictEqual(fixture.api.undocumented.map(({ name, at }) => `${name} (${at})`).sort(), [
      `fixture/Extra.loose (${relative(root, join(source, "..", "Extra.ts"))}:1)`,
      `fixture/Thing.Widget (${fixturePath()}:${lineOf("export interface Widget")})`,
      `fixture/Thing.onlyTags (${fixturePath()}:${lineOf("export const onlyTags")})`,
      `fixture/Thing.undocumented (${fixturePath()}:${lineOf("export const undocumented")})`
    ])
    // Counted as documented: the schema twin, both re-exports, the overloads; `internal/` is no entry point.
    for (const name of ["Id", "helper", "bare", "overloaded"])
      assert.isTrue(fixture.api.exports.has(`fixture/Thing.${name}`))
    assert.isFalse([...fixture.api.exports].some((name) => name.includes("hidden")))
  })

  it("reports an example with a type error, naming the export and the example's line", () => {
    assert.deepStrictEqual(
      fixture.api.examples.map(({ owner }) => owner),
      ["fixture/Thing.documented", "fixture/Thing.broken"]
    )
    assert.strictEqual(fixture.failures.length, 1, listed(fixture.failures))
    assert.match(
      fixture.failures[0] ?? "",
      new RegExp(
        `^fixture/Thing\\.broken @example \\(${escapeRegExp(`${fixturePath()}:${lineOf("export const agent: number")}`)}\\): TS2322 `
      )
    )
  })

  it("requires an example of every export a document names, and keeps the pending list shrinking", () => {
    const named = namedExports(
      "Use `Thing.documented`, then `...Thing.broken` and `Thing.undocumented(x)`; `x.Thing.onlyTags` is a member, `Thing.absent` no export.",
      fixture.api.exports
    )
    assert.deepStrictEqual(named, ["fixture/Thing.broken", "fixture/Thing.documented", "fixture/Thing.undocumented"])
    assert.deepStrictEqual(exampleGaps(named, fixture.api.withExample, []), {
      missing: ["fixture/Thing.undocumented"],
      done: [],
      stale: []
    })
    assert.deepStrictEqual(
      exampleGaps(named, fixture.api.withExample, [
        "fixture/Thing.undocumented",
        "fixture/Thing.broken",
        "fixture/Thing.gone"
      ]),
      { missing: [], done: ["fixture/Thing.broken"], stale: ["fixture/Thing.gone"] }
    )
  })
})
