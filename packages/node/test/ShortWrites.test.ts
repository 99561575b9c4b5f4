/**
 * Writes cut short by the system, for real: the fixture runs under a file
 * size limit, where a write that crosses the limit writes only up to it and
 * the next one fails (as on a full disk). Whatever is cut, nothing torn is
 * left behind: the journal cuts its last line back and reopens, a durable
 * write removes its partial file, an offload keeps the caller's content.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, assert, describe, it } from "@effect/vitest"

const fixture = fileURLToPath(new URL("./fixtures/shortWrites.ts", import.meta.url))

/** `ulimit -f` counts 512-byte blocks (POSIX): 32 KiB. */
const limitBlocks = 64

interface Outcome {
  readonly bodyBytes: number
  readonly probeWritten: number
  readonly journal: {
    readonly failure?: string
    readonly entries: number
    readonly bytes: number
    readonly endsWithNewline: boolean
    readonly reopened: { readonly entries?: number; readonly truncations?: number; readonly failure?: string }
  }
  readonly onTheCallingThread: { readonly failure?: string; readonly left: boolean }
  readonly onAWorker: { readonly failure?: string; readonly left: boolean }
  readonly offload: {
    readonly tag: string
    readonly reason?: string
    readonly keptContent: boolean
    readonly files: ReadonlyArray<string>
  }
}

const runUnderLimit = (folder: string): Outcome => {
  const child = spawnSync(
    "/bin/sh",
    ["-c", `ulimit -f ${limitBlocks} && exec "$@"`, "sh", process.execPath, fixture, folder],
    { encoding: "utf8" }
  )
  assert.strictEqual(child.status, 0, `the fixture failed: ${child.stderr}`)
  return JSON.parse(child.stdout) as Outcome
}

const unlimited = process.platform === "win32"

describe.skipIf(unlimited)("writes cut short by a file size limit", () => {
  // One run of the fixture serves every test below: each checks one guarantee in its outcome.
  let folder: string | undefined
  let outcome: Outcome | undefined
  const ran = (): Outcome => {
    folder ??= fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-")))
    outcome ??= runUnderLimit(folder)
    return outcome
  }
  afterAll(() => {
    if (folder !== undefined) fs.rmSync(folder, { recursive: true, force: true })
  })

  it("cut a single write of the body short here (the premise of the other tests)", () => {
    const { bodyBytes, probeWritten } = ran()
    assert.isAbove(probeWritten, 0)
    assert.isBelow(probeWritten, bodyBytes)
  })

  it("a journal append cut short fails with a typed error, its partial line is cut back, and the journal reopens", () => {
    const { journal, probeWritten } = ran()
    assert.include(journal.failure ?? "every append succeeded", "JournalIoError")
    assert.include(journal.failure ?? "", "EFBIG")
    assert.isAbove(journal.entries, 0)
    assert.isTrue(journal.endsWithNewline, "the file ends inside a line")
    assert.isAtMost(journal.bytes, probeWritten)
    assert.deepStrictEqual(journal.reopened, { entries: journal.entries, truncations: 0 })
  })

  it("a durable write cut short fails and leaves no file, on the calling thread and on a worker", () => {
    const { onTheCallingThread, onAWorker } = ran()
    for (const [where, write] of [
      ["calling thread", onTheCallingThread],
      ["worker", onAWorker]
    ] as const) {
      assert.include(write.failure ?? `the write on the ${where} succeeded`, "DurableFileFailure")
      assert.include(write.failure ?? "", "EFBIG")
      assert.isFalse(write.left, `the partial file written on the ${where} was left`)
    }
  })

  it("an offload cut short keeps the caller's content inline, with its reason, and leaves no artifact", () => {
    assert.deepStrictEqual(ran().offload, {
      tag: "Inline",
      reason: "ArtifactWriteFailed",
      keptContent: true,
      files: []
    })
  })
})
