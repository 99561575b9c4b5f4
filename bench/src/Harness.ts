/**
 * The measuring harness: warm-up and repetitions, median and spread, peak
 * memory, and child processes that isolate each memory measurement.
 *
 * Peak memory is the process's resident-set high-water mark
 * (`process.resourceUsage().maxRSS`), which only ever grows; that is why
 * every figure that reports it runs in a fresh child process of its own.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type PerformanceEntry, PerformanceObserver, constants as perfConstants } from "node:perf_hooks"
import { fileURLToPath } from "node:url"
import * as v8 from "node:v8"

/** Median, quartiles and extremes of a list of samples. */
export interface Stats {
  readonly n: number
  readonly median: number
  readonly q1: number
  readonly q3: number
  readonly min: number
  readonly max: number
}

const quantile = (sorted: ReadonlyArray<number>, q: number): number => {
  if (sorted.length === 0) return Number.NaN
  const at = (sorted.length - 1) * q
  const low = Math.floor(at)
  const high = Math.ceil(at)
  const a = sorted[low] ?? Number.NaN
  const b = sorted[high] ?? Number.NaN
  return a + (b - a) * (at - low)
}

export const stats = (samples: ReadonlyArray<number>): Stats => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    n: sorted.length,
    median: quantile(sorted, 0.5),
    q1: quantile(sorted, 0.25),
    q3: quantile(sorted, 0.75),
    min: sorted[0] ?? Number.NaN,
    max: sorted.at(-1) ?? Number.NaN
  }
}

/** How many unrecorded warm-up runs precede how many recorded repetitions. */
export interface Plan {
  readonly warmup: number
  readonly reps: number
}

/**
 * A seeded generator of numbers in [0, 1) (mulberry32: small and well
 * mixed): the same seed gives the same sequence in every run and process.
 */
export const seededRandom = (seed: number): (() => number) => {
  let state = seed | 0
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state)
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296
  }
}

/**
 * The order in which repetition `round` runs `count` variants: a shuffle
 * drawn from a fixed seed (the same orders in every run) in even rounds, and
 * the same shuffle reversed in the odd round after it. Over the repetitions
 * every variant runs before and after the others alike (two variants simply
 * alternate). A fixed cycle would always run each variant after the same one,
 * and a variant runs faster after one that left its code in the caches (see
 * `bench/NOTES.md`, sixth round).
 */
export const roundOrder = (count: number, round: number): ReadonlyArray<number> => {
  // Seeded by the pair of rounds.
  const next = seededRandom((Math.floor(round / 2) + 1) * 0x9e3779b9)
  const order = Array.from({ length: count }, (_, index) => index)
  for (let index = count - 1; index > 0; index--) {
    const other = Math.floor(next() * (index + 1))
    ;[order[index], order[other]] = [order[other] as number, order[index] as number]
  }
  return round % 2 === 0 ? order : order.reverse()
}

/** Options of {@link interleave}. */
export interface InterleaveOptions {
  /**
   * Run a full garbage collection (untimed) before each sample, so that a
   * sample pays for collecting its own garbage and not for the previous
   * one's. Needs `--expose-gc`, which every benchmark child has.
   */
  readonly collectBefore?: boolean
}

/** A full garbage collection; fails where `--expose-gc` is missing rather than measuring without it. */
export const collectGarbage = (): void => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error("run with --expose-gc")
  gc()
}

/**
 * Runs several variants within every repetition, each once, in an order
 * shuffled per repetition ({@link roundOrder}), so a slow spell of a shared
 * machine (or of its disk) falls on all of them alike and none always runs
 * after the same other one. Warm-up rounds are not recorded. Returns each
 * variant's milliseconds per repetition, in order.
 */
