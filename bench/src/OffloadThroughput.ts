/**
 * Offload throughput: 1 MiB results through `ArtifactOffload.offload` with
 * the default redactor and with none, against a raw write of the same bytes
 * with the same durability, and a raw write after the same regex scan.
 *
 * Same durability means what `NodeDurableFiles.writeNewFile` does: create
 * exclusively, write, fsync the file, close, fsync the folder.
 *
 * A fifth variant, run in the same repetitions, offloads without a redactor
 * through durable files that time their own calls, which splits an offload
 * into the work before its file write starts, the write, and the work after it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { ArtifactOffload, DefaultRedactor } from "@tessera/artifacts"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, type FileSystem, Layer, ManagedRuntime, type Path } from "effect"
import {
  interleave,
  type Medium,
  makeTempDir,
  type Plan,
  pairedRatio,
  removeDir,
  type Stats,
  sleepBlocking,
  stats
} from "./Harness.ts"
import { logText } from "./LogText.ts"
import { platformLayer } from "./World.ts"

export const resultBytes = 1024 * 1024

export interface OffloadArgs {
  readonly medium: Medium
  readonly plan: Plan
}

export interface OffloadVariant {
  readonly name: string
  readonly ms: Stats
  readonly mibPerSecond: number
}

export interface OffloadResult {
  readonly medium: Medium
  readonly bytes: number
  readonly variants: ReadonlyArray<OffloadVariant>
  readonly redactedMatches: number
  /** Offload with the default redactor against raw write + scan, paired per repetition. */
  readonly defaultRedactorRatio: number
  /** Offload without a redactor against the raw write, paired per repetition. */
  readonly noRedactorRatio: number
  /** Where an offload without a redactor spends its time, in milliseconds per offload. */
  readonly phases: OffloadPhases<Stats>
  /**
   * The same offload's work before its write, with durable files that do
   * nothing, in milliseconds: back to back (`warm`), each after the thread
   * slept as long as a raw write takes (`afterSleep`, `sleepMs`), and each
   * after a read through more memory than the caches hold (`afterSweep`,
   * `sweptBytes`).
   */
  readonly beforeWriteAlone: {
    readonly warm: Stats
    readonly afterSleep: Stats
    readonly afterSweep: Stats
    readonly sleepMs: number
    readonly sweptBytes: number
  }
}

/**
 * One offload's time, split at the durable files' `writeNewFile` call (which
 * creates, writes and syncs the file and syncs its folder; the digest and
 * the abstract are taken while it runs).
 */
export interface OffloadPhases<A> {
  /** From the call to `offload` to the start of `writeNewFile`. */
  readonly beforeWrite: A
  /** The part of `beforeWrite` spent inside the other durable-file calls (real paths, folder creation). */
  readonly pathCalls: A
  /** From the start of `writeNewFile` until the offload observes its end. */
  readonly write: A
  /** From there to the offload's result. */
  readonly afterWrite: A
}

/** The durable files' calls during one offload: when each started and ended. */
type CallLog = Array<{ readonly name: keyof DurableFiles.DurableFilesShape; readonly start: number; end: number }>

/** Durable files that log when each call starts and when its caller sees it end. */
const loggingDurableFiles = (inner: DurableFiles.DurableFilesShape, log: CallLog): DurableFiles.DurableFilesShape => {
  const logged =
    <Args extends ReadonlyArray<unknown>, A, E>(
      name: keyof DurableFiles.DurableFilesShape,
      call: (...args: Args) => Effect.Effect<A, E>
    ) =>
    (...args: Args): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        const entry = { name, start: performance.now(), end: Number.NaN }
        log.push(entry)
        return Effect.ensuring(
          call(...args),
          Effect.sync(() => {
            entry.end = performance.now()
          })
        )
      })
  return {
    realPath: logged("realPath", inner.realPath),
    makeDirectories: logged("makeDirectories", inner.makeDirectories),
    writeNewFile: logged("writeNewFile", inner.writeNewFile),
    publishOnce: logged("publishOnce", inner.publishOnce),
    publishReplacing: logged("publishReplacing", inner.publishReplacing),
    syncDirectory: logged("syncDirectory", inner.syncDirectory),
    readFile: logged("readFile", inner.readFile)
  }
}

