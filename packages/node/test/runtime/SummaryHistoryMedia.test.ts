/**
 * Issue 35, summary requests keep media as media: an image the summarized
 * history holds reaches the summary request that covers it as the history's
 * own `Media` part, just before the piece of history whose `[media <type>]`
 * placeholder marks where it was; a round cut across pieces attaches it to
 * the piece where its placeholder starts. Requests stay deterministic: a
 * resumed compaction sends the uninterrupted run's requests, and a summary
 * a crash left staged is adopted only for the same image. Each guarantee has
 * a negative control built here (the former text-only summarizer, a
 * different choice of piece, different image bytes).
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Compaction,
  EntryGate,
  Executor,
  History,
  Journal,
  Model,
  PrivateSummaries,
  TaskExecution
} from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Exit, Option } from "effect"
import * as fc from "fast-check"
import * as Planning from "../../../runtime/src/internal/compactionPlan.js"
import * as SummaryRequests from "../../../runtime/src/internal/summaryRequests.js"
import { privateWriter, withJournal } from "./support/compacting.ts"
import { isSummaryRequest, requests, taskParts, tools, turnLayer } from "./support/turns.ts"
import { operationId, runInWorld, task, type World } from "./support/world.ts"

/** A 1x1 transparent PNG. */
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

const image = (base64: string, mediaType = "image/png"): Model.MediaPart => ({
  _tag: "Media",
  role: "user",
  mediaType,
  data: { _tag: "Base64", base64 },
  providerOptions: {}
})

const historyHeader = "History to summarize (part "

/** The history text a summary request ends with, and the parts between the task (and previous summary) and it. */
const layoutOf = (request: Model.ModelRequest, taskLength: number) => {
  const last = request.parts.at(-1)
  const history = last?._tag === "Text" && last.text.startsWith(historyHeader) ? last.text : undefined
  const afterTask = request.parts.slice(1 + taskLength, -1)
  const between =
    afterTask[0]?._tag === "Text" && afterTask[0].text.startsWith("Previous summary:\n")
      ? afterTask.slice(1)
      : afterTask
  return { history, between }
}

/**
 * What is wrong with a summary request's media: `expected` (the history's
 * own parts) must be there, as those very objects, in order, just before the
 * history text, whose placeholders still mark where they were (when
 * `wholePlaceholders`: a piece cut inside a placeholder holds only its
 * start) and whose opening line says they are attached.
 */
const mediaProblems = (
  request: Model.ModelRequest,
  expected: ReadonlyArray<Model.MediaPart>,
  taskLength: number,
  wholePlaceholders = true
): Array<string> => {
  const problems: Array<string> = []
  const { between, history } = layoutOf(request, taskLength)
  if (history === undefined) return ["the summary request does not end with the history text"]
  const attached = request.parts.slice(1 + taskLength).filter((part) => part._tag === "Media")
  if (attached.length !== expected.length) {
    problems.push(`${attached.length} media parts in the summary request, expected ${expected.length}`)
  }
  if (between.length !== expected.length || between.some((part, index) => part !== expected[index])) {
    problems.push("the history's media are not its own parts, in order, just before the history text")
  }
  const body = history.slice(history.indexOf("\n") + 1)
  for (const part of wholePlaceholders ? expected : []) {
    if (!body.includes(`[media ${part.mediaType}]`)) problems.push(`the placeholder [media ${part.mediaType}] is gone`)
  }
  const opening = history.slice(0, history.indexOf("\n"))
  if (expected.length > 0 && !opening.includes("attached just before this text")) {
    problems.push("the history text does not say its media are attached")
  }
  return problems
}

// ---------------------------------------------------------------------------------------------------------------------
// A stock turn
// ---------------------------------------------------------------------------------------------------------------------

const policy = Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000, pieceLimit: 200_000 })
const shot = image(png)
/** The task, then the user's screenshot (history, not task): summarized at step 3 with the first result. */
const start = History.append(History.make(taskParts), [Model.text("user", "Here is the failing page:"), shot])

const produceCall = (id: string, fill: string) => Model.toolCall(id, "produce", { size: 20_000, fill })

/** Two large results, then an answer; a summary request is answered with how many media parts it carried. */
const script = (request: Model.ModelRequest, index: number) =>
  isSummaryRequest(request)
    ? Model.response({
        text: `the summarizer saw ${request.parts.filter((part) => part._tag === "Media").length} media`
      })
    : index === 0
      ? Model.response({ toolCalls: [produceCall("c1", "a")] })
      : index === 1
        ? Model.response({ toolCalls: [produceCall("c2", "b")] })
        : Model.response({ text: "done" })

