#!/usr/bin/env node
// Brings the pinned toolchain (Node 24 LTS and pnpm, both from the npm
// registry) into `.toolchain/` when the Node on PATH is too old or pnpm is
// missing, installs the workspace once per lockfile, then runs one task.
//
// This file must run on the oldest Node a fresh machine ships (20), so it
// uses nothing newer than Node 18 APIs and imports nothing from the workspace.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { delimiter, dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const NODE_VERSION = "24.21.0"
const PNPM_VERSION = "12.21.0"
const MIN_NODE = [22, 19, 0]
const MIN_PNPM_MAJOR = 10

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const toolchainDir = join(root, ".toolchain")
const toolchainBin = join(toolchainDir, "node_modules", ".bin")

const say = (line) => process.stdout.write(`[tessera] ${line}\n`)

const parseVersion = (text) => {
  const match = /v?(\d+)\.(\d+)\.(\d+)/.exec(text ?? "")
  return match ? match.slice(1, 4).map(Number) : undefined
}
const atLeast = (version, minimum) => {
  for (let i = 0; i < 3; i++) {
    if (version[i] !== minimum[i]) return version[i] > minimum[i]
  }
  return true
}

const probe = (command, args, env) => {
  const result = spawnSync(command, args, { env, encoding: "utf8" })
  return result.status === 0 ? result.stdout.trim() : undefined
}

const withPath = (prefix) => ({
  ...process.env,
  PATH: `${prefix}${delimiter}${process.env.PATH ?? ""}`
})

const run = (command, args, env, options = {}) => {
  const result = spawnSync(command, args, { cwd: root, env, stdio: "inherit", ...options })
  if (result.error) throw result.error
  return result.status ?? 1
}

const systemToolchainFits = () => {
  const nodeVersion = parseVersion(process.version)
  if (!nodeVersion || !atLeast(nodeVersion, MIN_NODE)) {
    return `Node ${process.version} on PATH is older than ${MIN_NODE.join(".")}`
  }
  const pnpmVersion = parseVersion(probe("pnpm", ["--version"], process.env))
  if (!pnpmVersion) return "pnpm is not on PATH"
  if (pnpmVersion[0] < MIN_PNPM_MAJOR) return `pnpm ${pnpmVersion.join(".")} is older than ${MIN_PNPM_MAJOR}`
  return undefined
}

const pinnedToolchainPresent = (env) =>
  probe("node", ["--version"], env) === `v${NODE_VERSION}` && probe("pnpm", ["--version"], env) === PNPM_VERSION

const installPinnedToolchain = () => {
  const env = withPath(toolchainBin)
  if (pinnedToolchainPresent(env)) return env
  mkdirSync(toolchainDir, { recursive: true })
  const npmCache = join(toolchainDir, "npm-cache")
  const npmArgs = [
    "install",
    "--prefix",
    toolchainDir,
    "--cache",
    npmCache,
    "--no-audit",
    "--no-fund",
    "--loglevel=error"
  ]
  say(`installing Node ${NODE_VERSION} and pnpm ${PNPM_VERSION} from the npm registry into .toolchain/`)
  let status = run("npm", [...npmArgs, `node@${NODE_VERSION}`, `pnpm@${PNPM_VERSION}`], process.env)
  if (status !== 0 || !pinnedToolchainPresent(env)) {
    // Some npm configurations refuse install scripts, and the `node`
    // package fetches its binary in one. The platform package ships it too.
    const platformNode = `node-${process.platform}-${process.arch}@${NODE_VERSION}`
    say(`retrying with ${platformNode} (no install scripts)`)
    status = run("npm", [...npmArgs, "--ignore-scripts", platformNode, `pnpm@${PNPM_VERSION}`], process.env)
    const binary = join(toolchainDir, "node_modules", `node-${process.platform}-${process.arch}`, "bin", "node")
    if (status === 0 && existsSync(binary)) {
      mkdirSync(toolchainBin, { recursive: true })
      writeFileSync(join(toolchainBin, "node"), `#!/bin/sh\nexec "${binary}" "$@"\n`, { mode: 0o755 })
    }
  }
  if (!pinnedToolchainPresent(env)) {
    throw new Error("could not install the pinned toolchain from the npm registry; see the npm output above")
  }
  return env
}

const resolveToolchain = () => {
  const reason = systemToolchainFits()
  if (reason === undefined) return process.env
  if (!pinnedToolchainPresent(withPath(toolchainBin))) say(`${reason}: using the pinned toolchain in .toolchain/`)
  return installPinnedToolchain()
}

// Installing once per lockfile keeps a second run off the network entirely.
const installWorkspace = (env) => {
  const lockfile = join(root, "pnpm-lock.yaml")
  const stampFile = join(root, "node_modules", ".tessera-install-stamp")
  const digest = createHash("sha256")
    .update(existsSync(lockfile) ? readFileSync(lockfile) : "")
    .update(probe("node", ["--version"], env) ?? "")
    .digest("hex")
  if (existsSync(stampFile) && readFileSync(stampFile, "utf8") === digest) return
  say("installing workspace packages (pnpm install --frozen-lockfile)")
  const status = run("pnpm", ["install", "--frozen-lockfile", "--config.confirmModulesPurge=false"], env)
  if (status !== 0) throw new Error(`pnpm install failed with exit code ${status}`)
  writeFileSync(stampFile, digest)
}

const tasks = {
  demo: ["demo"],
  check: ["check"],
  bench: ["bench"],
  mutation: ["mutation"],
  inspect: ["inspect"],
  setup: []
}

const main = () => {
  const task = process.argv[2] ?? "check"
  const scripts = tasks[task]
  if (!scripts) {
    process.stderr.write(`unknown task "${task}"; expected one of ${Object.keys(tasks).join(", ")}\n`)
    return 2
  }
  const env = resolveToolchain()
  installWorkspace(env)
  for (const script of scripts) {
    const status = run("pnpm", ["run", "--silent", `task:${script}`, ...process.argv.slice(3)], env)
    if (status !== 0) return status
  }
  return 0
}

try {
  process.exitCode = main()
} catch (error) {
  process.stderr.write(`[tessera] ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
}
