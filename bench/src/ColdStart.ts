/**
 * Cold start: how long a fresh Node process takes from its start to its
 * first model call, and its resident memory at that moment, for Tessera and
 * for the AI SDK, Pi's agent core and LangChain, each doing the least real
 * work of its own up to that call (the programs in `src/cold/`).
 *
 * Every side runs as an npm user gets it: from the folder `ColdInstall.ts`
 * prepares (Tessera packed and unpacked, its compiled JavaScript only; the
 * others as installed), with type stripping off, so loading a `.ts` file
 * would fail. One more row, for information, loads Tessera from the
 * workspace's `.ts` sources (type stripping on), as the workspace itself runs.
 *
 * Time is taken on the monotonic clock (`process.hrtime.bigint()`, Linux's
 * `CLOCK_MONOTONIC`, which every process reads alike): the parent reads it
 * just before it spawns the process, the process at its first model call.
 * That includes Node's own boot, the same way for every side. The time from
 * the process's own time origin (`performance.now()`) is reported beside it.
 *
 * Rounds run every side once each, in an order shuffled per round; a ratio
 * is the median over rounds of Tessera's figure over the other side's in the
 * same round.
 */
import { spawn } from "node:child_process"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import {
  bundledTessera,
  type ColdInstall,
  installedProgram,
  makeInstall,
  type ProgramName,
  removeInstall,
  workspaceProgram
} from "./ColdInstall.ts"
import type { ModuleCounts } from "./cold/ModuleCount.ts"
import type { Report } from "./cold/Runner.ts"
import { formatBytes, formatMs, type Medium, makeTempDir, removeDir, roundOrder, type Stats, stats } from "./Harness.ts"

/**
 * The sides, Tessera first; the last three are rows for information: Tessera
 * from the workspace's `.ts` sources (type stripping), Tessera bundled into
 * one module, and the Effect modules Tessera's program loads, alone.
 */
export type SideName = "tessera" | "ai-sdk" | "pi" | "langchain" | "tessera-ts" | "tessera-bundled" | "effect-floor"

export interface Side {
  readonly name: SideName
  /** Its name in the ratios. */
  readonly short: string
  readonly label: string
  readonly program: ProgramName | typeof bundledTessera
  /** Loads the workspace's `.ts` sources with type stripping (the information row) instead of the install. */
  readonly fromSources: boolean
}

export const sides: ReadonlyArray<Side> = [
  {
    name: "tessera",
    short: "Tessera",
    label: "Tessera: `NodeTessera.layer`, store, journal, `TaskExecution.runTurn` (packed `dist/` JavaScript)",
    program: "TesseraFirstCall",
    fromSources: false
  },
  {
    name: "ai-sdk",
    short: "AI SDK 7",
    label: "AI SDK 7: `generateText` with `MockLanguageModelV4`",
    program: "AiSdkFirstCall",
    fromSources: false
  },
  {
    name: "pi",
    short: "Pi agent-core",
    label: "Pi agent-core: `Agent` with pi-ai's faux provider",
    program: "PiFirstCall",
    fromSources: false
  },
  {
    name: "langchain",
    short: "LangChain",
    label: "LangChain: `createAgent`",
    program: "LangChainFirstCall",
    fromSources: false
  },
  {
    name: "tessera-ts",
    short: "Tessera from .ts sources",
    label: "Tessera from the workspace's `.ts` sources (type stripping; for information)",
    program: "TesseraFirstCall",
    fromSources: true
  },
  {
    name: "tessera-bundled",
    short: "Tessera bundled",
    label: "Tessera's program with its packages bundled into one module (rolldown, no tree shaking; for information)",
    program: bundledTessera,
    fromSources: false
  },
  {
    name: "effect-floor",
    short: "Effect floor",
    label: "The Effect and platform-node modules Tessera's program loads, alone, one effect run (for information)",
    program: "EffectFloor",
    fromSources: false
  }
]

/** The peers Tessera's ratios are taken against. */
export const peers: ReadonlyArray<SideName> = ["ai-sdk", "pi", "langchain"]

/** The targets: against the AI SDK's, in the same rounds. */
export const timeTarget = 1.5
export const rssTarget = 1.3

export interface ColdStartArgs {
  /** Processes per side (each round starts every side once). */
  readonly rounds: number
  /** Where Tessera's store lives (`memory`: tmpfs, as the side-by-side keeps it, the others keeping nothing). */
  readonly medium: Medium
  /** Also start every side once under a module-counting hook (untimed). */
  readonly countModules: boolean
}

