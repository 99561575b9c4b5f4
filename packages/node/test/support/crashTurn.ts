/**
 * The durable turn of the resume-after-SIGKILL test, shared by the child that
 * crashes (fixtures/crashMidTurn.ts) and the parent that resumes: a resume
 * checks the conversation byte for byte, tools included, so both sides must
 * build the same one.
 */
import * as Model from "@tessera/runtime/Model"
import type * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import { Effect, Schema } from "effect"

/** The turn's tool; `crash` kills the process inside the call for the `south` report. */
export const fetchReport = (crash: boolean) =>
  Tool.make({
    name: "fetch_report",
    description: "Fetches a report by name",
    input: Schema.Struct({ name: Schema.String }),
    idempotent: true,
    handler: ({ name }) =>
      Effect.sync(() => {
        if (crash && name === "south") process.kill(process.pid, "SIGKILL")
        return `report ${name}`
      })
  })

/** The turn's configuration (see {@link fetchReport}). */
export const crashTurnConfig = (crash: boolean): TaskExecution.ExecutionConfig => ({
  tools: Tool.registry(fetchReport(crash)),
  maxSteps: 4,
  durable: true
})

/** The model's responses: the two calls (the child's), then the answer (the resume's). */
export const crashTurnScript = [
  Model.response({ toolCalls: [Model.toolCall("c1", "fetch_report", { name: "north" })] }),
  Model.response({ toolCalls: [Model.toolCall("c2", "fetch_report", { name: "south" })] }),
  Model.response({ text: "Both reports read." })
]
