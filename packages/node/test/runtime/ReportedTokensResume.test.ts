/**
 * Issue 35, class 9 (A): under the `reportedTokens` measure, a resume after
 * a failure inside a summary request measures from the provider's count the
 * journal kept (`ResponseReceived.usage.inputTokens`), so the resumed turn
 * sends exactly the requests the uninterrupted turn sent. The control
 * resumes with hooks that keep the count in memory only (the former
 * behaviour): they estimate, skip the summary and send another request.
 */
import { assert, describe, it } from "@effect/vitest"
import { Compaction, EntryGate, History, Journal, Model, PrivateSummaries, TaskExecution } from "@tessera/runtime"
import type { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option } from "effect"
import {
  foreignStep,
  isSummaryRequest,
  journalFolder,
  requests,
  requestText,
  start,
  tools,
  turnLayer
} from "./support/turns.ts"
import { runInWorld, task, type World } from "./support/world.ts"

// Small history, large reported counts: only the provider's count crosses the limit.
const policy = Compaction.threshold({
  measure: "reportedTokens",
  limit: 2_000,
  keepRecent: 10,
  pieceLimit: 50_000
})
const reportedInput = 10_000

const bound = (world: World, chosen: Compaction.Policy) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const context = yield* runtime.bindTask({ scope: yield* world.scopeFor([world.privateRef]), output: Option.none() })
    return yield* EntryGate.bind(context, { policy: chosen })
  })

const hasResult = (request: Model.ModelRequest, callId: string) =>
  request.parts.some((part) => part._tag === "ToolResult" && part.callId === callId)

/**
 * Two calls, then the answer; every turn request reports `reportedInput`
 * input tokens. With `failSummary`, the first summary request fails.
 */
const scriptOf = (failSummary: boolean): ScriptedModel.Script => {
  let failed = !failSummary
  return (request) => {
    if (isSummaryRequest(request)) {
      if (!failed) {
        failed = true
        return Effect.fail(new Model.ModelError({ reason: "ProviderFailure", detail: "HTTP 503 in a summary request" }))
      }
      return Model.response({ text: "summary: c0 produced xs" })
    }
    const usage = { usage: { inputTokens: reportedInput } }
    if (hasResult(request, "c1")) return Model.response({ text: "done", ...usage })
    const id = hasResult(request, "c0") ? "c1" : "c0"
    return Model.response({ toolCalls: [Model.toolCall(id, "produce", { size: 40, fill: "x" })], ...usage })
  }
}

/** What the model saw, request by request, and the journal's `RequestDispatched` measures. */
interface Seen {
  readonly texts: ReadonlyArray<string>
  readonly dispatched: ReadonlyArray<string>
}

// Each world's store has its own random id, which the summary's file reference names.
const textsOf = (sent: ReadonlyArray<Model.ModelRequest>) =>
  sent.map(
    (request) =>
      `${isSummaryRequest(request) ? "summary" : "turn"}:${requestText(request).replaceAll(/store-[0-9a-f-]{36}/g, "store")}`
  )

const dispatchedOf = (world: World) =>
  Effect.gen(function* () {
    const entries = yield* Journal.readEntries({ folder: yield* journalFolder(world), task })
    // Step, part count and size: the digest of a compacted request names the world's store.
    return entries.flatMap((entry) =>
      entry._tag === "RequestDispatched" ? [`${entry.step}/${entry.parts}/${entry.size}`] : []
    )
  })

const uninterrupted = () =>
  runInWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bound(world, policy)
      const texts = yield* Effect.gen(function* () {
        const outcome = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8, durable: true })
        assert.strictEqual(outcome._tag, "Answered")
        return textsOf(yield* requests)
      }).pipe(Effect.provide(turnLayer(world, task, scriptOf(false))))
      return { texts, dispatched: yield* dispatchedOf(world) } satisfies Seen
    })
  )

/**
 * The turn failing inside its summary request, then resumed from disk.
 * `oldHooks`: the resume gets hooks that keep the provider's count in
 * memory only (made without the turn's tool specs, bound under a disabled
 * policy so the gate adds none of its own), as every resume had before.
 */
const interruptedThenResumed = (oldHooks: boolean) =>
  runInWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bound(world, policy)
      const before = yield* Effect.gen(function* () {
        const failure = yield* Effect.flip(TaskExecution.runTurn(binding, start, { tools, maxSteps: 8, durable: true }))
        assert.strictEqual(failure._tag, "ModelError")
        return textsOf(yield* requests)
      }).pipe(Effect.provide(turnLayer(world, task, scriptOf(true))))
      const after = yield* Effect.gen(function* () {
        if (!oldHooks) {
          const resumed = yield* TaskExecution.resume(yield* bound(world, policy), { tools, maxSteps: 8 })
          assert.strictEqual(resumed.outcome._tag, "Answered")
        } else {
          const plain = yield* bound(world, Compaction.disabled)
          const capability = yield* PrivateSummaries.resolve(plain.context)
          const memoryOnly = yield* TaskExecution.compactionHooks(policy, yield* Journal.Journal).pipe(
            PrivateSummaries.provide(capability)
          )
          const resumed = yield* TaskExecution.resume(plain, { tools, maxSteps: 8, hooks: memoryOnly })
          assert.strictEqual(resumed.outcome._tag, "Answered")
        }
        return textsOf(yield* requests)
      }).pipe(Effect.provide(turnLayer(world, task, scriptOf(false))))
      return { before, after, dispatched: yield* dispatchedOf(world) }
    })
  )

