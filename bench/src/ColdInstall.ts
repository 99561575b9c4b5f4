/**
 * The packages as an npm user gets them, for the cold-start job: built
 * (`tsc -b`), packed with `pnpm pack` (which applies each package's
 * `publishConfig`: its exports point at `dist/*.js`), and unpacked into the
 * `node_modules` of a fresh folder outside the workspace. Nothing there
 * resolves back into the workspace's sources.
 *
 * The peers (`effect`, `@effect/platform-node`) and the other sides'
 * libraries are linked to the copies the workspace installed from the
 * registry (the lockfile's pinned versions), instead of being installed
 * again: the same files an npm install of those versions brings, without
 * the registry. The cold-start programs (`src/cold/*.ts`) are stripped of
 * their types into `.mjs` files in the same folder, so the processes that
 * run them load no TypeScript at all; one more, for information, is Tessera's
 * program with the unpacked packages bundled into it (`rolldown`).
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

/** Installed packages the programs import, linked from the workspace's install (through `bench/node_modules`). */
export const linkedPackages = [
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
}

/** A program as stripped (or bundled) into the install folder (plain JavaScript). */
export const installedProgram = (install: ColdInstall, name: ProgramName | typeof bundledTessera): string =>
  path.join(install.folder, `${name}.mjs`)

/** A program's TypeScript source in the workspace (its imports resolve to the workspace's `.ts` sources). */
export const workspaceProgram = (name: ProgramName): string => path.join(coldSources, `${name}.ts`)

const run = (command: string, args: ReadonlyArray<string>, cwd: string, what: string): string => {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", timeout: 600_000 })
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
 * Builds, packs and unpacks the packages into a fresh folder under the
 * system's temporary folder, links the installed peers, and strips the
 * programs. The caller removes it with {@link removeInstall}.
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
    const packed = performance.now()
    const tarballFolder = path.join(folder, "tarballs")
    fs.mkdirSync(tarballFolder)
    for (const name of packedPackages) {
      run("pnpm", ["pack", "--pack-destination", tarballFolder], path.join(root, "packages", name), `pnpm pack ${name}`)
    }
    const tarballs = fs.readdirSync(tarballFolder).sort()
    for (const tarball of tarballs) {
      const unpacked = path.join(folder, "unpacked", tarball)
      fs.mkdirSync(unpacked, { recursive: true })
      run("tar", ["-xzf", path.join(tarballFolder, tarball), "-C", unpacked, "--strip-components=1"], folder, "tar")
      const manifest = JSON.parse(fs.readFileSync(path.join(unpacked, "package.json"), "utf8")) as {
        readonly name: string
        readonly exports: unknown
      }
      const wrong = nonJavaScriptExports(manifest.exports)
      if (wrong.length > 0) throw new Error(`${tarball} exports non-JavaScript entries: ${wrong.join(", ")}`)
      const target = path.join(folder, "node_modules", ...manifest.name.split("/"))
      fs.mkdirSync(path.dirname(target), { recursive: true })
      fs.renameSync(unpacked, target)
    }
    const packMs = performance.now() - packed
    for (const name of linkedPackages) {
      const target = path.join(folder, "node_modules", ...name.split("/"))
      fs.mkdirSync(path.dirname(target), { recursive: true })
      fs.symlinkSync(fs.realpathSync(path.join(benchRoot, "node_modules", ...name.split("/"))), target, "dir")
    }
    fs.writeFileSync(path.join(folder, "package.json"), JSON.stringify({ name: "cold-start", private: true }))
    for (const name of programNames) stripInto(name, folder)
    await bundle(folder)
    return {
      folder,
      runner: stripInto("Runner", folder),
      moduleCount: stripInto("ModuleCount", folder),
      tarballs,
      buildMs: packed - built,
      packMs
    }
  } catch (error) {
    fs.rmSync(folder, { recursive: true, force: true })
    throw error
  }
}

export const removeInstall = (install: ColdInstall): void => fs.rmSync(install.folder, { recursive: true, force: true })
