import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { isEffectChannel, pretenuredLine, rewriteChannel, youngLines } from "../src/ChannelClosure.ts"
import { channelClosureFixFlags } from "../src/SideBySide.ts"

const channelUrl = import.meta.resolve("effect/Channel")

/**
 * Whether a channel's closure is in V8's young generation right after
 * `Channel.fromTransform` made it, in a fresh process started with `flags`.
 */
const closureIsYoung = (flags: ReadonlyArray<string>): boolean => {
  const script = `const Channel = await import(${JSON.stringify(channelUrl)}); const channel = Channel.fromTransform(() => null); console.log(%InYoungGeneration(channel.transform))`
  const result = spawnSync(
    process.execPath,
    ["--allow-natives-syntax", ...flags, "--input-type=module", "-e", script],
    { encoding: "utf8" }
  )
  assert.strictEqual(result.status, 0, result.stderr)
  return result.stdout.trim() === "true"
}

describe("Effect's Channel closure (the stream-overhead job's informational run)", () => {
  it("the installed Effect has the line the hook rewrites, once, and the rewrite binds the closure to a variable first", () => {
    const source = fs.readFileSync(fileURLToPath(channelUrl), "utf8")
    assert.isTrue(isEffectChannel(channelUrl))
    const rewritten = rewriteChannel(source)
    assert.notInclude(rewritten, pretenuredLine)
    assert.include(rewritten, youngLines)
    assert.strictEqual(rewritten.length, source.length - pretenuredLine.length + youngLines.length)
  })

  it("a source without the line, or with it twice, is refused rather than run unchanged", () => {
    assert.throws(() => rewriteChannel("export const fromTransform = undefined"), /no longer has the line/)
    assert.throws(() => rewriteChannel(`${pretenuredLine}\n${pretenuredLine}`), /no longer has the line/)
  })

  it("as installed V8 allocates the closure in the old generation (the control); with the hook, in the young one", () => {
    assert.isFalse(closureIsYoung([]), "Effect's channel closure is old as installed")
    assert.isTrue(closureIsYoung(channelClosureFixFlags), "the hook's Channel makes it young")
  })
})
