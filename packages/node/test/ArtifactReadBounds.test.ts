/**
 * The read tool's output is bounded in every part, not only its content: the
 * echoes of the request's path and pattern, the header, the notes and a
 * refusal's text all count against the output cap, whatever the sizes the
 * model sends; a path the resolver cannot take (200,000 segments, a
 * mebibyte) is a typed refusal, never a defect; an echo that has to be cut
 * is cut between code points. Each guarantee has a control: the old output
 * format, re-created here, or the old join, which spread one argument per
 * segment.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPath } from "@tessera/artifacts"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { type FilesystemTaskRuntime, Model, Tool, ToolResults } from "@tessera/runtime"
import { Effect, Layer, Option, type Path } from "effect"
import * as fc from "fast-check"
import { type ReadWorld, runInReadWorld } from "./support/readWorld.ts"

const encoder = new TextEncoder()
const bytes = (text: string): number => encoder.encode(text).byteLength

const isHigh = (code: number): boolean => code >= 0xd800 && code <= 0xdbff
const isLow = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff

/** Plants the artifacts the reads find: long and multibyte lines, bytes that are not UTF-8, an empty file. */
const plantArtifacts = (world: ReadWorld): void => {
  const folder = path.join(world.folders.mine, "artifacts", "tool-results")
  fs.mkdirSync(folder, { recursive: true })
  const mixed = [
    "needle short",
    `needle ${"é".repeat(3_000)}`,
    `${"needle😀".repeat(2_000)}`,
    "n".repeat(2_000),
    `quote " and backslash \\ and e\u0301 and 中文`,
    ...Array.from({ length: 400 }, (_, index) => `line ${index} hay ${"x".repeat(index % 50)}`)
  ].join("\n")
  fs.writeFileSync(path.join(folder, "mixed.txt"), `${mixed}\n`)
  // Every byte value, then sequences cut short: each maximal invalid subpart decodes to three bytes of U+FFFD.
  const binary = new Uint8Array([
    ...Array.from({ length: 4_096 }, (_, index) => index % 256),
    ...Array.from({ length: 2_000 }, () => 0xff),
    0xe0,
    0xa0,
    0xf0,
    0x90,
    0x80
  ])
  fs.writeFileSync(path.join(folder, "binary.bin"), binary)
  fs.writeFileSync(path.join(folder, "empty.txt"), "")
}

const artifactPaths = ["tool-results/mixed.txt", "tool-results/binary.bin", "tool-results/empty.txt"] as const

const ownContext = (world: ReadWorld) => world.bind([{ volume: world.mine, access: ["read", "write"] }])

/**
 * Text of any size up to 2 MiB, from a few named units repeated (emoji, combining marks, a lone surrogate, quotes,
 * NUL, separators), so a huge input costs nothing to build and a shrunk one reads as its units and its length. A
 * length that cuts a unit leaves what a hostile caller could send: half a pair, half a cluster.
 */
const unit = fc.constantFrom(
  "a",
  "/",
  "é",
  "😀",
  "e\u0301",
  '"',
  "\\",
  "\u0000",
  "\ud800",
  "\n",
  "中",
  "needle",
  "tool-results/"
)
const sized = fc
  .tuple(
    fc.array(unit, { minLength: 1, maxLength: 3 }),
    fc.oneof(
      fc.integer({ min: 1, max: 300 }),
      fc.constantFrom(1_023, 1_024, 1_025, 4_095, 4_096, 4_097, 65_536, 1 << 20, 2 << 20)
    )
  )
  .map(([units, length]) => {
    const piece = units.join("")
    return piece.repeat(Math.ceil(length / piece.length)).slice(0, length)
  })

