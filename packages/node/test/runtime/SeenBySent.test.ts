/**
 * Issue 35, class 9 (B): "seen by the model" means carried by the last
 * request the model was sent. A tool result followed by a queued message (a
 * steering message: a round of its own) is no longer in the newest round,
 * yet the model has not seen it: it reaches the next request whole and is
 * summarized only after a request carrying it was sent. The control
 * rebuilds the former round-position rule, which summarizes it unseen.
 */
import { assert, describe, it } from "@effect/vitest"
import { Compaction, EntryGate, History, Model, TaskExecution } from "@tessera/runtime"

type Part = Model.Part

import { Effect, Option } from "effect"
import * as Planning from "../../../runtime/src/internal/compactionPlan.js"
import { isSummaryRequest, requests, taskParts, tools, turnLayer } from "./support/turns.ts"
import { runInWorld, task, type World } from "./support/world.ts"

const policy = Compaction.threshold({ measure: "estimatedTokens", limit: 500, keepRecent: 0, pieceLimit: 50_000 })

const bindWith = (world: World) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([world.privateRef]), output: Option.none() })
    return yield* EntryGate.bind(context, { policy })
  })

const call = (n: number) => Model.toolCall(`tool:${n}`, "produce", { size: 4_000, fill: "r" })
const result = (n: number) =>
  Model.toolResult({ callId: `tool:${n}`, name: "produce", content: `r${n}`.repeat(2_000), isError: false })
const steering = Model.text("user", "Also check the second report.")

/** The former rule: only the newest round, and only when it ends with a tool result, counts as unseen. */
const roundPositionPlan = (history: History.History, threshold: Compaction.Threshold) => {
  if (Compaction.measureParts(threshold.measure, History.toParts(history)) <= threshold.limit) return Option.none()
  const all = History.rounds(history)
  const unseen = Planning.endsWithUnseenResults(all) ? 1 : 0
  let kept = unseen
  let keptSize = unseen === 1 ? Compaction.measureParts(threshold.measure, all.at(-1) ?? []) : 0
  for (let index = all.length - 1 - unseen; index >= 0; index--) {
    const size = Compaction.measureParts(threshold.measure, all[index] ?? [])
    if (keptSize + size > threshold.keepRecent) break
    keptSize += size
    kept++
  }
  const summarized = all.slice(0, all.length - kept)
  return summarized.length === 0 ? Option.none() : Option.some(summarized)
}

const carries = (parts: ReadonlyArray<Part>, callId: string) =>
  parts.some((part) => part._tag === "ToolResult" && part.callId === callId && part.content === result(1).content)

describe("seen by what was last sent", () => {
  it("result_then_steering_kept: a tool result followed by a queued steering message reaches the next request whole, and is summarized only after a request carried it; the round-position rule (control) summarizes it unseen", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindWith(world)
        const script = (request: Model.ModelRequest) =>
          isSummaryRequest(request)
            ? Model.response({ text: "summary of tool:1" })
            : Model.response({ toolCalls: [call(request.parts.filter((part) => part._tag === "ToolCall").length + 1)] })
        yield* Effect.gen(function* () {
          const model = yield* Model.Model
          const loop = yield* TaskExecution.foreignLoop(binding)
          const send = (history: History.History) =>
            Effect.gen(function* () {
              const prepared = yield* loop.prepare(history, model)
              const request: Model.ModelRequest = { parts: History.toParts(prepared), tools: tools.specs }
              const where = yield* loop.dispatch(request)
              const response = yield* model.generate(request)
              yield* loop.receive(where, request, response)
              return { request, response }
            })
          const first = History.make(taskParts)
          yield* send(first)
          yield* loop.toolResult(call(1), result(1))
          // The result, then a steering message the loop queued: over the limit, and the result never sent.
          const steered = History.append(first, [call(1), result(1), steering])
          assert.isTrue(Compaction.measureParts(policy.measure, History.toParts(steered)) > policy.limit)
          const control = roundPositionPlan(steered, policy)
          assert.isTrue(
            Option.isSome(control) && control.value.some((round) => carries(round, "tool:1")),
            "control: the round-position rule summarizes the unseen result"
          )
          const second = yield* send(steered)
          assert.isTrue(carries(second.request.parts, "tool:1"), "the next request carries the result whole")
          assert.strictEqual(loop.summaryUsage().requests, 0, "nothing summarized before the model saw it")
          // Once a request carried it, the next one may summarize it.
          yield* loop.toolResult(call(2), result(2))
          const later = History.append(steered, [call(2), result(2)])
          const third = yield* send(later)
          assert.strictEqual(loop.summaryUsage().requests, 1)
          assert.isFalse(carries(third.request.parts, "tool:1"), "summarized after it was sent")
          const summaries = (yield* requests).filter(isSummaryRequest)
          assert.strictEqual(summaries.length, 1)
          assert.include(Compaction.renderPart(summaries[0]?.parts.at(-1) as Part), "tool:1")
        }).pipe(Effect.provide(turnLayer(world, task, script)))
      })
    ))

  it("plan_by_sent: the compaction plan keeps a result the given last request did not carry, and summarizes it once that request carried it", () => {
    const steered = History.append(History.make(taskParts), [call(1), result(1), steering])
    const unsent = Planning.plan(steered, policy, undefined, { parts: [...taskParts] })
    assert.isTrue(Option.isNone(unsent), "not carried by the last request: kept")
    const carried = Planning.plan(steered, policy, undefined, { parts: History.toParts(steered) })
    assert.isTrue(Option.isSome(carried) && carried.value.summarized.some((round) => carries(round, "tool:1")))
    // Without a known request, the results after the model's latest output are unseen.
    assert.isTrue(Option.isNone(Planning.plan(steered, policy)))
  })
})
