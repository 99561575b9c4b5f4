/**
 * Entry of one cold-start process: `node Runner.mjs <program>`.
 *
 * Imports the program (one side's whole program: importing it loads the
 * library and runs the program's top-level code), runs it to its first model
 * call and on to its answer, and prints one JSON line ({@link Report}).
 *
 * The cold-start job strips this file and the programs of their types into
 * `.mjs` files (see `ColdInstall.ts`) and runs them with type stripping off,
 * so a process pays for no TypeScript of its own; only the row that loads
 * Tessera from the workspace's `.ts` sources strips types as it loads.
 */
import { pathToFileURL } from "node:url"

/** Called by a program at its model's first call; later calls are ignored. */
export type Probe = () => void

/** What a program module exports. */
export interface Program {
  /** Runs the program until its answer, calling `probe` at the model's first call. */
  readonly firstCall: (probe: Probe) => Promise<Answer>
}

/** What a program finished with. */
export interface Answer {
  /** The answer's text (the model's reply after its first call). */
  readonly text: string
  /** Where the side's library was loaded from (`import.meta.resolve` of its main entry). */
  readonly library: string
}

/** The line a cold-start process prints. */
export interface Report {
  /** `process.hrtime.bigint()` at the first model call, as decimal text (the parent subtracts its own reading at spawn). */
  readonly firstCallAt: string
  /** Milliseconds from this process's time origin (`performance.now()`) to the first model call. */
  readonly sinceOriginMs: number
  /** Milliseconds from the time origin until the program's import had resolved (its modules loaded and run). */
  readonly loadedMs: number
  /** `process.memoryUsage().rss` at the first model call. */
  readonly rss: number
  /** `process.memoryUsage().rss` once the program's import had resolved. */
  readonly loadedRss: number
  readonly answer: Answer
}

interface FirstCall {
  readonly at: bigint
  readonly sinceOriginMs: number
  readonly rss: number
}

const main = async (file: string): Promise<void> => {
  const program = (await import(pathToFileURL(file).href)) as Program
  const loadedMs = performance.now()
  const loadedRss = process.memoryUsage().rss
  let first: FirstCall | undefined
  const probe: Probe = () => {
    if (first !== undefined) return
    const at = process.hrtime.bigint()
    first = { at, sinceOriginMs: performance.now(), rss: process.memoryUsage().rss }
  }
  const answer = await program.firstCall(probe)
  if (first === undefined) throw new Error(`${file} answered without calling its model`)
  const report: Report = {
    firstCallAt: first.at.toString(),
    sinceOriginMs: first.sinceOriginMs,
    loadedMs,
    rss: first.rss,
    loadedRss,
    answer
  }
  process.stdout.write(`${JSON.stringify(report)}\n`)
}

const [file] = process.argv.slice(2)
if (file === undefined) {
  process.stderr.write("usage: node Runner.mjs <program module>\n")
  process.exit(2)
}
await main(file)