const pathArbitrary = fc.oneof(
  fc.constantFrom(...artifactPaths),
  sized,
  fc.tuple(fc.constantFrom(...artifactPaths), sized).map(([real, tail]) => `${real}/${tail}`)
)
const patternArbitrary = fc.oneof(
  fc.constantFrom("needle", "é", "😀", "hay", "n".repeat(1_024), "é".repeat(512)),
  sized
)
const selectionArbitrary = fc.oneof(
  fc.constant({}),
  fc
    .tuple(fc.nat({ max: 10_000 }), fc.nat({ max: 10_000 }))
    .map(([a, b]) => ({ bytes: { start: Math.min(a, b), end: Math.max(a, b) } })),
  fc
    .tuple(fc.integer({ min: 1, max: 450 }), fc.integer({ min: 1, max: 450 }))
    .map(([a, b]) => ({ lines: { first: Math.min(a, b), last: Math.max(a, b) } })),
  patternArbitrary.map((pattern) => ({ pattern }))
)
const requestArbitrary = fc
  .tuple(pathArbitrary, selectionArbitrary)
  .map(([pathText, selection]): ToolResults.ReadRequest => ({ path: pathText, ...selection }))
/** A configured cap: the default, or any size, below the least cap included (it is raised to the least). */
const capArbitrary = fc.option(fc.integer({ min: 0, max: 6_000 }), { nil: undefined })

/** The cap the output must keep to: the configured one, raised to the least; the default when none is given. */
const boundOf = (cap: number | undefined): number =>
  cap === undefined ? ToolResults.defaultReadOutputBytes : Math.max(ToolResults.minReadOutputBytes, cap)

/** What the model reads for `request`: the tool's result text, success or tool error alike. */
const throughTool = (
  context: FilesystemTaskRuntime.TaskContext,
  request: ToolResults.ReadRequest,
  cap: number | undefined
) =>
  Tool.run(
    Tool.registry(ToolResults.readTool(context, cap === undefined ? {} : { maxOutputBytes: cap })),
    Model.toolCall("x", ToolResults.defaultReadToolName, request as never)
  )

/** How a request is shown in a counterexample: its fields, long strings by their start and length. */
const shown = (value: unknown): string =>
  JSON.stringify(value, (_, field: unknown) =>
    typeof field === "string" && field.length > 40 ? `${field.slice(0, 20)}…(${field.length} units)` : field
  )

/**
 * The output formats before issue 35, re-created: a refusal's message and the header echoed the path and the
 * pattern whole. For a read that succeeds, the old header is rebuilt from its echoes alone (shorter than the old
 * one was), above the content the read returned.
 */
const oldOutput = (
  request: ToolResults.ReadRequest,
  outcome:
    | { readonly _tag: "Success"; readonly success: ToolResults.ReadResult }
    | { readonly _tag: "Failure"; readonly failure: ToolResults.ArtifactReadRefused }
): string => {
  if (outcome._tag === "Failure") {
    const error = outcome.failure
    return `tool "${ToolResults.defaultReadToolName}" failed: cannot read artifact ${JSON.stringify(error.path)} (${error.problem}): ${error.detail}`
  }
  const echoes = `path=${JSON.stringify(request.path)} size=${outcome.success.size}${request.pattern === undefined ? "" : ` pattern=${JSON.stringify(request.pattern)}`}`
  const body = outcome.success.text.slice(outcome.success.text.indexOf("\n"))
  return `[artifact-read] ${echoes}${body}`
}

