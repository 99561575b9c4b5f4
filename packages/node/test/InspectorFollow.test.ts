/**
 * `Inspector.follow` and `tessera-inspect --follow`: a live view of a task's
 * journal, each entry emitted once its line is complete (newline written),
 * in order, as a writer journals it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Inspector } from "@tessera/node"
import { Journal, JournalEntry } from "@tessera/runtime"
import { Effect, Exit, Fiber, Queue, Schema, Stream } from "effect"
import { completeLines, followFile, type LineSplitter } from "../src/internal/inspectFollow.js"
import { inspectedFolder, startBin, verbatimTask } from "./support/inspectedFolder.ts"
import { nodeLayer, taskId, tempDir } from "./support/temp.ts"

const task = taskId("followed")
const sha = (digit: string) => digit.repeat(64)
const turnEntries: ReadonlyArray<JournalEntry.EntryInput> = [
  { _tag: "TurnOpened", turn: 1, task },
  { _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 10, sha256: sha("a") },
  {
    _tag: "ResponseReceived",
    turn: 1,
    step: 1,
    textSize: 4,
    textSha256: sha("b"),
    toolCalls: [],
    usage: { inputTokens: 5, outputTokens: 2 }
  },
  { _tag: "TurnClosed", turn: 1, steps: 1 }
]
/** The line a writer would journal next: the second turn's opening, to be written in two halves. */
const tornLine = `${JSON.stringify({ _tag: "TurnOpened", seq: 4, at: Date.UTC(2026, 0, 1), turn: 2, task })}\n`

/** A follower that treats the bytes after the last newline as a line: the wiring the newline check guards against. */
const everyLine: LineSplitter = (bytes) => {
  const { consumed, lines } = completeLines(bytes)
  return consumed === bytes.length
    ? { consumed, lines }
    : { consumed: bytes.length, lines: [...lines, bytes.subarray(consumed)] }
}

/**
 * A journal written through `Journal.open` while a follower reads it: four
 * entries appended one by one (each awaited from the follower before the
 * next), then a line written in two halves with the follower polling in
 * between. What the follower emitted, and how it stood while the line was cut.
 */
const scenario = (split: LineSplitter | undefined) =>
  Effect.gen(function* () {
    const folder = yield* tempDir
    const file = path.join(folder, Journal.fileName(task))
    const seen = yield* Queue.unbounded<JournalEntry.Entry>()
    const order: Array<number> = []
    const follower = yield* Effect.scoped(
      Effect.gen(function* () {
        const journal = yield* Journal.open({ folder, task })
        const [first, ...rest] = turnEntries
        if (first !== undefined) yield* journal.append(first)
        const follower = yield* followFile(file, { interval: 10, ...(split === undefined ? {} : { split }) }).pipe(
          Stream.runForEach((entry) => Queue.offer(seen, entry)),
          Effect.forkDetach
        )
        order.push((yield* Queue.take(seen)).seq)
        for (const entry of rest) {
          yield* journal.append(entry)
          order.push((yield* Queue.take(seen)).seq)
        }
        return follower
      })
    )
    const half = Math.floor(tornLine.length / 2)
    fs.appendFileSync(file, tornLine.slice(0, half))
    yield* Effect.sleep(150)
    const whileCut = { emitted: yield* Queue.size(seen), ended: follower.pollUnsafe() }
    fs.appendFileSync(file, tornLine.slice(half))
    const completed =
      whileCut.ended === undefined ? yield* Queue.take(seen).pipe(Effect.timeoutOption(5_000)) : undefined
    yield* Fiber.interrupt(follower)
    return { order, whileCut, completed }
  })