/** One process of one side. */
export interface ColdRun {
  readonly round: number
  readonly side: SideName
  /** Milliseconds from just before the spawn to the first model call (monotonic clock). */
  readonly fromSpawnMs: number
  readonly report: Report
}

export interface ColdSideResult {
  readonly side: SideName
  readonly short: string
  readonly label: string
  /** Where the side's library was loaded from, in its first round. */
  readonly library: string
  readonly answer: string
  readonly fromSpawn: Stats
  readonly sinceOrigin: Stats
  /** Milliseconds from the time origin until the program's import had resolved. */
  readonly loaded: Stats
  readonly rss: Stats
  readonly loadedRss: Stats
  /** Modules loaded by the whole program, when counted. */
  readonly modules: ModuleCounts | undefined
}

/** One side's figures over another's, per round. */
export interface ColdRatio {
  readonly side: SideName
  readonly over: SideName
  readonly time: Stats
  readonly rss: Stats
}

/** The ratios taken: Tessera over each peer, and the bundled and floor rows over the AI SDK. */
export const ratioPairs: ReadonlyArray<readonly [side: SideName, over: SideName]> = [
  ...peers.map((peer) => ["tessera", peer] as const),
  ["tessera-bundled", "ai-sdk"],
  ["effect-floor", "ai-sdk"]
]

export interface ColdStartResult {
  readonly args: ColdStartArgs
  readonly buildMs: number
  readonly packMs: number
  readonly installMs: number
  readonly tarballs: ReadonlyArray<string>
  readonly runs: ReadonlyArray<ColdRun>
  readonly sides: ReadonlyArray<ColdSideResult>
  readonly ratios: ReadonlyArray<ColdRatio>
}

/** The environment of a cold-start process: this one's, without `NODE_OPTIONS` (nothing preloaded). */
const processEnv = (store: string): NodeJS.ProcessEnv => {
  const { NODE_OPTIONS: _preloaded, ...env } = process.env
  return { ...env, TESSERA_COLD_DIR: store }
}

export interface Started {
  readonly fromSpawnMs: number
  readonly report: Report
  readonly stderr: string
}

/** The program file a side runs: stripped into the install, or the workspace's source for the sources row. */
export const programOf = (install: ColdInstall, side: Side): string =>
  side.fromSources && side.program !== bundledTessera
    ? workspaceProgram(side.program)
    : installedProgram(install, side.program)

/** Node's flags for a side: type stripping off for the installed sides, so a `.ts` module anywhere in their graph fails to load. */
export const flagsOf = (side: Side): ReadonlyArray<string> =>
  side.fromSources ? [] : ["--no-experimental-strip-types"]

/**
 * Starts `node <flags> Runner.mjs <program>` in the install folder, with a
 * fresh store folder on `medium` (removed afterwards), and waits for its
 * report.
 */
export const startProgram = (
  install: ColdInstall,
  program: string,
  flags: ReadonlyArray<string>,
  medium: Medium
): Promise<Started> =>
  new Promise((resolve, reject) => {
    const store = makeTempDir(medium)
    const spawnedAt = process.hrtime.bigint()
    const child = spawn(process.execPath, [...flags, install.runner, program], {
      cwd: install.folder,
      env: processEnv(store),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stdout.setEncoding("utf8")
    child.stderr.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      out += chunk
    })
    child.stderr.on("data", (chunk: string) => {
      err += chunk
    })
    child.on("error", (error) => {
      removeDir(store)
      reject(error)
    })
    child.on("close", (code) => {
      removeDir(store)
      if (code !== 0) {
        reject(new Error(`cold start of ${program} exited with code ${code}: ${out.slice(-2000)}\n${err.slice(-4000)}`))
        return
      }
      try {
        const report = JSON.parse(out.trim().split("\n").at(-1) ?? "") as Report
        resolve({ fromSpawnMs: Number(BigInt(report.firstCallAt) - spawnedAt) / 1e6, report, stderr: err })
      } catch (error) {
        reject(new Error(`cold start of ${program} printed no report: ${String(error)}: ${out.slice(-2000)}`))
      }
    })
  })

const countModules = async (install: ColdInstall, side: Side, medium: Medium): Promise<ModuleCounts> => {
  const { stderr } = await startProgram(
    install,
    programOf(install, side),
    [...flagsOf(side), "--import", install.moduleCount],
    medium
  )
  const line = stderr.split("\n").find((text) => text.startsWith("cold-start-modules "))
  if (line === undefined) throw new Error(`the module count of ${side.name} printed nothing: ${stderr.slice(-2000)}`)
  return JSON.parse(line.slice("cold-start-modules ".length)) as ModuleCounts
}

