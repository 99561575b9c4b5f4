/**
 * Which calls of a conversation still wait for their results: what a resume
 * compares with the calls the journal owes. Models that number their calls
 * per response repeat ids turn after turn, so an id answered in an earlier
 * round says nothing about a later call with the same id.
 */
import { assert, describe, it } from "@effect/vitest"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as fc from "fast-check"

/** One round: the calls of a response (ids unique within it), and which of them have their results. */
interface Round {
  readonly calls: ReadonlyArray<{ readonly id: string; readonly answered: boolean }>
}

/** The conversation of `rounds`: each round's calls, then the results of those answered, then the model's reply. */
const conversation = (rounds: ReadonlyArray<Round>): History.History =>
  History.append(
    History.make([Model.text("user", "go")]),
    rounds.flatMap((round, index) => [
      ...round.calls.map((call) => Model.toolCall(call.id, "probe", { round: index })),
      ...round.calls.flatMap((call) =>
        call.answered ? [Model.toolResult({ callId: call.id, name: "probe", content: "ok", isError: false })] : []
      )
    ])
  )

/** What a reader of the conversation expects open: the last round's calls without results, with their inputs. */
const expectedOpen = (rounds: ReadonlyArray<Round>) => {
  const last = rounds.length - 1
  return (rounds[last]?.calls ?? []).filter((call) => !call.answered).map((call) => ({ id: call.id, round: last }))
}

const opened = (calls: ReadonlyArray<Model.ToolCallPart>) =>
  calls.map((call) => ({ id: call.id, round: (call.input as { round: number }).round }))

/**
 * Conversations as a model leaves them: every round but the last fully answered (the executor sends the next
 * request only then), ids drawn from three names so that rounds repeat each other's.
 */
const rounds = fc
  .array(
    fc
      .uniqueArray(fc.constantFrom("d1", "d2", "d3"), { minLength: 1, maxLength: 3 })
      .chain((ids) => fc.tuple(...ids.map((id) => fc.boolean().map((answered) => ({ id, answered }))))),
    { minLength: 1, maxLength: 5 }
  )
  .map((calls) =>
    calls.map((round, index) => ({
      calls: index === calls.length - 1 ? round : round.map((call) => ({ ...call, answered: true }))
    }))
  )

/** The rule before call ids were read in order: any result anywhere answers every call with its id. */
const anyResultAnswers = (history: History.History): ReadonlyArray<Model.ToolCallPart> => {
  const answered = new Set<string>()
  for (const part of history.parts) if (part._tag === "ToolResult") answered.add(part.callId)
  return history.parts.filter((part): part is Model.ToolCallPart => part._tag === "ToolCall" && !answered.has(part.id))
}

/** Two rounds that reuse d1: the first answered, the second waiting (an approval, a crash). */
const repeated: ReadonlyArray<Round> = [
  { calls: [{ id: "d1", answered: true }] },
  { calls: [{ id: "d1", answered: false }] }
]

describe("History.unansweredCalls", () => {
  it("unanswered_calls_follow_the_order_of_results: exactly the last round's calls without results, whatever ids earlier rounds used", () => {
    fc.assert(
      fc.property(rounds, (drawn) => {
        assert.deepStrictEqual(opened(History.unansweredCalls(conversation(drawn))), expectedOpen(drawn))
      }),
      { numRuns: 300 }
    )
    assert.deepStrictEqual(opened(History.unansweredCalls(conversation(repeated))), [{ id: "d1", round: 1 }])
  })

  it("unanswered_calls_follow_the_order_of_results negative control: the rule that lets an earlier result answer a later call loses the waiting call", () => {
    assert.deepStrictEqual(opened(anyResultAnswers(conversation(repeated))), [])
    assert.throws(() =>
      fc.assert(
        fc.property(rounds, (drawn) => {
          assert.deepStrictEqual(opened(anyResultAnswers(conversation(drawn))), expectedOpen(drawn))
        }),
        { numRuns: 300 }
      )
    )
  })
})
