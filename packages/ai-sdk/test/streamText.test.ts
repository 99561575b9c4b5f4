import type {
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4Middleware,
  LanguageModelV4StreamPart
} from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { DefaultRedactor } from "@tessera/artifacts"
import { Digest } from "@tessera/core"
import { Compaction, Journal } from "@tessera/runtime"
import { generateText, type ModelMessage, stepCountIs, streamText, wrapLanguageModel } from "ai"
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test"
import { Effect, Option } from "effect"
import { answer, bindTask, callTool, inWorld, journalText, produce, promptText, taskText } from "./support/world.ts"

const tools = { produce }
const start: Array<ModelMessage> = [{ role: "user", content: taskText }]
const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const
const finalText = "All reports are filler."

/** A whole result as the stream a provider would send: text in word-sized deltas, calls whole, then finish. */
const streamOf = (result: LanguageModelV4GenerateResult): ReadableStream<LanguageModelV4StreamPart> => {
  const parts: Array<LanguageModelV4StreamPart> = [{ type: "stream-start", warnings: [] }]
  for (const part of result.content) {
    if (part.type === "text") {
      parts.push({ type: "text-start", id: "t" })
      for (const delta of part.text.split(/(?<= )/)) parts.push({ type: "text-delta", id: "t", delta })
      parts.push({ type: "text-end", id: "t" })
    }
    if (part.type === "tool-call") parts.push(part)
  }
  parts.push({ type: "finish", usage: result.usage, finishReason: result.finishReason })
  return convertArrayToReadableStream(parts)
}

/** A streaming mock that calls the tool `calls` times, then answers; summary requests (doGenerate) get a summary. */
const scripted = (calls: number, size: number) => {
  let steps = 0
  let summaries = 0
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      summaries++
      return answer(`summary number ${summaries}: the reports so far are filler`)
    },
    doStream: async () => {
      steps++
      return { stream: streamOf(steps <= calls ? callTool(`call-${steps}`, size, `r${steps}-`) : answer(finalText)) }
    }
  })
  const requests = () => model.doStreamCalls.length + model.doGenerateCalls.length
  return { model, requests }
}

/** Runs a streamText to its end; the text deltas as they arrived, the result, and any error the stream reported. */
const consume = async (options: Parameters<typeof streamText>[0]) => {
  const errors: Array<unknown> = []
  const result = streamText({ ...options, onError: ({ error }) => void errors.push(error) })
  const deltas: Array<string> = []
  for await (const delta of result.textStream) deltas.push(delta)
  // A failed stream rejects these; its errors are in `errors`.
  const steps = await Promise.resolve(result.steps).catch(() => [])
  const totalUsage = await Promise.resolve(result.totalUsage).catch(() => undefined)
  return { deltas, result, errors, steps, totalUsage }
}

const largestUpTo = (requests: ReadonlyArray<LanguageModelV4CallOptions>, step: number): number =>
  Math.max(...requests.slice(0, step).map((request) => promptText(request.prompt).length))

