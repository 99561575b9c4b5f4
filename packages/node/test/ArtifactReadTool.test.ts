/**
 * The read tool that offload pointers name: a stock turn offloads a result
 * and the model reads it back; every read is bounded; and hostile paths
 * (traversal, absolute, planted links, volumes without a grant, another
 * agent's private volume) are refused with a typed error that reaches the
 * model as a tool-error result. Every refusal has a control: a deliberately
 * broken reader, built here, that returns the bytes outside.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer } from "@tessera/artifacts"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import {
  Compaction,
  EntryGate,
  type FilesystemTaskRuntime,
  History,
  Journal,
  Model,
  TaskExecution,
  Tool,
  ToolResults,
  VolumeStore
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Option, type Path, Schema } from "effect"
import * as fc from "fast-check"
import {
  followingReader,
  joiningReader,
  plant,
  platformLayer,
  type ReadWorld,
  reviewer,
  runInReadWorld,
  task
} from "./support/readWorld.ts"

const body = `${Array.from(
  { length: 300 },
  (_, index) => `line ${String(index + 1).padStart(4, "0")} ${index % 7 === 0 ? "needle" : "hay"} ${"x".repeat(20)}`
).join("\n")}\n`
const lines = body.split("\n").slice(0, -1)

const report = Tool.make({
  name: "report",
  description: "Produces the long report",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(body)
})

const offload = { threshold: 4_096, readTool: "read_artifact", destination: "Private" as const }

const resultOf = (request: Model.ModelRequest | undefined, callId: string): Model.ToolResultPart => {
  const part = request?.parts.find(
    (candidate): candidate is Model.ToolResultPart => candidate._tag === "ToolResult" && candidate.callId === callId
  )
  if (part === undefined) throw new Error(`no result for ${callId}`)
  return part
}

/** The content of a read's text: everything after the header line. */
const contentOf = (text: string): string => text.slice(text.indexOf("\n") + 1)

/** A scripted model that asks for the report, then reads it back with each selection in turn. */
const readBackScript = (selections: ReadonlyArray<Record<string, unknown>>): ScriptedModel.Script => {
  let pointerPath = ""
  return (request, index) => {
    if (index === 0) return Model.response({ toolCalls: [Model.toolCall("c0", "report", {})] })
    if (index === 1) pointerPath = ArtifactPointer.extractPaths(resultOf(request, "c0").content)[0] ?? ""
    const selection = selections[index - 1]
    if (selection === undefined) return Model.response({ text: "done" })
    return Model.response({
      toolCalls: [Model.toolCall(`r${index}`, "read_artifact", { path: pointerPath, ...selection })]
    })
  }
}

const runTurn = (
  world: ReadWorld,
  script: ScriptedModel.Script,
  config: {
    readonly tools?: Tool.Registry<DurableFiles.DurableFiles | Path.Path>
    readonly offload?: ToolResults.OffloadConfig
  } = {}
) =>
  Effect.gen(function* () {
    const context = yield* world.bind([{ volume: world.mine, access: ["read", "write"] }])
    const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
    return yield* Effect.gen(function* () {
      yield* TaskExecution.runTurn(binding, History.make([Model.text("user", "read the report")]), {
        tools: Tool.registry(report),
        maxSteps: 8,
        offload,
        ...config
      })
      return yield* Effect.flatMap(Effect.service(ScriptedModel.ScriptedModelRecorder), (recorder) => recorder.requests)
    }).pipe(
      Effect.provide(
        Layer.merge(ScriptedModel.layer(script), Journal.layer({ folder: world.journalFolder, task })).pipe(
          Layer.provideMerge(platformLayer)
        )
      )
    )
  })

