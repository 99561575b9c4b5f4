/**
 * The read tool's exact output: the header, the content, the notes and every
 * refusal's text are what the model reads and acts on (the numbers in a cut
 * note are the next request it sends), so each is pinned here word for word,
 * for each selection, each cut and each refusal. Content room is checked as
 * the cap less the widest header and notes, and a byte cut against the
 * platform's own UTF-8 decoder over adversarial bytes (fast-check). Each
 * guarantee has a control: a deliberately wrong variant (an off-by-one
 * continuation, a cut counting raw bytes, a reader that takes the first
 * volume) fails the same check.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPath } from "@tessera/artifacts"
import { DurableFiles, type Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { type Executor, FilesystemTaskRuntime, Model, Tool, ToolResults } from "@tessera/runtime"
import { Effect, Layer, Option, Schema } from "effect"
import * as fc from "fast-check"
import { plant, platformLayer, type ReadWorld, reviewer, runInReadWorld, task } from "./support/readWorld.ts"

const W = Number.MAX_SAFE_INTEGER
const small = { maxOutputBytes: 1_024 }
const encoder = new TextEncoder()
const bytesOf = (text: string): number => encoder.encode(text).byteLength

const put = (folder: string, name: string, content: string | Uint8Array): string => {
  const file = path.join(folder, "artifacts", "tool-results", name)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, content)
  return `tool-results/${name}`
}
const mine = (world: ReadWorld, name: string, content: string | Uint8Array) => put(world.folders.mine, name, content)
const own = (world: ReadWorld) => world.bind([{ volume: world.mine, access: ["read", "write"] }])

const read = (
  context: FilesystemTaskRuntime.TaskContext,
  request: ToolResults.ReadRequest,
  options?: ToolResults.ReadOptions
) => ToolResults.readArtifact(context, request, options)
const refused = (
  context: FilesystemTaskRuntime.TaskContext,
  request: ToolResults.ReadRequest,
  options?: ToolResults.ReadOptions
) => Effect.flip(ToolResults.readArtifact(context, request, options))

/** The room a bytes read leaves for content: the cap less the widest header and cut note it could show. */
const bytesRoom = (cap: number, echo: string, whole: boolean): number =>
  cap -
  bytesOf(`[artifact-read] path=${echo} size=${W} ${whole ? "whole " : ""}bytes=${W}-${W}`) -
  1 -
  (1 +
    bytesOf(
      `[cut] the output cap of ${cap} bytes was reached; the rest continues at byte ${W} (ask for bytes {"start":${W},"end":${W}})`
    ))

/** The room a lines read leaves: the cap less the widest header, the longer cut note and the scan note. */
const linesRoom = (cap: number, echo: string): number => {
  const alone = `[cut] line ${W} alone does not fit in the output cap of ${cap} bytes; read it by bytes instead`
  const after = `[cut] the output cap of ${cap} bytes was reached after line ${W}; continue with lines {"first":${W + 1},"last":${W}}`
  const scanned = `[cut] only the first ${W} of ${W} bytes were scanned; read the rest by bytes`
  return (
    cap -
    bytesOf(`[artifact-read] path=${echo} size=${W} lines=${W}-${W} of at least ${W}`) -
    1 -
    (1 + Math.max(bytesOf(alone), bytesOf(after))) -
    (1 + bytesOf(scanned))
  )
}

const patternRoom = (cap: number, echo: string, patternEcho: string): number =>
  cap -
  bytesOf(
    `[artifact-read] path=${echo} size=${W} pattern=${patternEcho} matching_lines=${W} shown=${W} of at least ${W} lines`
  ) -
  1 -
  (1 +
    bytesOf(
      `[cut] the output cap of ${cap} bytes was reached after ${W} of ${W} matching lines (the last shown is line ${W}); narrow the pattern or read lines from ${W + 1}`
    )) -
  (1 + bytesOf(`[cut] only the first ${W} of ${W} bytes were scanned; read the rest by bytes`))