/** The phases of one offload that started at `started` and returned at `ended`. */
const phasesOf = (log: CallLog, started: number, ended: number): OffloadPhases<number> => {
  const write = log.find((call) => call.name === "writeNewFile")
  if (write === undefined || Number.isNaN(write.end)) throw new Error("the timed offload made no durable write")
  const pathCalls = log
    .filter((call) => call.end <= write.start)
    .reduce((sum, call) => sum + (call.end - call.start), 0)
  return {
    beforeWrite: write.start - started,
    pathCalls,
    write: write.end - write.start,
    afterWrite: ended - write.end
  }
}

const variantNames = [
  "offload, default redactor",
  "offload, no redactor",
  "raw write + same regex scan",
  "raw write",
  "offload, no redactor, timed calls"
] as const
type VariantName = (typeof variantNames)[number]

/** 1 MiB of log text with a credential-looking line every 64 KiB, so the redactor has work to do. */
export const body = (): string => {
  const text = logText(resultBytes)
  const secret = "password=hunter2-not-real\n"
  let out = ""
  for (let at = 0; at < text.length; at += 65_536) out += text.slice(at, at + 65_536 - secret.length) + secret
  return out.slice(0, resultBytes)
}

const createFlags = fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_WRONLY | fs.constants.O_NOFOLLOW

