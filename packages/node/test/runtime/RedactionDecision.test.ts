/**
 * A turn records the host's redaction decision: `Scrubbed` when a redactor
 * was provided to it, `Verbatim` when none was, so a run that stores bodies
 * as written is visible in its journal (and to the inspector), not silent.
 */
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { Compaction, Journal, Model, TaskExecution } from "@tessera/runtime"
import { Effect } from "effect"
import { bindPrivate, journalFolder, start, tools, turnLayer } from "./support/turns.ts"
import { runInWorld, task, type World } from "./support/world.ts"

/** The `redaction` of every `TurnOpened` of the world's task, in order. */
const decisions = (world: World) =>
  Effect.gen(function* () {
    const entries = yield* Journal.readEntries({ folder: yield* journalFolder(world), task })
    return entries.flatMap((entry) => (entry._tag === "TurnOpened" ? [entry.redaction] : []))
  })

const oneTurn = (world: World) =>
  Effect.flatMap(bindPrivate(world, Compaction.disabled), (binding) =>
    TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 })
  ).pipe(Effect.provide(turnLayer(world, task, [Model.response({ text: "done" })])))

describe("the journal records the redaction decision", () => {
  it("turn_records_the_redaction_decision: a turn under a redactor opens Scrubbed; the same turn without one (control: a stamp that ignored the provided redactor would write one value twice) opens Verbatim", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        yield* oneTurn(world).pipe(Effect.provide(DefaultRedactor.layer()))
        yield* oneTurn(world)
        assert.deepStrictEqual(yield* decisions(world), ["Scrubbed", "Verbatim"])
      })
    ))
})