describe("exact output of each selection", () => {
  it("whole_read_text: a whole read says `whole bytes=0-(size-1)`, returns the bytes, and is not truncated", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const result = yield* read(context, { path: mine(world, "a.txt", "abc") })
        assert.strictEqual(result.text, `[artifact-read] path="tool-results/a.txt" size=3 whole bytes=0-2\nabc`)
        assert.strictEqual(result.size, 3)
        assert.isFalse(result.truncated)
        assert.deepStrictEqual(result.volume, world.mine)
        const empty = yield* read(context, { path: mine(world, "empty.txt", "") })
        assert.strictEqual(empty.text, `[artifact-read] path="tool-results/empty.txt" size=0 whole bytes=none\n`)
        assert.isFalse(empty.truncated)
      })
    ))

  it("byte_range_text: a range is shown inclusive, clamped to the size, `none` past the end; not `whole`", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "r.txt", "0123456789")
        const header = `[artifact-read] path="tool-results/r.txt" size=10`
        const cases: ReadonlyArray<readonly [{ start: number; end: number }, string]> = [
          [{ start: 2, end: 5 }, `${header} bytes=2-4\n234`],
          [{ start: 0, end: 1 }, `${header} bytes=0-0\n0`],
          [{ start: 7, end: 100 }, `${header} bytes=7-9\n789`],
          [{ start: 4, end: 4 }, `${header} bytes=none\n`],
          [{ start: 12, end: 20 }, `${header} bytes=none\n`],
          [{ start: 10, end: 10 }, `${header} bytes=none\n`]
        ]
        for (const [bytes, expected] of cases) {
          const result = yield* read(context, { path: file, bytes })
          assert.strictEqual(result.text, expected, JSON.stringify(bytes))
          assert.isFalse(result.truncated, JSON.stringify(bytes))
          assert.strictEqual(result.size, 10)
        }
      })
    ))

  it("lines_text: lines first..last of the file, clamped to its length; a final line break starts no line", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const ended = mine(world, "l.txt", "one\ntwo\nthree\n")
        const open = mine(world, "m.txt", "one\ntwo\nthree")
        const blank = mine(world, "b.txt", "one\n\n\nfour\n")
        const h = (name: string, size: number) => `[artifact-read] path="tool-results/${name}" size=${size}`
        const cases: ReadonlyArray<readonly [string, { first: number; last: number }, string]> = [
          [ended, { first: 2, last: 3 }, `${h("l.txt", 14)} lines=2-3 of 3\ntwo\nthree`],
          [ended, { first: 1, last: 1 }, `${h("l.txt", 14)} lines=1-1 of 3\none`],
          [ended, { first: 3, last: 9 }, `${h("l.txt", 14)} lines=3-3 of 3\nthree`],
          [ended, { first: 4, last: 9 }, `${h("l.txt", 14)} lines=none of 3\n`],
          [open, { first: 1, last: 3 }, `${h("m.txt", 13)} lines=1-3 of 3\none\ntwo\nthree`],
          [blank, { first: 1, last: 4 }, `${h("b.txt", 11)} lines=1-4 of 4\none\n\n\nfour`],
          [blank, { first: 2, last: 3 }, `${h("b.txt", 11)} lines=2-3 of 4\n\n`]
        ]
        for (const [file, lines, expected] of cases) {
          const result = yield* read(context, { path: file, lines })
          assert.strictEqual(result.text, expected, `${file} ${JSON.stringify(lines)}`)
          assert.isFalse(result.truncated)
        }
      })
    ))

  it("pattern_text: the matching lines with their numbers, and how many matched of how many", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "p.txt", "a needle\nhay\nneedle b\nhay needle\n")
        const header = `[artifact-read] path="tool-results/p.txt" size=33`
        const hits = yield* read(context, { path: file, pattern: "needle" }, small)
        assert.strictEqual(
          hits.text,
          `${header} pattern="needle" matching_lines=3 shown=3 of 4 lines\n1: a needle\n3: needle b\n4: hay needle`
        )
        assert.isFalse(hits.truncated)
        const none = yield* read(context, { path: file, pattern: "absent" })
        assert.strictEqual(none.text, `${header} pattern="absent" matching_lines=0 shown=0 of 4 lines\n`)
        assert.isFalse(none.truncated)
        // A pattern is plain text: a regular-expression meta character matches only itself.
        const meta = yield* read(context, { path: file, pattern: "." })
        assert.strictEqual(meta.text, `${header} pattern="." matching_lines=0 shown=0 of 4 lines\n`)
      })
    ))
})