describe("the whole output is bounded", () => {
  it("output_within_cap: for any path and pattern size (a few MiB included), any selection and any cap, what the model reads never exceeds the cap", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plantArtifacts(world)
        const context = yield* ownContext(world)
        const services = yield* Effect.context<DurableFiles.DurableFiles | Path.Path>()
        const seen = { succeeded: 0, refused: 0, cut: 0 }
        const withinCap = async (request: ToolResults.ReadRequest, cap: number | undefined): Promise<void> => {
          const outcome = await Effect.runPromiseWith(services)(throughTool(context, request, cap))
          assert.notDeepEqual(outcome.failure, Option.some("Defect"), outcome.content.slice(0, 200))
          if (Option.isNone(outcome.failure)) seen.succeeded++
          else seen.refused++
          if (outcome.content.includes("[cut]")) seen.cut++
          const size = bytes(outcome.content)
          if (size > boundOf(cap)) throw new Error(`${size} bytes, over the cap of ${boundOf(cap)}`)
        }
        yield* Effect.promise(() =>
          fc.assert(fc.asyncProperty(requestArbitrary, capArbitrary, withinCap), {
            numRuns: 300,
            seed: 35,
            reporter: (details) => {
              if (details.failed) {
                throw new Error(`${details.errorInstance}; counterexample ${shown(details.counterexample)}`)
              }
            }
          })
        )
        // The inputs reached every kind of output, not only refusals.
        assert.isAbove(seen.succeeded, 20)
        assert.isAbove(seen.refused, 20)
        assert.isAbove(seen.cut, 5)
      })
    ))

  it("output_within_cap, control: the old format, echoing the path and the pattern whole, breaks the same bound", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plantArtifacts(world)
        const context = yield* ownContext(world)
        const services = yield* Effect.context<DurableFiles.DurableFiles | Path.Path>()
        const oldWithinCap = async (request: ToolResults.ReadRequest, cap: number | undefined) => {
          const outcome = await Effect.runPromiseWith(services)(
            Effect.result(ToolResults.readArtifact(context, request, cap === undefined ? {} : { maxOutputBytes: cap }))
          )
          return bytes(oldOutput(request, outcome)) <= boundOf(cap)
        }
        const result = yield* Effect.promise(() =>
          fc.check(fc.asyncProperty(requestArbitrary, capArbitrary, oldWithinCap), { numRuns: 300, seed: 35 })
        )
        assert.isTrue(result.failed, "the old format stays within the cap on every input")
        const [request] = result.counterexample ?? []
        // Shrunk to a path (or pattern) just long enough for its echo to pass the cap on its own.
        assert.isAbove(bytes(request?.path ?? "") + bytes(request?.pattern ?? ""), ToolResults.minReadOutputBytes - 200)
      })
    ))

  it("the echoes are cut, the rest of the header and the notes stay: a 1 MiB path and a pattern at the limit", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plantArtifacts(world)
        const context = yield* ownContext(world)
        const hugePath = "é".repeat(1 << 19)
        const refused = yield* throughTool(context, { path: hugePath }, undefined)
        assert.deepStrictEqual(refused.failure, Option.some("Failed"))
        assert.isAtMost(bytes(refused.content), ToolResults.minReadOutputBytes)
        assert.include(refused.content, `… (${1 << 20} bytes in all) (InvalidPath): TooLong`)
        const cap = ToolResults.minReadOutputBytes
        const atLimit = yield* ToolResults.readArtifact(
          context,
          { path: "tool-results/mixed.txt", pattern: "n".repeat(ToolResults.maxReadPatternBytes) },
          { maxOutputBytes: cap }
        )
        assert.isAtMost(bytes(atLimit.text), cap)
        assert.include(atLimit.text, `bytes in all) matching_lines=1 shown=0 of 405 lines`)
        assert.include(atLimit.text, "[cut] the output cap of 1024 bytes was reached after 0 of 1 matching lines")
      })
    ))
})