describe("the read tool in a stock turn", () => {
  it("a large result is offloaded, and the model reads it back whole, by bytes, by lines and by pattern", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const sent = yield* runTurn(
          world,
          readBackScript([
            {},
            { bytes: { start: 10, end: 50 } },
            { lines: { first: 5, last: 7 } },
            { pattern: "needle" }
          ])
        )
        assert.strictEqual(sent.length, 6)
        assert.deepStrictEqual(
          sent[0]?.tools.map((tool) => tool.name),
          ["report", "read_artifact"]
        )
        const pointer = ArtifactPointer.parse(resultOf(sent[1], "c0").content)
        assert.isTrue(Option.isSome(pointer))
        if (Option.isNone(pointer)) return
        assert.strictEqual(pointer.value.readWith, "read_artifact")

        const whole = resultOf(sent[2], "r1")
        assert.isFalse(whole.isError)
        assert.include(whole.content, `size=${body.length} whole bytes=0-${body.length - 1}`)
        assert.strictEqual(contentOf(whole.content), body, "read back byte for byte, inline, not offloaded again")

        assert.strictEqual(contentOf(resultOf(sent[3], "r2").content), body.slice(10, 50))
        const byLines = resultOf(sent[4], "r3").content
        assert.include(byLines, "lines=5-7 of 300")
        assert.strictEqual(contentOf(byLines), lines.slice(4, 7).join("\n"))

        const matched = resultOf(sent[5], "r4").content
        const expected = lines.flatMap((line, index) => (line.includes("needle") ? [`${index + 1}: ${line}`] : []))
        assert.include(matched, `matching_lines=${expected.length} shown=${expected.length}`)
        assert.strictEqual(contentOf(matched), expected.join("\n"))
      })
    ))

  it("read_path_as_the_journal_names_it: a path that starts with the artifact folder is not found, and the refusal names the path to read; control: that path reads", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        let pointerPath = ""
        const sent = yield* runTurn(world, (request, index) => {
          if (index === 0) return Model.response({ toolCalls: [Model.toolCall("c0", "report", {})] })
          if (index === 1) pointerPath = ArtifactPointer.extractPaths(resultOf(request, "c0").content)[0] ?? ""
          const asked = [`${VolumeStore.artifactFolder}/${pointerPath}`, "tool-results/missing.txt", pointerPath]
          const path = asked[index - 1]
          if (path === undefined) return Model.response({ text: "done" })
          return Model.response({ toolCalls: [Model.toolCall(`r${index}`, "read_artifact", { path })] })
        })
        const prefixed = resultOf(sent[2], "r1")
        assert.isTrue(prefixed.isError)
        assert.include(prefixed.content, "NotFound")
        assert.include(prefixed.content, `did you mean ${pointerPath}?`)
        const missing = resultOf(sent[3], "r2")
        assert.isTrue(missing.isError)
        assert.notInclude(missing.content, "did you mean")
        const named = resultOf(sent[4], "r3")
        assert.isFalse(named.isError)
        assert.strictEqual(contentOf(named.content), body)
      })
    ))

  it("a host tool of the configured name is kept; with registerReadTool false the pointer's tool is missing (control)", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const own = Tool.make({
          name: "read_artifact",
          description: "the host's reader",
          input: Schema.Struct({ path: Schema.String }),
          handler: () => Effect.succeed("the host's own reader ran")
        })
        const kept = yield* runTurn(world, readBackScript([{}]), { tools: Tool.registry(report, own) })
        assert.strictEqual(resultOf(kept[2], "r1").content, "the host's own reader ran")
        assert.deepStrictEqual(
          kept[0]?.tools.map((tool) => tool.description),
          ["Produces the long report", "the host's reader"]
        )

        fs.rmSync(path.join(world.journalFolder, Journal.fileName(task)))
        fs.rmSync(path.join(world.folders.mine, "artifacts"), { recursive: true })
        const optedOut = yield* runTurn(world, readBackScript([{}]), {
          offload: { ...offload, registerReadTool: false }
        })
        const missing = resultOf(optedOut[2], "r1")
        assert.isTrue(missing.isError)
        assert.include(missing.content, 'unknown tool "read_artifact"')
      })
    ))

  it("control: the same read through a host-registered copy of the tool is offloaded again, as a pointer", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* world.bind([{ volume: world.mine, access: ["read", "write"] }])
        const copy = ToolResults.readTool(context, { name: "read_artifact" })
        const sent = yield* runTurn(world, readBackScript([{}]), { tools: Tool.registry(report, copy) })
        // The host's own tool gets no exemption: its output passes the offload hook like any result.
        assert.isTrue(resultOf(sent[2], "r1").content.startsWith("[artifact] "))
      })
    ))
})

