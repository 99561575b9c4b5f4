/**
 * The API reference (`npm run docs:api`, typedoc.json): it covers every
 * published package and every published subpath the package's index does
 * not re-export (`@tessera/runtime/testing`), and no exported function of
 * any package renders a parameter, type parameter or return type as a wall
 * of inlined union: the entries a harness author calls show their errors
 * and requirements under names, and a journal entry is `Entry`.
 *
 * The reference is converted here as `docs:api` converts it (every package,
 * the same options; about 50 s on a loaded two-core machine), plus a small
 * conversion of `internal/turnEntries.ts` for the negative controls. A
 * package reads the others' types from their declarations (`dist`, which
 * `tsc -b` writes and `npm test` runs first).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import {
  Application,
  Converter,
  DeclarationReflection,
  type ProjectReflection,
  ReferenceReflection,
  type Reflection,
  ReflectionKind,
  ReflectionType
} from "typedoc"

const root = fileURLToPath(new URL("../..", import.meta.url))
const configFile = join(root, "typedoc.json")

interface TypedocConfig {
  readonly entryPoints: ReadonlyArray<string>
  readonly packageOptions: { readonly entryPoints: ReadonlyArray<string>; readonly tsconfig: string }
  readonly out: string
}

const config = JSON.parse(readFileSync(configFile, "utf8")) as TypedocConfig

/** The longest type the reference may render for a function: a signature, not a page of union. */
const maxRenderedType = 400

interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly publishConfig?: { readonly exports?: Readonly<Record<string, { readonly types: string } | null>> }
}

const manifestOf = (folder: string): Manifest =>
  JSON.parse(readFileSync(join(root, "packages", folder, "package.json"), "utf8")) as Manifest

const published = readdirSync(join(root, "packages")).filter(
  (folder) => existsSync(join(root, "packages", folder, "package.json")) && manifestOf(folder).private !== true
)

/**
 * The entry points `docs:api` converts for a package: a `typedoc.json` in
 * the package's folder, read after `packageOptions`, replaces them.
 */
const entryPointsOf = (folder: string): ReadonlyArray<string> => {
  const own = join(root, "packages", folder, "typedoc.json")
  if (!existsSync(own)) return config.packageOptions.entryPoints
  const options = JSON.parse(readFileSync(own, "utf8")) as { readonly entryPoints?: ReadonlyArray<string> }
  return options.entryPoints ?? config.packageOptions.entryPoints
}

const sourceFiles = (folder: string, under = "src"): ReadonlyArray<string> =>
  readdirSync(join(root, "packages", folder, under), { withFileTypes: true }).flatMap((item) =>
    item.isDirectory()
      ? sourceFiles(folder, join(under, item.name))
      : item.name.endsWith(".ts") && !item.name.endsWith(".d.ts")
        ? [join(under, item.name)]
        : []
  )

/**
 * The source file a published subpath resolves to (`publishConfig.exports`,
 * as Node resolves it: an exact key, else the pattern with the longest
 * prefix; `null` withholds), `undefined` when it is not published.
 */