describe("cuts: the content gets the cap less the widest header and notes, and the notes say how to go on", () => {
  it("bytes_cut_exact: a long read shows exactly the room, then the note naming the next byte and the end", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "big.txt", "a".repeat(5_000))
        for (const cap of [1_024, 2_000]) {
          const room = bytesRoom(cap, `"${file}"`, true)
          const whole = yield* read(context, { path: file }, { maxOutputBytes: cap })
          assert.strictEqual(
            whole.text,
            `[artifact-read] path="${file}" size=5000 whole bytes=0-${room - 1}\n${"a".repeat(room)}\n` +
              `[cut] the output cap of ${cap} bytes was reached; the rest continues at byte ${room} (ask for bytes {"start":${room},"end":5000})`
          )
          assert.isTrue(whole.truncated)
          assert.isAtMost(bytesOf(whole.text), cap)
          const rangeRoom = bytesRoom(cap, `"${file}"`, false)
          const ranged = yield* read(
            context,
            { path: file, bytes: { start: 100, end: 4_000 } },
            { maxOutputBytes: cap }
          )
          assert.strictEqual(
            ranged.text,
            `[artifact-read] path="${file}" size=5000 bytes=100-${100 + rangeRoom - 1}\n${"a".repeat(rangeRoom)}\n` +
              `[cut] the output cap of ${cap} bytes was reached; the rest continues at byte ${100 + rangeRoom} (ask for bytes {"start":${100 + rangeRoom},"end":4000})`
          )
          // Exactly the room fits whole: no cut, no note.
          const exact = yield* read(
            context,
            { path: file, bytes: { start: 0, end: rangeRoom } },
            { maxOutputBytes: cap }
          )
          assert.isFalse(exact.truncated)
          assert.strictEqual(
            exact.text,
            `[artifact-read] path="${file}" size=5000 bytes=0-${rangeRoom - 1}\n${"a".repeat(rangeRoom)}`
          )
          const over = yield* read(
            context,
            { path: file, bytes: { start: 0, end: rangeRoom + 1 } },
            { maxOutputBytes: cap }
          )
          assert.isTrue(over.truncated)
          assert.include(
            over.text,
            `continues at byte ${rangeRoom} (ask for bytes {"start":${rangeRoom},"end":${rangeRoom + 1}})`
          )
        }
      })
    ))

  it("bytes_cut_between_characters: a cut never splits a character; the next read starts where it begins", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "e.txt", "é".repeat(3_000))
        const room = bytesRoom(1_024, `"${file}"`, true)
        const result = yield* read(context, { path: file }, small)
        const shown = room - (room % 2)
        assert.isTrue(result.truncated)
        const lines = result.text.split("\n")
        assert.strictEqual(lines[0], `[artifact-read] path="${file}" size=6000 whole bytes=0-${shown - 1}`)
        assert.strictEqual(lines[1], "é".repeat(shown / 2))
        assert.include(lines[2], `continues at byte ${shown} `)
        // A four-byte character with three of its bytes inside the room: the read looks one byte past the
        // room, sees the character goes on, and stops before it rather than showing its start as U+FFFD.
        for (const back of [1, 2, 3]) {
          const name = `emoji${back}.txt`
          const straddling = mine(
            world,
            name,
            `${"a".repeat(bytesRoom(1_024, `"tool-results/${name}"`, true) - back)}😀b`
          )
          const roomHere = bytesRoom(1_024, `"${straddling}"`, true)
          const cut = yield* read(context, { path: straddling }, small)
          assert.strictEqual(cut.text.split("\n")[1], "a".repeat(roomHere - back), `${back}`)
          assert.include(cut.text, `continues at byte ${roomHere - back} `)
        }
      })
    ))

  it("lines_cut_exact: lines stop at the room; the note names the last shown and the next range", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const rows = Array.from(
          { length: 100 },
          (_, index) => `row ${String(index + 1).padStart(3, "0")} ${"x".repeat(40)}`
        )
        const file = mine(world, "rows.txt", `${rows.join("\n")}\n`)
        const room = linesRoom(1_024, `"${file}"`)
        // Each row is 48 bytes, a break before every row after the first.
        const fitting = Math.floor((room + 1) / 49)
        const result = yield* read(context, { path: file, lines: { first: 1, last: 90 } }, small)
        assert.strictEqual(
          result.text,
          `[artifact-read] path="${file}" size=${100 * 49} lines=1-${fitting} of 100\n${rows.slice(0, fitting).join("\n")}\n` +
            `[cut] the output cap of 1024 bytes was reached after line ${fitting}; continue with lines {"first":${fitting + 1},"last":90}`
        )
        assert.isTrue(result.truncated)
        // Starting later, the same room: the note's range continues from there.
        const later = yield* read(context, { path: file, lines: { first: 50, last: 200 } }, small)
        assert.include(later.text, `lines=50-${49 + fitting} of 100\n${rows[49]}\n`)
        assert.include(later.text, `continue with lines {"first":${50 + fitting},"last":100}`)
        // Exactly the lines that fit: no note.
        const exact = yield* read(context, { path: file, lines: { first: 1, last: fitting } }, small)
        assert.isFalse(exact.truncated)
        assert.notInclude(exact.text, "[cut]")
      })
    ))

  it("line_alone_note: a first line larger than the room is not shown, and the note says to read it by bytes", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const room = linesRoom(1_024, `"tool-results/long.txt"`)
        const long = "L".repeat(room + 1)
        const file = mine(world, "long.txt", `short\n${long}\nafter\n`)
        const result = yield* read(context, { path: file, lines: { first: 2, last: 3 } }, small)
        assert.strictEqual(
          result.text,
          `[artifact-read] path="${file}" size=${bytesOf(`short\n${long}\nafter\n`)} lines=none of 3\n\n` +
            "[cut] line 2 alone does not fit in the output cap of 1024 bytes; read it by bytes instead"
        )
        assert.isTrue(result.truncated)
        // One byte less fits exactly, alone.
        const fits = mine(world, "fits.txt", `${"L".repeat(room)}\nnext\n`)
        const alone = yield* read(context, { path: fits, lines: { first: 1, last: 2 } }, small)
        assert.include(
          alone.text,
          `lines=1-1 of 2\n${"L".repeat(room)}\n[cut] the output cap of 1024 bytes was reached after line 1; continue with lines {"first":2,"last":2}`
        )
      })
    ))

  it("pattern_cut_exact: matches are shown in order while they fit; a later, smaller match is not shown past a gap", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const room = patternRoom(1_024, `"tool-results/pat.txt"`, `"needle"`)
        const first = "needle one"
        // "1: needle one" takes 13 bytes; the second match takes the rest of the room and one byte more.
        const second = `needle ${"y".repeat(room - 13 - 1 - 3 - 7 + 1)}`
        const content = `${first}\nhay\n${second}\nneedle three\n`
        const file = mine(world, "pat.txt", content)
        const result = yield* read(context, { path: file, pattern: "needle" }, small)
        assert.strictEqual(
          result.text,
          `[artifact-read] path="${file}" size=${bytesOf(content)} pattern="needle" matching_lines=3 shown=1 of 4 lines\n1: ${first}\n` +
            "[cut] the output cap of 1024 bytes was reached after 1 of 3 matching lines (the last shown is line 1); narrow the pattern or read lines from 2"
        )
        assert.isTrue(result.truncated)
        // One byte less and the second match fits exactly; the third then does not.
        const fitting = `needle ${"y".repeat(room - 13 - 1 - 3 - 7)}`
        const content2 = `${first}\nhay\n${fitting}\nneedle three\n`
        const file2 = mine(world, "paq.txt", content2)
        const two = yield* read(context, { path: file2, pattern: "needle" }, small)
        assert.include(two.text, `matching_lines=3 shown=2 of 4 lines\n1: ${first}\n3: ${fitting}\n[cut]`)
        assert.include(
          two.text,
          "after 2 of 3 matching lines (the last shown is line 3); narrow the pattern or read lines from 4"
        )
        assert.isAtMost(bytesOf(two.text), 1_024)
      })
    ))

  it("scan_limit_text: a scan that stops early drops the partial line, counts `at least`, and says how far it got", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "s.txt", "aaaa\nbbbb\ncccc\n")
        const header = `[artifact-read] path="${file}" size=15`
        const lines = yield* read(context, { path: file, lines: { first: 1, last: 5 } }, { maxScanBytes: 7 })
        assert.strictEqual(
          lines.text,
          `${header} lines=1-1 of at least 1\naaaa\n[cut] only the first 7 of 15 bytes were scanned; read the rest by bytes`
        )
        assert.isTrue(lines.truncated)
        const onBreak = yield* read(context, { path: file, lines: { first: 1, last: 5 } }, { maxScanBytes: 10 })
        assert.strictEqual(
          onBreak.text,
          `${header} lines=1-2 of at least 2\naaaa\nbbbb\n[cut] only the first 10 of 15 bytes were scanned; read the rest by bytes`
        )
        const pattern = yield* read(context, { path: file, pattern: "c" }, { maxScanBytes: 12 })
        assert.strictEqual(
          pattern.text,
          `${header} pattern="c" matching_lines=0 shown=0 of at least 2 lines\n\n[cut] only the first 12 of 15 bytes were scanned; read the rest by bytes`
        )
        assert.isTrue(pattern.truncated)
        // A scan of exactly the size scanned it all.
        const all = yield* read(context, { path: file, lines: { first: 3, last: 3 } }, { maxScanBytes: 15 })
        assert.strictEqual(all.text, `${header} lines=3-3 of 3\ncccc`)
        assert.isFalse(all.truncated)
        // The least scan is one byte; a fraction is rounded down; a non-finite limit is the default.
        const least = yield* read(context, { path: file, lines: { first: 1, last: 1 } }, { maxScanBytes: 0 })
        assert.include(least.text, "[cut] only the first 1 of 15 bytes were scanned")
        const fraction = yield* read(context, { path: file, lines: { first: 1, last: 1 } }, { maxScanBytes: 7.9 })
        assert.include(fraction.text, "[cut] only the first 7 of 15 bytes were scanned")
        for (const odd of [Number.NaN, Number.POSITIVE_INFINITY]) {
          const fallback = yield* read(context, { path: file, lines: { first: 1, last: 1 } }, { maxScanBytes: odd })
          assert.strictEqual(fallback.text, `${header} lines=1-1 of 3\naaaa`, `${odd}`)
        }
      })
    ))

  it("cap_option: the cap is raised to the least, rounded down, and the default when not finite; the description says it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "big.txt", "b".repeat(40_000))
        const cases: ReadonlyArray<readonly [number | undefined, number]> = [
          [undefined, ToolResults.defaultReadOutputBytes],
          [10, ToolResults.minReadOutputBytes],
          [1_023, 1_024],
          [1_500.7, 1_500],
          [Number.NaN, ToolResults.defaultReadOutputBytes],
          [Number.POSITIVE_INFINITY, ToolResults.defaultReadOutputBytes]
        ]
        for (const [given, cap] of cases) {
          const options = given === undefined ? {} : { maxOutputBytes: given }
          const result = yield* read(context, { path: file }, options)
          assert.include(result.text, `[cut] the output cap of ${cap} bytes was reached`, `${given}`)
          assert.strictEqual(result.text.split("\n")[1], "b".repeat(bytesRoom(cap, `"${file}"`, true)), `${given}`)
          const tool = ToolResults.readTool(context, options)
          assert.strictEqual(
            tool.spec.description,
            "Reads back a tool result that was stored as an artifact: pass the path of its [artifact] pointer line. " +
              `Without a selection it returns the artifact from its start; select with bytes {start,end}, lines {first,last} or pattern (plain text). At most ${cap} bytes come back per call, and the output says where it was cut.`
          )
        }
      })
    ))
})