export const interleave = async <K extends string>(
  plan: Plan,
  variants: Record<K, (rep: number) => Promise<void> | void>,
  options: InterleaveOptions = {}
): Promise<Record<K, Array<number>>> => {
  const names = Object.keys(variants) as Array<K>
  const samples = Object.fromEntries(names.map((name) => [name, [] as Array<number>])) as Record<K, Array<number>>
  for (let rep = -plan.warmup; rep < plan.reps; rep++) {
    for (const index of roundOrder(names.length, rep + plan.warmup)) {
      const name = names[index] as K
      if (options.collectBefore === true) collectGarbage()
      const started = performance.now()
      await variants[name](rep)
      const ms = performance.now() - started
      if (rep >= 0) samples[name].push(ms)
    }
  }
  return samples
}

/**
 * The median over repetitions of `baseline[i] / measured[i]`: how fast the
 * measured variant ran against the baseline under the same conditions (1 is
 * as fast, 0.5 half as fast). Pairing each repetition with its own baseline
 * keeps drift between repetitions out of the ratio.
 */
export const pairedRatio = (measured: ReadonlyArray<number>, baseline: ReadonlyArray<number>): number =>
  stats(measured.map((ms, index) => (baseline[index] ?? Number.NaN) / ms)).median

const sleepCell = new Int32Array(new SharedArrayBuffer(4))

/** Blocks this thread in the kernel for `ms` (a futex wait), as a blocking sync does, without writing anything. */
export const sleepBlocking = (ms: number): void => {
  Atomics.wait(sleepCell, 0, 0, ms)
}

/** Keeps this thread busy in JavaScript for `ms`: time passes, no system call is made. */
export const busyWait = (ms: number): void => {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/** Peak resident set size of this process so far, in bytes. */
export const peakRss = (): number => process.resourceUsage().maxRSS * 1024

/** Heap in use after a full collection (needs `--expose-gc`; otherwise as found). */
export const retainedHeap = (): number => {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc !== undefined) {
    gc()
    gc()
  }
  return process.memoryUsage().heapUsed
}

/** What V8 had committed for the JavaScript heap: its largest total, and the young generation's largest size. */
export interface HeapSizing {
  readonly peakCommitted: number
  readonly peakYoungGeneration: number
  /**
   * `[step, bytes]` each time the young generation was seen larger than
   * ever before in the run, with the step the run had reached then (the
   * first entry is its size when sampling began).
   */
  readonly youngGenerationGrowth: ReadonlyArray<readonly [number, number]>
}

/**
 * Samples V8's heap sizing every `intervalMs` until stopped (and once more
 * then). The young generation is the new space V8 sizes for itself; with the
 * committed total it shows how much of a peak is the collector's sizing rather
 * than what the program keeps. `progress` says which step the run is at, so
 * each enlargement of the young generation is dated in steps.
 */
export const sampleHeapSizing = (progress: () => number, intervalMs = 50): { readonly stop: () => HeapSizing } => {
  let peakCommitted = 0
  let peakYoungGeneration = 0
  const youngGenerationGrowth: Array<readonly [number, number]> = []
  const sample = () => {
    peakCommitted = Math.max(peakCommitted, process.memoryUsage().heapTotal)
    const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0
    if (young > peakYoungGeneration) {
      peakYoungGeneration = young
      youngGenerationGrowth.push([progress(), young])
    }
  }
  sample()
  const timer = setInterval(sample, intervalMs)
  return {
    stop: () => {
      clearInterval(timer)
      sample()
      return { peakCommitted, peakYoungGeneration, youngGenerationGrowth }
    }
  }
}

/** Time this process spent in V8's collections while observed, by kind. */
export interface GcTime {
  /** Young-generation collections (scavenges): their count and total pause. */
  readonly minor: number
  readonly minorMs: number
  /** Full (mark-compact) collections: their count and total pause. */
  readonly major: number
  readonly majorMs: number
}

/**
 * Observes the garbage collector until stopped, through `perf_hooks`' `gc`
 * entries (what V8 reports of each pause on the main thread). `stop` waits
 * a turn of the event loop, since the entries are delivered after the pause.
 */
