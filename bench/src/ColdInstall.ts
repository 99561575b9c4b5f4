/**
 * The packages as an npm user gets them, for the cold-start job: built
 * (`tsc -b`, then `scripts/bundle.mjs`, which replaces tsc's JavaScript with
 * one file per entry point and one shared chunk per package), packed with
 * `pnpm pack` (which applies each package's `publishConfig`: exports point at
 * `dist/*.js`), and installed with plain
 * `npm install` into a fresh folder outside the workspace, together with the
 * peers and the other sides' libraries at the versions `bench/package.json`
 * pins, as the consumer test installs them (`scripts/test/consumer.test.ts`).
 * Every side thus loads from the same kind of `node_modules`: real folders,
 * no links into the workspace's store. Nothing resolves back into the
 * workspace's sources.
 *
 * npm keeps its cache inside the checkout (`node_modules/.cache`, shared
 * with the consumer test) and prefers it to the registry. The cold-start
 * programs (`src/cold/*.ts`) are stripped of their types into `.mjs` files
 * in the same folder, so the processes that run them load no TypeScript at
 * all; one more, for information, is Tessera's program with its installed
 * packages bundled into it (`rolldown`).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { stripTypeScriptTypes } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { rolldown } from "rolldown"

const benchRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const root = path.dirname(benchRoot)
const coldSources = path.join(benchRoot, "src", "cold")

/** The Tessera packages a turn on Node needs: `@tessera/node` and what it depends on. */
export const packedPackages = ["core", "artifacts", "runtime", "node"] as const

/** Packages installed beside the tarballs, at the versions `bench/package.json` pins: what the programs import. */
export const registryPackages = [
  "effect",
  "@effect/platform-node",
  "ai",
  "@mariozechner/pi-agent-core",
  "@mariozechner/pi-ai",
  "langchain",
  "@langchain/core",
  "zod"
] as const

/** The programs, one per side (`src/cold/<name>.ts`), and the floor under Tessera's (`EffectFloor`). */
export type ProgramName = "TesseraFirstCall" | "AiSdkFirstCall" | "PiFirstCall" | "LangChainFirstCall" | "EffectFloor"
const programNames: ReadonlyArray<ProgramName> = [
  "TesseraFirstCall",
  "AiSdkFirstCall",
  "PiFirstCall",
  "LangChainFirstCall",
  "EffectFloor"
]

/**
 * Tessera's program with Tessera's code bundled into it (one module instead
 * of one per source module; Effect stays outside, as installed), written by
 * {@link makeInstall} beside the others. Nothing is left out: every module the
 * program loads unbundled is in it (no tree shaking), so the difference to
 * the unbundled program is what loading Tessera's modules one by one costs.
 */
export const bundledTessera = "TesseraBundled"

/** A prepared folder: the unpacked packages, the links, the stripped programs. */
export interface ColdInstall {
  readonly folder: string
  /** `Runner.mjs`, the entry of every cold-start process. */
  readonly runner: string
  /** `ModuleCount.mjs`, the module hook of the attribution runs. */
  readonly moduleCount: string
  readonly tarballs: ReadonlyArray<string>
  readonly buildMs: number
  readonly packMs: number
  readonly installMs: number
}

/** A program as stripped (or bundled) into the install folder (plain JavaScript). */
export const installedProgram = (install: ColdInstall, name: ProgramName | typeof bundledTessera): string =>
  path.join(install.folder, `${name}.mjs`)

/** A program's TypeScript source in the workspace (its imports resolve to the workspace's `.ts` sources). */
export const workspaceProgram = (name: ProgramName): string => path.join(coldSources, `${name}.ts`)