describe("Inspector.follow", () => {
  it("completeLines: only lines ending with their newline, and the bytes they took", () => {
    const bytes = new TextEncoder().encode('{"a":1}\n\n{"b":2}\n{"c":')
    const { consumed, lines } = completeLines(bytes)
    assert.deepStrictEqual(
      lines.map((line) => new TextDecoder().decode(line)),
      ['{"a":1}', "", '{"b":2}']
    )
    assert.strictEqual(consumed, 17)
    assert.deepStrictEqual(completeLines(new TextEncoder().encode('{"c":')), { lines: [], consumed: 0 })
  })

  it.live(
    "follow_waits_for_the_newline: entries a writer appends through Journal.open arrive in order; a line cut mid-append is not emitted until its newline is written, then it is (control: a follower without the newline check fails on the torn line)",
    () =>
      Effect.gen(function* () {
        const followed = yield* scenario(undefined)
        assert.deepStrictEqual(followed.order, [0, 1, 2, 3])
        assert.deepStrictEqual(followed.whileCut, { emitted: 0, ended: undefined }, "nothing emitted, still following")
        assert.isDefined(followed.completed)
        const entry = followed.completed?._tag === "Some" ? followed.completed.value : undefined
        assert.deepStrictEqual(
          [entry?._tag, entry?.seq, entry !== undefined && "turn" in entry ? entry.turn : 0],
          ["TurnOpened", 4, 2]
        )

        const naive = yield* scenario(everyLine)
        assert.deepStrictEqual(naive.order, [0, 1, 2, 3], "complete lines are followed alike")
        const ended = naive.whileCut.ended
        assert.isDefined(ended, "the control: the torn line ended the naive follower")
        assert.isTrue(ended !== undefined && Exit.isFailure(ended))
        assert.include(String(ended !== undefined && Exit.isFailure(ended) ? ended.cause : ""), "JournalCorrupt")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "follow_filters_and_locates: Inspector.follow finds the task's journal in a namespace folder and emits only the entries its filters keep; an unknown task is TaskNotFound, a bad filter InvalidFilter, before anything is read",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder } = yield* inspectedFolder(stateDir)
        const all = (yield* Inspector.inspect(folder, { task: verbatimTask })).journals[0]?.entries ?? []
        const kept = yield* Inspector.follow(folder, {
          task: verbatimTask,
          kinds: ["ToolCalled,ApprovalRequested"]
        }).pipe(Stream.take(3), Stream.runCollect)
        assert.deepStrictEqual(
          kept,
          all.filter((entry) => entry._tag === "ToolCalled" || entry._tag === "ApprovalRequested")
        )
        const missing = yield* Effect.flip(Stream.runDrain(Inspector.follow(folder, { task: taskId("task-9") })))
        assert.strictEqual(missing._tag, "TaskNotFound")
        const bad = yield* Effect.flip(Stream.runDrain(Inspector.follow(folder, { task: verbatimTask, turn: 0 })))
        assert.strictEqual(bad._tag, "InvalidFilter")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "follow_cli_ndjson: `--follow --json` prints the task's entries as NDJSON, then each entry a writer appends, until SIGINT",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, journal } = yield* inspectedFolder(stateDir)
        const before = (yield* Journal.readEntries({ folder: journal, task: verbatimTask })).length
        // Killed when the test ends, whatever happened: a follower never ends by itself.
        const child = yield* Effect.acquireRelease(
          Effect.sync(() => startBin(folder, "--task", verbatimTask, "--follow", "--json")),
          (started) => Effect.sync(() => started.exitCode === null && started.kill("SIGKILL"))
        )
        let stdout = ""
        let stderr = ""
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString("utf8")
        })
        child.stderr.on("data", (chunk: Buffer) => {
          stderr += chunk.toString("utf8")
        })
        const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
        const lines = () => stdout.split("\n").filter((line) => line.length > 0)
        const waitFor = (count: number) =>
          Effect.promise(async () => {
            const deadline = Date.now() + 30_000
            while (lines().length < count && Date.now() < deadline) await new Promise((wake) => setTimeout(wake, 20))
          })
        yield* waitFor(before)
        assert.strictEqual(lines().length, before, stderr)
        yield* Effect.scoped(
          Effect.gen(function* () {
            const writer = yield* Journal.open({ folder: journal, task: verbatimTask })
            yield* writer.append({
              _tag: "ApprovalDecided",
              turn: 1,
              step: 3,
              callId: "d1",
              approved: true,
              by: "test"
            })
          })
        )
        yield* waitFor(before + 1)
        child.kill("SIGINT")
        const code = yield* Effect.promise(() => exited)
        const decoded = lines().map((line) => Schema.decodeUnknownSync(JournalEntry.EntryLine)(line))
        assert.deepStrictEqual(
          decoded.map((entry) => entry.seq),
          Array.from({ length: before + 1 }, (_, seq) => seq)
        )
        assert.strictEqual(decoded.at(-1)?._tag, "ApprovalDecided")
        assert.strictEqual(code, 130, "interrupted by SIGINT")
        assert.strictEqual(stderr, "")
      }).pipe(Effect.provide(nodeLayer))
  )
})