const publishedSource = (manifest: Manifest, subpath: string): string | undefined => {
  const exports = manifest.publishConfig?.exports ?? {}
  const exact = exports[subpath]
  const [target, star] =
    exact !== undefined
      ? [exact, ""]
      : (Object.entries(exports)
          .filter(([key]) => {
            const [prefix = "", suffix = ""] = key.split("*")
            return key.includes("*") && subpath.startsWith(prefix) && subpath.endsWith(suffix)
          })
          .sort(([a], [b]) => b.indexOf("*") - a.indexOf("*"))
          .map(([key, value]) => {
            const [prefix = "", suffix = ""] = key.split("*")
            return [value, subpath.slice(prefix.length, subpath.length - suffix.length)] as const
          })[0] ?? [null, ""])
  if (target === null) return undefined
  return target.types
    .replace("*", star)
    .replace(/^\.\/dist\//, "src/")
    .replace(/\.d\.ts$/, ".ts")
}

/**
 * A package's published subpaths that its index does not re-export, with
 * their source files: a reader who imports one finds it in the reference
 * only if it is an entry point of its own.
 */
const subpathsBesideIndex = (folder: string): ReadonlyArray<readonly [string, string]> => {
  const manifest = manifestOf(folder)
  const index = publishedSource(manifest, ".")
  const indexSource = index === undefined ? "" : readFileSync(join(root, "packages", folder, index), "utf8")
  const reexported = new Set(Array.from(indexSource.matchAll(/from "\.\/([^"]+)"/g), ([, file]) => `src/${file}`))
  const candidates = [
    ...Object.keys(manifest.publishConfig?.exports ?? {}).filter((key) => !key.includes("*")),
    ...sourceFiles(folder).map((file) => `./${relative("src", file).replace(/\.ts$/, "")}`)
  ]
  const subpathOf = new Map<string, string>()
  for (const subpath of candidates) {
    const source = publishedSource(manifest, subpath)
    if (source === undefined || subpathOf.has(source) || !existsSync(join(root, "packages", folder, source))) continue
    subpathOf.set(source, `${manifest.name}${subpath.slice(1)}`)
  }
  return Array.from(subpathOf)
    .filter(([source]) => source !== index && !reexported.has(source))
    .map(([source, subpath]) => [subpath, source] as const)
}

const uncoveredSubpaths = (entryPoints: (folder: string) => ReadonlyArray<string>) =>
  published.flatMap((folder) =>
    subpathsBesideIndex(folder)
      .filter(([, file]) => !entryPoints(folder).includes(file))
      .map(([subpath]) => subpath)
  )

/** The entries a harness author calls, by their path in `@tessera/runtime`'s index. */
const entries: ReadonlyArray<readonly [string, string]> = [
  ["TaskExecution", "runTurn"],
  ["TaskExecution", "streamTurn"],
  ["TaskExecution", "resumeTurn"],
  ["TaskExecution", "resume"],
  ["TaskExecution", "summarize"],
  ["TaskExecution", "runSummaryFileTurn"],
  ["TaskExecution", "foreignLoop"],
  ["EntryGate", "bind"],
  ["EntryGate", "verify"],
  ["JournalEntry", "totalUsage"],
  ["Tool", "registry"]
]

/**
 * Rendered types of exported functions that are known to exceed the bound,
 * each asserted to still do so (remove an entry when it is fixed): the front
 * door's handle (`TaskExecution.frontDoor`, `BrowserTessera.open`) and
 * `Transcript.rewriteRecord`'s record are inferred object types. (The model's
 * parts were named the way `JournalEntry.Entry` is: `Exclude<typeof Part.Type,
 * never>` for the union, an interface for each struct.)
 */
const knownLong: ReadonlyArray<string> = [
  "@tessera/browser.BrowserTessera.open()",
  "@tessera/runtime.TaskExecution.frontDoor()",
  "@tessera/runtime.Transcript.rewriteRecord()"
]

let converting: Promise<ProjectReflection> | undefined

/** The reference exactly as `docs:api` converts it (type errors are `tsc -b`'s to report). */
const reference = (): Promise<ProjectReflection> => {
  converting ??= (async () => {
    const app = await Application.bootstrapWithPlugins({
      options: configFile,
      skipErrorChecking: true,
      logLevel: "Error"
    })
    const project = await app.convert()
    if (project === undefined) throw new Error("typedoc could not convert the packages")
    return project
  })()
  return converting
}

interface Controls {
  readonly project: ProjectReflection
  /** `JournalEntry.Entry` as the reference renders the named alias, and the schema's anonymous `typeof Entry.Type`. */
  readonly entry: { readonly named: string; readonly anonymous: string }
}

let convertingControls: Promise<Controls> | undefined

/**
 * `internal/turnEntries.ts` of `@tessera/runtime`, with the options of
 * `docs:api`: its `inferred.runTurn` is the entry as its body infers it,
 * without the named aliases. While its program is open, the journal entry
 * union is rendered twice: by its name, and as the schema's type that
 * `JournalEntry.Entry` was before it was named.
 */
const controls = (): Promise<Controls> => {
  convertingControls ??= (async () => {
    const app = await Application.bootstrapWithPlugins({
      options: configFile,
      entryPointStrategy: "resolve",
      entryPoints: [join(root, "packages/runtime/src/internal/turnEntries.ts")],
      tsconfig: join(root, "packages/runtime", config.packageOptions.tsconfig),
      skipErrorChecking: true,
      logLevel: "Error"
    })
    let entry: Controls["entry"] | undefined
    app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context) => {
      if (entry !== undefined) return
      const checker = context.checker
      const source = context.program.getSourceFile(join(root, "packages/runtime/src/JournalEntry.ts"))
      const module = source === undefined ? undefined : checker.getSymbolAtLocation(source)
      const symbol = module === undefined ? undefined : checker.tryGetMemberInModuleExports("Entry", module)
      const schemaType =
        symbol === undefined ? undefined : checker.getPropertyOfType(checker.getTypeOfSymbol(symbol), "Type")
      if (symbol === undefined || schemaType === undefined) throw new Error("JournalEntry.Entry is not in the program")
      entry = {
        named: context.converter.convertType(context, checker.getDeclaredTypeOfSymbol(symbol)).toString(),
        anonymous: context.converter.convertType(context, checker.getTypeOfSymbol(schemaType)).toString()
      }
    })
    const project = await app.convert()
    if (project === undefined || entry === undefined) throw new Error("typedoc could not convert the controls")
    return { project, entry }
  })()
  return convertingControls
}