export const observeGc = (): { readonly stop: () => Promise<GcTime> } => {
  const totals = { minor: 0, minorMs: 0, major: 0, majorMs: 0 }
  const add = (entries: ReadonlyArray<PerformanceEntry>) => {
    for (const entry of entries) {
      const kind = (entry as PerformanceEntry & { readonly detail?: { readonly kind?: number } }).detail?.kind
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) {
        totals.minor++
        totals.minorMs += entry.duration
      } else if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) {
        totals.major++
        totals.majorMs += entry.duration
      }
    }
  }
  const observer = new PerformanceObserver((list) => add(list.getEntries()))
  observer.observe({ entryTypes: ["gc"] })
  return {
    stop: async () => {
      await new Promise((resolve) => setImmediate(resolve))
      add(observer.takeRecords())
      observer.disconnect()
      return { ...totals }
    }
  }
}

/** Where a benchmark writes: a folder on the disk (real fsync) or on tmpfs (fsync costs nothing). */
export type Medium = "disk" | "memory"

const memoryRoot = "/dev/shm"

/** A fresh folder on the medium; the caller removes it with {@link removeDir}. */
export const makeTempDir = (medium: Medium): string =>
  fs.mkdtempSync(path.join(medium === "disk" ? os.tmpdir() : memoryRoot, "tessera-bench-"))

export const removeDir = (dir: string): void => fs.rmSync(dir, { recursive: true, force: true })

const childEntry = path.join(path.dirname(fileURLToPath(import.meta.url)), "child.ts")

/** Options of one isolated run. */
export interface ChildOptions {
  /** V8 old-space cap in MiB, so that every memory figure runs under the same limit. */
  readonly maxOldSpaceMiB?: number
  /** Writes a V8 CPU profile into this folder. */
  readonly cpuProfileDir?: string
  /** Further V8 flags for the child, e.g. a fixed size for the young generation. */
  readonly v8Flags?: ReadonlyArray<string>
}

/**
 * Runs one benchmark job in a fresh Node process and returns the JSON it
 * printed as its last line of output.
 */
export const runChild = <A>(job: string, args: unknown, options: ChildOptions = {}): Promise<A> =>
  new Promise((resolve, reject) => {
    const flags = [
      "--expose-gc",
      `--max-old-space-size=${options.maxOldSpaceMiB ?? 4096}`,
      ...(options.cpuProfileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${options.cpuProfileDir}`]),
      ...(options.v8Flags ?? [])
    ]
    const child = spawn(process.execPath, [...flags, childEntry, job, JSON.stringify(args)], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => {
      out += chunk
    })
    child.on("error", reject)
    child.on("close", (code) => {
      const last = out.trim().split("\n").at(-1) ?? ""
      if (code !== 0) {
        reject(new Error(`benchmark job ${job} exited with code ${code}: ${out.slice(-2000)}`))
        return
      }
      try {
        resolve(JSON.parse(last) as A)
      } catch (error) {
        reject(new Error(`benchmark job ${job} printed no result: ${String(error)}: ${out.slice(-2000)}`))
      }
    })
  })

export const formatMs = (ms: number): string =>
  ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3)

export const formatBytes = (bytes: number): string =>
  bytes >= 1024 * 1024 * 1024
    ? `${(bytes / 1024 ** 3).toFixed(2)} GiB`
    : bytes >= 1024 * 1024
      ? `${(bytes / 1024 ** 2).toFixed(1)} MiB`
      : bytes >= 1024
        ? `${(bytes / 1024).toFixed(1)} KiB`
        : `${bytes} B`

export const formatStats = (s: Stats, unit = " ms"): string =>
  `${formatMs(s.median)}${unit} (IQR ${formatMs(s.q1)}–${formatMs(s.q3)}, min ${formatMs(s.min)}, max ${formatMs(s.max)}, n=${s.n})`

export const log = (line: string): void => {
  process.stderr.write(`[bench] ${line}\n`)
}