/** Writes `text` as an artifact of the researcher's volume and returns its pointer path. */
const artifact = (world: ReadWorld, name: string, text: string | Uint8Array): string => {
  const file = path.join(world.folders.mine, "artifacts", "tool-results", name)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  fs.writeFileSync(file, text)
  return `tool-results/${name}`
}

const ownContext = (world: ReadWorld) =>
  world.bind([
    { volume: world.mine, access: ["read", "write"] },
    { volume: world.output, access: ["read"] },
    { volume: world.theirs, access: ["read"] }
  ])

describe("reads are bounded", () => {
  it("a read never returns more than the cap, header and notes included, says where it was cut, and the pieces rebuild the artifact exactly", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* ownContext(world)
        const services = yield* Effect.context<DurableFiles.DurableFiles | Path.Path>()
        let run = 0
        const rebuilds = async (text: string, cap: number): Promise<void> => {
          const name = `piece-${run++}.txt`
          const pointerPath = artifact(world, name, text)
          const expected = new TextEncoder().encode(text)
          const pieces: Array<Uint8Array> = []
          let start = 0
          for (let guard = 0; guard <= expected.byteLength; guard++) {
            const result = await Effect.runPromiseWith(services)(
              ToolResults.readArtifact(
                context,
                { path: pointerPath, bytes: { start, end: expected.byteLength } },
                { maxOutputBytes: cap }
              )
            )
            assert.isAtMost(new TextEncoder().encode(result.text).byteLength, cap, `${name}: over the cap`)
            const piece = new TextEncoder().encode(contentOf(result.text.split("\n[cut]")[0] ?? ""))
            if (start < expected.byteLength) assert.isAbove(piece.byteLength, 0, `${name}: a read makes progress`)
            pieces.push(piece)
            const next = /continues at byte (\d+)/.exec(result.text)
            assert.strictEqual(result.truncated, next !== null)
            if (next === null) break
            start = Number(next[1])
          }
          assert.deepStrictEqual(new Uint8Array(pieces.flatMap((piece) => [...piece])), expected)
        }
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.string({ unit: "binary", maxLength: 1_500 }),
              fc.integer({ min: ToolResults.minReadOutputBytes, max: ToolResults.minReadOutputBytes + 256 }),
              rebuilds
            ),
            { numRuns: 40 }
          )
        )
      })
    ))

  it("line and pattern reads stop at the cap and say how to continue", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* ownContext(world)
        const pointerPath = artifact(world, "long.txt", body)
        const cap = ToolResults.minReadOutputBytes
        const byLines = yield* ToolResults.readArtifact(
          context,
          { path: pointerPath, lines: { first: 1, last: 300 } },
          { maxOutputBytes: cap }
        )
        assert.isTrue(byLines.truncated)
        assert.isAtMost(new TextEncoder().encode(byLines.text).byteLength, cap)
        const shown = (contentOf(byLines.text).split("\n[cut]")[0] ?? "").split("\n")
        assert.deepStrictEqual(shown, lines.slice(0, shown.length))
        assert.isAbove(shown.length, 0)
        assert.include(byLines.text, `continue with lines {"first":${shown.length + 1},"last":300}`)
        const byPattern = yield* ToolResults.readArtifact(
          context,
          { path: pointerPath, pattern: "hay" },
          { maxOutputBytes: cap }
        )
        assert.isTrue(byPattern.truncated)
        assert.isAtMost(new TextEncoder().encode(byPattern.text).byteLength, cap)
        assert.match(byPattern.text, /after \d+ of 257 matching lines/)
        const scanned = yield* ToolResults.readArtifact(
          context,
          { path: pointerPath, pattern: "line" },
          { maxScanBytes: 100 }
        )
        assert.include(scanned.text, `only the first 100 of ${body.length} bytes were scanned`)
      })
    ))
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

