import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { Digest } from "@tessera/core"
import { TesseraLanguageModel } from "@tessera/effect-ai"
import { CompactionPolicy, Journal } from "@tessera/runtime"
import { Effect, Layer, Schema, Stream } from "effect"
import { AiError, LanguageModel, Prompt, type Response } from "effect/ai"
import {
  answer,
  bindTask,
  callTool,
  converse,
  count,
  inWorld,
  isSummaryRequest,
  journalText,
  privateFolder,
  promptText,
  scripted,
  Tools,
  taskText,
  toolsLayer
} from "./support/world.ts"

const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const
const longPolicy = CompactionPolicy.threshold({
  measure: "bytes",
  limit: 8_000,
  keepRecent: 2_000,
  pieceLimit: 100_000
})
const fourPolicy = CompactionPolicy.threshold({
  measure: "bytes",
  limit: 30_000,
  keepRecent: 1_000,
  pieceLimit: 200_000
})
const finalText = "All reports are filler."

/** Calls the tool `calls` times (results of `size`), then answers. */
const calling = (calls: number, size: number) => (step: number) =>
  step <= calls ? callTool(`call-${step}`, size, `r${step}-`) : answer(finalText)

const largestUpTo = (requests: ReadonlyArray<LanguageModel.ProviderOptions>, step: number): number =>
  Math.max(...requests.slice(0, step).map((request) => promptText(request.prompt).length))