/** Shows a library's location relative to the install folder (or the workspace, for the sources row). */
const workspace = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")
const shownLibrary = (install: ColdInstall, url: string): string => {
  const file = url.startsWith("file:") ? fileURLToPath(url) : url
  if (file.startsWith(`${install.folder}/`)) return `<install>/${path.relative(install.folder, file)}`
  if (file.startsWith(`${workspace}/`)) return `<workspace>/${path.relative(workspace, file)}`
  return file
}

/** The job in a prepared install folder (see `ColdInstall.ts`). */
export const runIn = async (install: ColdInstall, args: ColdStartArgs): Promise<ColdStartResult> => {
  const runs: Array<ColdRun> = []
  for (let round = 0; round < args.rounds; round++) {
    for (const index of roundOrder(sides.length, round)) {
      const side = sides[index] as Side
      const started = await startProgram(install, programOf(install, side), flagsOf(side), args.medium)
      runs.push({ round, side: side.name, fromSpawnMs: started.fromSpawnMs, report: started.report })
    }
  }
  const counts = new Map<SideName, ModuleCounts>()
  if (args.countModules) for (const side of sides) counts.set(side.name, await countModules(install, side, args.medium))
  const runsOf = (name: SideName) => runs.filter((one) => one.side === name)
  const sideResults = sides.map((side): ColdSideResult => {
    const own = runsOf(side.name)
    const first = own[0]
    if (first === undefined) throw new Error(`no run of ${side.name}`)
    return {
      side: side.name,
      short: side.short,
      label: side.label,
      // The bundled program still resolves the installed package's name, but runs the copy bundled into it.
      library:
        side.program === bundledTessera
          ? shownLibrary(install, programOf(install, side))
          : shownLibrary(install, first.report.answer.library),
      answer: first.report.answer.text,
      fromSpawn: stats(own.map((one) => one.fromSpawnMs)),
      sinceOrigin: stats(own.map((one) => one.report.sinceOriginMs)),
      loaded: stats(own.map((one) => one.report.loadedMs)),
      rss: stats(own.map((one) => one.report.rss)),
      loadedRss: stats(own.map((one) => one.report.loadedRss)),
      modules: counts.get(side.name)
    }
  })
  const ratios = ratioPairs.map(([side, over]): ColdRatio => {
    const ours = runsOf(side)
    const theirs = runsOf(over)
    const perRound = (key: (one: ColdRun) => number) =>
      stats(ours.map((one, round) => key(one) / key(theirs[round] as ColdRun)))
    return { side, over, time: perRound((one) => one.fromSpawnMs), rss: perRound((one) => one.report.rss) }
  })
  return {
    args,
    buildMs: install.buildMs,
    packMs: install.packMs,
    installMs: install.installMs,
    tarballs: install.tarballs,
    runs,
    sides: sideResults,
    ratios
  }
}

/** The job: prepares the install folder, runs the rounds, removes the folder. */
export const run = async (args: ColdStartArgs): Promise<ColdStartResult> => {
  const install = await makeInstall()
  try {
    return await runIn(install, args)
  } finally {
    removeInstall(install)
  }
}

// ---------------------------------------------------------------- report

const sideOf = (result: ColdStartResult, name: SideName): ColdSideResult =>
  result.sides.find((side) => side.side === name) as ColdSideResult
const ratioOf = (result: ColdStartResult, side: SideName, over: SideName): ColdRatio =>
  result.ratios.find((ratio) => ratio.side === side && ratio.over === over) as ColdRatio
const times = (value: number): string => `${value.toFixed(2)}x`
const mib = (s: Stats): string =>
  `${formatBytes(s.median)} (IQR ${formatBytes(s.q1)}–${formatBytes(s.q3)}, min ${formatBytes(s.min)}, max ${formatBytes(s.max)})`
const ms = (s: Stats): string =>
  `${formatMs(s.median)} ms (IQR ${formatMs(s.q1)}–${formatMs(s.q3)}, min ${formatMs(s.min)}, max ${formatMs(s.max)})`

/** Modules by package, largest first, for the attribution column. */
const moduleList = (counts: ModuleCounts | undefined): string =>
  counts === undefined
    ? "not counted"
    : `${counts.total}: ${Object.entries(counts.byPackage)
        .sort(([, a], [, b]) => b - a)
        .slice(0, 4)
        .map(([name, count]) => `${name} ${count}`)
        .join(", ")}`

