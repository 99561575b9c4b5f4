/**
 * Journal reopen: opening a journal of 100,000 entries (read, decode every
 * line against the entry Schema, replay the state transitions) against
 * reading the same file and `JSON.parse`-ing each line raw.
 *
 * The journal is written once through the real `Journal` on tmpfs (so its
 * 100,000 synced appends cost seconds, not minutes), then copied to the
 * measured medium. Each sample starts after a full garbage collection: the
 * two readers leave about the same garbage, and without it whichever ran
 * second often paid for collecting the other's.
 *
 * The Schema check alone (decoding the already parsed lines with the
 * journal's entry Schema) is measured as well: it is what a reopen does
 * beyond the raw reader, besides replaying the state.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Journal, JournalEntry } from "@tessera/runtime"
import { Effect, ManagedRuntime, Result, Schema } from "effect"
import {
  collectGarbage,
  interleave,
  type Medium,
  makeTempDir,
  type Plan,
  pairedRatio,
  removeDir,
  type Stats,
  stats
} from "./Harness.ts"
import { platformLayer, task } from "./World.ts"

export interface ReopenArgs {
  readonly medium: Medium
  readonly entries: number
  readonly plan: Plan
}

export interface ReopenResult {
  readonly medium: Medium
  readonly entries: number
  readonly fileBytes: number
  readonly journalMs: Stats
  readonly rawMs: Stats
  readonly ratio: number
  /** Decoding every parsed line with `JournalEntry.Entry`, alone. */
  readonly schemaCheckMs: Stats
}

const digest = (text: string): string => createHash("sha256").update(text).digest("hex")

/** Writes `entries` entries: turns of 100 tool steps each, every step four entries. */
const writeJournal = (folder: string, entries: number) =>
  Effect.scoped(
    Effect.gen(function* () {
      const journal = yield* Journal.open({ folder, task })
      let written = 0
      while (written < entries) {
        const turn = yield* journal.openTurn
        written++
        for (let step = 1; written < entries; step++) {
          const callId = `call-${turn.turn}-${step}`
          const last = step === 100 || entries - written <= 3
          yield* journal.append({
            _tag: "RequestDispatched",
            turn: turn.turn,
            step,
            parts: 2 * step + 1,
            size: 1_200 * step,
            sha256: digest(`request ${callId}`)
          })
          yield* journal.append({
            _tag: "ResponseReceived",
            turn: turn.turn,
            step,
            textSize: 0,
            textSha256: digest(""),
            toolCalls: last ? [] : [{ callId, name: "produce" }]
          })
          written += 2
          if (last) {
            yield* journal.closeTurn
            written++
            break
          }
          yield* journal.append({
            _tag: "ToolCalled",
            turn: turn.turn,
            step,
            callId,
            name: "produce",
            inputSize: 14,
            inputSha256: digest(`input ${callId}`)
          })
          yield* journal.append({
            _tag: "ToolResulted",
            turn: turn.turn,
            step,
            callId,
            name: "produce",
            isError: false,
            size: 1_024,
            sha256: digest(`result ${callId}`)
          })
          written += 2
        }
      }
      return (yield* journal.state).entries
    })
  )

const rawParse = (file: string): number => {
  const lines = fs.readFileSync(file, "utf8").split("\n")
  let parsed = 0
  for (const line of lines) {
    if (line.length === 0) continue
    JSON.parse(line)
    parsed++
  }
  return parsed
}

const decodeEntry = Schema.decodeUnknownResult(JournalEntry.Entry)

/** Milliseconds to decode every line of `file`, parsed beforehand, with the entry Schema; once per repetition. */
const schemaCheck = (file: string, plan: Plan): Array<number> => {
  const values = fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line): unknown => JSON.parse(line))
  const samples: Array<number> = []
  for (let rep = -plan.warmup; rep < plan.reps; rep++) {
    collectGarbage()
    const started = performance.now()
    for (const value of values) {
      if (Result.isFailure(decodeEntry(value))) throw new Error("a written entry does not decode")
    }
    if (rep >= 0) samples.push(performance.now() - started)
  }
  return samples
}

export const run = async (args: ReopenArgs): Promise<ReopenResult> => {
  const scratch = makeTempDir("memory")
  const root = makeTempDir(args.medium)
  try {
    const written = await Effect.runPromise(writeJournal(scratch, args.entries).pipe(Effect.provide(platformLayer)))
    const file = path.join(root, Journal.fileName(task))
    fs.copyFileSync(path.join(scratch, Journal.fileName(task)), file)
    const reopen = Effect.scoped(Effect.flatMap(Journal.open({ folder: root, task }), (journal) => journal.state))
    // Built once, as a host builds its runtime: a sample is the open, not the layer's construction.
    const runtime = ManagedRuntime.make(platformLayer)
    let reopened = 0
    let parsed = 0
    const samples = await interleave(
      args.plan,
      {
        journal: async () => {
          reopened = (await runtime.runPromise(reopen)).entries
        },
        raw: () => {
          parsed = rawParse(file)
        }
      },
      { collectBefore: true }
    )
    await runtime.dispose()
    const schemaCheckMs = stats(schemaCheck(file, args.plan))
    if (reopened !== written || parsed !== written) {
      throw new Error(`wrote ${written} entries, reopened ${reopened}, parsed ${parsed}`)
    }
    const journalMs = stats(samples.journal)
    const rawMs = stats(samples.raw)
    return {
      medium: args.medium,
      entries: written,
      fileBytes: fs.statSync(file).size,
      journalMs,
      rawMs,
      ratio: pairedRatio(samples.journal, samples.raw),
      schemaCheckMs
    }
  } finally {
    removeDir(root)
    removeDir(scratch)
  }
}
