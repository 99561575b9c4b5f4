/**
 * Turn scenarios for the node package's tests: a `produce` tool whose result
 * size the script chooses, and the scripted model.
 */
import { Compaction, History, Model, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Schema } from "effect"

export const produce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size, made of one repeated character",
  input: Schema.Struct({ size: Schema.Int, fill: Schema.String }),
  handler: ({ fill, size }) => Effect.succeed(fill.repeat(size))
})

export const tools = Tool.registry(produce)

export const taskText = "Collect the two reports and tell me what they say."
export const start = History.make([Model.text("user", taskText)])

export const produceCall = (id: string, size: number, fill: string) => Model.toolCall(id, "produce", { size, fill })

export const isSummaryRequest = Compaction.isSummaryRequest

/** Two large tool results, then an answer; summary requests get a fixed summary. */
export const twoReports = (big: number): ScriptedModel.Script => {
  let turnRequests = 0
  return (request) => {
    if (isSummaryRequest(request)) return Model.response({ text: "Report A is all 'a'; report B is all 'b'." })
    turnRequests++
    return turnRequests === 1
      ? Model.response({ toolCalls: [produceCall("c1", big, "a")] })
      : turnRequests === 2
        ? Model.response({ toolCalls: [produceCall("c2", big, "b")] })
        : Model.response({ text: "Both reports are uniform." })
  }
}

export const requests = Effect.flatMap(
  Effect.service(ScriptedModel.ScriptedModelRecorder),
  (recorder) => recorder.requests
)
