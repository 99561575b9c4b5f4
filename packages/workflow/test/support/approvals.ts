/**
 * The approvals scenario the workflow tests run, in one process or on
 * cluster runners: a model that asks for two calls in one step and a third
 * after them, and the world's tool needing approval for the first two.
 */
import { Model, type TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect } from "effect"
import * as world from "./world.ts"

/**
 * The model: first asks for calls `call-a` (n 1) and `call-b` (n 2) in one
 * step, then `call-c` (n 3), then answers with what every tool result it
 * was shown said: `ok` or the error text the model received.
 */
export const approvalModel = ScriptedModel.layer((request) => {
  const user = request.parts.find((part) => part._tag === "Text" && part.role === "user")
  const prompt = user?._tag === "Text" ? user.text.slice(world.promptPrefix.length) : ""
  const results = request.parts.flatMap((part) => (part._tag === "ToolResult" ? [part] : []))
  if (results.length === 0) {
    return Model.response({
      toolCalls: [
        Model.toolCall("call-a", "work", { prompt, n: 1 }),
        Model.toolCall("call-b", "work", { prompt, n: 2 })
      ]
    })
  }
  if (!results.some((result) => result.callId === "call-c")) {
    return Model.response({ toolCalls: [Model.toolCall("call-c", "work", { prompt, n: 3 })] })
  }
  return Model.response({
    text: results.map((result) => `${result.callId}=${result.isError ? `error(${result.content})` : "ok"}`).join("; ")
  })
})

/** The test's tool (a line in the log per effect), needing approval for calls 1 and 2 unless `declared` is false. */
export const approvalTool = (log: string, declared = true): Tool.Tool => {
  const tool = world.workTool(log)
  return declared ? { ...tool, needsApproval: (input) => Effect.succeed((input as { n: number }).n !== 3) } : tool
}

export const approvalConfig =
  (declared = true) =>
  (log: string): TaskExecution.ExecutionConfig => ({
    ...world.config(log),
    tools: Tool.registry(approvalTool(log, declared))
  })

/** Runs `probe` every 25 ms until `done` holds of its value (at most 20 s; then a defect naming `what`). */
export const waitFor = <A, E, R>(probe: Effect.Effect<A, E, R>, done: (value: A) => boolean, what: string) =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt < 800; attempt++) {
      const value = yield* probe
      if (done(value)) return value
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`timed out waiting for ${what}`))
  })
