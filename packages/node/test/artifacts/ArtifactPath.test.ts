import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactOffload, ArtifactPath } from "@tessera/artifacts"
import { Effect, Option, Result } from "effect"
import * as fc from "fast-check"
import { listEntries, nodeLayer, tempDirSync } from "./utils/fixtures.ts"

/** Named building blocks, so a shrunk counterexample reads like `["dotdot", "slash", "name"]`. */
const tokens = {
  dot: ".",
  dotdot: "..",
  dots3: "...",
  name: "a",
  other: "tool-results",
  unicode: "é👩‍👩‍👧",
  space: " ",
  nul: "\0",
  drive: "C:",
  slash: "/",
  backslash: "\\"
} as const
type TokenName = keyof typeof tokens

const prefixes = {
  none: "",
  posixRoot: "/",
  windowsRooted: "\\",
  unc: "\\\\server\\share\\",
  uncForward: "//server/share/",
  drive: "C:\\",
  driveRelative: "C:",
  driveForward: "c:/",
  extendedLength: "\\\\?\\C:\\"
} as const
type PrefixName = keyof typeof prefixes

const targetArbitrary = fc.record({
  prefix: fc.constantFrom(...(Object.keys(prefixes) as Array<PrefixName>)),
  parts: fc.array(fc.constantFrom(...(Object.keys(tokens) as Array<TokenName>)), { maxLength: 10 })
})
const build = ({ parts, prefix }: { prefix: PrefixName; parts: ReadonlyArray<TokenName> }) =>
  prefixes[prefix] + parts.map((part) => tokens[part]).join("")

const staysWithin = (root: string, candidate: string) => {
  const relative = path.relative(root, candidate)
  return relative !== "" && relative !== ".." && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative)
}

describe("ArtifactPath", () => {
  it("property: random relative paths built from ., .., names, separators, absolute prefixes, NUL and unicode never resolve outside the root", () => {
    const root = path.join(path.sep, "srv", "artifacts")
    fc.assert(
      fc.property(targetArbitrary, (choice) => {
        const target = build(choice)
        const resolved = ArtifactPath.resolveRelative(target)
        if (Result.isFailure(resolved)) return
        assert.notInclude(target, "\0")
        assert.strictEqual(choice.prefix, "none")
        for (const segment of resolved.success.segments) {
          assert.notInclude([".", "..", ""], segment)
          assert.isFalse(/[\\/]/.test(segment))
          assert.isFalse(/^[A-Za-z]:/.test(segment))
        }
        const absolute = path.join(root, ...resolved.success.segments)
        assert.isTrue(staysWithin(root, absolute), `${JSON.stringify(target)} resolved to ${absolute}`)
      }),
      { numRuns: 2000 }
    )
  })

  it("property: offloads to those paths write nothing outside the root folder", async () => {
    await fc.assert(
      fc.asyncProperty(targetArbitrary, async (choice) => {
        const { cleanup, dir } = tempDirSync()
        try {
          const root = path.join(dir, "root")
          await Effect.runPromise(
            ArtifactOffload.offload({
              content: "z".repeat(100),
              threshold: 10,
              root,
              target: build(choice),
              readTool: "read_file"
            }).pipe(Effect.provide(nodeLayer))
          )
          for (const entry of listEntries(dir)) {
            assert.isTrue(entry === "root" || entry.startsWith(`root${path.sep}`), `wrote ${entry}`)
          }
        } finally {
          cleanup()
        }
      }),
      { numRuns: 150 }
    )
  })

  it("too_long: a target over maxTargetBytes (200,000 segments, 1 MiB) is refused as TooLong, with a bounded message; one just under it resolves", () => {
    for (const target of ["a/".repeat(200_000), "a".repeat(1 << 20), "é".repeat(ArtifactPath.maxTargetBytes / 2 + 1)]) {
      const resolved = ArtifactPath.resolveRelative(target)
      assert.isTrue(Result.isFailure(resolved))
      if (Result.isSuccess(resolved)) return
      assert.strictEqual(resolved.failure.problem, "TooLong")
      assert.isBelow(resolved.failure.message.length, 400)
    }
    const under = `${"a/".repeat(2_047)}b`
    const resolved = ArtifactPath.resolveRelative(under)
    assert.isTrue(Result.isSuccess(resolved))
    if (Result.isSuccess(resolved)) assert.strictEqual(resolved.success.segments.length, 2_048)
  })

  it("too_long: an offload to a 200,000-segment target stays inline, refused as TooLong with a bounded message; control: joining its segments one argument each overflows the stack", async () => {
    const { cleanup, dir } = tempDirSync()
    try {
      const target = "a/".repeat(200_000)
      const result = await Effect.runPromise(
        ArtifactOffload.offload({
          content: "z".repeat(100),
          threshold: 10,
          root: path.join(dir, "root"),
          target,
          readTool: "read_file"
        }).pipe(Effect.provide(nodeLayer))
      )
      assert.strictEqual(result._tag, "Inline")
      if (result._tag !== "Inline" || Option.isNone(result.reason)) return assert.fail("no refusal")
      const reason = result.reason.value
      assert.strictEqual(reason._tag, "ArtifactPathRejected")
      if (reason._tag === "ArtifactPathRejected") assert.strictEqual(reason.problem, "TooLong")
      assert.isBelow(reason.message.length, 400, "the journal records the message: it stays short")
      // The segments an unbounded resolution makes, joined as the offload joins them.
      const segments = target.split("/").filter((part) => part !== "")
      assert.throws(() => path.join(dir, ...segments), RangeError)
    } finally {
      cleanup()
    }
  })

  it("traversal that stays inside the root is normalised, not refused", () => {
    assert.deepStrictEqual(
      ArtifactPath.resolveRelative("a/../b\\./c.txt"),
      Result.succeed({ segments: ["b", "c.txt"], relative: "b/c.txt" })
    )
  })
})