describe("bytes that are not UTF-8 count as they decode", () => {
  it("binary_within_cap: a read of bytes that are not UTF-8 stays within the cap, each invalid byte counted as the three bytes of U+FFFD", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plantArtifacts(world)
        const context = yield* ownContext(world)
        const cap = ToolResults.minReadOutputBytes
        // From the run of 0xFF bytes on, each raw byte decodes to three.
        for (const start of [0, 4_096, 6_090]) {
          const read = yield* ToolResults.readArtifact(
            context,
            { path: "tool-results/binary.bin", bytes: { start, end: 7_000 } },
            { maxOutputBytes: cap }
          )
          assert.isAtMost(bytes(read.text), cap, `from byte ${start}`)
          assert.isTrue(read.text.includes("\ufffd"), "the invalid bytes are shown as replacement characters")
        }
        // Any bytes, read piece by piece where each read says to continue: every read within the cap, and the pieces
        // decode, together, exactly as the whole does (each cut falls where the decoder starts afresh).
        const services = yield* Effect.context<DurableFiles.DurableFiles | Path.Path>()
        const byteRun = fc.constantFrom(
          [0x61],
          [0xff],
          [0xc3, 0xa9],
          [0xe0, 0xa0],
          [0xe2, 0x82, 0xac],
          [0xf0, 0x90, 0x80],
          [0xf0, 0x9f, 0x98, 0x80],
          [0xed, 0xa0, 0x80],
          [0x80],
          [0x0a]
        )
        let run = 0
        const piecesDecodeAsTheWhole = async (runs: ReadonlyArray<ReadonlyArray<number>>, cap: number) => {
          const raw = new Uint8Array(runs.flat())
          const name = `bytes-${run++}.bin`
          fs.writeFileSync(path.join(world.folders.mine, "artifacts", "tool-results", name), raw)
          let decoded = ""
          let start = 0
          for (let guard = 0; guard <= raw.byteLength; guard++) {
            const read = await Effect.runPromiseWith(services)(
              ToolResults.readArtifact(
                context,
                { path: `tool-results/${name}`, bytes: { start, end: raw.byteLength } },
                { maxOutputBytes: cap }
              )
            )
            if (bytes(read.text) > cap) throw new Error(`${bytes(read.text)} bytes, over the cap of ${cap}`)
            const body = read.text.slice(read.text.indexOf("\n") + 1)
            decoded += read.truncated ? body.slice(0, body.lastIndexOf("\n[cut]")) : body
            const next = /continues at byte (\d+)/.exec(read.text)
            if (next === null) break
            if (Number(next[1]) <= start) throw new Error(`no progress at byte ${start}`)
            start = Number(next[1])
          }
          if (decoded !== new TextDecoder().decode(raw)) throw new Error("the pieces decode unlike the whole")
        }
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(byteRun, { maxLength: 1_500 }),
              fc.integer({ min: ToolResults.minReadOutputBytes, max: ToolResults.minReadOutputBytes + 64 }),
              piecesDecodeAsTheWhole
            ),
            { numRuns: 40 }
          )
        )
      })
    ))

  it("binary_within_cap, control: the old cut, which counted raw bytes, passes the cap on the same read", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plantArtifacts(world)
        const context = yield* ownContext(world)
        const cap = ToolResults.minReadOutputBytes
        const start = 4_096
        const read = yield* ToolResults.readArtifact(
          context,
          { path: "tool-results/binary.bin", bytes: { start, end: 7_000 } },
          { maxOutputBytes: cap }
        )
        const lines = read.text.split("\n")
        const content = lines[1] ?? ""
        const overhead = bytes(read.text) - bytes(content)
        // The cut before issue 35: the longest prefix within the room that does not end inside a sequence, in raw bytes.
        const oldPrefixLength = (raw: Uint8Array, most: number): number => {
          if (raw.byteLength <= most) return raw.byteLength
          let end = most
          while (end > 0 && end > most - 3 && ((raw[end] ?? 0) & 0xc0) === 0x80) end--
          return end
        }
        const raw = new Uint8Array(
          fs.readFileSync(path.join(world.folders.mine, "artifacts", "tool-results", "binary.bin"))
        )
        const window = raw.subarray(start, 7_000)
        const oldContent = new TextDecoder().decode(window.subarray(0, oldPrefixLength(window, cap - overhead)))
        assert.isAbove(overhead + bytes(oldContent), cap)
        assert.isAtMost(bytes(read.text), cap)
      })
    ))
})