const rawWrite = (file: string, content: string): void => {
  const fd = fs.openSync(file, createFlags, 0o600)
  try {
    fs.writeSync(fd, content)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  const folder = fs.openSync(path.dirname(file), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  try {
    fs.fsyncSync(folder)
  } finally {
    fs.closeSync(folder)
  }
}

/**
 * Offloads `content` to the file `target` (threshold 0, so it is always
 * stored) with the runtime's services; fails when the offload kept it inline.
 */
const offloadInto = async <E>(
  runtime: ManagedRuntime.ManagedRuntime<FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles, E>,
  content: string,
  target: string
): Promise<void> => {
  const outcome = await runtime.runPromise(
    ArtifactOffload.offload({
      content,
      threshold: 0,
      root: path.dirname(target),
      target: path.basename(target),
      readTool: "read_artifact"
    })
  )
  if (!ArtifactOffload.isOffloaded(outcome)) throw new Error(`offload kept the result inline: ${outcome._tag}`)
}

/** Durable files that do nothing but note when the write was asked for. */
const noFileCalls = (noteWrite: () => void): DurableFiles.DurableFilesShape => ({
  realPath: (path) => Effect.succeed(path),
  makeDirectories: () => Effect.void,
  writeNewFile: () =>
    Effect.sync(() => {
      noteWrite()
    }),
  publishOnce: () => Effect.void,
  publishReplacing: () => Effect.void,
  syncDirectory: () => Effect.void,
  // An offload never reads; a read here would be a bug the benchmark should surface.
  readFile: (path) => Effect.die(new Error(`unexpected read of ${path} during an offload`))
})

/** Larger than this machine's caches (a 2-core share of a server CPU's last-level cache is a few MiB). */
const sweptBytes = 64 * 1024 * 1024

/**
 * The offload's own work up to its write, with no file calls: back to back,
 * after a sleep of `sleepMs` (the thread waits in the kernel, as it does
 * while a write syncs), and after a read through {@link sweptBytes}, which
 * leaves none of the code or data the offload touches in the caches.
 */
const beforeWriteAlone = async (content: string, root: string, sleepMs: number) => {
  let writeAt = Number.NaN
  const runtime = ManagedRuntime.make(
    Layer.merge(
      platformLayer,
      Layer.succeed(DurableFiles.DurableFiles)(
        noFileCalls(() => {
          writeAt = performance.now()
        })
      )
    )
  )
  const sweep = new Float64Array(sweptBytes / 8)
  let sink = 0
  const sample = async (count: number, before: () => void): Promise<Stats> => {
    const samples: Array<number> = []
    for (let index = 0; index < count; index++) {
      before()
      writeAt = Number.NaN
      const started = performance.now()
      await offloadInto(runtime, content, path.join(root, "alone.txt"))
      samples.push(writeAt - started)
    }
    return stats(samples)
  }
  try {
    await sample(300, () => {})
    const warm = await sample(200, () => {})
    const afterSleep = await sample(40, () => sleepBlocking(sleepMs))
    const afterSweep = await sample(40, () => {
      // One double per 64-byte line pulls every line through the caches.
      for (let at = 0; at < sweep.length; at += 8) sink += sweep[at] ?? 0
    })
    if (sink !== 0) throw new Error("the sweep buffer is zeroed")
    return { warm, afterSleep, afterSweep, sleepMs, sweptBytes }
  } finally {
    await runtime.dispose()
  }
}

const phaseStats = (all: ReadonlyArray<OffloadPhases<number>>): OffloadPhases<Stats> => ({
  beforeWrite: stats(all.map((one) => one.beforeWrite)),
  pathCalls: stats(all.map((one) => one.pathCalls)),
  write: stats(all.map((one) => one.write)),
  afterWrite: stats(all.map((one) => one.afterWrite))
})

export const run = async (args: OffloadArgs): Promise<OffloadResult> => {
  const content = body()
  const redactor = DefaultRedactor.make()
  const redactedMatches = redactor.spans(content).length
  const root = makeTempDir(args.medium)
  // Built once, as a host builds its runtime: each offload then costs what it costs inside a running harness.
  const plain = ManagedRuntime.make(platformLayer)
  const redacting = ManagedRuntime.make(Layer.merge(platformLayer, DefaultRedactor.layer()))
  const calls: CallLog = []
  const timedCalls = ManagedRuntime.make(
    Layer.merge(
      platformLayer,
      Layer.succeed(DurableFiles.DurableFiles)(loggingDurableFiles(NodeDurableFiles.make(), calls))
    )
  )
  const phases: Array<OffloadPhases<number>> = []
  try {
    const bodies: Record<VariantName, (target: string) => Promise<void> | void> = {
      "offload, default redactor": (target) => offloadInto(redacting, content, target),
      "offload, no redactor": (target) => offloadInto(plain, content, target),
      "raw write + same regex scan": (target) => rawWrite(target, redactor.redactText(content)),
      "raw write": (target) => rawWrite(target, content),
      "offload, no redactor, timed calls": async (target) => {
        calls.length = 0
        const started = performance.now()
        await offloadInto(timedCalls, content, target)
        phases.push(phasesOf(calls, started, performance.now()))
      }
    }
    const folderOf = (name: VariantName) => path.join(root, name.replace(/[^a-z]+/g, "-"))
    for (const name of variantNames) fs.mkdirSync(folderOf(name))
    const samples = await interleave(
      args.plan,
      Object.fromEntries(
        variantNames.map((name) => [
          name,
          (rep: number) => bodies[name](path.join(folderOf(name), `r${rep + args.plan.warmup}.txt`))
        ])
      ) as Record<VariantName, (rep: number) => Promise<void> | void>
    )
    const variants = variantNames.map((name): OffloadVariant => {
      const ms = stats(samples[name])
      return { name, ms, mibPerSecond: resultBytes / 1024 / 1024 / (ms.median / 1000) }
    })
    return {
      medium: args.medium,
      bytes: resultBytes,
      variants,
      redactedMatches,
      defaultRedactorRatio: pairedRatio(samples["offload, default redactor"], samples["raw write + same regex scan"]),
      noRedactorRatio: pairedRatio(samples["offload, no redactor"], samples["raw write"]),
      // The warm-up repetitions' phases are dropped, as their times are.
      phases: phaseStats(phases.slice(args.plan.warmup)),
      beforeWriteAlone: await beforeWriteAlone(content, root, stats(samples["raw write"]).median)
    }
  } finally {
    await plain.dispose()
    await redacting.dispose()
    await timedCalls.dispose()
    removeDir(root)
  }
}