/** Whether the time and the memory targets are met (Tessera over the AI SDK, medians of per-round ratios). */
export const coldStartVerdicts = (result: ColdStartResult): { readonly time: boolean; readonly rss: boolean } => {
  const aiSdk = ratioOf(result, "tessera", "ai-sdk")
  return { time: aiSdk.time.median <= timeTarget, rss: aiSdk.rss.median <= rssTarget }
}

/** The measured cause of a miss: where Tessera's time and memory go before the first call, against the AI SDK's. */
export const coldStartCause = (result: ColdStartResult): string => {
  const ours = sideOf(result, "tessera")
  const theirs = sideOf(result, "ai-sdk")
  const floor = sideOf(result, "effect-floor")
  const bundled = sideOf(result, "tessera-bundled")
  const sources = sideOf(result, "tessera-ts")
  const ourCount = (counts: ModuleCounts | undefined) =>
    counts === undefined
      ? "not counted"
      : String(
          Object.entries(counts.byPackage)
            .filter(([name]) => name.startsWith("@tessera/"))
            .reduce((sum, [, count]) => sum + count, 0)
        )
  return (
    `Measured in the same rounds (see Cold start): the Effect and platform-node modules Tessera's program loads, alone with one effect run, take ${formatMs(floor.fromSpawn.median)} ms from spawn, ${times(ratioOf(result, "effect-floor", "ai-sdk").time.median)} the AI SDK's whole program per round (modules ${moduleList(floor.modules)}); no change in Tessera's code goes below that. ` +
    `Tessera's program takes ${formatMs(ours.fromSpawn.median)} ms; the same program with Tessera's ${ourCount(ours.modules)} modules bundled into one (same code, nothing left out) takes ${formatMs(bundled.fromSpawn.median)} ms (${times(ratioOf(result, "tessera-bundled", "ai-sdk").time.median)} per round): the difference is Node loading the files of Tessera's packages (each package is one bundled chunk behind its entry files, and the packages import one another by module path) one by one (resolving, reading, compiling and linking each). ` +
    `Tessera's program had loaded (its import resolved) ${formatMs(ours.loaded.median)} ms after its process's time origin, the AI SDK's ${formatMs(theirs.loaded.median)} ms; from there to the first model call (building the layer, creating the store's two volumes, binding the task, opening the journal, the turn's first step) Tessera took ${formatMs(ours.sinceOrigin.median - ours.loaded.median)} ms, the AI SDK ${formatMs(theirs.sinceOrigin.median - theirs.loaded.median)} ms. ` +
    `Modules loaded: Tessera ${moduleList(ours.modules)}; the AI SDK ${moduleList(theirs.modules)}. ` +
    `Resident memory at the first call: ${formatBytes(ours.rss.median)} against ${formatBytes(theirs.rss.median)} (the floor ${formatBytes(floor.rss.median)}). ` +
    `From the workspace's .ts sources (type stripping) Tessera takes ${formatMs(sources.fromSpawn.median)} ms and ${formatBytes(sources.rss.median)}.`
  )
}

/** The two rows of the targets table: `[target, measured, met]`. */
export const coldStartTargets = (
  result: ColdStartResult
): ReadonlyArray<readonly [target: string, measured: string, met: boolean]> => {
  const ours = sideOf(result, "tessera")
  const theirs = sideOf(result, "ai-sdk")
  const aiSdk = ratioOf(result, "tessera", "ai-sdk")
  const verdicts = coldStartVerdicts(result)
  return [
    [
      `Cold start: process start to first model call <= ${timeTarget}x the AI SDK's`,
      `${formatMs(ours.fromSpawn.median)} ms vs ${formatMs(theirs.fromSpawn.median)} ms; per round ${times(aiSdk.time.median)}`,
      verdicts.time
    ],
    [
      `Cold start: resident memory at the first model call <= ${rssTarget}x the AI SDK's`,
      `${formatBytes(ours.rss.median)} vs ${formatBytes(theirs.rss.median)}; per round ${times(aiSdk.rss.median)}`,
      verdicts.rss
    ]
  ]
}

