import { assert, describe, it } from "@effect/vitest"
import type { Ids } from "@tessera/core"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import { Result } from "effect"
import * as fc from "fast-check"
// The transition function is internal (the package blocks `./internal/*`); the test reaches it by path.
import { advance, emptyState, makeReplay } from "../src/internal/journalState.js"

const task = "journal-state-task" as Ids.TaskId
const digest = "0".repeat(64)

type Draft = Record<string, unknown> & { readonly _tag: string }

/**
 * A walk through the journal's protocol: each choice picks what happens
 * next among the entries that may follow, so a walk reaches every kind of
 * entry (calls made, results recorded, turns closed, resumed, abandoned).
 */
const walk = (choices: ReadonlyArray<number>): Array<Draft> => {
  const drafts: Array<Draft> = []
  let turn = 0
  let open = false
  let step = 0
  let awaiting = false
  let answered = false
  let owed: Array<{ readonly callId: string; readonly name: string; called: boolean }> = []
  for (const choice of choices) {
    if (!open) {
      if (choice % 5 === 0) drafts.push({ _tag: "Admission", operation: "turn", detail: "ok" })
      else {
        turn += 1
        open = true
        step = 0
        awaiting = false
        answered = false
        owed = []
        drafts.push({ _tag: "TurnOpened", turn, task })
      }
    } else if (awaiting) {
      awaiting = false
      if (choice % 4 === 0) {
        answered = false
        drafts.push({ _tag: "ModelFailed", turn, step, reason: "Unavailable", detail: "down" })
      } else {
        const calls = Array.from({ length: choice % 3 }, (_, index) => ({
          callId: `c${turn}-${step}-${index}`,
          name: index % 2 === 0 ? "read" : "write"
        }))
        answered = calls.length === 0
        owed = calls.map((call) => ({ ...call, called: false }))
        drafts.push({ _tag: "ResponseReceived", turn, step, textSize: 0, textSha256: digest, toolCalls: calls })
      }
    } else if (owed.length > 0) {
      const call = owed[choice % owed.length] as (typeof owed)[number]
      if (!call.called) {
        call.called = true
        drafts.push({
          _tag: "ToolCalled",
          turn,
          step,
          callId: call.callId,
          name: call.name,
          inputSize: 2,
          inputSha256: digest
        })
      } else {
        owed = owed.filter((other) => other !== call)
        drafts.push({
          _tag: "ToolResulted",
          turn,
          step,
          callId: call.callId,
          name: call.name,
          isError: choice % 2 === 0,
          size: 1,
          sha256: digest
        })
      }
    } else if (answered && choice % 3 === 0) {
      open = false
      drafts.push({ _tag: "TurnClosed", turn, steps: step })
    } else if (choice % 7 === 1) {
      open = false
      drafts.push({ _tag: "TurnAbandoned", turn, reason: "stopped" })
    } else if (choice % 7 === 2) {
      drafts.push({ _tag: "TurnResumed", turn })
    } else if (choice % 11 === 3) {
      drafts.push({ _tag: "TruncationRecovered", line: 2, keptBytes: 10, droppedBytes: 3, droppedSha256: digest })
    } else {
      step += 1
      awaiting = true
      drafts.push({ _tag: "RequestDispatched", turn, step, parts: 1, size: 10, sha256: digest })
    }
  }
  return drafts
}

/** One way of damaging a walk, named for readable shrinking. */
type Damage = readonly [
  at: number,
  kind: "drop" | "repeat" | "swap" | "stepUp" | "stepDown" | "turnUp" | "otherCall" | "otherName" | "otherTask"
]

const damage = (drafts: ReadonlyArray<Draft>, damages: ReadonlyArray<Damage>): Array<Draft> => {
  const out = [...drafts]
  for (const [at, kind] of damages) {
    if (out.length === 0) break
    const index = at % out.length
    const target = out[index] as Draft
    switch (kind) {
      case "drop":
        out.splice(index, 1)
        break
      case "repeat":
        out.splice(index, 0, target)
        break
      case "swap":
        if (index + 1 < out.length) out.splice(index, 2, out[index + 1] as Draft, target)
        break
      case "stepUp":
      case "stepDown":
        if (typeof target.step === "number")
          out[index] = { ...target, step: target.step + (kind === "stepUp" ? 1 : -1) }
        if (typeof target.steps === "number") out[index] = { ...target, steps: target.steps + 1 }
        break
      case "turnUp":
        if (typeof target.turn === "number") out[index] = { ...target, turn: target.turn + 1 }
        break
      case "otherCall":
        if (typeof target.callId === "string") out[index] = { ...target, callId: `${target.callId}x` }
        if (Array.isArray(target.toolCalls) && target.toolCalls.length > 1) {
          out[index] = { ...target, toolCalls: [target.toolCalls[0], target.toolCalls[0]] }
        }
        break
      case "otherName":
        if (typeof target.name === "string") out[index] = { ...target, name: `${target.name}x` }
        break
      case "otherTask":
        if (target._tag === "TurnOpened") out[index] = { ...target, task: "another-task" }
        break
    }
  }
  return out
}

const damages = fc.array(
  fc.tuple(
    fc.nat(200),
    fc.constantFrom("drop", "repeat", "swap", "stepUp", "stepDown", "turnUp", "otherCall", "otherName", "otherTask")
  ) as fc.Arbitrary<Damage>,
  { maxLength: 3 }
)

describe("journal state", () => {
  it("property: for walks of the protocol, whole or damaged, a reopen's in-place replay refuses and keeps exactly what appends do", () => {
    const accepted = new Map<string, number>()
    fc.assert(
      fc.property(fc.array(fc.nat(1_000), { maxLength: 60 }), damages, (choices, damaged) => {
        let state = emptyState(task)
        const replay = makeReplay(task)
        for (const [index, draft] of damage(walk(choices), damaged).entries()) {
          // Every tenth entry also carries a wrong sequence number, which both must refuse.
          const seq = state.entries + (index % 10 === 9 ? 1 : 0)
          const entry = { ...draft, seq, at: 0 } as unknown as JournalEntry.Entry
          const appended = advance(state, entry)
          const replayed = replay.add(entry)
          if (Result.isFailure(appended)) {
            assert.strictEqual(replayed, appended.failure, `entry ${index} (${draft._tag})`)
          } else {
            assert.strictEqual(replayed, undefined, `entry ${index} (${draft._tag})`)
            state = appended.success
            accepted.set(draft._tag, (accepted.get(draft._tag) ?? 0) + 1)
          }
          assert.deepStrictEqual(replay.state(), state)
        }
      }),
      { numRuns: 500 }
    )
    // The walks reach every kind of entry, not only the first few of a turn.
    for (const tag of ["ResponseReceived", "ToolCalled", "ToolResulted", "TurnClosed", "TurnResumed", "ModelFailed"]) {
      assert.isAbove(accepted.get(tag) ?? 0, 0, tag)
    }
  })
})