/**
 * The same turn driven through foreign loops, as an adapter drives them:
 * each step prepared with the request's tools (or, `withTools: false`,
 * without them, as Pi's context hook must), the history growing by each
 * response's calls and their results. With `failSummary`, the first loop
 * fails inside its summary request and a fresh loop (a new process's)
 * carries the turn on from the same history.
 */
const throughLoops = (failSummary: boolean, withTools: boolean) =>
  runInWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bound(world, policy)
      // The history as the adapter's loop holds it: a failing step leaves it where that step began.
      let held = start
      const drive = (loop: TaskExecution.ForeignLoop, from: History.History) =>
        Effect.gen(function* () {
          let history = from
          for (let step = 0; step < 4; step++) {
            held = history
            const { response } = yield* foreignStep(loop, history, withTools ? tools.specs : undefined)
            if (response.toolCalls.length === 0) return
            const results = response.toolCalls.map((call) =>
              Model.toolResult({ callId: call.id, name: call.name, content: "x".repeat(40), isError: false })
            )
            history = History.append(history, [...response.toolCalls, ...results])
          }
        })
      const first = yield* Effect.gen(function* () {
        const outcome = yield* Effect.exit(drive(yield* TaskExecution.foreignLoop(binding), start))
        return { failed: outcome._tag === "Failure", texts: textsOf(yield* requests) }
      }).pipe(Effect.provide(turnLayer(world, task, scriptOf(failSummary))))
      const after = first.failed
        ? yield* Effect.gen(function* () {
            yield* drive(yield* TaskExecution.foreignLoop(yield* bound(world, policy)), held)
            return textsOf(yield* requests)
          }).pipe(Effect.provide(turnLayer(world, task, scriptOf(false))))
        : []
      return { failed: first.failed, before: first.texts, after, dispatched: yield* dispatchedOf(world) }
    })
  )

describe("reportedTokens across a resume", () => {
  it("foreign_loop_reported_tokens_resume: a fresh foreign loop given the request's tools carries on a turn that failed inside a summary request with the journal's count, sending the uninterrupted loop's requests; without the tools (control) it estimates and sends another request", async () => {
    const reference = await throughLoops(false, true)
    assert.isFalse(reference.failed)
    assert.deepStrictEqual(
      reference.before.map((text) => text.split(":")[0]),
      ["turn", "turn", "summary", "turn"]
    )
    const resumed = await throughLoops(true, true)
    assert.isTrue(resumed.failed)
    assert.deepStrictEqual(resumed.before, reference.before.slice(0, 3))
    assert.deepStrictEqual([...resumed.before.slice(0, 2), ...resumed.after], reference.before)
    assert.deepStrictEqual(resumed.dispatched, reference.dispatched)

    const control = await throughLoops(true, false)
    assert.deepStrictEqual(control.before, reference.before.slice(0, 3))
    assert.isFalse(
      control.after.some((text) => text.startsWith("summary")),
      "control: no summary request"
    )
    assert.notDeepEqual([...control.before.slice(0, 2), ...control.after], reference.before)
  })

  it("reported_tokens_resume: a durable turn that failed inside a summary request resumes with the journal's count and sends the uninterrupted turn's requests; hooks that keep the count in memory only (control) send another request", async () => {
    const reference = await uninterrupted()
    // The uninterrupted turn compacted before its third request, on the provider's count alone.
    assert.deepStrictEqual(
      reference.texts.map((text) => text.split(":")[0]),
      ["turn", "turn", "summary", "turn"]
    )
    assert.strictEqual(reference.dispatched.length, 3)

    const resumed = await interruptedThenResumed(false)
    // Before the failure: the first two requests and the summary request that failed.
    assert.deepStrictEqual(resumed.before, reference.texts.slice(0, 3))
    // The resume sends the summary request again, then the compacted request: the uninterrupted sequence.
    assert.deepStrictEqual([...resumed.before.slice(0, 2), ...resumed.after], reference.texts)
    assert.deepStrictEqual(resumed.dispatched, reference.dispatched)

    // Control: without the journal's count the resumed hooks estimate, stay under the limit, skip the summary
    // and send the uncompacted request, which the uninterrupted turn never sent.
    const control = await interruptedThenResumed(true)
    assert.deepStrictEqual(control.before, reference.texts.slice(0, 3))
    assert.notDeepEqual([...control.before.slice(0, 2), ...control.after], reference.texts)
    assert.isFalse(
      control.after.some((text) => text.startsWith("summary")),
      "control: no summary request"
    )
    assert.notDeepEqual(control.dispatched, reference.dispatched)
  })
})
