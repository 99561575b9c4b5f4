/**
 * A turn that pauses for a person: two deploys wait for approval, one is
 * approved and one rejected (journaled with who decided), and the turn is
 * resumed: the approved call runs, the model hears of the rejection.
 *
 * Run: node examples/approvals.ts
 */
// #region approvals
import { NodeTessera } from "@tessera/node"
import { Model, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"

const deploy = Tool.make({
  name: "deploy",
  description: "Deploys a release to an environment",
  input: Schema.Struct({ environment: Schema.String }),
  // A predicate on the input: staging deploys run at once, anything else waits for a person.
  needsApproval: ({ environment }) => environment !== "staging",
  handler: ({ environment }) => Effect.succeed(`deployed to ${environment}`)
})

const model = ScriptedModel.layer([
  Model.response({
    toolCalls: [
      Model.toolCall("d1", "deploy", { environment: "production" }),
      Model.toolCall("d2", "deploy", { environment: "eu-production" })
    ]
  }),
  "Production is deployed; eu-production was rejected (freeze in the EU), so I left it alone."
])

const program = Effect.gen(function* () {
  const tessera = yield* NodeTessera.open({
    folder: "tessera-state",
    agent: "release-bot",
    redactor: Option.some(NodeTessera.defaultRedactor)
  })
  // The turn pauses: nothing of the step ran, and the waiting calls are in the journal.
  const paused = yield* tessera.run("release", "Ship the release.", { tools: [deploy] })
  if (paused._tag === "Answered") return console.log(paused.text)
  for (const { call } of paused.awaiting) console.log(`waiting for a person: ${call.id} ${JSON.stringify(call.input)}`)
  // A person's decisions, journaled with who made them; a host may record them from another process, days later.
  yield* tessera.decide("release", { callId: "d1", approved: true, by: "alice" })
  yield* tessera.decide("release", { callId: "d2", approved: false, by: "bob", note: "freeze in the EU" })
  // The turn continues: d1 runs, d2 reaches the model as a rejection naming bob and his note.
  const resumed = yield* tessera.resume("release", { tools: [deploy] })
  if (Option.isSome(resumed) && resumed.value.outcome._tag === "Answered") console.log(resumed.value.outcome.text)
})

Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(model), Effect.provide(NodeTessera.layer)))
// #endregion approvals
