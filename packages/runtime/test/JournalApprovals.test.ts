/**
 * The journal's rules for approvals and for a request sent again under its
 * own step: what may follow what, checked on append and on reopen alike;
 * and the new optional fields stay readable by a reader that does not know
 * them.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@tessera/core"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalEntry from "@tessera/runtime/JournalEntry"
import { Effect, FileSystem, Option, Result, Schema } from "effect"

const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const digest = "0".repeat(64)

const tempFolder = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
})

const withJournal = <A, E>(folder: string, use: (journal: Journal.JournalService) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(Journal.open({ folder, task }), use))

/** A turn whose first response asks for two calls. */
const askedForTwo = (journal: Journal.JournalService) =>
  Effect.gen(function* () {
    yield* journal.openTurn
    yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
    yield* journal.append({
      _tag: "ResponseReceived",
      turn: 1,
      step: 1,
      textSize: 0,
      textSha256: digest,
      toolCalls: [
        { callId: "c1", name: "deploy" },
        { callId: "c2", name: "deploy" }
      ]
    })
  })

const requested = (callId: string, reason: JournalEntry.ApprovalReason = "Tool") =>
  ({
    _tag: "ApprovalRequested",
    turn: 1,
    step: 1,
    callId,
    name: "deploy",
    inputSize: 2,
    inputSha256: digest,
    reason
  }) as const

const decided = (callId: string, approved: boolean) =>
  ({ _tag: "ApprovalDecided", turn: 1, step: 1, callId, approved, by: "alice" }) as const

const called = (callId: string) =>
  ({ _tag: "ToolCalled", turn: 1, step: 1, callId, name: "deploy", inputSize: 2, inputSha256: digest }) as const

const resulted = (callId: string, failure?: "Rejected") =>
  ({
    _tag: "ToolResulted",
    turn: 1,
    step: 1,
    callId,
    name: "deploy",
    isError: failure !== undefined,
    ...(failure === undefined ? {} : { failure }),
    size: 1,
    sha256: digest
  }) as const

describe("journal: approvals", () => {
  it.effect(
    "journal_approval_rules: a call awaiting approval cannot be called; a rejected one gets its result without running; decisions need a request; the state survives a reopen",
    () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        yield* withJournal(folder, (journal) =>
          Effect.gen(function* () {
            yield* askedForTwo(journal)
            const early = yield* Effect.flip(journal.append(decided("c1", true)))
            assert.strictEqual(early._tag, "JournalSequenceError", "no decision before a request")
            yield* journal.append(requested("c1"))
            yield* journal.append(requested("c2"))
            const twice = yield* Effect.flip(journal.append(requested("c1")))
            assert.strictEqual(twice._tag, "JournalSequenceError", "one request per call")
            const jumped = yield* Effect.flip(journal.append(called("c1")))
            assert.strictEqual(jumped._tag, "JournalSequenceError", "a call awaiting approval does not run")
            const state = yield* journal.state
            assert.deepStrictEqual(
              Journal.awaitingApproval(Option.getOrThrow(Journal.openTurn(state))).map((call) => call.callId),
              ["c1", "c2"]
            )
          })
        )
        // Another process decides; the state was rebuilt from the file.
        yield* withJournal(folder, (journal) =>
          Effect.gen(function* () {
            yield* journal.append(decided("c1", true))
            yield* journal.append(decided("c2", false))
            const again = yield* Effect.flip(journal.append(decided("c2", true)))
            assert.strictEqual(again._tag, "JournalSequenceError", "one decision per request")
          })
        )
        yield* withJournal(folder, (journal) =>
          Effect.gen(function* () {
            const rejectedRuns = yield* Effect.flip(journal.append(called("c2")))
            assert.strictEqual(rejectedRuns._tag, "JournalSequenceError", "a rejected call never runs")
            yield* journal.append(called("c1"))
            yield* journal.append(resulted("c1"))
            yield* journal.append(resulted("c2", "Rejected"))
            const turn = Option.getOrThrow(Journal.openTurn(yield* journal.state))
            assert.deepStrictEqual(turn.owedCalls, [])
            assert.strictEqual(turn.toolErrors, 1)
          })
        )
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect(
    "negative control: without the approval entries, a result for a call that never ran is refused (the rejected-result rule is what allows it)",
    () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        yield* withJournal(folder, (journal) =>
          Effect.gen(function* () {
            yield* askedForTwo(journal)
            const refused = yield* Effect.flip(journal.append(resulted("c2", "Rejected")))
            assert.strictEqual(refused._tag, "JournalSequenceError")
          })
        )
      }).pipe(Effect.provide(NodeServices.layer))
  )
})