const declaration = (project: ProjectReflection, path: ReadonlyArray<string>): DeclarationReflection => {
  const found = project.getChildByName([...path])
  const target = found instanceof ReferenceReflection ? found.getTargetReflectionDeep() : found
  if (!(target instanceof DeclarationReflection)) throw new Error(`${path.join(".")} is not in the reference`)
  return target
}

/** Every type the reference renders for a function: each signature's parameters, type parameters and return. */
const renderedTypes = (name: string, reflection: DeclarationReflection): ReadonlyArray<readonly [string, string]> => {
  const signatures = reflection.signatures ?? []
  if (signatures.length === 0) return [[name, reflection.type?.toString() ?? ""]]
  return signatures.flatMap((signature) => [
    [`${name}()`, signature.type?.toString() ?? ""] as const,
    ...(signature.parameters ?? []).map(
      (parameter) => [`${name}(${parameter.name})`, parameter.type?.toString() ?? ""] as const
    ),
    ...(signature.typeParameters ?? []).flatMap((parameter) =>
      [parameter.type, parameter.default].map((type) => [`${name}<${parameter.name}>`, type?.toString() ?? ""] as const)
    )
  ])
}

const tooLong = (types: ReadonlyArray<readonly [string, string]>): ReadonlyArray<string> =>
  Array.from(new Set(types.filter(([, text]) => text.length > maxRenderedType).map(([where]) => where))).sort()

/**
 * A function's name as its reader imports it: `@tessera/runtime.History.make`,
 * `@tessera/runtime/testing.ScriptedModel.make` (a package with several entry
 * points renders each as a module of its own, the index among them).
 */
const importedName = (reflection: DeclarationReflection): string => {
  const path: Array<Reflection> = []
  for (let at: Reflection | undefined = reflection; at !== undefined && !at.isProject(); at = at.parent)
    path.unshift(at)
  const [owner, ...rest] = path
  const entry = rest[0]?.kindOf(ReflectionKind.Module) === true ? rest.shift() : undefined
  const subpath = entry === undefined || entry.name === "index" ? "" : `/${entry.name}`
  return `${owner?.name ?? ""}${subpath}.${rest.map((at) => at.name).join(".")}`
}

/** Every exported function of every package, with every type the reference renders for it. */
const everyFunction = (project: ProjectReflection): ReadonlyArray<readonly [string, string]> =>
  project
    .getReflectionsByKind(ReflectionKind.Function)
    .filter((reflection) => reflection instanceof DeclarationReflection)
    .flatMap((reflection) => renderedTypes(importedName(reflection), reflection))

