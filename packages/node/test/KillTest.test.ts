/**
 * The kill test: a real child process runs turns with artifact offload and
 * compaction on a disk folder and is killed with SIGKILL at random points,
 * then started again, 30 times; finally it runs to the end.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles, Ids } from "@tessera/core"
import { Journal } from "@tessera/runtime"
import { Effect, Schema } from "effect"
import * as Killable from "./support/killableFixture.ts"

const child = path.join(import.meta.dirname, "fixtures", "crashTurns.ts")
/** Turns the task starts with; when a run ends before every kill was made, the task gets more. */
const firstTurns = 6
const bodyBytes = 40_000

/** Starts the child; kills it `killAfterMs` after it is ready (never when `undefined`). */
const runChild = (
  stateDir: string,
  turns: number,
  killAfterMs: number | undefined,
  durability: "per-entry" | "group-commit"
) =>
  Killable.runFixture({
    fixture: child,
    args: [stateDir, String(turns), durability],
    kill: killAfterMs === undefined ? undefined : Killable.afterReady(killAfterMs)
  })

/** Every file below `folder`, relative, with temporary names apart. */
const walk = (folder: string) => {
  const finals: Array<string> = []
  const temporary: Array<string> = []
  if (!fs.existsSync(folder)) return { finals, temporary }
  for (const name of fs.readdirSync(folder, { recursive: true, encoding: "utf8" })) {
    if (fs.statSync(path.join(folder, name)).isDirectory()) continue
    if (DurableFiles.isTemporaryName(path.basename(name))) temporary.push(name)
    else finals.push(name)
  }
  return { finals, temporary }
}

/**
 * What a reader listing the private volume may see: every artifact under a
 * final name is a whole body, every summary a whole answer. Returns the
 * problems found.
 */
const partialFiles = (volume: string): ReadonlyArray<string> => {
  const problems: Array<string> = []
  for (const name of walk(path.join(volume, "artifacts")).finals) {
    const text = fs.readFileSync(path.join(volume, "artifacts", name), "utf8")
    if (!(text.length === bodyBytes && text.startsWith("BEGIN ") && text.endsWith("\nEND"))) {
      problems.push(`artifacts/${name} is partial (${text.length} bytes)`)
    }
  }
  for (const name of walk(path.join(volume, "summaries")).finals) {
    const text = fs.readFileSync(path.join(volume, "summaries", name), "utf8")
    if (!(text.startsWith("summary by ") && text.endsWith(" END"))) problems.push(`summaries/${name} is partial`)
  }
  return problems
}

describe("kill test", () => {
  it.each([
    { durability: "per-entry", kills: 30 },
    { durability: "group-commit", kills: 12 }
  ] as const)(
    "kill_test ($durability): $kills SIGKILLs during turns with offload and compaction: every resume succeeds without abandoning, no large result inline, no partial file under a final name, no tool with a journaled result runs twice",
    async ({ durability, kills }) => {
      const stateDir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-kill-")))
      try {
        let killed = 0
        let partialSeen = 0
        let turns = firstTurns
        while (killed < kills) {
          const run = await runChild(stateDir, turns, 5 + Math.floor(Math.random() * 100), durability)
          if (run.outcome === "done") {
            turns += 3
            continue
          }
          killed++
          // What a host or a read tool listing the folder sees right after the kill.
          const problems = partialFiles(path.join(stateDir, "crash", "volumes", "crasher-scratch"))
          assert.deepStrictEqual(problems, [], "a partial file is visible under a final name after a kill")
          partialSeen += walk(path.join(stateDir, "crash", "volumes")).temporary.length
        }
        const final = await runChild(stateDir, turns, undefined, durability)
        assert.strictEqual(final.outcome, "done")

        const violations = path.join(stateDir, "violations.log")
        assert.strictEqual(fs.existsSync(violations) ? fs.readFileSync(violations, "utf8") : "", "")
        const volume = path.join(stateDir, "crash", "volumes", "crasher-scratch")
        assert.deepStrictEqual(partialFiles(volume), [])
        // Reopening removed every temporary name a kill left.
        assert.deepStrictEqual(walk(path.join(stateDir, "crash", "volumes")).temporary, [])

        const entries = await Effect.runPromise(
          Journal.readEntries({
            folder: path.join(stateDir, "crash", "volumes", "journal"),
            task: Schema.decodeUnknownSync(Ids.TaskId)("crash-task")
          }).pipe(Effect.provide(NodeServices.layer))
        )
        const tags = entries.map((entry) => entry._tag)
        assert.strictEqual(tags.filter((tag) => tag === "TurnClosed").length, turns)
        assert.notInclude(tags, "TurnAbandoned")
        // Every large call the model asked for has a result, and every one went to an artifact. (A request lost
        // to a kill is not asked again: the turn continues with the next step, so a turn may make fewer calls.)
        const asked = entries.flatMap((entry) =>
          entry._tag === "ResponseReceived" ? entry.toolCalls.filter((call) => call.callId.endsWith(":big")) : []
        )
        const large = entries.filter((entry) => entry._tag === "ToolResulted" && entry.callId.endsWith(":big"))
        assert.isAbove(asked.length, 0)
        assert.strictEqual(large.length, asked.length)
        for (const entry of large) {
          if (entry._tag === "ToolResulted") assert.isBelow(entry.size, 4096, `${entry.callId} stayed inline`)
        }
        console.info(
          `kill test (${durability}): ${killed} kills over ${turns} turns, ${tags.filter((tag) => tag === "TurnResumed").length} resumes, ` +
            `${tags.filter((tag) => tag === "SummarySuperseded").length} summaries superseded, ` +
            `${entries.filter((entry) => entry._tag === "SummaryStaged" && entry.adopted === true).length} adopted, ` +
            `${entries.filter((entry) => entry._tag === "ArtifactOffloaded" && entry.disposition !== undefined).length} artifacts reused or replaced, ` +
            `${partialSeen} temporary names seen after kills`
        )
      } finally {
        fs.rmSync(stateDir, { recursive: true, force: true })
      }
    },
    240_000
  )

  it("negative control: the kill test's file check finds a torn artifact and a torn summary under final names", () => {
    const volume = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-kill-control-")))
    try {
      fs.mkdirSync(path.join(volume, "artifacts", "tool-results"), { recursive: true })
      fs.mkdirSync(path.join(volume, "summaries", "op"), { recursive: true })
      // What writing under the final name first leaves when the kill lands mid-write.
      fs.writeFileSync(path.join(volume, "artifacts", "tool-results", "torn.txt"), "BEGIN t1:s1:big\nxxxx")
      fs.writeFileSync(path.join(volume, "summaries", "op", "3.txt"), "summary by 12 at")
      // A temporary name is not content and is not reported.
      fs.writeFileSync(path.join(volume, "artifacts", "tool-results", DurableFiles.temporaryName("x.txt", "t")), "")
      assert.deepStrictEqual(partialFiles(volume), [
        "artifacts/tool-results/torn.txt is partial (20 bytes)",
        "summaries/op/3.txt is partial"
      ])
    } finally {
      fs.rmSync(volume, { recursive: true, force: true })
    }
  })
})
