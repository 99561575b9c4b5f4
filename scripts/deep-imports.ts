/**
 * Rewrites the packages' imports of Effect's barrels (`effect`, `effect/ai`,
 * `effect/cluster`, `effect/reactivity`, `effect/sql`, `effect/workflow`,
 * `@effect/platform-node`) and of our own packages' indexes (`@tessera/core`,
 * `@tessera/runtime`, ...) into deep imports of the modules they name:
 *
 *     import { Effect, type Scope, pipe } from "effect"
 *
 * becomes
 *
 *     import * as Effect from "effect/Effect"
 *     import { pipe } from "effect/Function"
 *     import type * as Scope from "effect/Scope"
 *
 * Importing a barrel evaluates every module it re-exports (the `effect` index
 * loads 143 modules and their internals), while a turn needs a part of them;
 * see bench/NOTES.md (cold start) for what that costs. Each barrel's
 * `index.js` is read from the installed package, so the mapping is the one of
 * the installed version. Type-only names become `import type` lines, which
 * are erased from the JavaScript.
 *
 * Run from the repository root: `node scripts/deep-imports.ts [folders...]`
 * (default: every `packages/<name>/src`). It then runs `biome check --write`
 * on the files it changed, so the result is formatted and sorted. Running it
 * again changes nothing.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")

/** A barrel: its specifier, where its index lives, and the specifier prefix of its modules. */
interface Barrel {
  readonly specifier: string
  readonly index: string
  readonly deepPrefix: string
}

const requireFromRoot = createRequire(path.join(root, "packages", "node", "package.json"))
const packageFolder = (name: string): string => path.dirname(requireFromRoot.resolve(`${name}/package.json`))

const effectFolder = packageFolder("effect")
const barrels: ReadonlyArray<Barrel> = [
  { specifier: "effect", index: path.join(effectFolder, "dist", "index.js"), deepPrefix: "effect/" },
  ...["ai", "cluster", "reactivity", "sql", "workflow"].map((name) => ({
    specifier: `effect/${name}`,
    index: path.join(effectFolder, "dist", name, "index.js"),
    deepPrefix: `effect/${name}/`
  })),
  {
    specifier: "@effect/platform-node",
    index: path.join(packageFolder("@effect/platform-node"), "dist", "index.js"),
    deepPrefix: "@effect/platform-node/"
  },
  // Our own packages import each other by module too: through another package's index, a host that imports only
  // the modules it uses would still load every module of that package.
  ...fs
    .readdirSync(path.join(root, "packages"))
    .filter((name) => fs.existsSync(path.join(root, "packages", name, "src", "index.ts")))
    .map((name) => ({
      specifier: `@tessera/${name}`,
      index: path.join(root, "packages", name, "src", "index.ts"),
      deepPrefix: `@tessera/${name}/`
    }))
]

/** Where each name a barrel exports comes from: a module it re-exports whole (`* as`) or one it picks names from. */
interface Exported {
  readonly module: string
  readonly namespace: boolean
}

const withoutComments = (source: string): string => source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "")

const exportsOf = (barrel: Barrel): ReadonlyMap<string, Exported> => {
  const source = withoutComments(fs.readFileSync(barrel.index, "utf8"))
  const names = new Map<string, Exported>()
  for (const match of source.matchAll(/export\s*\*\s*as\s+(\w+)\s+from\s*"\.\/([\w/]+)\.[jt]s"/g)) {
    names.set(match[1] as string, { module: match[2] as string, namespace: true })
  }
  for (const match of source.matchAll(/export\s*\{([^}]*)\}\s*from\s*"\.\/([\w/]+)\.[jt]s"/g)) {
    for (const name of (match[1] as string).split(",").map((part) => part.trim())) {
      if (name !== "") names.set(name, { module: match[2] as string, namespace: false })
    }
  }
  if (names.size === 0) throw new Error(`no exports found in ${barrel.index}`)
  return names
}

const exportTables = new Map(barrels.map((barrel) => [barrel.specifier, exportsOf(barrel)]))

/** One name of an import list: `type? imported (as local)?`. */
interface Specifier {
  readonly typeOnly: boolean
  readonly imported: string
  readonly local: string
}

