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
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { CompactionPolicy, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, ManagedRuntime } from "effect"
import { type Medium, makeTempDir, type Plan, pairedRatio, removeDir, type Stats, stats } from "./Harness.ts"
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
}

const resultSize = 1_024

const executorTurn = async (root: string, steps: number) => {
  const world = await Effect.runPromise(makeWorld(root, CompactionPolicy.disabled).pipe(Effect.provide(platformLayer)))
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
  const runtime = ManagedRuntime.make(turnLayer(world.journalFolder, generate))
  await runtime.runPromise(Effect.void)
  const started = performance.now()
  await runtime.runPromise(TaskExecution.runTurn(world.binding, start, { tools, maxSteps: steps }))
  const ms = performance.now() - started
  await runtime.dispose()
  const lines = fs
    .readFileSync(path.join(world.journalFolder, Journal.fileName(task)))
    .toString("utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => Buffer.from(`${line}\n`))
  return { ms, lines }
}

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
  let linesPerStep = 0
  for (let rep = -args.plan.warmup; rep < args.plan.reps; rep++) {
    const root = makeTempDir(args.medium)
    try {
      const turn = await executorTurn(path.join(root, "store"), args.steps)
      const bareMs = bareLoop(root, turn.lines)
      const bareAsyncMs = await bareAsyncLoop(root, turn.lines)
      linesPerStep = turn.lines.length / args.steps
      if (rep >= 0) {
        executor.push(turn.ms)
        bare.push(bareMs)
        bareAsync.push(bareAsyncMs)
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
    linesPerStep
  }
}