export const coldStartSection = (result: ColdStartResult): ReadonlyArray<string> => {
  const tessera = sideOf(result, "tessera")
  const lines = [
    "## Cold start",
    "",
    `Each side's process does the least real work of its own up to its first model call, and its model answers at once; ${result.args.rounds} processes per side, started round by round, the sides in an order shuffled per round, one process at a time (programs in \`bench/src/cold/\`). ` +
      `Every side is what an npm user gets: Tessera's packages built (\`tsc -b\`, then \`scripts/bundle.mjs\`: one file per entry point and one shared chunk per package, ${(result.buildMs / 1000).toFixed(1)} s) and packed with \`pnpm pack\` (${result.tarballs.join(", ")}; their exports name \`dist/*.js\` only), then installed with \`npm install\` into a folder outside the workspace together with effect, @effect/platform-node and the other sides' libraries at the versions \`bench/package.json\` pins (${(result.installMs / 1000).toFixed(1)} s; their own dependencies as npm resolves them that day). ` +
      "The programs are stripped of their types into `.mjs` beforehand, and these processes run with type stripping off (`--no-experimental-strip-types`): a `.ts` module would fail to load. " +
      `Tessera's program builds \`NodeTessera.layer\`, opens a store with an agent-private and a journal volume (on ${result.args.medium === "memory" ? "tmpfs, as the side-by-side keeps it: the others keep nothing" : "disk"}), binds a task, opens its journal and runs \`TaskExecution.runTurn\` with one tool over a scripted model; it imports Effect's modules by their own paths (\`effect/Effect\`), as the packages do. ` +
      "The AI SDK's runs `generateText` with one tool over `MockLanguageModelV4`; Pi's prompts an `Agent` with one tool over pi-ai's faux provider; LangChain's invokes `createAgent` with one tool over a scripted chat model.",
    "",
    "Three rows are for information. Tessera from the workspace's `.ts` sources: the same program run on the sources with type stripping, as the workspace runs. Tessera bundled: the same program with the unpacked packages bundled into it by rolldown (one module instead of one per source module, no tree shaking, Effect left outside), so its difference to the first row is what loading Tessera's modules one by one costs. The Effect floor: the Effect and platform-node modules Tessera's program loads (`effect/Effect`, `Layer`, `Schema`, `FileSystem`, `Path`, `NodeFileSystem`, `NodePath`) and one effect run, with no code of Tessera's: no change in Tessera's own code starts faster than that.",
    "",
    "From spawn: the monotonic clock (`process.hrtime.bigint()`, `CLOCK_MONOTONIC`) read by the parent just before `spawn` and by the process at its first model call, so Node's own boot counts for every side alike. In-process: `performance.now()` at the first call (from the process's time origin). Loaded: `performance.now()` once the program's import resolved (its modules loaded and their top-level code run). Memory: `process.memoryUsage().rss`. Modules: counted in one more process per side, under a module hook (`bench/src/cold/ModuleCount.ts`), not timed. A ratio is one side's figure over the other's in the same round, median over rounds.",
    "",
    "| Side | From spawn to first model call | In-process (since time origin) | Loaded at | RSS at first call | RSS once loaded | Modules loaded (largest packages) | Loaded from |",
    "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |"
  ]
  for (const side of result.sides) {
    lines.push(
      `| ${side.label} | ${ms(side.fromSpawn)} | ${formatMs(side.sinceOrigin.median)} ms | ${formatMs(side.loaded.median)} ms | ${mib(side.rss)} | ${formatBytes(side.loadedRss.median)} | ${moduleList(side.modules)} | \`${side.library}\` |`
    )
  }
  lines.push(
    "",
    "| Ratio | Time to first model call (per round) | RSS at first call (per round) |",
    "| --- | ---: | ---: |"
  )
  for (const ratio of result.ratios) {
    const label = `${sideOf(result, ratio.side).short} over ${sideOf(result, ratio.over).short}`
    lines.push(
      `| ${label} | ${times(ratio.time.median)} (IQR ${times(ratio.time.q1)}–${times(ratio.time.q3)}) | ${times(ratio.rss.median)} (IQR ${times(ratio.rss.q1)}–${times(ratio.rss.q3)}) |`
    )
  }
  const sources = sideOf(result, "tessera-ts")
  lines.push(
    "",
    `Loading Tessera from the workspace's \`.ts\` sources (type stripping) instead of the packed JavaScript: ${formatMs(sources.fromSpawn.median)} against ${formatMs(tessera.fromSpawn.median)} ms from spawn, ${formatBytes(sources.rss.median)} against ${formatBytes(tessera.rss.median)} at the first call.`,
    ""
  )
  return lines
}