/** A read through the tool: the model's view. */
const throughTool = (context: FilesystemTaskRuntime.TaskContext, input: Record<string, unknown>) =>
  Tool.run(Tool.registry(ToolResults.readTool(context)), Model.toolCall("x", "read_artifact", input as never))

const refusal = (context: FilesystemTaskRuntime.TaskContext, pathText: string) =>
  Effect.flip(ToolResults.readArtifact(context, { path: pathText }))

describe("hostile paths are refused with a typed error, and nothing outside is read", () => {
  it("a path with `..` is refused before any file is opened; control: a joining reader reads outside", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        const asked: Array<string> = []
        for (const hostile of [
          "../secret.txt",
          "tool-results/../../secret.txt",
          "../../../outside.txt",
          "a/../inside.txt"
        ]) {
          const error = yield* refusal(context, hostile).pipe(Effect.provide(recordingFiles(asked)))
          assert.strictEqual(error.problem, "InvalidPath", hostile)
          const outcome = yield* throughTool(context, { path: hostile })
          assert.deepStrictEqual(outcome.failure, Option.some("Failed"), "a tool error, not a defect")
          assert.notInclude(outcome.content, "OUTSIDE")
        }
        assert.deepStrictEqual(asked, [], "no file was opened")
        const artifactFolder = path.join(world.folders.mine, "artifacts")
        assert.strictEqual(joiningReader(artifactFolder, "../secret.txt"), "OUTSIDE-VOLUME")
        assert.strictEqual(joiningReader(artifactFolder, "../../../outside.txt"), "OUTSIDE-ROOT")
      })
    ))

  it("an absolute path (POSIX, Windows, UNC) is refused; control: a joining reader reads it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        const secret = path.join(world.root, "outside.txt")
        for (const hostile of [secret, "/etc/passwd", "C:\\secret.txt", "\\\\server\\share\\x", "tool-results/C:x"]) {
          const error = yield* refusal(context, hostile)
          assert.strictEqual(error.problem, "InvalidPath", hostile)
        }
        const outcome = yield* throughTool(context, { path: secret })
        assert.isTrue(Option.isSome(outcome.failure))
        assert.include(outcome.content, "(InvalidPath): Absolute")
        assert.strictEqual(joiningReader(path.join(world.folders.mine, "artifacts"), secret), "OUTSIDE-ROOT")
      })
    ))

  it("a symlink planted in the artifact folder is refused, file or folder, pointing out or in; control: a following reader reads through it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        for (const [hostile, link] of [
          ["tool-results/link", "artifacts/tool-results/link"],
          ["lnk/inside.txt", "artifacts/lnk"],
          ["tool-results/inner", "artifacts/tool-results/inner"]
        ] as const) {
          const error = yield* refusal(context, hostile)
          assert.strictEqual(error.problem, "SymlinkRefused", hostile)
          assert.include(error.detail, link)
          assert.notInclude(error.message, world.root, "no host folder is shown to the model")
          const outcome = yield* throughTool(context, { path: hostile })
          assert.deepStrictEqual(outcome.failure, Option.some("Failed"))
          assert.notInclude(outcome.content, "OUTSIDE")
        }
        // A pointer naming the link parses: the pointer's check is of the text, the read's is of the disk.
        const pointer = ArtifactPointer.render({
          path: "tool-results/link",
          bytes: 12,
          readWith: "read_artifact",
          abstract: ""
        })
        assert.isTrue(Option.isSome(ArtifactPointer.parse(pointer)))
        const artifactFolder = path.join(world.folders.mine, "artifacts")
        assert.strictEqual(followingReader(artifactFolder, "tool-results/link"), "OUTSIDE-ROOT")
        assert.strictEqual(followingReader(artifactFolder, "lnk/inside.txt"), "OUTSIDE-LINKED")
      })
    ))

  it("an artifact folder that is itself a symlink is refused; control: a following reader reads through it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* ownContext(world)
        const elsewhere = path.join(world.root, "elsewhere")
        fs.mkdirSync(path.join(elsewhere, "tool-results"), { recursive: true })
        fs.writeFileSync(path.join(elsewhere, "tool-results", "x.txt"), "OUTSIDE-SWAPPED")
        fs.symlinkSync(elsewhere, path.join(world.folders.mine, "artifacts"))
        const error = yield* refusal(context, "tool-results/x.txt")
        assert.strictEqual(error.problem, "SymlinkRefused")
        assert.strictEqual(
          followingReader(path.join(world.folders.mine, "artifacts"), "tool-results/x.txt"),
          "OUTSIDE-SWAPPED"
        )
      })
    ))

  it("a hard link to a file outside is refused; control: a following reader reads it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        fs.linkSync(
          path.join(world.root, "outside.txt"),
          path.join(world.folders.mine, "artifacts", "tool-results", "hard")
        )
        const error = yield* refusal(context, "tool-results/hard")
        assert.strictEqual(error.problem, "NotPlainFile")
        assert.strictEqual(
          followingReader(path.join(world.folders.mine, "artifacts"), "tool-results/hard"),
          "OUTSIDE-ROOT"
        )
      })
    ))

  it("an artifact on a volume the task holds no grant on is not found; control: a store-wide reader finds it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        const error = yield* refusal(context, "tool-results/hidden.txt")
        assert.strictEqual(error.problem, "NotFound")
        assert.include(error.detail, "searched")
        assert.notInclude(error.detail, "/hidden", "the ungranted volume is not among those searched")
        const outcome = yield* throughTool(context, { path: "tool-results/hidden.txt" })
        assert.notInclude(outcome.content, "OUTSIDE")
        // Control: a reader that looks in every volume of the store finds and returns it.
        const everywhere = yield* world.host.store.list()
        const found = yield* Effect.forEach(everywhere, (descriptor) =>
          Effect.succeed(
            followingReader(
              path.join(world.host.store.root, VolumeStore.volumesFolder, descriptor.id, "artifacts"),
              "tool-results/hidden.txt"
            )
          )
        )
        assert.include(found, "OUTSIDE-HIDDEN")
      })
    ))

  it("another agent's private volume stays closed even with a read grant; control: a grant-only reader reads it", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        assert.isTrue(context.grants.some((grant) => grant.volume.volume === world.theirs.volume))
        const error = yield* refusal(context, "tool-results/theirs.txt")
        assert.strictEqual(error.problem, "NotFound")
        assert.include(error.detail, `private to agent ${reviewer}, not to the task's agent researcher`)
        const { volumes } = yield* ToolResults.readableVolumes(context)
        assert.deepStrictEqual(
          volumes.map((volume) => [volume.ref.volume, volume.source]),
          [
            [world.mine.volume, "PrivateWriter"],
            [world.output.volume, "Grant"]
          ]
        )
        // Control: a reader that trusts every grant, owner unchecked, reads the reviewer's content.
        const granted = context.grants.map((grant) => grant.volume)
        const found = yield* Effect.forEach(granted, (ref) =>
          Effect.succeed(
            followingReader(
              path.join(world.host.store.root, VolumeStore.volumesFolder, ref.volume, "artifacts"),
              "tool-results/theirs.txt"
            )
          )
        )
        assert.include(found, "OUTSIDE-REVIEWER")
        // The reviewer's own task reads it: the refusal is about the owner, not the file.
        const theirTask = yield* world.bind([{ volume: world.theirs, access: ["read"] }], reviewer)
        const own = yield* ToolResults.readArtifact(theirTask, { path: "tool-results/theirs.txt" })
        assert.strictEqual(contentOf(own.text), "OUTSIDE-REVIEWER")
      })
    ))

  it("the tool re-checks where the file really is: a primitive reporting a place outside the artifact folder is refused", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        // Control: with the real primitive the read succeeds.
        const read = yield* ToolResults.readArtifact(context, { path: "tool-results/inside.txt" })
        assert.strictEqual(contentOf(read.text), "INSIDE-MINE")
        // A broken primitive that reads whatever it is given and says it lives beside the artifact folder.
        const lying = Layer.succeed(DurableFiles.DurableFiles)({
          ...NodeDurableFiles.make(),
          readFile: (file) =>
            Effect.succeed({
              bytes: new Uint8Array(fs.readFileSync(file)),
              size: fs.statSync(file).size,
              location: path.join(world.folders.mine, "secret.txt")
            })
        })
        const error = yield* Effect.flip(
          ToolResults.readArtifact(context, { path: "tool-results/inside.txt" }).pipe(Effect.provide(lying))
        )
        assert.strictEqual(error.problem, "OutsideRoot")
      })
    ))

  it("a request with two selections, or a backwards range, is refused as InvalidRequest", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        const context = yield* ownContext(world)
        const pointerPath = artifact(world, "a.txt", "abc")
        for (const request of [
          { path: pointerPath, bytes: { start: 0, end: 1 }, pattern: "a" },
          { path: pointerPath, bytes: { start: 2, end: 1 } },
          { path: pointerPath, lines: { first: 3, last: 2 } },
          { path: pointerPath, pattern: "" }
        ]) {
          const error = yield* Effect.flip(ToolResults.readArtifact(context, request))
          assert.strictEqual(error.problem, "InvalidRequest", JSON.stringify(request))
        }
      })
    ))
})

