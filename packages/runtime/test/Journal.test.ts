import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, Volume } from "@tessera/core"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import * as JournalStorage from "@tessera/runtime/JournalStorage"
import { Effect, Exit, FileSystem, Layer, Option, Schema } from "effect"
import * as fc from "fast-check"

const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const digest = "0".repeat(64)

const tempFolder = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
})

/** Opens the journal in its own scope, runs `use`, and closes the file again (a "process"). */
const withJournal = <A, E>(folder: string, use: (journal: Journal.JournalService) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(Journal.open({ folder, task }), use))

/** A small finished turn with one tool step, written through the public API. */
const finishedTurn = (journal: Journal.JournalService) =>
  Effect.gen(function* () {
    yield* journal.openTurn
    yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 2, size: 40, sha256: digest })
    yield* journal.append({
      _tag: "ResponseReceived",
      turn: 1,
      step: 1,
      textSize: 0,
      textSha256: digest,
      toolCalls: [{ callId: "c1", name: "read" }]
    })
    yield* journal.append({
      _tag: "ToolCalled",
      turn: 1,
      step: 1,
      callId: "c1",
      name: "read",
      inputSize: 2,
      inputSha256: digest
    })
    yield* journal.append({
      _tag: "ToolResulted",
      turn: 1,
      step: 1,
      callId: "c1",
      name: "read",
      isError: false,
      size: 10,
      sha256: digest
    })
    yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 2, parts: 4, size: 90, sha256: digest })
    yield* journal.append({
      _tag: "ResponseReceived",
      turn: 1,
      step: 2,
      textSize: 4,
      textSha256: digest,
      toolCalls: []
    })
    return yield* journal.closeTurn
  })

