import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { JournalForbiddingHost } from "@tessera/node"
import { Compaction, EntryGate, Journal, TaskExecution } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"
import { isSummaryRequest, requests, start, tools, twoReports } from "./support/turns.ts"

const agent = agentId("researcher")
const task = taskId("task-1")
const open = (stateDir: string) => JournalForbiddingHost.open({ stateDir, namespace: "sealed", agent })

describe("the journal-forbidding host", () => {
  it.live("opens its runtime with no private volume, and its tasks default to no compaction", () =>
    Effect.gen(function* () {
      const host = yield* open(yield* tempDir)
      assert.isTrue(Option.isNone(host.runtime.privateVolume))
      const kinds = (yield* host.host.store.list()).map((volume) => volume.kind)
      assert.notInclude(kinds, "AgentPrivate")
      const binding = yield* host.bindTask(task)
      assert.deepStrictEqual(binding.policy, Compaction.disabled)
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "runs a turn with two large tool results to completion without compaction, journaling on its journal volume",
    () =>
      Effect.gen(function* () {
        const host = yield* open(yield* tempDir)
        const { outcome, sent } = yield* host
          .withTask(task, (binding) =>
            Effect.gen(function* () {
              const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
              return { outcome, sent: yield* requests }
            })
          )
          .pipe(Effect.provide(ScriptedModel.layer(twoReports(50_000))))
        assert.strictEqual(outcome.text, "Both reports are uniform.")
        assert.strictEqual(sent.length, 3)
        assert.isFalse(sent.some(isSummaryRequest))
        const entries = yield* Journal.readEntries({ folder: host.journalFolder, task })
        assert.deepStrictEqual(entries.at(-1)?._tag, "TurnClosed")
        assert.isFalse(entries.some((entry) => entry._tag === "SummaryStaged"))
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live("arming compaction explicitly is Unauthorized at entry: zero model requests, no journal file", () =>
    Effect.gen(function* () {
      const host = yield* open(yield* tempDir)
      const armed = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0 })
      const { error, count } = yield* Effect.gen(function* () {
        const error = yield* Effect.flip(
          host.withTask(task, (binding) => TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 }), {
            policy: armed
          })
        )
        return { error, count: (yield* requests).length }
      }).pipe(Effect.provide(ScriptedModel.layer(twoReports(50_000))))
      assert.strictEqual(error._tag, "Unauthorized")
      if (error._tag === "Unauthorized") {
        assert.strictEqual(error.reason, "NoPrivateWriter")
        assert.include(error.message, "Bind: compaction is armed (Threshold)")
      }
      assert.strictEqual(count, 0)
      assert.isFalse(fs.existsSync(path.join(host.journalFolder, Journal.fileName(task))))

      // The same refusal straight from the gate, on a context bound by hand.
      const context = yield* host.runtime.bindTask({
        scope: yield* host.host.issueScope(task, [], agent),
        output: Option.none()
      })
      const atGate = yield* Effect.flip(EntryGate.bind(context, { policy: armed }))
      assert.strictEqual(atGate._tag, "Unauthorized")
    }).pipe(Effect.provide(nodeLayer))
  )

  it.live("issuing a task a grant on the journal volume is Unauthorized GrantForbidden", () =>
    Effect.gen(function* () {
      const host = yield* open(yield* tempDir)
      for (const access of [["read"], ["write"], ["read", "write"]] as const) {
        const error = yield* Effect.flip(host.host.issueScope(task, [{ volume: host.volumes.journal, access }], agent))
        assert.strictEqual(error._tag, "Unauthorized")
        if (error._tag === "Unauthorized") {
          assert.strictEqual(error.reason, "GrantForbidden")
          assert.include(error.message, "journal")
        }
      }
      // The output volume is grantable: the refusal is about journal storage only.
      const scope = yield* host.host.issueScope(task, [{ volume: host.volumes.output, access: ["write"] }], agent)
      assert.strictEqual(scope.grants.length, 1)
    }).pipe(Effect.provide(nodeLayer))
  )
})