// npm's cache stays inside the checkout (the consumer test's), never in the home folder.
const npmCache = path.join(root, "node_modules", ".cache", "tessera-consumer", "npm")
const npmEnv: NodeJS.ProcessEnv = {
  ...process.env,
  // The packages' scripts and npm's shebang find this Node first.
  PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ""}`,
  npm_config_cache: npmCache,
  npm_config_update_notifier: "false",
  npm_config_audit: "false",
  npm_config_fund: "false"
}

/** The exact version `bench/package.json` pins for `name` (dependencies or devDependencies). */
const pinnedVersions = (): ((name: string) => string) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(benchRoot, "package.json"), "utf8")) as {
    readonly dependencies?: Readonly<Record<string, string>>
    readonly devDependencies?: Readonly<Record<string, string>>
  }
  return (name) => {
    const version = manifest.dependencies?.[name] ?? manifest.devDependencies?.[name]
    if (version === undefined || !/^\d+\.\d+\.\d+$/.test(version))
      throw new Error(`bench/package.json pins no exact version of ${name}`)
    return version
  }
}

const run = (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  what: string,
  env: NodeJS.ProcessEnv = process.env
): string => {
  const result = spawnSync(command, args, { cwd, env, encoding: "utf8", timeout: 600_000 })
  if (result.status !== 0)
    throw new Error(
      `${what} failed (exit ${result.status}${result.error ? `, ${result.error.message}` : ""}): ${result.stdout}\n${result.stderr}`
    )
  return result.stdout
}

/** A relative import of a `.ts` file left in stripped code would fail where type stripping is off. */
const valueImportOfTypeScript = /(?:from|import)\s*\(?\s*"[^"]*\.ts"/

const stripInto = (name: string, folder: string): string => {
  const source = fs.readFileSync(path.join(coldSources, `${name}.ts`), "utf8")
  const stripped = stripTypeScriptTypes(source, { mode: "strip" })
  if (valueImportOfTypeScript.test(stripped)) throw new Error(`${name}.ts imports a .ts module by value`)
  const file = path.join(folder, `${name}.mjs`)
  fs.writeFileSync(file, stripped)
  return file
}

/** The entry points of a manifest's `exports` that are not JavaScript (declarations aside). */
const nonJavaScriptExports = (exports: unknown): ReadonlyArray<string> => {
  const found: Array<string> = []
  const visit = (value: unknown, condition: string) => {
    if (typeof value === "string") {
      if (condition !== "types" && !value.endsWith(".js")) found.push(value)
    } else if (value !== null && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) visit(inner, key.startsWith(".") ? condition : key)
    }
  }
  visit(exports, "default")
  return found
}

/** Writes {@link bundledTessera}: Tessera's stripped program with the unpacked packages bundled in. */
const bundle = async (folder: string): Promise<void> => {
  const build = await rolldown({
    input: path.join(folder, "TesseraFirstCall.mjs"),
    cwd: folder,
    platform: "node",
    treeshake: false,
    external: [/^effect(\/|$)/, /^@effect\//, /^node:/],
    logLevel: "silent"
  })
  try {
    await build.write({ file: path.join(folder, `${bundledTessera}.mjs`), format: "esm", sourcemap: false })
  } finally {
    await build.close()
  }
}

/**
 * Builds and packs the packages, installs them with npm into a fresh folder
 * under the system's temporary folder, and strips (and bundles) the
 * programs there. The caller removes it with {@link removeInstall}.
 */
export const makeInstall = async (): Promise<ColdInstall> => {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-cold-"))
  if (!path.relative(root, folder).startsWith("..")) throw new Error(`${folder} is inside the workspace`)
  try {
    const built = performance.now()
    run(
      process.execPath,
      [path.join(root, "node_modules", "typescript", "bin", "tsc"), "-b", "packages/node/tsconfig.src.json"],
      root,
      "tsc -b"
    )
    // The published dist/: one module per entry point and one chunk per package instead of tsc's file per module.
    run(process.execPath, [path.join(root, "scripts", "bundle.mjs"), ...packedPackages], root, "scripts/bundle.mjs")
    const packed = performance.now()
    const tarballFolder = path.join(folder, "tarballs")
    fs.mkdirSync(tarballFolder)
    for (const name of packedPackages) {
      run("pnpm", ["pack", "--pack-destination", tarballFolder], path.join(root, "packages", name), `pnpm pack ${name}`)
    }
    const tarballs = fs.readdirSync(tarballFolder).sort()
    const packMs = performance.now() - packed
    const installed = performance.now()
    fs.writeFileSync(path.join(folder, "package.json"), JSON.stringify({ name: "cold-start", private: true }))
    const pinned = pinnedVersions()
    fs.mkdirSync(npmCache, { recursive: true })
    run(
      "npm",
      [
        "install",
        "--no-save",
        "--prefer-offline",
        ...tarballs.map((tarball) => path.join(tarballFolder, tarball)),
        ...registryPackages.map((name) => `${name}@${pinned(name)}`)
      ],
      folder,
      "npm install",
      npmEnv
    )
    for (const name of packedPackages) {
      const manifestFile = path.join(folder, "node_modules", "@tessera", name, "package.json")
      const manifest = JSON.parse(fs.readFileSync(manifestFile, "utf8")) as { readonly exports: unknown }
      const wrong = nonJavaScriptExports(manifest.exports)
      if (wrong.length > 0) throw new Error(`@tessera/${name} exports non-JavaScript entries: ${wrong.join(", ")}`)
    }
    const installMs = performance.now() - installed
    for (const name of programNames) stripInto(name, folder)
    await bundle(folder)
    return {
      folder,
      runner: stripInto("Runner", folder),
      moduleCount: stripInto("ModuleCount", folder),
      tarballs,
      buildMs: packed - built,
      packMs,
      installMs
    }
  } catch (error) {
    fs.rmSync(folder, { recursive: true, force: true })
    throw error
  }
}

export const removeInstall = (install: ColdInstall): void => fs.rmSync(install.folder, { recursive: true, force: true })