const stockTurn = (world: World) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const scope = yield* world.scopeFor([world.privateRef])
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    const binding = yield* EntryGate.bind(context, { policy })
    return yield* Effect.gen(function* () {
      yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })
      return yield* requests
    }).pipe(Effect.provide(turnLayer(world, task, script)))
  })

/**
 * Deliberately broken wiring: compaction hooks built here the former way,
 * one request per piece of text (`summaryPieces`, `summaryRequest` without
 * the pieces' media), so the summarizer gets only the `[media image/png]`
 * placeholder.
 */
const textOnlyHooks = Effect.map(
  Effect.service(Model.Model),
  (model): Executor.Hooks<Model.ModelError> => ({
    beforeModelStep: (_context, history) =>
      Effect.gen(function* () {
        const planned = Planning.plan(history, policy)
        if (Option.isNone(planned)) return history
        const all = Planning.summaryPieces(planned.value.summarized, policy.pieceLimit)
        let summary = History.summaryText(history)
        for (let index = 0; index < all.length; index++) {
          const request = SummaryRequests.summaryRequest({
            task: history.task,
            previousSummary: summary,
            piece: all[index] ?? "",
            index,
            count: all.length
          })
          summary = Option.some((yield* model.generate(request)).text)
        }
        const text = Option.getOrElse(summary, () => "")
        return History.summarizeLeadingRounds(history, planned.value.summarized.length, {
          parts: [Model.text("user", text)],
          text
        })
      })
  })
)

const textOnlyTurn = (world: World) =>
  Effect.gen(function* () {
    yield* Executor.runTurn({ tools, maxSteps: 8, hooks: yield* textOnlyHooks }, start)
    return yield* requests
  }).pipe(Effect.provide(turnLayer(world, task, script)))

/** The turn's summary requests, checked; and whether the request after them carries what the summarizer said. */
const turnProblems = (sent: ReadonlyArray<Model.ModelRequest>): Array<string> => {
  const summaries = sent.filter(isSummaryRequest)
  assert.strictEqual(summaries.length, 1, "one summary request")
  assert.strictEqual(sent[0]?.parts.at(-1), shot, "the agent's own first request carried the screenshot")
  const problems = summaries.flatMap((request) => mediaProblems(request, [shot], taskParts.length))
  const after = sent.at(-1)?.parts.map(Compaction.renderPart).join("\n") ?? ""
  if (!after.includes("the summarizer saw 1 media")) problems.push("the summary does not come from seeing the image")
  if (sent.at(-1)?.parts.some((part) => part._tag === "Media"))
    problems.push("the last request still carries the image")
  return problems
}