describe("Journal", () => {
  it.effect("a reopened journal rebuilds exactly the state the writer had", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const live = yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          yield* finishedTurn(journal)
          yield* journal.openTurn
          yield* journal.append({ _tag: "RequestDispatched", turn: 2, step: 1, parts: 1, size: 5, sha256: digest })
          return yield* journal.state
        })
      )
      const reopened = yield* withJournal(folder, (journal) => journal.state)
      assert.deepStrictEqual(reopened, live)
      assert.strictEqual(reopened.entries, 10)
      assert.deepStrictEqual(
        reopened.turns.map((turn) => [turn.turn, turn.status, turn.steps, turn.awaitingResponse]),
        [
          [1, "Closed", 2, false],
          [2, "Open", 1, true]
        ]
      )
      assert.strictEqual(Option.getOrThrow(reopened.lastEntry)._tag, "RequestDispatched")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("each append is on disk, as a complete line, when it returns", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const fs = yield* FileSystem.FileSystem
      yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          for (let index = 0; index < 3; index++) {
            yield* journal.append({ _tag: "Admission", operation: `op-${index}`, detail: "ok" })
            const text = yield* fs.readFileString(journal.file).pipe(Effect.orDie)
            const lines = text.split("\n")
            assert.strictEqual(lines.length, index + 2, "one newline-terminated line per append")
            assert.strictEqual(lines.at(-1), "")
            assert.include(lines.at(-2) ?? "", `"op-${index}"`)
          }
        })
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("an entry that does not follow the state or its Schema is refused and nothing is written", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const fs = yield* FileSystem.FileSystem
      yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          yield* journal.openTurn
          const before = yield* fs.readFileString(journal.file).pipe(Effect.orDie)
          const refused = yield* Effect.flip(
            journal.append({
              _tag: "ToolResulted",
              turn: 1,
              step: 0,
              callId: "nobody-asked",
              name: "x",
              isError: false,
              size: 0,
              sha256: digest
            })
          )
          assert.strictEqual(refused._tag, "JournalSequenceError")
          assert.include(refused.message, "nobody-asked")
          const malformed = yield* Effect.flip(
            journal.append({ _tag: "Admission", turn: 0, operation: "turn", detail: "turn numbers start at 1" })
          )
          assert.strictEqual(malformed._tag, "JournalSequenceError")
          assert.include(malformed.message, "does not match its Schema")
          const secondOpen = yield* Effect.flip(journal.openTurn)
          assert.strictEqual(secondOpen._tag, "TurnAlreadyOpen")
          assert.strictEqual(yield* fs.readFileString(journal.file).pipe(Effect.orDie), before)
        })
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("closing an unfinished turn fails with TurnUnfinished naming why, and writes nothing", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          yield* journal.openTurn
          const empty = yield* Effect.flip(journal.closeTurn)
          assert.strictEqual(empty._tag, "TurnUnfinished")
          if (empty._tag === "TurnUnfinished") assert.strictEqual(empty.reason, "NoFinalAnswer")

          yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
          const awaiting = yield* Effect.flip(journal.closeTurn)
          assert.isTrue(awaiting._tag === "TurnUnfinished" && awaiting.reason === "AwaitingResponse")

          yield* journal.append({
            _tag: "ResponseReceived",
            turn: 1,
            step: 1,
            textSize: 0,
            textSha256: digest,
            toolCalls: [
              { callId: "a", name: "read" },
              { callId: "b", name: "read" }
            ]
          })
          yield* journal.append({
            _tag: "ToolCalled",
            turn: 1,
            step: 1,
            callId: "a",
            name: "read",
            inputSize: 0,
            inputSha256: digest
          })
          const missing = yield* Effect.flip(journal.closeTurn)
          assert.strictEqual(missing._tag, "TurnUnfinished")
          if (missing._tag === "TurnUnfinished") {
            assert.strictEqual(missing.reason, "ToolResultsMissing")
            assert.deepStrictEqual(missing.pendingCalls, ["a", "b"])
            assert.include(missing.message, "cannot close unfinished turn 1")
          }
          const state = yield* journal.state
          assert.strictEqual(state.entries, 4, "no refused close was written")
          assert.strictEqual(state.turns[0]?.status, "Open")
        })
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("an unfinished turn can be abandoned, after which a new turn opens", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          yield* journal.openTurn
          yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
          const abandoned = yield* journal.abandonTurn("operator stopped it")
          assert.strictEqual(abandoned.status, "Abandoned")
          const noTurn = yield* Effect.flip(journal.closeTurn)
          assert.strictEqual(noTurn._tag, "NoOpenTurn")
          const next = yield* journal.openTurn
          assert.strictEqual(next.turn, 2)
        })
      )
      const reopened = yield* withJournal(folder, (journal) => journal.state)
      assert.deepStrictEqual(
        reopened.turns.map((turn) => turn.status),
        ["Abandoned", "Open"]
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a resumed turn counts the unanswered request as lost and continues with the next step", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          yield* journal.openTurn
          yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
        })
      )
      // A new process: the request of step 1 never got its response.
      yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          const resumed = yield* journal.resumeTurn
          assert.strictEqual(resumed.awaitingResponse, false)
          assert.strictEqual(resumed.resumptions, 1)
          yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 2, parts: 1, size: 1, sha256: digest })
          yield* journal.append({
            _tag: "ResponseReceived",
            turn: 1,
            step: 2,
            textSize: 2,
            textSha256: digest,
            toolCalls: []
          })
          const closed = yield* journal.closeTurn
          assert.strictEqual(closed.status, "Closed")
          assert.strictEqual(closed.steps, 2)
        })
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("records reserved for later issues round-trip through the file", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const volume = Schema.decodeUnknownSync(Volume.VolumeRef)({ store: "local", volume: "agent-private" })
      const written = yield* withJournal(folder, (journal) =>
        Effect.forEach(
          [
            { _tag: "Admission", operation: "turn", detail: "private writer resolved" },
            { _tag: "Rejection", turn: 1, operation: "summary", reason: "Unauthorized", detail: "no writer" },
            {
              _tag: "SummaryStaged",
              operation: "compaction",
              step: 3,
              volume,
              path: "summaries/compaction/3.txt",
              size: 120,
              sha256: digest
            },
            { _tag: "ArtifactOffloaded", callId: "c9", path: "artifacts/c9.txt", size: 1 << 20, sha256: digest }
          ] as const,
          (entry) => journal.append(entry)
        )
      )
      const read = yield* Journal.readEntries({ folder, task })
      assert.deepStrictEqual(read, written)
      // Every line is exactly the entry's `EntryLine` encoding.
      const lines = nodeFs
        .readFileSync(nodePath.join(folder, Journal.fileName(task)), "utf8")
        .split("\n")
        .slice(0, -1)
      assert.deepStrictEqual(
        lines,
        read.map((entry) => Schema.encodeSync(JournalEntry.EntryLine)(entry))
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a corrupt line in the middle fails the open with JournalCorrupt naming the file and the line", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const fs = yield* FileSystem.FileSystem
      const file = yield* withJournal(folder, (journal) => Effect.as(finishedTurn(journal), journal.file))
      const lines = (yield* fs.readFileString(file).pipe(Effect.orDie)).split("\n")
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["{ not json", "not JSON"],
        [JSON.stringify({ _tag: "Mystery", seq: 2, at: 0 }), "unknown entry"],
        [lines[3]?.replace('"seq":3', '"seq":7') ?? "", "entry out of sequence"]
      ]
      for (const [bad, label] of cases) {
        const damaged = [...lines.slice(0, 3), bad, ...lines.slice(4)].join("\n")
        yield* fs.writeFileString(file, damaged).pipe(Effect.orDie)
        const exit = yield* Effect.exit(withJournal(folder, (journal) => journal.state))
        assert.isTrue(Exit.isFailure(exit), label)
        const error = yield* Effect.flip(withJournal(folder, (journal) => journal.state))
        assert.strictEqual(error._tag, "JournalCorrupt", label)
        if (error._tag === "JournalCorrupt") {
          assert.strictEqual(error.line, 4, label)
          assert.strictEqual(error.file, file, label)
          assert.include(error.message, `line 4`)
        }
        // The damaged file is left as it was for inspection.
        assert.strictEqual(yield* fs.readFileString(file).pipe(Effect.orDie), damaged, label)
      }
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a middle line that is not valid UTF-8 fails the open with JournalCorrupt naming that line", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const file = yield* withJournal(folder, (journal) => Effect.as(finishedTurn(journal), journal.file))
      const lines = nodeFs.readFileSync(file).toString("utf8").split("\n")
      // Line 4 keeps its JSON shape, but one byte inside a string can start no UTF-8 character.
      const [before = "", after = ""] = (lines[3] ?? "").split('"read"')
      const damaged = Buffer.concat([
        Buffer.from(`${lines.slice(0, 3).join("\n")}\n${before}"re`),
        Buffer.from([0xff]),
        Buffer.from(`d"${after}\n${lines.slice(4).join("\n")}`)
      ])
      nodeFs.writeFileSync(file, damaged)
      const error = yield* Effect.flip(withJournal(folder, (journal) => journal.state))
      assert.strictEqual(error._tag, "JournalCorrupt")
      if (error._tag === "JournalCorrupt") {
        assert.deepStrictEqual([error.file, error.line], [file, 4])
        assert.include(error.detail, "UTF-8")
      }
      assert.deepStrictEqual(nodeFs.readFileSync(file), damaged, "the damaged file is left as it was")
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a journal of megabytes reopens to the writer's state, and a damaged later line is named", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      // Lines shorter and longer than the 1 MiB the reopen decodes at a time, multibyte characters included.
      const reasons = ["a".repeat(400_000), "é".repeat(650_000), `${"ü".repeat(200_000)}end`]
      const { file, live } = yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          for (const reason of reasons) {
            yield* journal.openTurn
            yield* journal.abandonTurn(reason)
          }
          return { file: journal.file, live: yield* journal.state }
        })
      )
      const written = nodeFs.readFileSync(file)
      assert.isAbove(written.length, 2 * 1024 * 1024)
      assert.deepStrictEqual(yield* withJournal(folder, (journal) => journal.state), live)
      const entries = yield* Journal.readEntries({ folder, task })
      assert.deepStrictEqual(
        entries.flatMap((entry) => (entry._tag === "TurnAbandoned" ? [entry.reason] : [])),
        reasons
      )

      const lines = written.toString("utf8").split("\n")
      // Line 5 (in the last megabyte) opens the wrong turn; then line 6 holds a byte no UTF-8 character starts with.
      const outOfSequence = [...lines.slice(0, 4), lines[4]?.replace('"turn":3', '"turn":9'), ...lines.slice(5)]
      nodeFs.writeFileSync(file, outOfSequence.join("\n"))
      const sequenceError = yield* Effect.flip(withJournal(folder, (journal) => journal.state))
      assert.deepStrictEqual(
        sequenceError._tag === "JournalCorrupt" ? sequenceError.line : sequenceError._tag,
        5,
        "the out-of-sequence line"
      )
      const cut = written.lastIndexOf("end")
      nodeFs.writeFileSync(file, Buffer.concat([written.subarray(0, cut), Buffer.from([0xff]), written.subarray(cut)]))
      const utf8Error = yield* Effect.flip(withJournal(folder, (journal) => journal.state))
      assert.deepStrictEqual(
        utf8Error._tag === "JournalCorrupt" ? [utf8Error.line, utf8Error.detail] : utf8Error._tag,
        [6, "the line is not valid UTF-8"],
        "the line that is not UTF-8"
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it("an entry's digests and counts are accepted exactly when they are 64 lowercase hex digits and integers in range", () => {
    // The entry checks are hand-written predicates (for reopen speed); this pins them to their definitions.
    const decodes = Schema.is(JournalEntry.RequestDispatched)
    const valid = {
      _tag: "RequestDispatched",
      seq: 0,
      at: 0,
      turn: 1,
      step: 1,
      parts: 0,
      size: 0,
      sha256: "0".repeat(64)
    } as const
    const hex = fc.stringMatching(/^[0-9a-f]{64}$/)
    // One character swapped for a neighbour of the digit and letter ranges, or an uppercase one.
    const nearlyHex = fc
      .tuple(hex, fc.nat(63), fc.constantFrom("/", ":", "`", "g", "A", "F", " ", "é"))
      .map(([text, at, swapped]) => `${text.slice(0, at)}${swapped}${text.slice(at + 1)}`)
    const hexLike = fc.oneof(
      hex,
      nearlyHex,
      hex.map((text) => text.slice(1)),
      hex.map((text) => `${text}0`),
      fc.string()
    )
    fc.assert(
      fc.property(hexLike, (sha256) => {
        assert.strictEqual(decodes({ ...valid, sha256 }), /^[0-9a-f]{64}$/.test(sha256), JSON.stringify(sha256))
      }),
      { numRuns: 2_000 }
    )
    const numberLike = fc.oneof(
      fc.integer({ min: -3, max: 3 }),
      fc.double(),
      fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, Number.NaN, Number.POSITIVE_INFINITY)
    )
    const minimums = { seq: 0, turn: 1, step: 1, parts: 0, size: 0 } as const
    fc.assert(
      fc.property(fc.constantFrom("seq", "turn", "step", "parts", "size"), numberLike, (field, value) => {
        const expected = Number.isSafeInteger(value) && value >= minimums[field]
        assert.strictEqual(decodes({ ...valid, [field]: value }), expected, `${field}: ${value}`)
      }),
      { numRuns: 2_000 }
    )
  })

  it("a last line cut at any byte offset reopens with every complete entry and a record of the cut", async () => {
    const scratch = nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "tessera-"))
    try {
      // The template: a finished turn, then an abandon whose reason has multibyte characters, so
      // cuts also land inside a character.
      const template = nodePath.join(scratch, "template")
      const complete = await Effect.runPromise(
        withJournal(template, (journal) =>
          Effect.gen(function* () {
            yield* finishedTurn(journal)
            yield* journal.openTurn
            yield* journal.abandonTurn("stopped — naïve ünïcode 🧪 reason")
            return yield* journal.state
          })
        ).pipe(Effect.provide(NodeServices.layer))
      )
      const bytes = nodeFs.readFileSync(nodePath.join(template, Journal.fileName(task)))
      const lastLineStart = bytes.subarray(0, bytes.length - 1).lastIndexOf(0x0a) + 1
      const lastLineLength = bytes.length - lastLineStart // includes the newline
      let run = 0

      await fc.assert(
        fc.asyncProperty(
          // All but the newline is a complete entry, which is kept (see "a complete entry without its newline").
          fc.record({ keptOfLastLine: fc.integer({ min: 1, max: lastLineLength - 2 }) }),
          async ({ keptOfLastLine }) => {
            run += 1
            const folder = nodePath.join(scratch, `cut-${run}`)
            nodeFs.mkdirSync(folder)
            const cutFile = nodePath.join(folder, Journal.fileName(task))
            nodeFs.writeFileSync(cutFile, bytes.subarray(0, lastLineStart + keptOfLastLine))

            const program = Effect.gen(function* () {
              const recovered = yield* withJournal(folder, (journal) => journal.state)
              const entries = yield* Journal.readEntries({ folder, task })
              const again = yield* withJournal(folder, (journal) => journal.state)
              return { recovered, entries, again }
            })
            const { again, entries, recovered } = await Effect.runPromise(
              program.pipe(Effect.provide(NodeServices.layer))
            )

            const completeEntries = complete.entries - 1
            assert.strictEqual(entries.length, completeEntries + 1, "every complete entry plus the record of the cut")
            const record = entries.at(-1)
            assert.strictEqual(record?._tag, "TruncationRecovered")
            if (record?._tag === "TruncationRecovered") {
              assert.strictEqual(record.line, completeEntries + 1)
              assert.strictEqual(record.keptBytes, lastLineStart)
              assert.strictEqual(record.droppedBytes, keptOfLastLine)
            }
            assert.deepStrictEqual(recovered.truncations, [{ line: completeEntries + 1, droppedBytes: keptOfLastLine }])
            // The cut dropped the abandon: the second turn is open again, everything before is intact.
            assert.deepStrictEqual(
              recovered.turns.map((turn) => turn.status),
              ["Closed", "Open"]
            )
            assert.deepStrictEqual(recovered.turns[0], complete.turns[0])
            // The repaired file is whole: reopening finds nothing new to recover.
            assert.deepStrictEqual(again, recovered)
            assert.strictEqual(nodeFs.readFileSync(cutFile).at(-1), 0x0a)
          }
        ),
        { numRuns: 60 }
      )
    } finally {
      nodeFs.rmSync(scratch, { recursive: true, force: true })
    }
  })

  /**
   * A journal file whose appends block: `node:fs` calls that throw, as a
   * platform offering `AppendHandle.blocking` provides them.
   */
  const blockingFile: JournalStorage.JournalFileShape = {
    openAppend: (file) =>
      Effect.acquireRelease(
        Effect.sync(() => nodeFs.openSync(file, "a")),
        (fd) => Effect.sync(() => nodeFs.closeSync(fd))
      ).pipe(
        Effect.map((fd) => {
          const failed = (operation: "append" | "sync" | "truncate") => (error: unknown) =>
            new JournalStorage.JournalFileError({ operation, detail: String(error) })
          const write = (line: string) => {
            nodeFs.writeSync(fd, line)
          }
          const sync = () => nodeFs.fsyncSync(fd)
          const append = (line: string) => {
            write(line)
            sync()
          }
          const truncate = (size: number) => {
            nodeFs.ftruncateSync(fd, size)
            nodeFs.fsyncSync(fd)
          }
          return {
            append: (line: string) => Effect.try({ try: () => append(line), catch: failed("append") }),
            write: (line: string) => Effect.try({ try: () => write(line), catch: failed("append") }),
            sync: Effect.try({ try: sync, catch: failed("sync") }),
            truncate: (size: number) => Effect.try({ try: () => truncate(size), catch: failed("truncate") }),
            blocking: { append, write, sync, truncate }
          }
        })
      )
  }

  const fileStyles = [
    { style: "effectful appends (the default file)", file: JournalStorage.fileSystem },
    { style: "blocking appends", file: blockingFile }
  ] as const

  /**
   * `base`, except that the append with index `tearAt` (0-based, counted over
   * this opening) writes only half of its line and then fails, like a full
   * disk; `truncateFails` makes the cut-back fail too. Tears the blocking
   * calls too when `base` has them.
   */
  const tearing = (
    base: JournalStorage.JournalFileShape,
    tearAt: number,
    truncateFails: boolean
  ): JournalStorage.JournalFileShape => ({
    openAppend: (file) =>
      Effect.map(base.openAppend(file), (handle): JournalStorage.AppendHandle => {
        let appends = 0
        const full = new JournalStorage.JournalFileError({ operation: "append", detail: "ENOSPC" })
        const cutFails = new JournalStorage.JournalFileError({ operation: "truncate", detail: "EIO" })
        const tears = () => appends++ === tearAt
        const half = (line: string) => line.slice(0, Math.floor(line.length / 2))
        const blocking = handle.blocking
        return {
          append: (line) =>
            tears() ? handle.append(half(line)).pipe(Effect.andThen(Effect.fail(full))) : handle.append(line),
          write: (line) =>
            tears() ? handle.write(half(line)).pipe(Effect.andThen(Effect.fail(full))) : handle.write(line),
          sync: handle.sync,
          truncate: (size) => (truncateFails ? Effect.fail(cutFails) : handle.truncate(size)),
          ...(blocking === undefined
            ? {}
            : {
                blocking: {
                  append: (line: string) => {
                    if (!tears()) return blocking.append(line)
                    blocking.append(half(line))
                    throw full
                  },
                  write: (line: string) => {
                    if (!tears()) return blocking.write(line)
                    blocking.write(half(line))
                    throw full
                  },
                  sync: blocking.sync,
                  truncate: (size: number) => {
                    if (truncateFails) throw cutFails
                    blocking.truncate(size)
                  }
                }
              })
        }
      })
  })

  describe.each(fileStyles)("with $style", ({ file: base }) => {
    it.effect("appends from many fibers at once land whole, in sequence, and reopen to the same state", () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        const fs = yield* FileSystem.FileSystem
        const state = yield* withJournal(folder, (journal) =>
          Effect.gen(function* () {
            yield* Effect.forEach(
              Array.from({ length: 40 }, (_, index) => index),
              (index) => journal.append({ _tag: "Admission", operation: `op-${index}`, detail: "concurrent" }),
              { concurrency: "unbounded" }
            )
            return yield* journal.state
          })
        ).pipe(Effect.provide(Layer.succeed(JournalStorage.JournalFile)(base)))
        assert.strictEqual(state.entries, 40)
        const lines = (yield* fs.readFileString(nodePath.join(folder, Journal.fileName(task))).pipe(Effect.orDie))
          .split("\n")
          .filter((line) => line.length > 0)
        assert.deepStrictEqual(
          lines.map((line) => (JSON.parse(line) as { seq: number }).seq),
          Array.from({ length: 40 }, (_, index) => index)
        )
        assert.deepStrictEqual(yield* withJournal(folder, (journal) => journal.state), state)
      }).pipe(Effect.provide(NodeServices.layer))
    )

    it.effect(
      "a failed append leaves no torn line: the file is cut back to its last entry and the journal continues",
      () =>
        Effect.gen(function* () {
          const folder = yield* tempFolder
          const fs = yield* FileSystem.FileSystem
          const torn = Layer.succeed(JournalStorage.JournalFile)(tearing(base, 1, false))
          const { file, state } = yield* withJournal(folder, (journal) =>
            Effect.gen(function* () {
              // Multibyte text before the tear: the cut-back must count bytes, not characters.
              yield* journal.append({ _tag: "Admission", operation: "op-0", detail: "ok — ünïcode 🧪" })
              const error = yield* Effect.flip(journal.append({ _tag: "Admission", operation: "op-1", detail: "torn" }))
              assert.strictEqual(error._tag, "JournalIoError")
              assert.include(error.message, "ENOSPC")
              const text = yield* fs.readFileString(journal.file).pipe(Effect.orDie)
              assert.deepStrictEqual(text.split("\n").length, 2, "only the first line, whole, is left")
              yield* journal.append({ _tag: "Admission", operation: "op-2", detail: "ok" })
              return { file: journal.file, state: yield* journal.state }
            })
          ).pipe(Effect.provide(torn))
          assert.strictEqual(state.entries, 2)
          const entries = yield* Journal.readEntries({ folder, task })
          assert.deepStrictEqual(
            entries.map((entry) => (entry._tag === "Admission" ? [entry.seq, entry.operation] : [])),
            [
              [0, "op-0"],
              [1, "op-2"]
            ]
          )
          assert.deepStrictEqual(yield* withJournal(folder, (journal) => journal.state), state)
          assert.isFalse((yield* fs.readFileString(file).pipe(Effect.orDie)).includes("torn"))
        }).pipe(Effect.provide(NodeServices.layer))
    )

    it.effect(
      "when a failed append cannot be cut back, every later append is refused and a reopen recovers the cut",
      () =>
        Effect.gen(function* () {
          const folder = yield* tempFolder
          const torn = Layer.succeed(JournalStorage.JournalFile)(tearing(base, 1, true))
          yield* withJournal(folder, (journal) =>
            Effect.gen(function* () {
              yield* journal.append({ _tag: "Admission", operation: "op-0", detail: "ok" })
              yield* Effect.flip(journal.append({ _tag: "Admission", operation: "op-1", detail: "torn" }))
              const refused = yield* Effect.flip(journal.append({ _tag: "Admission", operation: "op-2", detail: "ok" }))
              assert.strictEqual(refused._tag, "JournalIoError")
              assert.include(refused.message, "reopen the journal")
            })
          ).pipe(Effect.provide(torn))
          const reopened = yield* withJournal(folder, (journal) => journal.state)
          assert.strictEqual(reopened.entries, 2, "the first entry and the record of the cut")
          assert.strictEqual(reopened.truncations.length, 1)
        }).pipe(Effect.provide(NodeServices.layer))
    )
  })

  it.effect("a journal opened for another task is refused as corrupt rather than mixed", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      const fs = yield* FileSystem.FileSystem
      const file = yield* withJournal(folder, (journal) => Effect.as(journal.openTurn, journal.file))
      const other = Schema.decodeUnknownSync(Ids.TaskId)("task-2")
      yield* fs.copyFile(file, nodePath.join(folder, Journal.fileName(other))).pipe(Effect.orDie)
      const error = yield* Effect.flip(Effect.scoped(Journal.open({ folder, task: other })))
      assert.strictEqual(error._tag, "JournalCorrupt")
      assert.include(error.message, "task-1")
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