describe("patterns are bounded", () => {
  it("pattern_limit: a pattern of maxPatternBytes is searched; one byte more is refused as InvalidRequest, a tool error", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plantArtifacts(world)
        const context = yield* ownContext(world)
        const limit = ToolResults.maxReadPatternBytes
        for (const accepted of ["n".repeat(limit), "é".repeat(limit / 2)]) {
          const read = yield* ToolResults.readArtifact(context, { path: "tool-results/mixed.txt", pattern: accepted })
          assert.match(read.text, /matching_lines=1 shown=1 of 405 lines/)
        }
        for (const over of ["n".repeat(limit + 1), `${"é".repeat(limit / 2)}a`, "n".repeat(1 << 20)]) {
          const error = yield* Effect.flip(
            ToolResults.readArtifact(context, { path: "tool-results/mixed.txt", pattern: over })
          )
          assert.strictEqual(error.problem, "InvalidRequest")
          assert.include(error.detail, `pattern is ${bytes(over)} bytes, over the ${limit}-byte limit`)
          const outcome = yield* throughTool(context, { path: "tool-results/mixed.txt", pattern: over }, undefined)
          assert.deepStrictEqual(outcome.failure, Option.some("Failed"))
        }
      })
    ))
})

/** The literal a text opens with after `prefix`, decoded, and what follows it. */
const echoAfter = (text: string, prefix: string): { readonly literal: string; readonly rest: string } => {
  assert.isTrue(text.startsWith(prefix), text.slice(0, 80))
  let at = prefix.length + 1
  while (at < text.length && text[at] !== '"') at += text[at] === "\\" ? 2 : 1
  return { literal: text.slice(prefix.length, at + 1), rest: text.slice(at + 1) }
}

/** Why `echo` (a JSON literal and what follows it) is not a faithful, bounded echo of `original`, or undefined. */
const echoFault = (original: string, echo: { readonly literal: string; readonly rest: string }): string | undefined => {
  const decoded = JSON.parse(echo.literal) as string
  if (!original.startsWith(decoded)) return "the echo is not a prefix of the text"
  if (
    decoded.length > 0 &&
    isHigh(decoded.charCodeAt(decoded.length - 1)) &&
    isLow(original.charCodeAt(decoded.length))
  )
    return "the echo ends between the halves of a surrogate pair"
  if (decoded.length < original.length && !echo.rest.startsWith(`… (${bytes(original)} bytes in all)`))
    return "a cut echo does not give the full size"
  const size =
    bytes(echo.literal) + (decoded.length < original.length ? bytes(`… (${bytes(original)} bytes in all)`) : 0)
  if (size > ToolResults.readEchoBytes) return `the echo takes ${size} bytes`
  return undefined
}

/** Paths of emoji, flags, combining marks and lone halves, of any length, most of them longer than the echo. */
const echoedPath = fc
  .tuple(
    fc.array(fc.constantFrom("😀", "🇫🇷", "e\u0301", "\ud800", "中", "a", '"', "\u0001"), {
      minLength: 1,
      maxLength: 4
    }),
    fc.integer({ min: 1, max: 3_000 })
  )
  .map(([units, length]) => {
    const piece = units.join("")
    return piece.repeat(Math.ceil(length / piece.length)).slice(0, length)
  })

const echoOf = (text: string): { readonly literal: string; readonly rest: string } =>
  echoAfter(text, text.startsWith("[artifact-read]") ? "[artifact-read] path=" : "cannot read artifact ")

describe("echoes are cut between code points", () => {
  it("echo_whole_code_points: the echoed path is the JSON literal of a prefix ending between code points, within echoBytes, with the full size when cut", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* ownContext(world)
        const services = yield* Effect.context<DurableFiles.DurableFiles | Path.Path>()
        const faithful = async (original: string): Promise<void> => {
          const outcome = await Effect.runPromiseWith(services)(
            Effect.result(ToolResults.readArtifact(context, { path: original }))
          )
          const text = outcome._tag === "Success" ? outcome.success.text : outcome.failure.message
          const fault = echoFault(original, echoOf(text))
          if (fault !== undefined) throw new Error(fault)
        }
        yield* Effect.promise(() => fc.assert(fc.asyncProperty(echoedPath, faithful), { numRuns: 300 }))
      })
    ))

  it("echo_whole_code_points, control: an echo cut by UTF-16 units splits a pair, and the same check catches it", () => {
    const byUnits = (original: string) => {
      const literal = JSON.stringify(original.slice(0, 25))
      return { literal, rest: original.length > 25 ? `… (${bytes(original)} bytes in all)` : "" }
    }
    const outcome = fc.check(
      fc.property(echoedPath, (original) => echoFault(original, byUnits(original)) === undefined),
      { numRuns: 300, seed: 35 }
    )
    assert.isTrue(outcome.failed)
    const [original] = outcome.counterexample ?? [""]
    assert.strictEqual(echoFault(original, byUnits(original)), "the echo ends between the halves of a surrogate pair")
  })
})

