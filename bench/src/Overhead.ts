/**
 * Runtime overhead per step: the stock executor (scripted model, one small
 * tool result per step, journal with a synced append per entry) against a
 * bare loop that appends the very same journal lines with the same
 * durability (write, then fsync, per line) and does nothing else.
 *
 * The bare loop replays the bytes the executor wrote, so both sides write
 * identical lines; the difference is everything the runtime does per step.
 * It blocks the event loop in `writeSync` + `fsyncSync`; a second bare loop
 * does the same appends asynchronously (`fs.write` + `fs.fsync`, each
 * awaited, as any non-blocking writer must), which is the floor for a
 * journal that does not stall the process while the disk syncs.
 *
 * Where the executor's excess goes is measured alongside: the same turn with
 * the journal file's calls replaced by stand-ins (nothing; a busy wait or a
 * sleep as long as one bare append; the real append, timed), each timed
 * outside those calls. That separates the runtime's own work from what the
 * machine does to that work around its appends.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { NodeJournalFile } from "@tessera/node"
import { Compaction, Journal, JournalStorage, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Layer, ManagedRuntime } from "effect"
import {
  busyWait,
  type Medium,
  makeTempDir,
  type Plan,
  pairedRatio,
  removeDir,
  roundOrder,
  type Stats,
  sleepBlocking,
  stats
} from "./Harness.ts"
import { logText, resultBody } from "./LogText.ts"
import { makeWorld, platformLayer, produce, start, task, turnLayer } from "./World.ts"

export interface OverheadArgs {
  readonly medium: Medium
  readonly steps: number
  readonly plan: Plan
}

export interface OverheadResult {
  readonly medium: Medium
  readonly steps: number
  readonly executorMs: Stats
  readonly bareMs: Stats
  readonly bareAsyncMs: Stats
  readonly executorStepsPerSecond: number
  readonly bareStepsPerSecond: number
  readonly bareAsyncStepsPerSecond: number
  /** Executor against the blocking bare loop: the median over repetitions of bare time / executor time. */
  readonly ratio: number
  /** Executor against the asynchronous bare loop. */
  readonly asyncRatio: number
  readonly linesPerStep: number
  /** Executor time minus bare loop time, per step, in microseconds, over the repetitions. */
  readonly excessPerStepUs: Stats
  /** The bare loop's time per journal line (one write and one fsync), in milliseconds. */
  readonly bareLineMs: Stats
  /** Time per step inside the real appends of the attribution run, in microseconds (the bare loop's: `bareLineMs` times lines per step). */
  readonly realAppendsPerStepUs: Stats
  /** The executor's own time per step, in microseconds, with each stand-in for the journal file's calls. */
  readonly ownWork: ReadonlyArray<{ readonly standIn: StandIn; readonly perStepUs: Stats }>
}

/**
 * What the journal file's append does in an attribution run: nothing; busy-wait
 * as long as one bare append took (time passes, the thread never leaves
 * JavaScript); sleep that long (the thread waits in the kernel, as in an
 * fsync, but nothing is written); or the real blocking append.
 */
export type StandIn = "no-op" | "busy wait" | "sleep" | "real append"

export const standIns: ReadonlyArray<StandIn> = ["no-op", "busy wait", "sleep", "real append"]

const resultSize = 1_024

/** Time spent inside the journal file's appends, summed over a turn. */
interface FileCallClock {
  insideMs: number
}

const standInAppend = (standIn: Exclude<StandIn, "real append">, lineMs: number) => {
  switch (standIn) {
    case "no-op":
      return () => {}
    case "busy wait":
      return () => busyWait(lineMs)
    case "sleep":
      return () => sleepBlocking(lineMs)
  }
}

/** A journal file whose appends do what `standIn` says, timed into `clock`. */
const attributionFile = (standIn: StandIn, lineMs: number, clock: FileCallClock): Layer.Layer<never> => {
  const timed =
    (append: (line: string) => void) =>
    (line: string): void => {
      const started = performance.now()
      try {
        append(line)
      } finally {
        clock.insideMs += performance.now() - started
      }
    }
  const shape: JournalStorage.JournalFileShape =
    standIn === "real append"
      ? {
          openAppend: (file) =>
            Effect.map(NodeJournalFile.blocking.openAppend(file), (handle) => {
              const blocking = handle.blocking
              if (blocking === undefined) throw new Error("NodeJournalFile is expected to block")
              return { ...handle, blocking: { ...blocking, append: timed(blocking.append) } }
            })
        }
      : {
          openAppend: () => {
            const append = timed(standInAppend(standIn, lineMs))
            return Effect.succeed({
              append: (line) => Effect.sync(() => append(line)),
              write: (line) => Effect.sync(() => append(line)),
              sync: Effect.void,
              truncate: () => Effect.void,
              blocking: { append, write: append, sync: () => {}, truncate: () => {} }
            })
          }
        }
  return Layer.succeed(JournalStorage.JournalFile)(shape)
}