describe("journal: a request sent again under its own step", () => {
  it.effect(
    "journal_retry_step: a lost or failed request may be sent again under its step (retryStep); a retry of anything else is refused; the next step follows",
    () =>
      Effect.gen(function* () {
        const folder = yield* tempFolder
        yield* withJournal(folder, (journal) =>
          Effect.gen(function* () {
            yield* journal.openTurn
            const nothingLost = yield* Effect.flip(journal.append({ _tag: "TurnResumed", turn: 1, retryStep: 1 }))
            assert.strictEqual(nothingLost._tag, "JournalSequenceError")
            yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
          })
        )
        // A new process: the request of step 1 got no response; it is sent again as step 1.
        yield* withJournal(folder, (journal) =>
          Effect.gen(function* () {
            const wrongStep = yield* Effect.flip(journal.append({ _tag: "TurnResumed", turn: 1, retryStep: 2 }))
            assert.strictEqual(wrongStep._tag, "JournalSequenceError")
            yield* journal.append({ _tag: "TurnResumed", turn: 1, retryStep: 1 })
            yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
            yield* journal.append({ _tag: "ModelFailed", turn: 1, step: 1, reason: "ProviderFailure", detail: "503" })
            // A failed request may be sent again under its step too.
            yield* journal.append({ _tag: "TurnResumed", turn: 1, retryStep: 1 })
            yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
            yield* journal.append({
              _tag: "ResponseReceived",
              turn: 1,
              step: 1,
              textSize: 1,
              textSha256: digest,
              toolCalls: []
            })
            const closed = yield* journal.closeTurn
            assert.strictEqual(closed.steps, 1)
            assert.strictEqual(closed.resumptions, 2)
          })
        )
        const entries = yield* Journal.readEntries({ folder, task })
        assert.isTrue(Result.isSuccess(Journal.stateOf(task, entries)))
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("negative control: without retryStep, a second request under the same step is refused", () =>
    Effect.gen(function* () {
      const folder = yield* tempFolder
      yield* withJournal(folder, (journal) =>
        Effect.gen(function* () {
          yield* journal.openTurn
          yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
          yield* journal.resumeTurn
          const refused = yield* Effect.flip(
            journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, size: 1, sha256: digest })
          )
          assert.strictEqual(refused._tag, "JournalSequenceError")
        })
      )
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it("the transcript fields are optional: an entry with them decodes under the 0.2 schema (which ignores them), and one without them decodes under 0.3", () => {
    const line = `{"_tag":"ToolResulted","seq":5,"at":1,"turn":1,"step":1,"callId":"c1","name":"read","isError":false,"size":1,"sha256":"${digest}","transcript":"${"a".repeat(64)}"}`
    const older = Schema.TaggedStruct("ToolResulted", {
      seq: Schema.Number,
      at: Schema.Number,
      turn: Schema.Number,
      step: Schema.Number,
      callId: Schema.String,
      name: Schema.String,
      isError: Schema.Boolean,
      size: Schema.Number,
      sha256: Schema.String
    })
    const asOlder = Schema.decodeUnknownSync(Schema.fromJsonString(older))(line)
    assert.strictEqual(asOlder.callId, "c1")
    const current = Schema.decodeUnknownSync(JournalEntry.EntryLine)(line)
    assert.strictEqual(current._tag === "ToolResulted" ? current.transcript : undefined, "a".repeat(64))
    const withoutField = Schema.decodeUnknownSync(JournalEntry.EntryLine)(line.replace(/,"transcript":"a+"/, ""))
    assert.isFalse("transcript" in withoutField)
  })
})
