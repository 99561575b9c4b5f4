/**
 * A compaction on a real world: three tool rounds over a small byte limit
 * (so every compaction summarizes all three), the key it stages under, and
 * the private writer and journal folder of the world's task.
 */
import { Compaction, History, Journal, Model, PrivateSummaries } from "@tessera/runtime"
import { Effect, Option } from "effect"
import { operationId, task, type World } from "./world.ts"

/** A tool call and its result of 2,000 repetitions of `fill`. */
export const roundOf = (id: string, fill: string): ReadonlyArray<Model.Part> => [
  Model.toolCall(id, "produce", { fill }),
  Model.toolResult({ callId: id, name: "produce", content: fill.repeat(2_000), isError: false })
]

/** The task and three rounds: one appended alone, two together. */
export const threeRounds = History.append(
  History.append(History.make([Model.text("user", "the task")]), roundOf("c1", "a")),
  [...roundOf("c2", "b"), ...roundOf("c3", "c")]
)

/** A limit every one of {@link threeRounds}' requests is over, with room for all of it in one summary piece. */
export const smallLimit = Compaction.threshold({ measure: "bytes", limit: 1_000, keepRecent: 0, pieceLimit: 100_000 })

/** Where the summary is staged. */
export const summaryKey = { operation: operationId("task-1-t1"), step: 2 }

/** Compacts {@link threeRounds} under {@link smallLimit} at {@link summaryKey}, in turn 1 of `journal`'s task. */
export const compactThreeRounds = (journal: Journal.JournalService) =>
  Compaction.compact({
    history: threeRounds,
    policy: smallLimit,
    operation: summaryKey.operation,
    step: summaryKey.step,
    journal: Option.some(journal),
    turn: 1
  })

/** The world's task bound with its agent's private volume: its resolved writer and its journal folder. */
export const privateWriter = (world: World) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const scope = yield* world.scopeFor([world.privateRef])
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    const capability = yield* PrivateSummaries.resolve(context)
    const folder = yield* world.host.store.folderOf(world.journalRef)
    return { capability, folder }
  })

/** Runs `body` with the task's journal in `folder` open, and closes it after. */
export const withJournal = <A, E, R>(
  folder: string,
  body: (journal: Journal.JournalService) => Effect.Effect<A, E, R>
) => Effect.scoped(Effect.flatMap(Journal.open({ folder, task }), body))