describe("API reference (typedoc.json)", () => {
  it("covers every published package, from its index, into the git-ignored docs/api", () => {
    assert.isAtLeast(published.length, 10)
    const uncovered = (entryPoints: ReadonlyArray<string>) =>
      published.map((folder) => `packages/${folder}`).filter((entry) => !entryPoints.includes(entry))
    assert.deepStrictEqual(uncovered(config.entryPoints), [], "typedoc.json leaves out a published package")
    assert.strictEqual(config.entryPoints.length, published.length, "typedoc.json lists only published packages")
    // Negative control: a configuration without one package is caught.
    assert.deepStrictEqual(uncovered(config.entryPoints.filter((entry) => entry !== "packages/mcp")), ["packages/mcp"])
    for (const folder of published) {
      for (const file of [...entryPointsOf(folder), config.packageOptions.tsconfig]) {
        assert.isTrue(existsSync(join(root, "packages", folder, file)), `packages/${folder}/${file} is missing`)
      }
      assert.include(entryPointsOf(folder), "src/index.ts", `packages/${folder}: the index is an entry point`)
    }
    assert.strictEqual(config.out, "docs/api")
    assert.include(
      readFileSync(join(root, ".gitignore"), "utf8").split("\n"),
      "docs/api/",
      "the site is never committed"
    )
  })

  it("covers every published subpath that the package's index does not re-export", () => {
    assert.deepStrictEqual(uncoveredSubpaths(entryPointsOf), [], "a published subpath is not an entry point")
    // Negative control: with only the shared `packageOptions` (each package's index), the testing subpath is caught.
    assert.deepStrictEqual(
      uncoveredSubpaths(() => config.packageOptions.entryPoints),
      ["@tessera/runtime/testing"]
    )
    // The resolution the check rests on: withheld and unpublished files are not subpaths; re-exported ones are covered.
    const runtime = manifestOf("runtime")
    assert.strictEqual(publishedSource(runtime, "./testing"), "src/testing.ts")
    assert.strictEqual(publishedSource(runtime, "./Journal"), "src/Journal.ts")
    assert.isUndefined(publishedSource(runtime, "./internal/scriptedModel"))
    assert.deepStrictEqual(subpathsBesideIndex("runtime"), [["@tessera/runtime/testing", "src/testing.ts"]])
  })

  it("renders every published subpath beside the index, and the harness entries with named error and requirement types", {
    timeout: 400_000
  }, async () => {
    const project = await reference()
    for (const folder of published) {
      for (const [subpath, file] of subpathsBesideIndex(folder)) {
        const module = declaration(project, [manifestOf(folder).name, relative("src", file).replace(/\.ts$/, "")])
        assert.isNotEmpty(module.children ?? [], `${subpath} renders its exports`)
      }
    }
    const make = declaration(project, ["@tessera/runtime", "testing", "ScriptedModel", "make"])
    assert.isTrue(
      (make.signatures?.length ?? 0) > 0 && make.signatures?.[0]?.comment !== undefined,
      "@tessera/runtime/testing renders ScriptedModel.make, documented"
    )
    const runtime = (path: ReadonlyArray<string>) => declaration(project, ["@tessera/runtime", "index", ...path])
    const runTurn = runtime(["TaskExecution", "runTurn"]).signatures?.[0]
    assert.strictEqual(
      runTurn?.type?.toString(),
      "Effect<TurnOutcome, TurnError<E>, TurnRequirements<R>>",
      "runTurn's rendered return names its error and requirement aliases"
    )
    assert.isTrue(
      runTurn?.comment?.blockTags.some((tag) => tag.tag === "@example") === true,
      "runTurn's @example is rendered"
    )
    for (const alias of ["TurnError", "TurnRequirements"]) {
      assert.isTrue(runtime(["TaskExecution", alias]).comment !== undefined, `TaskExecution.${alias} is documented`)
    }
    for (const path of entries) {
      const name = path.join(".")
      const reflection = runtime(path)
      assert.isTrue((reflection.signatures?.length ?? 0) > 0, `${name} renders as a function with its signature`)
      for (const [where, text] of renderedTypes(name, reflection)) {
        assert.notInclude(text, "=> Effect", `${where} renders an erased return type`)
        assert.isAtMost(text.length, maxRenderedType, `${where} renders within the bound`)
      }
    }
    assert.strictEqual(
      runtime(["JournalEntry", "totalUsage"]).signatures?.[0]?.parameters?.[0]?.type?.toString(),
      "Iterable<Entry>",
      "a journal entry parameter renders by its name"
    )
  })

  it("renders no parameter, type parameter or return of any exported function longer than the bound", {
    timeout: 400_000
  }, async () => {
    const types = everyFunction(await reference())
    assert.isAtLeast(
      new Set(types.map(([where]) => where.replace(/[(<].*$/, ""))).size,
      150,
      "every package's functions"
    )
    assert.deepStrictEqual(
      tooLong(types),
      [...knownLong].sort(),
      `rendered types longer than ${maxRenderedType} characters`
    )
  })

  it("negative control: the same entry typed by inference renders its inlined union and fails the bound", {
    timeout: 400_000
  }, async () => {
    const { project } = await controls()
    const holder = project.getChildByName(["inferred"])
    const members = holder instanceof DeclarationReflection ? holder.type : undefined
    const inferred = members instanceof ReflectionType ? members.declaration.getChildByName("runTurn") : undefined
    assert.instanceOf(inferred, DeclarationReflection, "the control finds the inferred entry")
    const types = renderedTypes("inferred.runTurn", inferred as DeclarationReflection)
    assert.isTrue(
      types.every(([, text]) => !text.includes("TurnError")),
      "the inferred entry does not name the alias"
    )
    assert.isNotEmpty(tooLong(types), "the inferred entry's rendered type exceeds the bound")
  })

  it("negative control: the journal entry as the schema's anonymous union is inlined and fails the bound", {
    timeout: 400_000
  }, async () => {
    const { entry } = await controls()
    assert.strictEqual(entry.named, "Entry")
    assert.include(entry.anonymous, '_tag: "TurnOpened"', "the anonymous union is spelled out")
    assert.deepStrictEqual(tooLong([["Iterable<typeof Entry.Type>", `Iterable<${entry.anonymous}>`]]), [
      "Iterable<typeof Entry.Type>"
    ])
    assert.deepStrictEqual(tooLong([["Iterable<Entry>", `Iterable<${entry.named}>`]]), [])
  })
})