const message = (request: string, problem: string, detail: string) =>
  `cannot read artifact ${JSON.stringify(request)} (${problem}): ${detail}`

describe("exact refusals: the model reads the problem and what to do", () => {
  it("invalid_path_details: each bad path is named by its problem and told what to send instead", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        mine(world, "a.txt", "abc")
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["", "Empty: give the relative path exactly as the artifact pointer shows it"],
          ["a\u0000b", "NulByte: give the relative path exactly as the artifact pointer shows it"],
          ["/etc/passwd", "Absolute: give the relative path exactly as the artifact pointer shows it"],
          ["../a.txt", "Traversal: give the relative path exactly as the artifact pointer shows it"],
          ["tool-results/../tool-results/a.txt", "Traversal: `..` segments are never accepted"],
          ["tool-results\\..\\tool-results\\a.txt", "Traversal: `..` segments are never accepted"],
          ["tool-results//a.txt", `not in the canonical form pointers use; did you mean "tool-results/a.txt"?`],
          ["./tool-results/a.txt", `not in the canonical form pointers use; did you mean "tool-results/a.txt"?`],
          ["tool-results\\a.txt", `not in the canonical form pointers use; did you mean "tool-results/a.txt"?`],
          ["tool-results/a.txt/", `not in the canonical form pointers use; did you mean "tool-results/a.txt"?`]
        ]
        for (const [given, detail] of cases) {
          const error = yield* refused(context, { path: given })
          assert.strictEqual(error.problem, "InvalidPath", given)
          assert.strictEqual(error.detail, detail, given)
          assert.strictEqual(error.message, message(given, "InvalidPath", detail), given)
          assert.isUndefined(error.volume)
        }
        const long = "a/".repeat(3_000)
        const tooLong = yield* refused(context, { path: long })
        assert.strictEqual(
          tooLong.detail,
          `TooLong: the path is over ${ArtifactPath.maxTargetBytes} bytes; no artifact pointer names one that long`
        )
      })
    ))

  it("invalid_request_details: two selections, a backwards range, an empty or too long pattern", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "a.txt", "abc")
        const cases: ReadonlyArray<readonly [ToolResults.ReadRequest, string]> = [
          [
            { path: file, bytes: { start: 0, end: 1 }, lines: { first: 1, last: 1 } },
            "give at most one of bytes, lines and pattern"
          ],
          [{ path: file, lines: { first: 1, last: 1 }, pattern: "a" }, "give at most one of bytes, lines and pattern"],
          [{ path: file, bytes: { start: 0, end: 1 }, pattern: "a" }, "give at most one of bytes, lines and pattern"],
          [{ path: file, bytes: { start: 2, end: 1 } }, "bytes.end is before bytes.start"],
          [{ path: file, lines: { first: 2, last: 1 } }, "lines.last is before lines.first"],
          [{ path: file, pattern: "" }, "pattern is empty"],
          [
            { path: file, pattern: "x".repeat(1_025) },
            "pattern is 1025 bytes, over the 1024-byte limit; search for a shorter part"
          ],
          [
            { path: file, pattern: "é".repeat(513) },
            "pattern is 1026 bytes, over the 1024-byte limit; search for a shorter part"
          ]
        ]
        for (const [request, detail] of cases) {
          const error = yield* refused(context, request)
          assert.strictEqual(error.problem, "InvalidRequest", detail)
          assert.strictEqual(error.message, message(file, "InvalidRequest", detail))
        }
        // At the limit, a pattern is searched, however its bytes are made up.
        for (const pattern of ["x".repeat(1_024), "é".repeat(512), "€".repeat(341)]) {
          const result = yield* read(context, { path: file, pattern })
          assert.include(result.text, "matching_lines=0 shown=0 of 1 lines")
        }
      })
    ))

  it("not_found_details: the volumes searched, in order, and each granted volume passed over with why", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const name = (ref: Volume.VolumeRef) => `${ref.store}/${ref.volume}`
        const alone = yield* own(world)
        const missing = yield* refused(alone, { path: "tool-results/absent.txt" })
        assert.strictEqual(missing.problem, "NotFound")
        assert.strictEqual(missing.detail, `no volume the task may read holds it (searched ${name(world.mine)})`)
        assert.isUndefined(missing.volume)
        const granted = yield* world.bind([
          { volume: world.mine, access: ["read"] },
          { volume: world.theirs, access: ["read"] },
          { volume: world.journal, access: ["read"] },
          { volume: world.output, access: ["write"] },
          { volume: world.hidden, access: [] }
        ])
        const passed = yield* refused(granted, { path: "tool-results/absent.txt" })
        assert.strictEqual(
          passed.detail,
          `no volume the task may read holds it (searched ${name(world.mine)}, ${name(world.output)}); not searched: ` +
            `${name(world.theirs)}: private to agent reviewer, not to the task's agent researcher; ` +
            `${name(world.journal)}: a journal volume holds no artifacts`
        )
        // The first volume that holds the path answers: the private writer's before a grant's.
        put(world.folders.output, "inside.txt", "INSIDE-OUTPUT-COPY")
        const first = yield* read(granted, { path: "tool-results/inside.txt" })
        assert.deepStrictEqual(first.volume, world.mine)
        assert.isTrue(first.text.endsWith("\nINSIDE-MINE"))
        const second = yield* read(granted, { path: "tool-results/output.txt" })
        assert.deepStrictEqual(second.volume, world.output)
        assert.isTrue(second.text.endsWith("\nINSIDE-OUTPUT"))
        // A file on the way is no folder: not there, so the next volume is tried and none holds it.
        const notDir = yield* refused(granted, { path: "tool-results/inside.txt/deeper" })
        assert.strictEqual(notDir.problem, "NotFound")
        // The reviewer reads its own private volume by grant.
        const theirs = yield* world.bind([{ volume: world.theirs, access: ["read"] }], reviewer)
        const reviewed = yield* read(theirs, { path: "tool-results/theirs.txt" })
        assert.deepStrictEqual(reviewed.volume, world.theirs)
      })
    ))

  it("no_volume_detail: a task of a runtime without a private volume and without grants may read nothing", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const scope = yield* world.host.issueScope(task, [], reviewer)
        const runtime = yield* FilesystemTaskRuntime.fromHost(world.host, { private: Option.none(), scope })
        const taskScope = yield* world.host.issueScope(task, [], reviewer)
        const context = yield* runtime.bindTask({ scope: taskScope, output: Option.none() })
        const error = yield* refused(context, { path: "tool-results/a.txt" })
        assert.strictEqual(error.message, message("tool-results/a.txt", "NotFound", "the task may read no volume"))
      })
    ))

  it("link_and_file_details: a link is named relative to the volume, a folder as a folder; both name the volume", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* own(world)
        const link = yield* refused(context, { path: "tool-results/link" })
        assert.strictEqual(link.problem, "SymlinkRefused")
        assert.strictEqual(link.detail, "artifacts/tool-results/link is a symbolic link, and links are never followed")
        assert.deepStrictEqual(link.volume, world.mine)
        const folder = yield* refused(context, { path: "lnk/inside.txt" })
        assert.strictEqual(folder.detail, "artifacts/lnk is a symbolic link, and links are never followed")
        const notFile = yield* refused(context, { path: "tool-results" })
        assert.strictEqual(notFile.problem, "NotPlainFile")
        assert.strictEqual(notFile.detail, "it is a folder")
        assert.deepStrictEqual(notFile.volume, world.mine)
      })
    ))

  it("primitive_failure_details: a failing primitive is named by its code or as a link outside, never by host folders", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* own(world)
        const failing = (error: unknown) =>
          Layer.succeed(DurableFiles.DurableFiles)({
            ...NodeDurableFiles.make(),
            readFile: () => Effect.fail(error as DurableFiles.DurableFileFailure)
          })
        const request = { path: "tool-results/inside.txt" }
        const eio = yield* refused(context, request).pipe(
          Effect.provide(
            failing(
              new DurableFiles.DurableFileFailure({
                operation: "readFile",
                path: "/host/x",
                code: "EIO",
                detail: "/host/x"
              })
            )
          )
        )
        assert.strictEqual(eio.message, message(request.path, "ReadFailed", "reading failed with EIO"))
        assert.deepStrictEqual(eio.volume, world.mine)
        const outsideLink = yield* refused(context, request).pipe(
          Effect.provide(
            failing(
              new DurableFiles.SymlinkRefused({ operation: "readFile", path: "/host/x", link: "/elsewhere/link" })
            )
          )
        )
        assert.strictEqual(
          outsideLink.detail,
          "a place outside the volume is a symbolic link, and links are never followed"
        )
        const within = yield* refused(context, request).pipe(
          Effect.provide(
            failing(
              new DurableFiles.OutsideWithin({
                operation: "readFile",
                path: "/host/x",
                within: "/host",
                actual: "/elsewhere"
              })
            )
          )
        )
        assert.strictEqual(
          within.message,
          message(request.path, "OutsideRoot", "the file opened does not live below the volume's artifact folder")
        )
        assert.deepStrictEqual(within.volume, world.mine)
        const special = yield* refused(context, request).pipe(
          Effect.provide(
            failing(new DurableFiles.NotPlainFile({ operation: "readFile", path: "/host/x", found: "a FIFO" }))
          )
        )
        assert.strictEqual(special.detail, "it is a FIFO")
        // The real location is the artifact folder itself: not below it, refused.
        const atRoot = Layer.succeed(DurableFiles.DurableFiles)({
          ...NodeDurableFiles.make(),
          readFile: (file) =>
            Effect.succeed({
              bytes: new Uint8Array(fs.readFileSync(file)),
              size: fs.statSync(file).size,
              location: path.join(world.folders.mine, "artifacts")
            })
        })
        const root = yield* refused(context, request).pipe(Effect.provide(atRoot))
        assert.strictEqual(
          root.message,
          message(request.path, "OutsideRoot", "the file opened does not live below the volume's artifact folder")
        )
        assert.deepStrictEqual(root.volume, world.mine)
      })
    ))

  it("folder_unavailable_detail: a granted volume whose folder is gone is a ReadFailed naming that volume", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* world.bind([
          { volume: world.mine, access: ["read"] },
          { volume: world.output, access: ["read"] }
        ])
        fs.rmSync(world.folders.output, { recursive: true, force: true })
        const error = yield* refused(context, { path: "tool-results/absent.txt" })
        assert.strictEqual(
          error.message,
          message("tool-results/absent.txt", "ReadFailed", "the volume's folder is unavailable (ENOENT)")
        )
        assert.deepStrictEqual(error.volume, world.output)
      })
    ))

  it("custody_details: a granted volume out of custody is passed over as such; a store that fails is named only by its tag", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* world.bind([
          { volume: world.mine, access: ["read"] },
          { volume: world.output, access: ["read"] }
        ])
        const metadata = path.join(world.host.store.root, "meta", "volumes", `${world.output.volume}.json`)
        assert.isTrue(fs.existsSync(metadata), metadata)
        const saved = fs.readFileSync(metadata)
        fs.writeFileSync(metadata, "{ not json")
        const failed = yield* refused(context, { path: "tool-results/absent.txt" })
        assert.strictEqual(failed.problem, "ReadFailed")
        assert.match(failed.detail, /^the volume store failed \([A-Za-z]+\)$/)
        assert.notInclude(failed.detail, world.root)
        fs.rmSync(metadata)
        const gone = yield* refused(context, { path: "tool-results/absent.txt" })
        assert.strictEqual(
          gone.detail,
          `no volume the task may read holds it (searched ${world.mine.store}/${world.mine.volume}); not searched: ${world.output.store}/${world.output.volume}: not in the runtime's custody`
        )
        // Control: back in custody, the volume is searched again.
        fs.writeFileSync(metadata, saved)
        const back = yield* refused(context, { path: "tool-results/absent.txt" })
        assert.strictEqual(
          back.detail,
          `no volume the task may read holds it (searched ${world.mine.store}/${world.mine.volume}, ${world.output.store}/${world.output.volume})`
        )
      })
    ))

  it("copied_context_detail: a hand-copied context is refused as ReadFailed with the refusal's own reason", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        mine(world, "a.txt", "abc")
        const context = yield* own(world)
        const copy = { ...context } as FilesystemTaskRuntime.TaskContext
        const error = yield* refused(copy, { path: "tool-results/a.txt" })
        assert.strictEqual(error.problem, "ReadFailed")
        assert.notInclude(error.detail, "the volume store failed")
        assert.include(error.detail, "ToolResults.readableVolumes")
      })
    ))
})

