/**
 * Offload throughput: 1 MiB results through `ArtifactOffload.offload` with
 * the default redactor and with none, against a raw write of the same bytes
 * with the same durability, and a raw write after the same regex scan.
 *
 * Same durability means what `NodeDurableFiles.writeNewFile` does: create
 * exclusively, write, fsync the file, close, fsync the folder.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { ArtifactOffload, DefaultRedactor } from "@tessera/artifacts"
import { Layer, ManagedRuntime } from "effect"
import { type Medium, makeTempDir, type Plan, removeDir, repeat, type Stats, stats } from "./Harness.ts"
import { logText, platformLayer } from "./World.ts"

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
}

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

export const run = async (args: OffloadArgs): Promise<OffloadResult> => {
  const content = body()
  const redactor = DefaultRedactor.make()
  const redactedMatches = redactor.spans(content).length
  const root = makeTempDir(args.medium)
  // Built once, as a host builds its runtime: each offload then costs what it costs inside a running harness.
  const plain = ManagedRuntime.make(platformLayer)
  const redacting = ManagedRuntime.make(Layer.merge(platformLayer, DefaultRedactor.layer()))
  try {
    const variants: Array<OffloadVariant> = []
    const measure = async (name: string, once: (target: string) => Promise<void> | void) => {
      const folder = path.join(root, name)
      fs.mkdirSync(folder, { recursive: true })
      const samples = await repeat(args.plan, (rep) => once(path.join(folder, `r${rep + args.plan.warmup}.txt`)))
      const ms = stats(samples)
      variants.push({ name, ms, mibPerSecond: resultBytes / 1024 / 1024 / (ms.median / 1000) })
    }
    const offloadWith = (redact: boolean) => async (target: string) => {
      const effect = ArtifactOffload.offload({
        content,
        threshold: 0,
        root: path.dirname(target),
        target: path.basename(target),
        readTool: "read_artifact"
      })
      const outcome = await (redact ? redacting : plain).runPromise(effect)
      if (!ArtifactOffload.isOffloaded(outcome)) throw new Error(`offload kept the result inline: ${outcome._tag}`)
    }
    await measure("offload, no redactor", offloadWith(false))
    await measure("offload, default redactor", offloadWith(true))
    await measure("raw write + same regex scan", (target) => rawWrite(target, redactor.redactText(content)))
    await measure("raw write", (target) => rawWrite(target, content))
    return { medium: args.medium, bytes: resultBytes, variants, redactedMatches }
  } finally {
    await plain.dispose()
    await redacting.dispose()
    removeDir(root)
  }
}
