/**
 * The journal-forbidding host's durability reaches every reader of its
 * journals, as the local harness's does: both hosts get it from one place
 * (their shared task helpers). Under memory-only durability a finished
 * task's entries are read from the store in this process, and a repair
 * finds the journal where it lives.
 */
import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { JournalForbiddingHost } from "@tessera/node"
import { Journal, JournalStorage, TaskExecution } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Exit, Option } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"
import { start, tools, twoReports } from "./support/turns.ts"

const agent = agentId("researcher")
const task = taskId("task-1")

describe("the journal-forbidding host's durability", () => {
  it.live(
    "forbidding_host_durability_reaches_readers: under memory-only durability, readEntries after the task returns every entry the journal held, repairJournal finds nothing to repair, nothing is on disk; a reader under the default durability does not get them (negative control)",
    () =>
      Effect.gen(function* () {
        const memory = JournalStorage.memoryOnly()
        const host = yield* JournalForbiddingHost.open({
          stateDir: yield* tempDir,
          namespace: "sealed",
          agent,
          durability: memory
        })
        const held = yield* host
          .withTask(task, (binding) =>
            Effect.gen(function* () {
              yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
              const journal = yield* Journal.Journal
              return { state: yield* journal.state, file: journal.file }
            })
          )
          .pipe(Effect.provide(ScriptedModel.layer(twoReports(5_000))))
        assert.isAbove(held.state.entries, 4)
        const read = yield* host.readEntries(task)
        assert.strictEqual(read.length, held.state.entries)
        assert.strictEqual(read.at(-1)?.seq, Option.getOrUndefined(held.state.lastEntry)?.seq)
        assert.isTrue(Option.isNone(yield* host.repairJournal(task)), "an intact journal needs no repair")
        assert.isFalse(fs.existsSync(held.file), "a memory-only journal is never on disk")

        // Negative control: the reader as it was wired before, under the default durability, misses them.
        const old = yield* Effect.exit(
          Journal.readEntries({ folder: host.journalFolder, task }).pipe(
            Effect.provideService(JournalStorage.JournalDurability, JournalStorage.perEntry)
          )
        )
        assert.isFalse(Exit.isSuccess(old) && old.value.length === held.state.entries)
      }).pipe(Effect.scoped, Effect.provide(nodeLayer))
  )
})
