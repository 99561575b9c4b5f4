/**
 * Module hook of the cold-start job's attribution runs
 * (`node --import ModuleCount.mjs Runner.mjs <program>`): counts the modules
 * the process loads, by package, and prints them on exit to stderr as one
 * line, `cold-start-modules <json>` ({@link ModuleCounts}). The timed runs do
 * not load it.
 */
import { registerHooks } from "node:module"

/** How many modules a process loaded: in all, and per package (`node:` for Node's own). */
export interface ModuleCounts {
  readonly total: number
  readonly byPackage: Readonly<Record<string, number>>
}

/**
 * The package a module URL belongs to: the last `node_modules/<name>` (or
 * `<scope>/<name>`) in it, `@tessera/<name>` for the workspace's sources, and
 * `node:` for Node's own modules.
 */
const packageOf = (url: string): string => {
  if (url.startsWith("node:")) return "node:"
  const installed = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (installed !== null) return installed[1] as string
  const workspace = /\/packages\/([^/]+)\/src\//.exec(url)
  return workspace === null ? "(program)" : `@tessera/${workspace[1]}`
}

const loaded = new Set<string>()
registerHooks({
  load: (url, context, nextLoad) => {
    loaded.add(url)
    return nextLoad(url, context)
  }
})

process.on("exit", () => {
  const byPackage: Record<string, number> = {}
  for (const url of loaded) {
    const name = packageOf(url)
    byPackage[name] = (byPackage[name] ?? 0) + 1
  }
  const counts: ModuleCounts = { total: loaded.size, byPackage }
  process.stderr.write(`cold-start-modules ${JSON.stringify(counts)}\n`)
})
