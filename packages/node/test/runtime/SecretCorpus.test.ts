import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactOffload, ArtifactPointer, DefaultRedactor } from "@tessera/artifacts"
import { Compaction, EntryGate, Model, TaskExecution } from "@tessera/runtime"
import { Effect, Layer, Option } from "effect"
import { type CorpusEntry, leaked, secretCorpus } from "./support/secretCorpus.ts"
import { isSummaryRequest, requests, requestText, start, tools, turnLayer } from "./support/turns.ts"
import { dataFolderOf, platformLayer, runInWorld, task, withTempDir } from "./support/world.ts"

const filler = "\n--- end of tool output ---\n".padEnd(400, ".")
const required = 0.98

/** Prints every miss with its kind and returns the share redacted. */
const report = (place: string, missed: ReadonlyArray<CorpusEntry>): number => {
  const rate = 1 - missed.length / secretCorpus.length
  console.log(
    `secret corpus, ${place}: ${secretCorpus.length - missed.length}/${secretCorpus.length} redacted (${(rate * 100).toFixed(1)}%)`
  )
  for (const miss of missed) console.log(`  MISS ${place} [${miss.kind}] ${JSON.stringify(miss.text.slice(0, 160))}`)
  return rate
}

describe("secret corpus through the default redactor", () => {
  it("holds at least 300 secrets of at least 45 kinds", () => {
    const kinds = new Set(secretCorpus.map((entry) => entry.kind))
    console.log(`secret corpus: ${secretCorpus.length} secrets of ${kinds.size} kinds`)
    assert.isAtLeast(secretCorpus.length, 300)
    assert.isAtLeast(kinds.size, 45)
    for (const entry of secretCorpus) assert.include(entry.text, entry.secret.split("\n")[0] ?? "", entry.kind)
  })

  it("each secret in its own offloaded tool result: at least 98% never reach the file on disk or the pointer's abstract; every miss is listed with its kind", () =>
    withTempDir(async (dir) => {
      const root = path.join(dir, "artifacts")
      const outcomes = await Effect.runPromise(
        Effect.forEach(
          secretCorpus,
          (entry, index) =>
            Effect.map(
              ArtifactOffload.offload({
                content: `${entry.text}${filler}`,
                threshold: 64,
                root,
                target: `results/${index}.txt`,
                readTool: "read_artifact",
                abstractBytes: 2_000
              }),
              (result) => ({ entry, index, result })
            ),
          { concurrency: 8 }
        ).pipe(Effect.provide(Layer.merge(platformLayer, DefaultRedactor.layer())))
      )
      const onDisk: Array<CorpusEntry> = []
      const inAbstract: Array<CorpusEntry> = []
      for (const { entry, index, result } of outcomes) {
        assert.strictEqual(result._tag, "Offloaded", entry.kind)
        if (result._tag !== "Offloaded") continue
        const stored = fs.readFileSync(path.join(root, "results", `${index}.txt`), "utf8")
        if (leaked(stored, entry.secret)) onDisk.push(entry)
        const abstract = Option.getOrThrow(ArtifactPointer.parse(result.pointer)).abstract
        if (leaked(abstract, entry.secret)) inAbstract.push(entry)
      }
      assert.isAtLeast(report("on disk", onDisk), required)
      assert.isAtLeast(report("in abstracts", inAbstract), required)
    }))

  it("all secrets in one model-written summary: at least 98% never reach the staged summary file or the next request; every miss is listed with its kind", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const runtime = yield* world.openRuntime(Option.some(world.privateRef))
        const scope = yield* world.scopeFor([world.privateRef])
        const context = yield* runtime.bindTask({ scope, output: Option.none() })
        const binding = yield* EntryGate.bind(context, {
          // The summary is the whole corpus: its limit must not cut any of it away.
          policy: Compaction.threshold({
            measure: "bytes",
            limit: 5_000,
            keepRecent: 0,
            pieceLimit: 100_000,
            summaryLimit: 1_000_000
          })
        })
        const summary = secretCorpus.map((entry) => entry.text).join("\n\n")
        const script = (request: Model.ModelRequest, index: number) =>
          isSummaryRequest(request)
            ? Model.response({ text: summary })
            : index < 2
              ? // Two tool steps: the first result is summarized once the model has seen it.
                Model.response({ toolCalls: [Model.toolCall(`c${index + 1}`, "produce", { size: 6_000, fill: "x" })] })
              : Model.response({ text: "done" })
        const sent = yield* Effect.gen(function* () {
          yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
          return yield* requests
        }).pipe(Effect.provide(Layer.merge(turnLayer(world, task, script), DefaultRedactor.layer())))
        const folder = dataFolderOf(world, world.privateRef)
        const staged = fs.readFileSync(path.join(folder, "summaries", "task-1-t1", "3.txt"), "utf8")
        const next = requestText(sent.at(-1) as Model.ModelRequest)
        assert.include(next, staged, "the next request carries the staged (scrubbed) summary")
        const missed = secretCorpus.filter((entry) => leaked(staged, entry.secret) || leaked(next, entry.secret))
        assert.isAtLeast(report("in summaries", missed), required)
      })
    ))
})