/** Bytes where UTF-8 decisions are made: every class boundary of lead and continuation bytes, line break excluded. */
const edgeByte = fc.constantFrom(
  0x00,
  0x41,
  0x7f,
  0x80,
  0x8f,
  0x90,
  0x9f,
  0xa0,
  0xa9,
  0xbf,
  0xc0,
  0xc1,
  0xc2,
  0xc3,
  0xdf,
  0xe0,
  0xe2,
  0xec,
  0xed,
  0xee,
  0xef,
  0xf0,
  0xf1,
  0xf3,
  0xf4,
  0xf5,
  0xf7,
  0xf8,
  0xfe,
  0xff
)
const validChar = fc.constantFrom(
  "é",
  "€",
  "😀",
  "\u07ff",
  "\u0800",
  "\ud7ff",
  "\ue000",
  "\uffff",
  "\u{10000}",
  "\u{10ffff}"
)
const tailArbitrary = fc.array(
  fc.oneof(
    edgeByte.map((byte) => [byte]),
    validChar.map((char) => [...encoder.encode(char)])
  ),
  { minLength: 1, maxLength: 30 }
)

const utf8 = new TextDecoder("utf-8", { fatal: false })

/**
 * The oracle, from the platform's decoder alone: the longest prefix of `window` that ends where the decoder
 * ends a character (cutting there decodes the same text) and whose decoded text takes at most `room` bytes.
 */
