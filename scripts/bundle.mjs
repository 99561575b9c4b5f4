#!/usr/bin/env node
// Replaces the per-module JavaScript `tsc -b` emits into a package's `dist/`
// with a bundle, so that an installed package loads two files for an import
// instead of one per source module (cold start, issue 36):
// - `dist/<entry>.js` for every module `publishConfig.exports` lets a
//   consumer import (".", "./testing", each public module behind "./*"),
//   re-exporting that module's bindings;
// - `dist/internal/chunks/<package>-<hash>.js`, one chunk holding every
//   module of the package (under `internal/`, which the exports block).
//
//   node scripts/bundle.mjs [package ...]   (folder names under packages/; default: every published package)
//
// Run it after `tsc -b`: the declarations (`.d.ts`, their maps) and the bin
// stay as tsc emits them; every other `.js` and `.js.map` in `dist/` is
// removed and written anew from `src/`, so the result depends on the sources
// only, never on what an earlier run left (tsc -b does not re-emit what was
// removed while its inputs are unchanged, and need not).
//
// What the bundle keeps from the per-module layout:
// - identity: all entries are built together and every module is in the one
//   chunk, so `@tessera/runtime` and `@tessera/runtime/Compaction` share one
//   copy of each module and its state (registries, service keys); only the
//   namespace objects differ (an index's `Compaction` is built by the bundler);
// - code: no tree shaking, no minification, original `name`s kept; the
//   TypeScript is stripped under the package's own tsconfig (erasable syntax
//   only), at tsc's target;
// - dependencies: everything that is not a relative import (effect, other
//   `@tessera/*` packages, peers, `node:*`) stays an import;
// - source maps: `dist/**/*.js.map`, pointing at the shipped `src/`.
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const packagesFolder = join(root, "packages")

// rolldown is the bench's dependency (bench/package.json pins it); the root
// manifest does not list it, so it is resolved from there.
const { rolldown } = await import(
  pathToFileURL(createRequire(join(root, "bench", "package.json")).resolve("rolldown")).href
)

/** tsc's target (tsconfig.base.json), so the bundle lowers exactly what tsc's output lowered: nothing newer. */
const target = JSON.parse(readFileSync(join(root, "tsconfig.base.json"), "utf8")).compilerOptions.target.toLowerCase()

/** Folder (under `dist/`) of the shared chunks: under `internal/`, which every package's exports block. */
const chunkFolder = "internal/chunks"

const readManifest = (folder) => JSON.parse(readFileSync(join(folder, "package.json"), "utf8"))