describe("TesseraLanguageModel (Effect AI, effect/ai)", () => {
  it(
    "effect_ai_long_conversation_bounded: 200 steps with large tool results, the largest request by step 200 is at most 1.1x the largest by step 50, the task kept",
    () =>
      inWorld((world) =>
        Effect.gen(function* () {
          const binding = yield* bindTask(world, true, longPolicy)
          const model = scripted(calling(199, 6_000))
          const { text } = yield* converse(taskText, 200).pipe(
            Effect.provide(
              Layer.merge(TesseraLanguageModel.layer(binding, { offload }).pipe(Layer.provide(model.layer)), toolsLayer)
            )
          )
          const requests = model.stepRequests()
          assert.strictEqual(requests.length, 200)
          assert.strictEqual(text, finalText)
          const at50 = largestUpTo(requests, 50)
          const at200 = largestUpTo(requests, 200)
          assert.isAtMost(at200, 1.1 * at50, `largest request: ${at200} bytes by step 200, ${at50} by step 50`)
          const last = requests.at(-1)?.prompt
          assert.isDefined(last)
          const kept = last?.content.find(
            (message) => message.role === "user" && JSON.stringify(message.content).includes(taskText)
          )
          assert.isDefined(kept, "the task message is in the 200th request")
          assert.include(promptText(last as Prompt.Prompt), "summaries/task-1-t1/", "it carries a summary reference")
        })
      ),
    120_000
  )

  it(
    "negative control: the same conversation on the bare LanguageModel grows linearly",
    () =>
      Effect.runPromise(
        Effect.gen(function* () {
          const model = scripted(calling(199, 6_000))
          yield* converse(taskText, 200).pipe(Effect.provide(Layer.merge(model.layer, toolsLayer)))
          const requests = model.stepRequests()
          assert.strictEqual(requests.length, 200)
          assert.isAbove(largestUpTo(requests, 200), 3.5 * largestUpTo(requests, 50))
        })
      ),
    120_000
  )

  it("effect_ai_four_requests: two large tool results, no offload: exactly 4 model requests, the last starts with a summary file on the private volume, summary usage reported", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true, fourPolicy)
        const model = scripted(calling(2, 20_000))
        const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
        const responses: Array<{ readonly content: ReadonlyArray<Response.AnyPart>; readonly usage: Response.Usage }> =
          []
        let prompt = Prompt.make(taskText)
        for (let step = 0; step < 8; step++) {
          const response = yield* wrapped.languageModel.generateText({ prompt, toolkit: Tools })
          responses.push(response)
          prompt = Prompt.concat(prompt, Prompt.fromResponseParts(response.content))
          if (response.toolCalls.length === 0) break
        }
        assert.strictEqual(model.requests.length, 4, "three steps and one summary request")
        assert.isTrue(isSummaryRequest(model.requests[2] as LanguageModel.ProviderOptions))
        const last = (model.requests[3] as LanguageModel.ProviderOptions).prompt
        assert.match(JSON.stringify(last.content[0]), /summaries\/task-1-t1\/3\.txt/)
        assert.notInclude(promptText(last), "r1-".repeat(300), "result 1 is summarized away")
        assert.include(promptText(last), "r2-".repeat(3_000), "result 2, not seen yet, is sent whole")
        assert.include(promptText(last), taskText)
        const staged = fs.readFileSync(path.join(privateFolder(world), "summaries/task-1-t1/3.txt"), "utf8")
        assert.strictEqual(staged, "summary number 1: the reports so far are filler")
        const journal = journalText(world)
        for (const tag of [
          "TurnOpened",
          "ToolCalled",
          "ToolResulted",
          "SummaryStaged",
          "ResponseReceived",
          "TurnClosed"
        ]) {
          assert.include(journal, `"_tag":"${tag}"`)
        }
        assert.strictEqual(count(journal, "RequestDispatched"), 3)
        assert.notInclude(journal, "summary number 1", "the journal records where, never what")
        const finish = responses[2]?.content.find((part): part is Response.FinishPart => part.type === "finish")
        assert.deepStrictEqual(finish?.metadata.tessera, {
          summaryRequests: 1,
          summaryInputTokens: 10,
          summaryOutputTokens: 5
        })
        assert.strictEqual(responses[2]?.usage.inputTokens.total, 20, "the step's 10 and the summary's 10")
        assert.deepStrictEqual(wrapped.summaryUsage(), { requests: 1, inputTokens: 10, outputTokens: 5 })
      }).pipe(Effect.provide(toolsLayer))
    ))

  it("effect_ai_stream_four_requests: the same scenario through streamText: 4 requests, deltas passed through as sent", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true, fourPolicy)
        const model = scripted(calling(2, 20_000))
        const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
        let prompt = Prompt.make(taskText)
        const deltas: Array<string> = []
        let finish: Response.FinishPart | undefined
        for (let step = 0; step < 8; step++) {
          const parts = Array.from(
            yield* Stream.runCollect(wrapped.languageModel.streamText({ prompt, toolkit: Tools }))
          ) as Array<Response.AnyPart>
          for (const part of parts) {
            if (part.type === "text-delta") deltas.push(part.delta)
            if (part.type === "finish" && part.metadata.tessera !== undefined) finish = part
          }
          prompt = Prompt.concat(prompt, Prompt.fromResponseParts(parts))
          if (!parts.some((part) => part.type === "tool-call")) break
        }
        assert.strictEqual(model.requests.length, 4)
        assert.deepStrictEqual(deltas, ["All ", "reports ", "are ", "filler."])
        assert.deepStrictEqual(finish?.metadata.tessera, {
          summaryRequests: 1,
          summaryInputTokens: 10,
          summaryOutputTokens: 5
        })
        const journal = journalText(world)
        assert.strictEqual(count(journal, "RequestDispatched"), 3)
        assert.strictEqual(count(journal, "ResponseReceived"), 3)
        assert.include(journal, '"_tag":"TurnClosed"')
      }).pipe(Effect.provide(toolsLayer))
    ))

  it("effect_ai_writerless_refused: a writerless binding with private offload is refused, zero model requests, nothing journaled", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const model = scripted(calling(2, 20_000))
        const refused = yield* Effect.flip(
          converse(taskText, 4).pipe(
            Effect.provide(
              Layer.merge(TesseraLanguageModel.layer(binding, { offload }).pipe(Layer.provide(model.layer)), toolsLayer)
            )
          )
        )
        assert.strictEqual((refused as { _tag: string })._tag, "Unauthorized")
        assert.strictEqual(model.requests.length, 0)
        assert.strictEqual(journalText(world), "")
      })
    ))

  it("negative control: a wrapper that resolves the writer after the request sends one request before failing", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const model = scripted(calling(2, 20_000))
        // Deliberately broken wiring: the model is asked first, the capability resolved afterwards.
        const late = Layer.effect(
          LanguageModel.LanguageModel,
          Effect.gen(function* () {
            const inner = yield* LanguageModel.LanguageModel
            const context = yield* Effect.context<never>()
            return {
              ...inner,
              generateText: ((options: never) =>
                Effect.tap(inner.generateText(options), () =>
                  Effect.provideContext(TesseraLanguageModel.make(binding, { offload }), context as never)
                )) as unknown as LanguageModel.LanguageModel["generateText"]
            }
          })
        ).pipe(Layer.provide(model.layer))
        const failed = yield* Effect.flip(converse(taskText, 4).pipe(Effect.provide(Layer.merge(late, toolsLayer))))
        assert.isDefined(failed)
        assert.strictEqual(model.requests.length, 1)
      })
    ))

  it("effect_ai_offloaded_never_resent: an offloaded payload reaches the model in no later request, and the caller's history holds only the pointer", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted(calling(1, 10_000))
        const wrapped = yield* TesseraLanguageModel.make(binding, { offload }).pipe(Effect.provide(model.layer))
        const provided = Layer.merge(Layer.succeed(LanguageModel.LanguageModel)(wrapped.languageModel), toolsLayer)
        const first = yield* converse(taskText, 5).pipe(Effect.provide(provided))
        const pointer = wrapped.offloaded.get("call-1")
        assert.isDefined(pointer)
        assert.match(pointer ?? "", /read_artifact/)
        assert.notInclude(promptText(first.prompt), "r1-".repeat(100), "the caller's history shrank")
        yield* converse(Prompt.concat(first.prompt, "And once more?"), 5).pipe(Effect.provide(provided))
        assert.strictEqual(model.requests.length, 3)
        for (const request of model.requests) assert.notInclude(promptText(request.prompt), "r1-".repeat(100))
        assert.include(promptText((model.requests[2] as LanguageModel.ProviderOptions).prompt), "read_artifact")
        const journal = journalText(world)
        assert.strictEqual(count(journal, "ArtifactOffloaded"), 1)
        assert.strictEqual(count(journal, "ToolResulted"), 1, "the result is journaled once")
      })
    ))

  it("negative control: on the bare LanguageModel the payload is sent again", () =>
    Effect.runPromise(
      Effect.gen(function* () {
        const model = scripted(calling(1, 10_000))
        const provided = Layer.merge(model.layer, toolsLayer)
        const first = yield* converse(taskText, 5).pipe(Effect.provide(provided))
        yield* converse(Prompt.concat(first.prompt, "And once more?"), 5).pipe(Effect.provide(provided))
        assert.include(promptText((model.requests[2] as LanguageModel.ProviderOptions).prompt), "r1-".repeat(100))
      })
    ))

  const secret = "AKIAIOSFODNN7EXAMPLE"
  const failing = () => {
    let requests = 0
    const layer = Layer.effect(
      LanguageModel.LanguageModel,
      LanguageModel.make({
        generateText: () =>
          Effect.suspend(() => {
            requests++
            return Effect.fail(
              AiError.make({
                module: "TestProvider",
                method: "generateText",
                reason: new AiError.InternalProviderError({
                  description: `upstream 500 while using aws_access_key_id=${secret}`
                })
              })
            )
          }),
        streamText: () => Stream.empty
      })
    )
    return { layer, requests: () => requests }
  }

  it("effect_ai_redacted: an offloaded result is scrubbed before it is written, and a provider's error is scrubbed in the journal and for the caller", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const leaky = scripted((step) =>
          step === 1 ? callTool("leak", 6_000, `aws_access_key_id=${secret}\n`) : answer("done")
        )
        yield* converse(taskText, 5).pipe(
          Effect.provide(
            Layer.merge(
              TesseraLanguageModel.layer(binding, { offload }).pipe(
                Layer.provide(Layer.merge(leaky.layer, DefaultRedactor.layer()))
              ),
              toolsLayer
            )
          )
        )
        const folder = path.join(privateFolder(world), "artifacts", "tool-results")
        const files = fs.readdirSync(folder)
        assert.strictEqual(files.length, 1)
        const stored = fs.readFileSync(path.join(folder, files[0] as string), "utf8")
        assert.notInclude(stored, secret)
        assert.include(stored, "[REDACTED:")

        const provider = failing()
        const error = yield* Effect.flip(
          converse("Try again.", 1).pipe(
            Effect.provide(
              Layer.merge(
                TesseraLanguageModel.layer(binding, { offload }).pipe(
                  Layer.provide(Layer.merge(provider.layer, DefaultRedactor.layer()))
                ),
                toolsLayer
              )
            )
          )
        )
        assert.strictEqual(provider.requests(), 1)
        assert.isTrue(AiError.isAiError(error), "still an AiError")
        assert.strictEqual((error as AiError.AiError).reason._tag, "InternalProviderError")
        assert.isTrue((error as AiError.AiError).isRetryable, "retryability kept")
        assert.notInclude((error as AiError.AiError).message, secret)
        const journal = journalText(world)
        assert.include(journal, '"_tag":"ModelFailed"')
        assert.notInclude(journal, secret)
      })
    ))

  it("negative control: the bare provider hands the secret to the caller", () =>
    Effect.runPromise(
      Effect.gen(function* () {
        const provider = failing()
        const error = yield* Effect.flip(
          converse("Try again.", 1).pipe(Effect.provide(Layer.merge(provider.layer, toolsLayer)))
        )
        assert.include((error as AiError.AiError).message, secret)
      })
    ))

  it("effect_ai_stream_interrupted_turn_goes_on: a stream its consumer stops early is journaled as a failed step, and the next request continues the turn", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted((step) => answer(step === 1 ? "a streamed answer in several words" : finalText))
        const wrapped = yield* TesseraLanguageModel.make(binding, { offload }).pipe(Effect.provide(model.layer))
        const taken = yield* Stream.runCollect(
          wrapped.languageModel.streamText({ prompt: taskText }).pipe(Stream.take(2))
        )
        assert.strictEqual(Array.from(taken).length, 2)
        const response = yield* wrapped.languageModel.generateText({ prompt: taskText })
        assert.strictEqual(response.text, finalText)
        const journal = journalText(world)
        assert.include(journal, "the stream was interrupted by its consumer")
        assert.strictEqual(count(journal, "TurnOpened"), 1, "one turn")
        assert.strictEqual(count(journal, "TurnClosed"), 1)
        assert.strictEqual(count(journal, "TurnResumed"), 0, "nothing was left awaiting an answer")
      })
    ))

  it("effect_ai_lost_request_resumed: a request that never got its answer (the process died) is counted as lost; a new wrapper on the same task continues the turn", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const journal = yield* Journal.Journal
        yield* journal.openTurn
        const measured = yield* Digest.measureText("a request in flight when the process died")
        yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, ...measured })
        const model = scripted(() => answer(finalText))
        const response = yield* LanguageModel.generateText({ prompt: taskText }).pipe(
          Effect.provide(TesseraLanguageModel.layer(binding, { offload }).pipe(Layer.provide(model.layer)))
        )
        assert.strictEqual(response.text, finalText)
        const text = journalText(world)
        assert.strictEqual(count(text, "TurnResumed"), 1)
        assert.include(text, '"_tag":"TurnClosed"')
      })
    ))

  it("negative control: on that journal, a request dispatched without resuming is refused", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const journal = yield* Journal.Journal
        yield* journal.openTurn
        const measured = yield* Digest.measureText("a request in flight when the process died")
        yield* journal.append({ _tag: "RequestDispatched", turn: 1, step: 1, parts: 1, ...measured })
        const refused = yield* Effect.flip(
          journal.append({ _tag: "RequestDispatched", turn: 1, step: 2, parts: 1, ...measured })
        )
        assert.strictEqual(refused._tag, "JournalSequenceError")
        assert.strictEqual(
          journalText(world)
            .split("\n")
            .filter((line) => line.length > 0).length,
          2
        )
      })
    ))

  it("effect_ai_generate_object: generateObject through the wrapper is journaled as a step and decodes the object", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted(() => answer(JSON.stringify({ verdict: "filler", reports: 2 })))
        const response = yield* LanguageModel.generateObject({
          prompt: taskText,
          schema: Schema.Struct({ verdict: Schema.String, reports: Schema.Number })
        }).pipe(Effect.provide(TesseraLanguageModel.layer(binding, { offload }).pipe(Layer.provide(model.layer))))
        assert.deepStrictEqual(response.value, { verdict: "filler", reports: 2 })
        const journal = journalText(world)
        assert.strictEqual(count(journal, "RequestDispatched"), 1)
        assert.strictEqual(count(journal, "ResponseReceived"), 1)
        assert.include(journal, '"_tag":"TurnClosed"')
      })
    ))
})