const oracleCut = (window: Uint8Array, room: number): number => {
  const whole = utf8.decode(window)
  for (let length = window.byteLength; length > 0; length--) {
    const head = utf8.decode(window.subarray(0, length))
    if (bytesOf(head) > room) continue
    if (head + utf8.decode(window.subarray(length)) === whole) return length
  }
  return 0
}

/** What a bytes read showed: the count in its header and the content between the header and a cut note. */
const shownOf = (text: string): { readonly count: number; readonly content: string } => {
  const headerEnd = text.indexOf("\n")
  const range = /bytes=(?:none|0-(\d+))$/.exec(text.slice(0, headerEnd))
  const count = range?.[1] === undefined ? 0 : Number(range[1]) + 1
  const cut = text.lastIndexOf("\n[cut]")
  return { count, content: text.slice(headerEnd + 1, cut === -1 ? undefined : cut) }
}

describe("a byte cut measures what the decoder shows", () => {
  it("decoded_cut_matches_decoder: over adversarial bytes at the cut, a read shows exactly the decoder's longest fitting prefix", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = "tool-results/cut.bin"
        const room = bytesRoom(1_024, `"${file}"`, true)
        const checked = yield* Effect.promise(() =>
          fc
            .assert(
              fc.asyncProperty(fc.integer({ min: 0, max: 90 }), tailArbitrary, async (back, tail) => {
                const artifact = new Uint8Array([
                  ...new Uint8Array(Math.max(0, room - back)).fill(0x61),
                  ...tail.flat()
                ])
                mine(world, "cut.bin", artifact)
                const result = await Effect.runPromise(
                  read(context, { path: file }, small).pipe(Effect.provide(platformLayer))
                )
                const window = artifact.subarray(0, Math.min(artifact.byteLength, room + 1))
                const expected = oracleCut(window, room)
                const shown = shownOf(result.text)
                assert.strictEqual(shown.count, expected)
                assert.strictEqual(shown.content, utf8.decode(artifact.subarray(0, expected)))
                assert.strictEqual(result.truncated, expected < artifact.byteLength)
                assert.isAtMost(bytesOf(result.text), 1_024)
              }),
              { numRuns: 200 }
            )
            .then(() => true)
        )
        assert.isTrue(checked)
      })
    ))

  it("decoded_cut_sequences: each lead byte class, each first-continuation range and each cut-short sequence, placed across the cut, is measured as the decoder decodes it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = "tool-results/seq.bin"
        const room = bytesRoom(1_024, `"${file}"`, true)
        const sequences: ReadonlyArray<ReadonlyArray<number>> = [
          [0xc1, 0xa9],
          [0xc2, 0xa9],
          [0xdf, 0xbf],
          [0xe0, 0x80, 0x80],
          [0xe0, 0x9f, 0x80],
          [0xe0, 0xa0, 0x80],
          [0xe1, 0x80, 0x80],
          [0xe2, 0x82, 0x41],
          [0xe2, 0x82, 0xc0],
          [0xed, 0x9f, 0xbf],
          [0xed, 0xa0, 0x80],
          [0xef, 0xbf, 0xbf],
          [0xf0, 0x80, 0x80, 0x80],
          [0xf0, 0x8f, 0x80, 0x80],
          [0xf0, 0x90, 0x80, 0x80],
          [0xf0, 0x9f, 0x98, 0x41],
          [0xf1, 0x80, 0x80, 0x80],
          [0xf4, 0x8f, 0xbf, 0xbf],
          [0xf4, 0x90, 0x80, 0x80],
          [0xf5, 0x80, 0x80, 0x80],
          [0xf7, 0xbf, 0xbf, 0xbf],
          [0xff, 0x80],
          // A whole character followed by a stray continuation byte: the character ends where its class says.
          [0xdf, 0xbf, 0x80],
          [0xe2, 0x82, 0xac, 0x80],
          [0xef, 0xbf, 0xbf, 0xbf],
          [0xf0, 0x9f, 0x98, 0x80, 0x80]
        ]
        for (const sequence of sequences) {
          const repeated = Array.from({ length: 12 }, () => sequence).flat()
          for (let back = 0; back <= 14; back++) {
            const artifact = new Uint8Array([...new Uint8Array(room - back).fill(0x61), ...repeated])
            mine(world, "seq.bin", artifact)
            const result = yield* read(context, { path: file }, small)
            const window = artifact.subarray(0, Math.min(artifact.byteLength, room + 1))
            const expected = oracleCut(window, room)
            const label = `${sequence.map((byte) => byte.toString(16)).join(" ")} back ${back}`
            assert.strictEqual(shownOf(result.text).count, expected, label)
            assert.strictEqual(shownOf(result.text).content, utf8.decode(artifact.subarray(0, expected)), label)
          }
        }
      })
    ))

  it("read_loads_at_most_the_room: a read asks the primitive for at most one byte past the room, whatever the selection", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "huge.txt", "h".repeat(100_000))
        const asked: Array<number | undefined> = []
        const recording = Layer.succeed(DurableFiles.DurableFiles)({
          ...NodeDurableFiles.make(),
          readFile: (target, options) => {
            asked.push(options.maxBytes)
            return NodeDurableFiles.make().readFile(target, options)
          }
        })
        const room = bytesRoom(1_024, `"${file}"`, true)
        yield* read(context, { path: file }, small).pipe(Effect.provide(recording))
        const rangeRoom = bytesRoom(1_024, `"${file}"`, false)
        yield* read(context, { path: file, bytes: { start: 10, end: 90_000 } }, small).pipe(Effect.provide(recording))
        yield* read(context, { path: file, bytes: { start: 10, end: 20 } }, small).pipe(Effect.provide(recording))
        assert.deepStrictEqual(asked, [room + 1, rangeRoom + 1, 10])
      })
    ))

  it("over_returning_primitive: bytes a primitive returns past the selection are never shown", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "abc.txt", "abcdef")
        // A primitive that ignores the range and returns the whole file.
        const generous = Layer.succeed(DurableFiles.DurableFiles)({
          ...NodeDurableFiles.make(),
          readFile: (target, options) => NodeDurableFiles.make().readFile(target, { within: options.within })
        })
        const result = yield* read(context, { path: file, bytes: { start: 0, end: 2 } }).pipe(Effect.provide(generous))
        assert.strictEqual(result.text, `[artifact-read] path="${file}" size=6 bytes=0-1\nab`)
        // Control: the primitive did return more than was asked.
        const all = yield* Effect.gen(function* () {
          const files = yield* DurableFiles.DurableFiles
          return yield* files.readFile(path.join(world.folders.mine, "artifacts", file), {
            within: world.folders.mine,
            maxBytes: 2
          })
        }).pipe(Effect.provide(generous))
        assert.strictEqual(all.bytes.byteLength, 6)
      })
    ))

  it("decoded_cut_matches_decoder, control: a cut counting raw bytes disagrees with the decoder on bytes that are not UTF-8", () => {
    const room = 600
    const rawCut = (window: Uint8Array, most: number) => Math.min(window.byteLength, most)
    const window = new Uint8Array(room + 1).fill(0xff)
    assert.notStrictEqual(rawCut(window, room), oracleCut(window, room))
    assert.strictEqual(oracleCut(window, room), room / 3)
    // And a cut inside a character: raw counting splits the euro sign the decoder keeps whole.
    const euros = encoder.encode("€".repeat(room))
    assert.strictEqual(oracleCut(euros.subarray(0, room + 1), room), room)
    assert.notStrictEqual(
      rawCut(euros.subarray(0, room + 2), room + 1),
      oracleCut(euros.subarray(0, room + 2), room + 1)
    )
  })
})