describe("summary requests carry the summarized history's media", () => {
  it("summary_history_media_turn: a stock turn's summary request carries the history's PNG as its own Media part, just before the history text that keeps its [media image/png] placeholder", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        assert.deepStrictEqual(turnProblems(yield* stockTurn(world)), [])
      })
    ))

  it("negative control: the same turn summarized the former way (text only) leaves the summarizer the placeholder alone", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const problems = turnProblems(yield* textOnlyTurn(world))
        assert.include(problems, "0 media parts in the summary request, expected 1")
        assert.include(problems, "the summary does not come from seeing the image")
      })
    ))

  it("summary_request_without_media_unchanged: a piece without media makes the request it always made", () => {
    const request = SummaryRequests.summaryRequest({
      task: taskParts,
      previousSummary: Option.some("so far"),
      piece: "[user] hello\n",
      index: 1,
      count: 3,
      media: []
    })
    assert.deepStrictEqual(request, {
      parts: [
        Model.text("system", Compaction.summaryInstruction),
        ...taskParts,
        Model.text("user", "Previous summary:\nso far"),
        Model.text("user", "History to summarize (part 2 of 3):\n[user] hello\n")
      ],
      tools: []
    })
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// Pieces: any rounds, any piece size
// ---------------------------------------------------------------------------------------------------------------------

type PartSpec =
  | { readonly kind: "user" | "assistant"; readonly text: string }
  | { readonly kind: "call"; readonly text: string }
  | { readonly kind: "media" }

// No "[" in the texts: a placeholder found in the joined pieces is a media part's own.
const body = fc.string({ unit: fc.constantFrom("a", "b", " ", "é", "🙂", "\n", "e\u0301"), maxLength: 120 })
const partSpec: fc.Arbitrary<PartSpec> = fc.oneof(
  fc.record({ kind: fc.constantFrom("user" as const, "assistant" as const), text: body }),
  fc.record({ kind: fc.constant("call" as const), text: body }),
  fc.constant({ kind: "media" as const })
)
const roundsSpec = fc.array(fc.array(partSpec, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 6 })

/** Rounds from specs; each media part has a media type of its own, so its placeholder is unique. */
const roundsOf = (specs: ReadonlyArray<ReadonlyArray<PartSpec>>): Array<Array<Model.Part>> => {
  let media = 0
  return specs.map((round) =>
    round.flatMap((spec): Array<Model.Part> => {
      if (spec.kind === "media") {
        media++
        return [image(Buffer.from(`image ${media}`).toString("base64"), `image/x-${media}`)]
      }
      if (spec.kind === "call") {
        return [
          Model.toolCall("c", "note", { text: spec.text }),
          Model.toolResult({ callId: "c", name: "note", content: spec.text, isError: false })
        ]
      }
      return [Model.text(spec.kind, spec.text)]
    })
  )
}

const mediaOf = (rounds: ReadonlyArray<ReadonlyArray<Model.Part>>): Array<Model.MediaPart> =>
  rounds.flat().filter((part): part is Model.MediaPart => part._tag === "Media")

/**
 * What is wrong with `pieces` for `rounds`: their texts must be
 * `summaryPieces`'; every media part of the rounds in exactly one piece's
 * media, the same object, in order; and in the piece where its placeholder
 * starts.
 */
const pieceProblems = (
  rounds: ReadonlyArray<ReadonlyArray<Model.Part>>,
  pieceBytes: number,
  pieces: ReadonlyArray<Planning.SummaryHistoryPiece>
): Array<string> => {
  const problems: Array<string> = []
  if (!sameTexts(pieces, Planning.summaryPieces(rounds, pieceBytes))) problems.push("texts differ from summaryPieces")
  const expected = mediaOf(rounds)
  const attached = pieces.flatMap((piece) => piece.media)
  if (attached.length !== expected.length || attached.some((part, index) => part !== expected[index])) {
    problems.push("the media are not the rounds' own parts, each once, in order")
  }
  const joined = pieces.map((piece) => piece.text).join("")
  const starts: Array<number> = []
  let at = 0
  for (const piece of pieces) {
    starts.push(at)
    at += piece.text.length
  }
  for (const part of expected) {
    const position = joined.indexOf(`[media ${part.mediaType}]`)
    const holder = starts.findLastIndex((start) => start <= position)
    if (position < 0 || !(pieces[holder]?.media.includes(part) ?? false)) {
      problems.push(`${part.mediaType} is not in the piece where its placeholder starts`)
    }
  }
  return problems
}

const sameTexts = (pieces: ReadonlyArray<Planning.SummaryHistoryPiece>, texts: ReadonlyArray<string>): boolean =>
  pieces.length === texts.length && pieces.every((piece, index) => piece.text === texts[index])

/** A round cut across pieces, whose image's placeholder lands in its third piece. */
const cutRound: ReadonlyArray<ReadonlyArray<Model.Part>> = [
  [Model.text("user", "x".repeat(50)), image(png, "image/x-late")]
]

/** The task of the recorded summary requests: its own image stays in place, and is not counted as history's. */
const summaryTask: ReadonlyArray<Model.Part> = [Model.text("user", "the task"), image(png, "image/task")]

const recordedRequests = (rounds: ReadonlyArray<ReadonlyArray<Model.Part>>, pieceBytes: number) => {
  const sent: Array<Model.ModelRequest> = []
  Effect.runSync(
    SummaryRequests.summarizeWith(
      (request) =>
        Effect.sync(() => {
          sent.push(request)
          return Model.response({ text: `summary ${sent.length}` })
        }),
      { task: summaryTask, previousSummary: Option.none(), rounds, pieceBytes }
    )
  )
  return sent
}

describe("summary history pieces", () => {
  it("summary_history_pieces_property: any rounds, any piece size: summaryPieces' texts, every media part once, as itself, in the piece where its placeholder starts, and the same pieces for the rounds rebuilt from JSON", () => {
    fc.assert(
      fc.property(roundsSpec, fc.integer({ min: 6, max: 400 }), (specs, pieceBytes) => {
        const rounds = roundsOf(specs)
        const pieces = Planning.summaryHistoryPieces(rounds, pieceBytes)
        assert.deepStrictEqual(pieceProblems(rounds, pieceBytes, pieces), [])
        const rebuilt = JSON.parse(JSON.stringify(rounds)) as typeof rounds
        assert.deepStrictEqual(Planning.summaryHistoryPieces(rebuilt, pieceBytes), pieces)
      }),
      { numRuns: 300 }
    )
  })

  it("summary_history_media_requests: summarizeWith sends each piece's media, and only those, just before its history text; the task's own image stays with the task", () => {
    fc.assert(
      fc.property(roundsSpec, fc.integer({ min: 6, max: 400 }), (specs, pieceBytes) => {
        const rounds = roundsOf(specs)
        const pieces = Planning.summaryHistoryPieces(rounds, pieceBytes)
        const sent = recordedRequests(rounds, pieceBytes)
        assert.strictEqual(sent.length, pieces.length)
        sent.forEach((request, index) => {
          const piece = pieces[index] as Planning.SummaryHistoryPiece
          assert.deepStrictEqual(mediaProblems(request, piece.media, summaryTask.length, false), [])
          assert.strictEqual(request.parts[2], summaryTask[1], "the task's image where the task puts it")
          const text = layoutOf(request, summaryTask.length).history ?? ""
          assert.isTrue(text.endsWith(`):\n${piece.text}`), "the piece, unchanged, after the opening line")
          if (piece.media.length === 0)
            assert.isTrue(text.startsWith(`${historyHeader}${index + 1} of ${sent.length}):\n`))
        })
      }),
      { numRuns: 100 }
    )
  })

  it("summary_history_media_cut_round: a round cut across pieces attaches its image to the piece where the placeholder starts", () => {
    const pieces = Planning.summaryHistoryPieces(cutRound, 24)
    assert.isAtLeast(pieces.length, 3)
    assert.deepStrictEqual(pieceProblems(cutRound, 24, pieces), [])
    const holder = pieces.findIndex((piece) => piece.media.length > 0)
    assert.include(pieces[holder]?.text ?? "", "[me")
    assert.isAtLeast(holder, 1, "not the round's first piece")
  })

  it("negative control: pieces without media (the text rendering alone) fail the check", () => {
    fc.assert(
      fc.property(
        roundsSpec.filter((specs) => specs.flat().some((spec) => spec.kind === "media")),
        fc.integer({ min: 6, max: 400 }),
        (specs, pieceBytes) => {
          const rounds = roundsOf(specs)
          const textOnly = Planning.summaryPieces(rounds, pieceBytes).map((text) => ({ text, bytes: 0, media: [] }))
          assert.include(
            pieceProblems(rounds, pieceBytes, textOnly),
            "the media are not the rounds' own parts, each once, in order"
          )
        }
      ),
      { numRuns: 50 }
    )
  })

  it("negative control: a cut round's image attached to the round's first piece fails the placement check", () => {
    const pieces = Planning.summaryHistoryPieces(cutRound, 24)
    const first = pieces.map((piece, index) => ({
      ...piece,
      media: index === 0 ? pieces.flatMap((each) => each.media) : []
    }))
    assert.deepStrictEqual(pieceProblems(cutRound, 24, first), [
      "image/x-late is not in the piece where its placeholder starts"
    ])
  })
})

// ---------------------------------------------------------------------------------------------------------------------
// Resume
// ---------------------------------------------------------------------------------------------------------------------

const roundOf = (id: string, fill: string): ReadonlyArray<Model.Part> => [
  Model.toolCall(id, "produce", { fill }),
  Model.toolResult({ callId: id, name: "produce", content: fill.repeat(2_000), isError: false })
]

/** Three rounds and the user's image between the second and the third: the image is in the second piece. */
const historyWith = (base64: string) =>
  History.append(History.make([Model.text("user", "the task")]), [
    ...roundOf("c1", "a"),
    ...roundOf("c2", "b"),
    Model.text("user", "and this page:"),
    image(base64),
    ...roundOf("c3", "c")
  ])

const resumePolicy = Compaction.threshold({ measure: "bytes", limit: 1_000, keepRecent: 0, pieceLimit: 3_000 })
const key = { operation: operationId("task-1-t1"), step: 2 }

const otherPng = Buffer.from("another image entirely").toString("base64")

/** A summarizer whose `failAt`-th request (zero-based) fails, as a provider would. */
const summarizer = (failAt?: number) =>
  ScriptedModel.layer((_request, index) =>
    index === failAt
      ? new Model.ModelError({ reason: "ProviderFailure", detail: "connection reset" })
      : Model.response({ text: "the summary so far" })
  )

/** Compacts `history` at `key` on the world's journal: its outcome and every summary request the model received. */
const compactIn = (world: World, history: History.History, journalOf = (journal: Journal.JournalService) => journal) =>
  Effect.gen(function* () {
    const { capability, folder } = yield* privateWriter(world)
    return (failAt?: number) =>
      withJournal(folder, (journal) =>
        Effect.gen(function* () {
          const outcome = yield* Effect.exit(
            Compaction.compact({
              history,
              policy: resumePolicy,
              operation: key.operation,
              step: key.step,
              journal: Option.some(journalOf(journal)),
              turn: 1
            })
          )
          return { outcome, sent: yield* requests }
        })
      ).pipe(PrivateSummaries.provide(capability), Effect.provide(summarizer(failAt)))
  })

const rebuilt = (history: History.History) => Effect.flatMap(History.toJson(history), History.fromJson)

/** The summary requests an uninterrupted compaction of `history` sends, in a world of its own. */
const uninterrupted = (history: History.History) =>
  runInWorld((world) => Effect.flatMap(compactIn(world, history), (run) => run()))

describe("summary requests with media, resumed", () => {
  it("summary_history_media_resume: a compaction interrupted at its second request and resumed on the history rebuilt from JSON sends the uninterrupted run's requests, the image attached to the second", async () => {
    const whole = await uninterrupted(historyWith(png))
    assert.isTrue(Exit.isSuccess(whole.outcome))
    assert.strictEqual(whole.sent.length, 2)
    const attached = whole.sent.map((request) => request.parts.filter((part) => part._tag === "Media"))
    assert.deepStrictEqual(attached, [[], [image(png)]])
    const { first, resumed } = await runInWorld((world) =>
      Effect.gen(function* () {
        const first = yield* (yield* compactIn(world, historyWith(png)))(1)
        assert.isTrue(Exit.isFailure(first.outcome), "the second summary request failed")
        const resumed = yield* (yield* compactIn(world, yield* rebuilt(historyWith(png))))()
        assert.isTrue(Exit.isSuccess(resumed.outcome))
        return { first, resumed }
      })
    )
    assert.deepStrictEqual(first.sent, whole.sent, "the interrupted attempt sent the same two requests")
    assert.deepStrictEqual(resumed.sent, whole.sent)
  })

  it("negative control: the same compaction of a history whose image has other bytes sends other requests", async () => {
    const whole = await uninterrupted(historyWith(png))
    const other = await uninterrupted(historyWith(otherPng))
    assert.deepStrictEqual(other.sent[0], whole.sent[0], "the piece without the image is the same")
    assert.notDeepEqual(other.sent[1], whole.sent[1])
  })

  /** The journal as a crash right after staging leaves it: the SummaryStaged append never happens. */
  const crashingBeforeRecord = (journal: Journal.JournalService): Journal.JournalService => ({
    ...journal,
    append: (entry) =>
      entry._tag === "SummaryStaged"
        ? Effect.fail(new Journal.JournalIoError({ file: journal.file, operation: "append", detail: "killed" }))
        : journal.append(entry)
  })

  const leftoverThenResume = (resumedWith: string) =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const crashed = yield* (yield* compactIn(world, historyWith(png), crashingBeforeRecord))()
        assert.isTrue(Exit.isFailure(crashed.outcome), "the crash left the summary staged, unrecorded")
        const resumed = yield* (yield* compactIn(world, yield* rebuilt(historyWith(resumedWith))))()
        assert.isTrue(Exit.isSuccess(resumed.outcome))
        const folder = yield* world.host.store.folderOf(world.journalRef)
        const tags = (yield* Journal.readEntries({ folder, task })).map((entry) => entry._tag)
        return { tags, requests: resumed.sent.length }
      })
    )

  it("summary_history_media_leftover: a summary a crash left staged is not adopted for a history whose image has other bytes: it is superseded and summarized again", async () => {
    const { requests, tags } = await leftoverThenResume(otherPng)
    assert.include(tags, "SummarySuperseded")
    assert.strictEqual(requests, 2)
  })

  it("control: the same leftover is adopted for the same image (rebuilt from JSON), with no summary request", async () => {
    const { requests, tags } = await leftoverThenResume(png)
    assert.notInclude(tags, "SummarySuperseded")
    assert.strictEqual(tags.at(-1), "SummaryStaged")
    assert.strictEqual(requests, 0)
  })
})