const segment = fc.constantFrom(
  "..",
  ".",
  "",
  "tool-results",
  "inside.txt",
  "output.txt",
  "hidden.txt",
  "theirs.txt",
  "link",
  "inner",
  "lnk",
  "secret.txt",
  "outside.txt",
  "artifacts",
  "researcher-private",
  "volumes",
  "C:",
  "%2e%2e",
  "x\u0000y"
)

/** Path-shaped text: segments joined by either separator, sometimes rooted, sometimes absolute into the store. */
const pathShaped = (root: string) =>
  fc.oneof(
    fc
      .tuple(
        fc.constantFrom("", "/", "\\", "//", `${root}/`, `${root}/volumes/researcher-private/`),
        fc.array(fc.tuple(segment, fc.constantFrom("/", "\\")), { minLength: 1, maxLength: 6 })
      )
      .map(
        ([prefix, parts]) =>
          prefix +
          parts
            .map(([name, sep]) => name + sep)
            .join("")
            .slice(0, -1)
      ),
    // Canonical relative paths, so a good share of inputs names real files, links and folders.
    fc
      .array(fc.constantFrom("tool-results", "inside.txt", "output.txt", "link", "inner", "lnk", "theirs.txt"), {
        minLength: 1,
        maxLength: 3
      })
      .map((parts) => parts.join("/")),
    fc.constantFrom("tool-results/inside.txt", "tool-results/output.txt", "tool-results/link", "lnk/inside.txt"),
    fc.string({ maxLength: 30 })
  )