describe("the tool and the registry", () => {
  it("tool_output_is_read_text: the tool is named, answers with the read's text, and a refusal is a tool error with its message", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const file = mine(world, "a.txt", "abc")
        const tool = ToolResults.readTool(context)
        assert.strictEqual(tool.name, ToolResults.defaultReadToolName)
        assert.strictEqual(ToolResults.defaultReadToolName, "read_artifact")
        const named = ToolResults.readTool(context, { name: "open_pointer" })
        assert.strictEqual(named.name, "open_pointer")
        const ok = yield* Tool.run(Tool.registry(tool), Model.toolCall("c", "read_artifact", { path: file }))
        assert.strictEqual(ok.content, `[artifact-read] path="${file}" size=3 whole bytes=0-2\nabc`)
        assert.isTrue(Option.isNone(ok.failure))
        const bad = yield* Tool.run(Tool.registry(named), Model.toolCall("c", "open_pointer", { path: "../x" }))
        assert.deepStrictEqual(bad.failure, Option.some("Failed"))
        assert.include(
          bad.content,
          message("../x", "InvalidPath", "Traversal: give the relative path exactly as the artifact pointer shows it")
        )
      })
    ))

  it("register_unless_named: the read tool is added last when its name is free; a host tool of the name stays as it was", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* own(world)
        const host = Tool.make({
          name: "read_artifact",
          description: "the host's own",
          input: Schema.Struct({}),
          handler: () => Effect.succeed("host")
        })
        const other = Tool.make({
          name: "other",
          description: "another",
          input: Schema.Struct({}),
          handler: () => Effect.succeed("other")
        })
        const tool = ToolResults.readTool(context)
        const kept = Tool.registry(host, other)
        assert.strictEqual(ToolResults.registerUnlessNamed(kept, tool), kept)
        const added = ToolResults.registerUnlessNamed(Tool.registry(other), tool)
        assert.deepStrictEqual([...added.tools.keys()], ["other", "read_artifact"])
        assert.strictEqual(added.tools.get("read_artifact"), tool)
        assert.deepStrictEqual(
          added.specs.map((spec) => spec.name),
          ["other", "read_artifact"]
        )
        assert.strictEqual(added.specs[1], tool.spec)
      })
    ))

  it("sparing_skips_only_the_read_tool: the tool's own calls keep their result, every other call goes through onToolResult", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      const hooks: Executor.Hooks = {
        beforeTurn: () => Effect.void,
        onToolResult: (context, result) =>
          Effect.sync(() => {
            seen.push(context.call.name)
            return { ...result, content: `offloaded ${context.call.name}` }
          })
      }
      // Casts stand in for the executor's contexts: sparing reads the call's name only.
      const contextOf = (name: string, id: string) => ({ call: { name, id } }) as unknown as Executor.ToolContext
      const result = { content: "raw" } as unknown as Parameters<NonNullable<Executor.Hooks["onToolResult"]>>[1]
      const contentOf = (part: typeof result) => (part as unknown as { content: string }).content

      const byName = ToolResults.sparing(hooks, "read_artifact")
      assert.strictEqual(byName.beforeTurn, hooks.beforeTurn)
      const onToolResult = byName.onToolResult
      assert.isDefined(onToolResult)
      if (onToolResult === undefined) return
      assert.strictEqual(yield* onToolResult(contextOf("read_artifact", "c1"), result), result)
      assert.strictEqual(contentOf(yield* onToolResult(contextOf("grep", "c2"), result)), "offloaded grep")
      assert.deepStrictEqual(seen, ["grep"])

      const byCall = ToolResults.sparing(hooks, (context) => context.call.id === "c9")
      const picked = byCall.onToolResult
      if (picked === undefined) return assert.fail("the spared hooks lost onToolResult")
      assert.strictEqual(yield* picked(contextOf("read_artifact", "c9"), result), result)
      // A call of the tool's name that the predicate does not pick is offloaded: the predicate alone decides.
      assert.strictEqual(contentOf(yield* picked(contextOf("read_artifact", "c8"), result)), "offloaded read_artifact")
      assert.deepStrictEqual(seen, ["grep", "read_artifact"])

      const observers: Executor.Hooks = { beforeTurn: () => Effect.void }
      assert.strictEqual(ToolResults.sparing(observers, "read_artifact"), observers)

      // Control: a sparing that keys on the wrong field (the call id) lets the read tool's result be offloaded again.
      const wrong: Executor.Hooks = {
        ...hooks,
        onToolResult: (context, part) =>
          context.call.id === "read_artifact"
            ? Effect.succeed(part)
            : (hooks.onToolResult?.(context, part) ?? Effect.succeed(part))
      }
      const wrongResult = yield* wrong.onToolResult?.(contextOf("read_artifact", "c1"), result) ??
        Effect.succeed(result)
      assert.notStrictEqual(wrongResult, result)
    }).pipe(Effect.runPromise))
})