const parseSpecifiers = (list: string): ReadonlyArray<Specifier> =>
  list
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "")
    .map((part) => {
      const match = /^(type\s+)?(\w+)(?:\s+as\s+(\w+))?$/.exec(part)
      if (match === null) throw new Error(`cannot read import specifier "${part}"`)
      return { typeOnly: match[1] !== undefined, imported: match[2] as string, local: match[3] ?? (match[2] as string) }
    })

/** The deep import lines replacing one import declaration of a barrel. */
const deepLines = (barrel: Barrel, declarationTypeOnly: boolean, specifiers: ReadonlyArray<Specifier>): string => {
  const table = exportTables.get(barrel.specifier) as ReadonlyMap<string, Exported>
  const lines: Array<string> = []
  const picked = new Map<string, { values: Array<string>; types: Array<string> }>()
  for (const specifier of specifiers) {
    const exported = table.get(specifier.imported)
    if (exported === undefined) throw new Error(`"${barrel.specifier}" exports no "${specifier.imported}"`)
    const from = `${barrel.deepPrefix}${exported.module}`
    const typeOnly = declarationTypeOnly || specifier.typeOnly
    if (exported.namespace) {
      lines.push(`import ${typeOnly ? "type " : ""}* as ${specifier.local} from "${from}"`)
    } else {
      const group = picked.get(from) ?? { values: [], types: [] }
      const name =
        specifier.local === specifier.imported ? specifier.imported : `${specifier.imported} as ${specifier.local}`
      ;(typeOnly ? group.types : group.values).push(name)
      picked.set(from, group)
    }
  }
  for (const [from, group] of picked) {
    if (group.values.length > 0)
      lines.push(
        `import { ${[...group.values, ...group.types.map((name) => `type ${name}`)].join(", ")} } from "${from}"`
      )
    else lines.push(`import type { ${group.types.join(", ")} } from "${from}"`)
  }
  return lines.join("\n")
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")
const declaration = new RegExp(
  `import\\s+(type\\s+)?\\{([^}]*)\\}\\s*from\\s*"(${barrels.map((barrel) => escaped(barrel.specifier)).join("|")})"`,
  "g"
)

/** The source with every barrel import rewritten (unchanged when there is none). */
export const rewrite = (source: string): string =>
  source.replace(declaration, (_whole, typeKeyword: string | undefined, list: string, specifier: string) =>
    deepLines(
      barrels.find((barrel) => barrel.specifier === specifier) as Barrel,
      typeKeyword !== undefined,
      parseSpecifiers(list)
    )
  )

/** Any import of a barrel the rewrite cannot handle (a namespace import, a re-export): reported, not guessed. */
const leftovers = (source: string): ReadonlyArray<string> => {
  const any = new RegExp(`^.*from\\s*"(${barrels.map((barrel) => escaped(barrel.specifier)).join("|")})".*$`, "gm")
  return [...source.matchAll(any)].map((match) => match[0])
}

const typeScriptFiles = (folder: string): ReadonlyArray<string> =>
  fs
    .readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort()

const main = () => {
  const requested = process.argv.slice(2)
  const folders =
    requested.length > 0
      ? requested.map((folder) => path.resolve(root, folder))
      : fs
          .readdirSync(path.join(root, "packages"))
          .map((name) => path.join(root, "packages", name, "src"))
          .filter((folder) => fs.existsSync(folder))
  const changed: Array<string> = []
  const unhandled: Array<string> = []
  for (const file of folders.flatMap(typeScriptFiles)) {
    const source = fs.readFileSync(file, "utf8")
    const next = rewrite(source)
    if (next !== source) {
      fs.writeFileSync(file, next)
      changed.push(file)
    }
    for (const line of leftovers(next)) unhandled.push(`${path.relative(root, file)}: ${line.trim()}`)
  }
  if (changed.length > 0) {
    const biome = spawnSync(path.join(root, "node_modules", ".bin", "biome"), ["check", "--write", ...changed], {
      cwd: root,
      stdio: "inherit"
    })
    if (biome.status !== 0) process.exitCode = 1
  }
  process.stdout.write(`rewrote ${changed.length} files\n`)
  if (unhandled.length > 0) {
    process.stderr.write(`barrel imports left as they were (rewrite them by hand):\n${unhandled.join("\n")}\n`)
    process.exitCode = 1
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