describe("TesseraMiddleware with streamText (Vercel AI SDK 7)", () => {
  it(
    "ai_sdk_stream_long_conversation_bounded: 200 streamed steps, the largest request by step 200 is at most 1.1x the largest by step 50",
    () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const binding = yield* bindTask(
            world,
            true,
            Compaction.threshold({ measure: "bytes", limit: 8_000, keepRecent: 2_000, pieceLimit: 100_000 })
          )
          const tessera = yield* TesseraMiddleware.make(binding, { offload })
          const { model } = scripted(199, 6_000)
          const run = yield* Effect.promise(() =>
            consume({
              model: wrapLanguageModel({ model, middleware: tessera.middleware }),
              tools,
              messages: start,
              stopWhen: stepCountIs(200)
            })
          )
          const requests = model.doStreamCalls
          assert.strictEqual(requests.length, 200)
          assert.strictEqual(run.deltas.join(""), finalText)
          const at50 = largestUpTo(requests, 50)
          const at200 = largestUpTo(requests, 200)
          assert.isAtMost(at200, 1.1 * at50, `largest streamed request: ${at200} bytes by step 200, ${at50} by step 50`)
          const last = requests.at(-1)?.prompt ?? []
          assert.include(promptText(last), taskText, "the task message is kept")
        })
      ),
    120_000
  )

  it("negative control: the same streamed conversation without the middleware grows linearly", async () => {
    const { model } = scripted(199, 6_000)
    await consume({ model, tools, messages: start, stopWhen: stepCountIs(200) })
    const requests = model.doStreamCalls
    assert.strictEqual(requests.length, 200)
    assert.isAbove(largestUpTo(requests, 200), 3.5 * largestUpTo(requests, 50))
  })

  it("ai_sdk_stream_four_requests: two large tool results streamed: exactly 4 model requests, deltas passed through, summary usage on the step's finish", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(
          world,
          true,
          Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const tessera = yield* TesseraMiddleware.make(binding)
        const { model, requests } = scripted(2, 20_000)
        const run = yield* Effect.promise(() =>
          consume({
            model: wrapLanguageModel({ model, middleware: tessera.middleware }),
            tools,
            messages: start,
            stopWhen: stepCountIs(8)
          })
        )
        assert.strictEqual(requests(), 4, "three streamed steps and one summary request")
        assert.strictEqual(model.doGenerateCalls.length, 1)
        assert.deepStrictEqual(run.deltas, ["All ", "reports ", "are ", "filler."], "each delta arrives as sent")
        const last = (model.doStreamCalls[2] as LanguageModelV4CallOptions).prompt
        assert.match(promptText(last.slice(0, 1)), /summaries\/task-1-t1\/3\.txt/)
        assert.notInclude(promptText(last), "r1-".repeat(300), "result 1 is summarized away")
        assert.include(promptText(last), taskText)
        const journal = journalText(world)
        assert.strictEqual(journal.split('"_tag":"RequestDispatched"').length - 1, 3)
        assert.strictEqual(journal.split('"_tag":"ResponseReceived"').length - 1, 3)
        assert.include(journal, '"_tag":"SummaryStaged"')
        assert.include(journal, '"_tag":"TurnClosed"')
        assert.deepStrictEqual(run.steps[2]?.providerMetadata?.tessera, {
          summaryRequests: 1,
          summaryInputTokens: 10,
          summaryOutputTokens: 5
        })
        assert.strictEqual(run.totalUsage?.inputTokens, 40, "three steps and the summary request")
      })
    ))

  it("ai_sdk_stream_writerless_refused: a writerless binding with private offload is refused, zero model requests", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const { requests } = scripted(2, 20_000)
        const refused = yield* Effect.flip(TesseraMiddleware.make(binding, { offload }))
        assert.strictEqual(refused._tag, "Unauthorized")
        assert.strictEqual(requests(), 0)
        assert.strictEqual(journalText(world), "")
      })
    ))

  it("negative control: a stream middleware that resolves the writer after the stream started sends one request", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const { model, requests } = scripted(2, 20_000)
        const context = yield* Effect.context<never>()
        // Deliberately broken wiring: the model is asked first, the capability resolved afterwards.
        const late: LanguageModelV4Middleware = {
          specificationVersion: "v4",
          wrapStream: async ({ doStream }) => {
            const result = await doStream()
            await Effect.runPromiseWith(context)(TesseraMiddleware.make(binding, { offload }) as Effect.Effect<unknown>)
            return result
          }
        }
        const run = yield* Effect.promise(() =>
          consume({ model: wrapLanguageModel({ model, middleware: late }), tools, messages: start })
        )
        assert.isAbove(run.errors.length, 0, "the stream failed")
        assert.strictEqual(requests(), 1)
      })
    ))

  it("ai_sdk_stream_offloaded_never_resent: an offloaded payload reaches the model in no later streamed request", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload })
        const { model } = scripted(1, 10_000)
        const wrapped = wrapLanguageModel({ model, middleware: tessera.middleware })
        const first = yield* Effect.promise(() =>
          consume({ model: wrapped, tools, messages: start, stopWhen: stepCountIs(5) })
        )
        assert.isDefined(tessera.offloaded.get("call-1"))
        yield* Effect.promise(() =>
          consume({
            model: wrapped,
            tools,
            messages: [
              ...start,
              ...first.steps.flatMap((step) => step.response.messages),
              { role: "user", content: "And once more?" }
            ]
          })
        )
        assert.strictEqual(model.doStreamCalls.length, 3)
        for (const call of model.doStreamCalls) assert.notInclude(promptText(call.prompt), "r1-".repeat(100))
        assert.include(promptText((model.doStreamCalls[2] as LanguageModelV4CallOptions).prompt), "read_artifact")
        assert.include(journalText(world), '"_tag":"ArtifactOffloaded"')
      })
    ))

  it("negative control: streamed without the middleware, the payload is sent again", async () => {
    const { model } = scripted(1, 10_000)
    const first = await consume({ model, tools, messages: start, stopWhen: stepCountIs(5) })
    await consume({
      model,
      tools,
      messages: [
        ...start,
        ...first.steps.flatMap((step) => step.response.messages),
        { role: "user", content: "And once more?" }
      ]
    })
    assert.include(promptText((model.doStreamCalls[2] as LanguageModelV4CallOptions).prompt), "r1-".repeat(100))
  })

  const secret = "AKIAIOSFODNN7EXAMPLE"
  const failingStream = () =>
    new MockLanguageModelV4({
      doStream: async () => ({
        stream: convertArrayToReadableStream<LanguageModelV4StreamPart>([
          { type: "stream-start", warnings: [] },
          { type: "error", error: new Error(`upstream broke while using aws_access_key_id=${secret}`) }
        ])
      })
    })

  it("ai_sdk_stream_error_scrubbed: a provider error in the stream reaches the caller and the journal scrubbed", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload }).pipe(
          Effect.provide(DefaultRedactor.layer())
        )
        const model = failingStream()
        const run = yield* Effect.promise(() =>
          consume({ model: wrapLanguageModel({ model, middleware: tessera.middleware }), tools, messages: start })
        )
        assert.isAbove(run.errors.length, 0)
        for (const error of run.errors) {
          assert.instanceOf(error, Error)
          assert.notInclude(String((error as Error).message), secret)
          assert.include(String((error as Error).message), "[REDACTED:")
        }
        const journal = journalText(world)
        assert.include(journal, '"_tag":"ModelFailed"')
        assert.notInclude(journal, secret)
      })
    ))

  it("negative control: a stream middleware that passes provider errors on unscrubbed hands the secret to the caller", async () => {
    const model = failingStream()
    const raw: LanguageModelV4Middleware = { specificationVersion: "v4", wrapStream: ({ doStream }) => doStream() }
    const run = await consume({ model: wrapLanguageModel({ model, middleware: raw }), tools, messages: start })
    assert.isTrue(run.errors.some((error) => String((error as Error).message).includes(secret)))
  })

  /** A model that streams one answer and generates another. */
  const twoWays = () =>
    new MockLanguageModelV4({
      doStream: async () => ({ stream: streamOf(answer("a streamed answer in several words")) }),
      doGenerate: async () => answer("a generated answer")
    })
  const taskPrompt = [{ role: "user" as const, content: [{ type: "text" as const, text: taskText }] }]

  it("ai_sdk_stream_cancelled_turn_goes_on: a stream its consumer cancels is journaled as a failed step, and the next request continues the turn", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload })
        const wrapped = wrapLanguageModel({ model: twoWays(), middleware: tessera.middleware })
        yield* Effect.promise(async () => {
          const { stream } = await wrapped.doStream({ prompt: taskPrompt })
          const reader = stream.getReader()
          await reader.read()
          await reader.cancel()
        })
        const result = yield* Effect.promise(() => generateText({ model: wrapped, messages: start }))
        assert.strictEqual(result.text, "a generated answer")
        const journal = journalText(world)
        assert.include(journal, "the stream was cancelled by its consumer")
        assert.strictEqual(journal.split('"_tag":"TurnOpened"').length - 1, 1, "one turn")
        assert.strictEqual(journal.split('"_tag":"TurnClosed"').length - 1, 1)
      })
    ))

  it("ai_sdk_stream_lost_request_resumed: a stream left unread by a process that died is counted as lost; a new middleware on the same task continues the turn", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const first = yield* TesseraMiddleware.make(binding, { offload })
        yield* Effect.promise(() =>
          wrapLanguageModel({ model: twoWays(), middleware: first.middleware }).doStream({ prompt: taskPrompt })
        )
        // The "next process": a new middleware made from the same binding, on the same journal.
        const second = yield* TesseraMiddleware.make(binding, { offload })
        const result = yield* Effect.promise(() =>
          generateText({
            model: wrapLanguageModel({ model: twoWays(), middleware: second.middleware }),
            messages: start
          })
        )
        assert.strictEqual(result.text, "a generated answer")
        const journal = journalText(world)
        assert.include(journal, '"_tag":"TurnResumed"')
        assert.include(journal, '"_tag":"TurnClosed"')
      })
    ))

  it("negative control: on a journal whose last request awaits its answer, a next request dispatched without resuming is refused", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload })
        yield* Effect.promise(() =>
          wrapLanguageModel({ model: twoWays(), middleware: tessera.middleware }).doStream({ prompt: taskPrompt })
        )
        const journal = yield* Journal.Journal
        const open = Option.getOrThrow(Journal.openTurn(yield* journal.state))
        assert.isTrue(open.awaitingResponse)
        const measured = yield* Digest.measureText("next request")
        const refused = yield* Effect.flip(
          journal.append({ _tag: "RequestDispatched", turn: open.turn, step: open.steps + 1, parts: 1, ...measured })
        )
        assert.strictEqual(refused._tag, "JournalSequenceError")
      })
    ))
})
