// #region crash-safe
import { NodeTessera } from "@tessera/node"
import { Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"

const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  // Fetching twice is harmless: a call a crash cut short may simply run again on resume.
  idempotent: true,
  handler: ({ name }) => Effect.succeed(`Report ${name}: every measurement within tolerance`)
})

const model = ScriptedModel.layer([
  ScriptedModel.calling("fetch_report", { name: "north" }),
  "The north report shows every measurement within tolerance."
])

const program = Effect.gen(function* () {
  const tessera = yield* NodeTessera.open({
    folder: "tessera-state",
    agent: "researcher",
    redactor: Option.some(NodeTessera.defaultRedactor)
  })
  // Whatever stopped the last start (an error, a kill -9, a power cut), its open turn is finished first, from disk.
  const resumed = yield* tessera.resume("survey-1", { tools: [fetchReport] })
  if (Option.isSome(resumed)) console.log(`finished the interrupted turn: ${resumed.value.outcome._tag}`)
  const outcome = yield* tessera.run("survey-1", "Summarize the north report.", { tools: [fetchReport] })
  console.log(outcome._tag === "Answered" ? outcome.text : `awaiting ${outcome.awaiting.length} approval(s)`)
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(model), Effect.provide(NodeTessera.layer)))
// #endregion crash-safe