/** The durable files, recording every path a read asked for. */
const recordingFiles = (asked: Array<string>) =>
  Layer.effect(
    DurableFiles.DurableFiles,
    Effect.map(Effect.service(DurableFiles.DurableFiles), (inner) =>
      DurableFiles.DurableFiles.of({
        ...inner,
        readFile: (file, options) => {
          asked.push(file)
          return inner.readFile(file, options)
        }
      })
    )
  ).pipe(Layer.provide(NodeDurableFiles.layer))

const manySegments = "a/".repeat(200_000)
const oneMebibyte = "a".repeat(1 << 20)

describe("a path the resolver cannot take is a typed refusal, not a defect", () => {
  it("path_too_long: a 200,000-segment path and a 1 MiB path are refused as InvalidPath (TooLong) before any file is opened", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plantArtifacts(world)
        const context = yield* ownContext(world)
        const asked: Array<string> = []
        for (const hostile of [manySegments, oneMebibyte, `tool-results/${"x/".repeat(100_000)}mixed.txt`]) {
          const error = yield* Effect.flip(
            ToolResults.readArtifact(context, { path: hostile }).pipe(Effect.provide(recordingFiles(asked)))
          )
          assert.strictEqual(error._tag, "ArtifactReadRefused")
          assert.strictEqual(error.problem, "InvalidPath")
          assert.match(error.detail, /^TooLong: the path is over 4096 bytes/)
          const outcome = yield* throughTool(context, { path: hostile }, undefined)
          assert.deepStrictEqual(outcome.failure, Option.some("Failed"), "a tool error, not a defect")
          assert.isAtMost(bytes(outcome.content), ToolResults.defaultReadOutputBytes)
        }
        assert.deepStrictEqual(asked, [], "no file was opened")
        // Just under the limit the path is taken, and looked for: 2,047 folders deep, it is simply not there.
        const deepest = `${"a/".repeat(2_047)}b`
        assert.strictEqual(bytes(deepest), ArtifactPath.maxTargetBytes - 1)
        const missing = yield* Effect.flip(ToolResults.readArtifact(context, { path: deepest }))
        assert.strictEqual(missing.problem, "NotFound")
        const over = yield* Effect.flip(ToolResults.readArtifact(context, { path: `${deepest}cd` }))
        assert.strictEqual(over.problem, "InvalidPath")
      })
    ))

  it("path_too_long, control: the old join, one argument per segment, overflows the stack on the same path, and a tool built on it crashes", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const folder = path.join(world.folders.mine, "artifacts")
        // The segments the lexical resolution made before the bound: every non-empty part.
        const segments = manySegments.split("/").filter((part) => part !== "")
        assert.strictEqual(segments.length, 200_000)
        assert.throws(() => path.join(folder, ...segments), RangeError)
        const oldJoin = Tool.make({
          name: ToolResults.defaultReadToolName,
          description: "joins the way the read tool did",
          input: ToolResults.ReadRequest,
          handler: (request) =>
            Effect.sync(() => path.join(folder, ...request.path.split("/").filter((part) => part !== "")))
        })
        const outcome = yield* Tool.run(
          Tool.registry(oldJoin),
          Model.toolCall("x", ToolResults.defaultReadToolName, { path: manySegments })
        )
        assert.deepStrictEqual(outcome.failure, Option.some("Defect"))
        assert.include(outcome.content, "Maximum call stack size exceeded")
      })
    ))
})
