// #region first-program
import { NodeTessera } from "@tessera/node"
import { Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"

// A tool whose result is far larger than a model's context should hold: Tessera offloads it to disk.
const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) => Effect.succeed(`Report ${name}\n${"measurement 42.0 within tolerance\n".repeat(2_000)}`)
})

// The embedded scripted model: it calls the tool, then answers. A real model is one layer too.
const model = ScriptedModel.layer([
  ScriptedModel.calling("fetch_report", { name: "north" }),
  "The north report shows every measurement within tolerance."
])

const program = Effect.gen(function* () {
  // Opens (or finds again) the agent's volumes and journals in ./tessera-state, and states the redaction decision.
  const tessera = yield* NodeTessera.open({
    folder: "tessera-state",
    agent: "researcher",
    redactor: Option.some(NodeTessera.defaultRedactor)
  })
  // One durable turn of task survey-1: large results offloaded, history compacted, secrets scrubbed.
  const outcome = yield* tessera.run("survey-1", "Summarize the north report.", { tools: [fetchReport] })
  console.log(outcome._tag === "Answered" ? outcome.text : `awaiting ${outcome.awaiting.length} approval(s)`)
  console.log(`inspect it: npx tessera-inspect ${tessera.folder}`)
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(model), Effect.provide(NodeTessera.layer)))
// #endregion first-program
