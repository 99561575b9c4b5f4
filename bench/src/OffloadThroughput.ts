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
import {
  interleave,
  type Medium,
  makeTempDir,
  type Plan,
  pairedRatio,
  removeDir,
  type Stats,
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
}

const variantNames = [
  "offload, default redactor",
  "offload, no redactor",
  "raw write + same regex scan",
  "raw write"
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

export const run = async (args: OffloadArgs): Promise<OffloadResult> => {
  const content = body()
  const redactor = DefaultRedactor.make()
  const redactedMatches = redactor.spans(content).length
  const root = makeTempDir(args.medium)
  // Built once, as a host builds its runtime: each offload then costs what it costs inside a running harness.
  const plain = ManagedRuntime.make(platformLayer)
  const redacting = ManagedRuntime.make(Layer.merge(platformLayer, DefaultRedactor.layer()))
  try {
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
    const bodies: Record<VariantName, (target: string) => Promise<void> | void> = {
      "offload, default redactor": offloadWith(true),
      "offload, no redactor": offloadWith(false),
      "raw write + same regex scan": (target) => rawWrite(target, redactor.redactText(content)),
      "raw write": (target) => rawWrite(target, content)
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
      noRedactorRatio: pairedRatio(samples["offload, no redactor"], samples["raw write"])
    }
  } finally {
    await plain.dispose()
    await redacting.dispose()
    removeDir(root)
  }
}