const executorTurn = async (root: string, steps: number, journalFile?: Layer.Layer<never>) => {
  const world = await Effect.runPromise(makeWorld(root, Compaction.disabled).pipe(Effect.provide(platformLayer)))
  const tools = Tool.registry(produce(resultBody(logText(resultSize))))
  let calls = 0
  const generate = () =>
    Effect.sync(() => {
      calls++
      return calls < steps
        ? Model.response({ toolCalls: [Model.toolCall(`call-${calls}`, "produce", { size: resultSize })] })
        : Model.response({ text: "done" })
    })
  // The journal is opened (and the layer built) before the clock starts: a step's cost, not a task's.
  const runtime = ManagedRuntime.make(turnLayer(world.journalFolder, generate, journalFile))
  await runtime.runPromise(Effect.void)
  const started = performance.now()
  await runtime.runPromise(TaskExecution.runTurn(world.binding, start, { tools, maxSteps: steps }))
  const ms = performance.now() - started
  await runtime.dispose()
  return { ms, journal: path.join(world.journalFolder, Journal.fileName(task)) }
}

/** The journal's lines, each with its newline, as the bare loops append them. */
const journalLines = (journal: string): ReadonlyArray<Buffer> =>
  fs
    .readFileSync(journal)
    .toString("utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => Buffer.from(`${line}\n`))

const bareLoop = (root: string, lines: ReadonlyArray<Buffer>): number => {
  const file = path.join(root, "bare.jsonl")
  const started = performance.now()
  const fd = fs.openSync(file, "a")
  try {
    for (const line of lines) {
      fs.writeSync(fd, line)
      fs.fsyncSync(fd)
    }
  } finally {
    fs.closeSync(fd)
  }
  return performance.now() - started
}

const callback = (start: (done: (error: NodeJS.ErrnoException | null) => void) => void): Promise<void> =>
  new Promise((resolve, reject) => start((error) => (error === null ? resolve() : reject(error))))

const bareAsyncLoop = async (root: string, lines: ReadonlyArray<Buffer>): Promise<number> => {
  const file = path.join(root, "bare-async.jsonl")
  const started = performance.now()
  const fd = fs.openSync(file, "a")
  try {
    for (const line of lines) {
      await callback((done) => fs.write(fd, line, 0, line.length, null, done))
      await callback((done) => fs.fsync(fd, done))
    }
  } finally {
    fs.closeSync(fd)
  }
  return performance.now() - started
}

export const run = async (args: OverheadArgs): Promise<OverheadResult> => {
  const executor: Array<number> = []
  const bare: Array<number> = []
  const bareAsync: Array<number> = []
  const bareLine: Array<number> = []
  const realAppends: Array<number> = []
  const ownWork = new Map<StandIn, Array<number>>(standIns.map((standIn) => [standIn, []]))
  let linesPerStep = 0
  for (let rep = -args.plan.warmup; rep < args.plan.reps; rep++) {
    const root = makeTempDir(args.medium)
    try {
      const turn = await executorTurn(path.join(root, "store"), args.steps)
      const lines = journalLines(turn.journal)
      const bareMs = bareLoop(root, lines)
      const bareAsyncMs = await bareAsyncLoop(root, lines)
      linesPerStep = lines.length / args.steps
      const lineMs = bareMs / lines.length
      // In a new order each repetition, so that no stand-in always runs after the same one.
      const own = new Map<StandIn, number>()
      let inside = Number.NaN
      for (const index of roundOrder(standIns.length, rep + args.plan.warmup)) {
        const standIn = standIns[index] as StandIn
        const clock: FileCallClock = { insideMs: 0 }
        const attributed = await executorTurn(
          path.join(root, `store-${index}`),
          args.steps,
          attributionFile(standIn, lineMs, clock)
        )
        own.set(standIn, ((attributed.ms - clock.insideMs) * 1000) / args.steps)
        if (standIn === "real append") inside = (clock.insideMs * 1000) / args.steps
      }
      if (rep >= 0) {
        executor.push(turn.ms)
        bare.push(bareMs)
        bareAsync.push(bareAsyncMs)
        bareLine.push(lineMs)
        realAppends.push(inside)
        for (const standIn of standIns) ownWork.get(standIn)?.push(own.get(standIn) ?? Number.NaN)
      }
    } finally {
      removeDir(root)
    }
  }
  const executorMs = stats(executor)
  const bareMs = stats(bare)
  const bareAsyncMs = stats(bareAsync)
  const executorStepsPerSecond = (args.steps * 1000) / executorMs.median
  const bareStepsPerSecond = (args.steps * 1000) / bareMs.median
  const bareAsyncStepsPerSecond = (args.steps * 1000) / bareAsyncMs.median
  return {
    medium: args.medium,
    steps: args.steps,
    executorMs,
    bareMs,
    bareAsyncMs,
    executorStepsPerSecond,
    bareStepsPerSecond,
    bareAsyncStepsPerSecond,
    ratio: pairedRatio(executor, bare),
    asyncRatio: pairedRatio(executor, bareAsync),
    linesPerStep,
    excessPerStepUs: stats(executor.map((ms, index) => ((ms - (bare[index] ?? Number.NaN)) * 1000) / args.steps)),
    bareLineMs: stats(bareLine),
    realAppendsPerStepUs: stats(realAppends),
    ownWork: standIns.map((standIn) => ({ standIn, perStepUs: stats(ownWork.get(standIn) ?? []) }))
  }
}