describe("property: no read ever escapes the artifact root", () => {
  it("over path-shaped inputs, a read is refused or returns a file inside a readable artifact root; a broken reader fails the same property (control)", () =>
    runInReadWorld((world) =>
      Effect.gen(function* () {
        plant(world)
        const context = yield* ownContext(world)
        const services = yield* Effect.context<DurableFiles.DurableFiles | Path.Path>()
        let successes = 0
        const readsInside = async (input: string): Promise<boolean> => {
          const outcome = await Effect.runPromiseWith(services)(
            Effect.result(ToolResults.readArtifact(context, { path: input }))
          )
          if (outcome._tag === "Failure") return outcome.failure._tag === "ArtifactReadRefused"
          successes++
          return (
            !outcome.success.text.includes("OUTSIDE") &&
            ["researcher-private", "output"].includes(outcome.success.volume.volume)
          )
        }
        yield* Effect.promise(() =>
          fc.assert(fc.asyncProperty(pathShaped(world.root), readsInside), { numRuns: 1_000, seed: 16 })
        )
        assert.isAbove(successes, 0, "some inputs do name the artifacts inside")

        // The same property over the same inputs, with a reader that checks lexically and follows links.
        const artifactFolder = path.join(world.folders.mine, "artifacts")
        const broken = fc.check(
          fc.property(
            pathShaped(world.root),
            (input) => !(followingReader(artifactFolder, input) ?? "").includes("OUTSIDE")
          ),
          { numRuns: 1_000, seed: 16 }
        )
        assert.isTrue(broken.failed, "the broken reader escapes through a planted link")
      })
    ))
})
