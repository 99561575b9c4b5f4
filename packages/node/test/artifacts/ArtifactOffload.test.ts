import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import {
  ArtifactOffload,
  ArtifactPathPolicy,
  ArtifactPointer,
  ArtifactRedactor,
  DefaultRedactor
} from "@tessera/artifacts"
import { DurableFiles } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import { Effect, Layer, Option } from "effect"
import { listEntries, listFiles, nodeLayer, offloadedOf, refusalOf, tempDir } from "./utils/fixtures.ts"

const githubToken = `ghp_${"A1b2C3d4E5".repeat(4)}`
const big = (prefix: string) => `${prefix}\n${"lorem ipsum dolor sit amet ".repeat(40)}`

const request = (root: string, content: string, target = "tool-results/c1.txt"): ArtifactOffload.OffloadRequest => ({
  content,
  threshold: 64,
  root,
  target,
  readTool: "read_file"
})

describe("ArtifactOffload", () => {
  it.effect("a body above the threshold is stored and replaced by a pointer naming the host's read tool", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const root = path.join(dir, "artifacts")
      const content = big("first line")
      const result = offloadedOf(yield* ArtifactOffload.offload({ ...request(root, content), readTool: "host_reader" }))
      assert.strictEqual(result.path, "tool-results/c1.txt")
      assert.strictEqual(fs.readFileSync(path.join(root, "tool-results", "c1.txt"), "utf8"), content)
      assert.strictEqual(result.size, Buffer.byteLength(content))
      assert.match(result.digest, /^sha256:[0-9a-f]{64}$/)
      const pointer = Option.getOrThrow(ArtifactPointer.parse(result.pointer))
      assert.deepStrictEqual(
        { path: pointer.path, bytes: pointer.bytes, readWith: pointer.readWith },
        { path: "tool-results/c1.txt", bytes: result.size, readWith: "host_reader" }
      )
      assert.isFalse(result.pointer.includes("\n"))
      assert.isTrue(pointer.abstract.startsWith("first line lorem ipsum"))
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("a body at or below the threshold stays inline with no reason and writes nothing", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const content = "x".repeat(64)
      const result = yield* ArtifactOffload.offload(request(dir, content))
      assert.deepStrictEqual(result, ArtifactOffload.OffloadResult.Inline({ content, reason: Option.none() }))
      assert.deepStrictEqual(listEntries(dir), [])
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("the abstract is built from the redacted body, not the raw output", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const content = big(`token ${githubToken} issued`)
      const result = offloadedOf(yield* ArtifactOffload.offload(request(dir, content)))
      const pointer = Option.getOrThrow(ArtifactPointer.parse(result.pointer))
      assert.isTrue(pointer.abstract.startsWith("token [REDACTED:github-token] issued"))
      assert.isFalse(result.pointer.includes(githubToken))
      const stored = fs.readFileSync(path.join(dir, "tool-results", "c1.txt"), "utf8")
      assert.isFalse(stored.includes(githubToken))
      // Size and digest describe the stored (redacted) bytes, not the raw ones.
      assert.strictEqual(result.size, Buffer.byteLength(stored))
      assert.notStrictEqual(result.size, Buffer.byteLength(content))
    }).pipe(Effect.provide([nodeLayer, DefaultRedactor.layer()]))
  )

  it.effect("a failed offload keeps the inline payload for the host", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const content = big("precious")
      // A root that cannot be a folder fails, and the content comes back.
      const fileRoot = path.join(dir, "not-a-folder")
      fs.writeFileSync(fileRoot, "")
      const failed = yield* ArtifactOffload.offload(request(fileRoot, content))
      assert.strictEqual(refusalOf(failed)._tag, "ArtifactWriteFailed")
      assert.deepStrictEqual(
        failed,
        ArtifactOffload.OffloadResult.Inline({ content, reason: Option.some(refusalOf(failed)) })
      )

      // A refused path keeps it as well, and chunked content comes back joined.
      const refused = yield* ArtifactOffload.offload({ ...request(dir, ""), content: ["pre", content], target: "../x" })
      assert.strictEqual(refusalOf(refused)._tag, "ArtifactPathRejected")
      if (refused._tag === "Inline") assert.strictEqual(refused.content, `pre${content}`)
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("a failing host redactor keeps the inline payload and stores nothing", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const content = big("payload")
      const result = yield* ArtifactOffload.offload(request(dir, content)).pipe(
        Effect.provide(
          ArtifactRedactor.layer({
            redact: () => Effect.fail(new ArtifactRedactor.ArtifactRedactionFailed({ detail: "scanner offline" }))
          })
        )
      )
      assert.strictEqual(refusalOf(result)._tag, "ArtifactRedactionFailed")
      assert.deepStrictEqual(listFiles(dir), [])
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("a parent folder that symlinks out of the root is refused, and nothing was written through the link", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const root = path.join(dir, "root")
      const outside = path.join(dir, "outside")
      fs.mkdirSync(root)
      fs.mkdirSync(outside)
      fs.symlinkSync(outside, path.join(root, "tool-results"))
      for (const target of ["tool-results/c1.txt", "tool-results/deeper/c1.txt"]) {
        const result = yield* ArtifactOffload.offload(request(root, big("secret-ish"), target))
        const reason = refusalOf(result)
        assert.strictEqual(reason._tag, "ArtifactEscapedRoot")
      }
      assert.deepStrictEqual(listEntries(outside), [])
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect(
    "the real parent is re-checked by the offload itself, even over primitives that would follow the link",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const root = path.join(dir, "root")
        const outside = path.join(dir, "outside")
        fs.mkdirSync(root)
        fs.mkdirSync(outside)
        fs.symlinkSync(outside, path.join(root, "tool-results"))
        const real = NodeDurableFiles.make()
        // Deliberately careless primitives: mkdir -p through links, and writes that ignore `within`.
        const careless = Layer.succeed(DurableFiles.DurableFiles)({
          ...real,
          makeDirectories: (target) => Effect.sync(() => void fs.mkdirSync(target, { recursive: true })),
          writeNewFile: (target, bytes) => Effect.sync(() => fs.writeFileSync(target, bytes))
        })
        const result = yield* ArtifactOffload.offload(request(root, big("x"))).pipe(Effect.provide(careless))
        assert.strictEqual(refusalOf(result)._tag, "ArtifactEscapedRoot")
        assert.deepStrictEqual(listEntries(outside), [])
      }).pipe(Effect.provide(nodeLayer))
  )

  it.effect(
    "a host-internal state path is rejected with the specific error, also when the artifact root sits inside the internal root",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const internalRoot = path.join(dir, "host")
        const artifactRoot = path.join(internalRoot, "artifacts")
        const policy = ArtifactPathPolicy.layerFromLocations({
          internalRoot,
          stateLocations: [path.join(artifactRoot, "state")]
        })
        const run = (target: string) => ArtifactOffload.offload(request(artifactRoot, big("x"), target))

        // Trips both checks: the specific one wins.
        const state = refusalOf(yield* run("state/db.json").pipe(Effect.provide(policy)))
        assert.strictEqual(state._tag, "ArtifactInternalState")
        if (state._tag === "ArtifactInternalState")
          assert.strictEqual(state.path, path.join(artifactRoot, "state", "db.json"))
        // Trips only the root check.
        assert.strictEqual(refusalOf(yield* run("notes.txt").pipe(Effect.provide(policy)))._tag, "ArtifactInternalRoot")

        // Artifact root outside the internal root, state location inside the artifact root.
        const separateRoot = path.join(dir, "artifacts")
        const separate = ArtifactPathPolicy.layerFromLocations({
          internalRoot,
          stateLocations: [path.join(separateRoot, ".host-state")]
        })
        const separateState = yield* ArtifactOffload.offload(request(separateRoot, big("x"), ".host-state/x")).pipe(
          Effect.provide(separate)
        )
        assert.strictEqual(refusalOf(separateState)._tag, "ArtifactInternalState")

        // A policy answering yes to both questions: the specific error still wins.
        const both = ArtifactPathPolicy.layer({ isInternalState: () => true, isUnderInternalRoot: () => true })
        assert.strictEqual(
          refusalOf(yield* run("anything.txt").pipe(Effect.provide(both)))._tag,
          "ArtifactInternalState"
        )
        assert.deepStrictEqual(listFiles(dir), [])
      }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("a resolve without any policy still enforces containment (traversal blocked)", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const root = path.join(dir, "root")
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["../escape.txt", "Traversal"],
        ["a/../../escape.txt", "Traversal"],
        ["a\\..\\..\\escape.txt", "Traversal"],
        ["/etc/passwd", "Absolute"],
        ["C:\\Windows\\x.txt", "Absolute"],
        ["c:relative.txt", "Absolute"],
        ["\\\\server\\share\\x.txt", "Absolute"],
        ["//server/share/x.txt", "Absolute"],
        ["\\rooted.txt", "Absolute"],
        ["ok\0.txt", "NulByte"],
        ["./.", "Empty"]
      ]
      for (const [target, problem] of cases) {
        const error = yield* Effect.flip(ArtifactOffload.resolveTarget(root, target))
        assert.strictEqual(error._tag, "ArtifactPathRejected", target)
        if (error._tag === "ArtifactPathRejected") assert.strictEqual(error.problem, problem, target)
        const result = yield* ArtifactOffload.offload(request(root, big("x"), target))
        assert.strictEqual(refusalOf(result)._tag, "ArtifactPathRejected", target)
      }
      assert.deepStrictEqual(listEntries(dir), [])
      const inside = yield* ArtifactOffload.resolveTarget(root, "a/./b/../c.txt")
      assert.deepStrictEqual(inside, { absolute: path.join(root, "a", "c.txt"), relative: "a/c.txt" })
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("without a redactor, bytes are stored verbatim", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const content = big(`password=hunter2 ${githubToken} AKIAIOSFODNN7EXAMPLE café 👩‍👩‍👧`)
      const result = offloadedOf(yield* ArtifactOffload.offload(request(dir, content)))
      const stored = fs.readFileSync(path.join(dir, "tool-results", "c1.txt"))
      assert.isTrue(stored.equals(Buffer.from(content, "utf8")))
      // The documented decision, visible end to end: the abstract shows what was stored.
      assert.isTrue(Option.getOrThrow(ArtifactPointer.parse(result.pointer)).abstract.includes("password=hunter2"))
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("scratch resolves under the artifact root, not the host's internal root", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const internalRoot = path.join(dir, "host")
      const artifactRoot = path.join(dir, "task", "artifacts")
      fs.mkdirSync(path.join(internalRoot, "scratch"), { recursive: true })
      const policy = ArtifactPathPolicy.layerFromLocations({
        internalRoot,
        stateLocations: [path.join(internalRoot, "scratch")]
      })
      const result = offloadedOf(
        yield* ArtifactOffload.offload(request(artifactRoot, big("notes"), "scratch/notes.txt")).pipe(
          Effect.provide(policy)
        )
      )
      assert.strictEqual(result.path, "scratch/notes.txt")
      assert.deepStrictEqual(listFiles(artifactRoot), [path.join("scratch", "notes.txt")])
      assert.deepStrictEqual(listEntries(internalRoot), ["scratch"])
    }).pipe(Effect.provide(nodeLayer))
  )

  it.effect("the journal record carries path, size and digest, or the refusal, never the payload", () =>
    Effect.gen(function* () {
      const dir = yield* tempDir
      const content = big("journal")
      const offloaded = offloadedOf(yield* ArtifactOffload.offload(request(dir, content)))
      assert.deepStrictEqual(ArtifactOffload.toRecord(offloaded), {
        _tag: "Offloaded",
        path: offloaded.path,
        size: offloaded.size,
        digest: offloaded.digest
      })
      const refused = yield* ArtifactOffload.offload(request(dir, content, "../x"))
      const record = ArtifactOffload.toRecord(refused)
      assert.strictEqual(record._tag, "Inline")
      assert.isFalse(JSON.stringify(record).includes("lorem"))
    }).pipe(Effect.provide(nodeLayer))
  )
})