/** Every `.ts` file under `folder`, as paths relative to it with `/` separators. */
const typeScriptFiles = (folder, prefix = "") =>
  readdirSync(join(folder, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`
    if (entry.isDirectory()) return typeScriptFiles(folder, path)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : []
  })

/** The JavaScript target of an export (its `import` condition, or the plain string). */
const importTarget = (value) => {
  if (typeof value === "string") return value
  if (value !== null && typeof value === "object") return value.import ?? value.default
  return undefined
}

/**
 * The entry points of a package: name (the path under `dist/` without `.js`)
 * to source file, one for each module `publishConfig.exports` lets a consumer
 * import. A `*` pattern stands for every source file it can reach that no
 * `null` pattern blocks.
 */
export const entryPoints = (folder) => {
  const exports = readManifest(folder).publishConfig?.exports
  if (exports === undefined) throw new Error(`${folder}: no publishConfig.exports`)
  const blocked = Object.entries(exports)
    .filter(([, value]) => value === null)
    .map(([key]) => key.replace(/^\.\//, "").replace(/\*$/, ""))
  const sources = typeScriptFiles(join(folder, "src")).map((file) => file.slice(0, -".ts".length))
  const entries = {}
  for (const [key, value] of Object.entries(exports)) {
    const target = importTarget(value)
    if (target === undefined) continue
    const match = /^\.\/dist\/(.*)\.js$/.exec(target)
    if (match === null) throw new Error(`${folder}: export ${key} does not point at dist/*.js: ${target}`)
    const pattern = match[1]
    const star = pattern.indexOf("*")
    const names =
      star === -1
        ? [pattern]
        : sources.filter(
            (name) =>
              name.startsWith(pattern.slice(0, star)) &&
              name.endsWith(pattern.slice(star + 1)) &&
              !blocked.some((prefix) => name.startsWith(prefix))
          )
    for (const name of names) {
      const source = join(folder, "src", `${name}.ts`)
      if (!existsSync(source)) throw new Error(`${folder}: export ${key} has no source ${relative(root, source)}`)
      entries[name] = source
    }
  }
  return entries
}

/** The published packages: folders under packages/ whose manifest is not private and has publishConfig.exports. */
export const publishedPackages = () =>
  readdirSync(packagesFolder)
    .filter((name) => existsSync(join(packagesFolder, name, "package.json")))
    .filter((name) => {
      const manifest = readManifest(join(packagesFolder, name))
      return manifest.private !== true && manifest.publishConfig?.exports !== undefined
    })
    .sort()

/** Every `.js` and `.js.map` under `dist/` (relative, `/` separators) except the bin's (built by its own tsconfig). */
const javaScriptFiles = (dist, prefix = "") => {
  if (!existsSync(join(dist, prefix))) return []
  return readdirSync(join(dist, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`
    if (entry.isDirectory()) return path === "bin" ? [] : javaScriptFiles(dist, path)
    return entry.name.endsWith(".js") || entry.name.endsWith(".js.map") ? [path] : []
  })
}

/** Bundles one package (a folder name under packages/) into its `dist/`; returns the files written. */
export const bundlePackage = async (name) => {
  const folder = join(packagesFolder, name)
  const source = join(folder, "src")
  const dist = join(folder, "dist")
  const input = entryPoints(folder)
  if (!existsSync(join(dist, "index.d.ts")))
    throw new Error(`${relative(root, dist)} has no index.d.ts: run tsc -b first`)
  const build = await rolldown({
    input,
    cwd: folder,
    platform: "neutral",
    tsconfig: join(folder, "tsconfig.src.json"),
    transform: { target },
    // Anything but the package's own files (relative imports) stays outside, resolved where the package is installed.
    external: (id) => !id.startsWith(".") && !isAbsolute(id),
    // Tree shaking would drop modules imported for their effects alone, as `sideEffects: false` invites it to.
    treeshake: false,
    preserveEntrySignatures: "strict",
    logLevel: "warn",
    plugins: [
      {
        name: "tessera-own-sources-only",
        // A relative import that leaves src/ (another package's sources) would copy that package's modules in.
        resolveId: {
          order: "post",
          handler(id, importer) {
            if (importer === undefined) return null
            const resolved = join(dirname(importer), id)
            if (id.startsWith(".") && relative(source, resolved).startsWith(`..${sep}`))
              throw new Error(`${relative(root, importer)} imports ${id}, outside ${relative(root, source)}`)
            return null
          }
        }
      }
    ]
  })
  let written
  try {
    for (const file of javaScriptFiles(dist)) rmSync(join(dist, file))
    const output = await build.write({
      dir: dist,
      format: "esm",
      entryFileNames: "[name].js",
      chunkFileNames: `${chunkFolder}/[name]-[hash].js`,
      sourcemap: true,
      // The maps name the shipped src/ files; their text need not be copied into every map.
      sourcemapExcludeSources: true,
      minify: false,
      // One chunk holds every module of the package (the index loads nearly all of them anyway), and each entry
      // is a file re-exporting its module's bindings from it: one copy of each module, two files per import.
      codeSplitting: { groups: [{ name, test: () => true }] },
      keepNames: true
    })
    written = output.output.map((file) => file.fileName)
    // An entry that only re-exports from the chunk has no code to map, and rolldown writes no map for it; its map
    // still names the source module it stands for, as tsc's did.
    for (const file of output.output) {
      if (file.type !== "chunk" || !file.isEntry || written.includes(`${file.fileName}.map`)) continue
      const js = join(dist, file.fileName)
      const map = `${file.fileName}.map`
      const sourcePath = relative(dirname(js), input[file.name]).split(sep).join("/")
      writeFileSync(
        join(dist, map),
        `${JSON.stringify({ version: 3, file: basename(js), sources: [sourcePath], names: [], mappings: "" })}\n`
      )
      appendFileSync(js, `\n//# sourceMappingURL=${basename(map)}\n`)
      written.push(map)
    }
  } finally {
    await build.close()
  }
  for (const entry of Object.keys(input)) {
    if (!written.includes(`${entry}.js`)) throw new Error(`${name}: entry ${entry} was not written`)
    if (!existsSync(join(dist, `${entry}.d.ts`))) throw new Error(`${name}: entry ${entry} has no declarations`)
  }
  const left = javaScriptFiles(dist).filter((file) => !written.includes(file))
  if (left.length > 0) throw new Error(`${name}: dist/ holds JavaScript the bundle did not write: ${left.join(", ")}`)
  return written
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const requested = process.argv.slice(2)
  const names = requested.length > 0 ? requested : publishedPackages()
  for (const name of names) {
    const written = await bundlePackage(name)
    const entries = written.filter((file) => file.endsWith(".js") && !file.startsWith(`${chunkFolder}/`)).length
    const chunks = written.filter((file) => file.endsWith(".js") && file.startsWith(`${chunkFolder}/`)).length
    process.stdout.write(`[bundle] @tessera/${name}: ${entries} entries, ${chunks} shared chunks\n`)
  }
}
