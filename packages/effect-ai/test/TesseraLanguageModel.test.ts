import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { Digest } from "@tessera/core"
import { EffectAiModel, TesseraLanguageModel } from "@tessera/effect-ai"
import { Compaction, type EntryGate, History, Journal, Model, TaskExecution } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Context, Effect, Layer, Schema, Stream } from "effect"
import { AiError, LanguageModel, Prompt, type Response, Tool, Toolkit } from "effect/ai"
import {
  answer,
  bindTask,
  callTool,
  converse,
  count,
  inWorld,
  isSummaryRequest,
  journalText,
  Produce,
  privateFolder,
  promptText,
  requestsDispatched,
  scripted,
  Tools,
  taskText,
  toolsLayer,
  type World
} from "./support/world.ts"

const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const
const longPolicy = Compaction.threshold({
  measure: "bytes",
  limit: 8_000,
  keepRecent: 2_000,
  pieceLimit: 100_000
})
const fourPolicy = Compaction.threshold({
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

  /** A tool with neither a description nor parameters, offered after `Produce` (a struct of parameters). */
  const Publish = Tool.make("publish")
  const TwoTools = Toolkit.make(Produce, Publish)
  // Handlers are provided per tool: `Produce`'s come with `toolsLayer`.
  const twoToolsLayer = Layer.merge(toolsLayer, Toolkit.make(Publish).toLayer({ publish: () => Effect.void }))
  /** The specs of `TwoTools`: name, description (none: empty), parameters' JSON Schema as Effect AI makes it. */
  const specs = {
    produce: { name: "produce", description: Produce.description ?? "", inputSchema: Tool.getJsonSchema(Produce) },
    publish: { name: "publish", description: "", inputSchema: Tool.getJsonSchema(Publish) }
  } satisfies Record<string, Model.ToolSpec>
  const verdict = answer(JSON.stringify({ verdict: "filler" }))
  const calls = {
    generateText: (toolkit: typeof TwoTools) => LanguageModel.generateText({ prompt: taskText, toolkit }),
    generateObject: (toolkit: typeof TwoTools) =>
      LanguageModel.generateObject({ prompt: taskText, toolkit, schema: Schema.Struct({ verdict: Schema.String }) }),
    streamText: (toolkit: typeof TwoTools) => Stream.runDrain(LanguageModel.streamText({ prompt: taskText, toolkit }))
  }

  /**
   * What the runtime journals for `request` itself: it is dispatched through a `TaskExecution.foreignLoop` of its own on the
   * bound task, as a turn of its own (answered, so the turn closes).
   */
  const dispatchAlone = (binding: EntryGate.TaskBinding, request: Model.ModelRequest) =>
    Effect.gen(function* () {
      const loop = yield* TaskExecution.foreignLoop(binding)
      // Never asked: a one-part request is far below any compaction threshold.
      const { model: summaries } = yield* ScriptedModel.make([])
      const history = yield* loop.prepare(History.make(request.parts), summaries)
      const sent: Model.ModelRequest = { parts: History.toParts(history), tools: request.tools }
      const step = yield* loop.dispatch(sent)
      yield* loop.receive(step, sent, Model.response({ text: "reference" }))
    })

  /**
   * Runs `call` (one request with the task's text, answered without tool calls), then dispatches the same
   * prompt with `tools` through the runtime itself: the two `RequestDispatched` measures, the call's first.
   */
  const againstReference = <E, R>(
    world: World,
    binding: EntryGate.TaskBinding,
    call: Effect.Effect<unknown, E, R>,
    tools: ReadonlyArray<Model.ToolSpec>
  ) =>
    Effect.gen(function* () {
      yield* call
      yield* dispatchAlone(binding, { parts: [Model.text("user", taskText)], tools })
      const [sent, reference] = (yield* requestsDispatched(world)).slice(-2)
      const measure = (entry: typeof sent) => ({ parts: entry?.parts, size: entry?.size, sha256: entry?.sha256 })
      return { sent: measure(sent), reference: measure(reference) }
    })

  it("effect_ai_tools_journaled: generateText, generateObject and streamText with a toolkit of two tools journal RequestDispatched covering the tools' specs (name, description, Effect AI's JSON Schema) in the toolkit's order", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted(() => verdict)
        const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
        assert.deepStrictEqual(specs.produce.inputSchema.required, ["size", "fill"], "the struct's own schema")
        for (const [method, call] of Object.entries(calls)) {
          const { sent, reference } = yield* againstReference(
            world,
            binding,
            call(TwoTools).pipe(Effect.provideService(LanguageModel.LanguageModel, wrapped.languageModel)),
            [specs.produce, specs.publish]
          )
          assert.deepStrictEqual(sent, reference, `${method}: the journaled request is the prompt with both specs`)
        }
        assert.deepStrictEqual(
          model.stepRequests().map((request) => request.tools.map((tool) => tool.name)),
          [
            ["produce", "publish"],
            ["produce", "publish"],
            ["produce", "publish"]
          ],
          "the provider was offered the same tools"
        )
      }).pipe(Effect.provide(twoToolsLayer))
    ))

  it("negative control: a wrapper that journals the prompt without its tools, or the specs in another order, does not match", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted(() => verdict)
        // Deliberately broken wiring: the wrapper's journaling as it was, the request's parts and no tools.
        const toolless = Layer.effect(
          LanguageModel.LanguageModel,
          Effect.gen(function* () {
            const inner = yield* LanguageModel.LanguageModel
            const loop = yield* TaskExecution.foreignLoop(binding)
            const summaries = EffectAiModel.fromLanguageModel(inner)
            const generate = inner.generateText as unknown as (
              options: unknown
            ) => Effect.Effect<{ readonly text: string }, AiError.AiError>
            return {
              ...inner,
              generateText: ((options: unknown) =>
                Effect.gen(function* () {
                  const history = yield* loop.prepare(History.make([Model.text("user", taskText)]), summaries)
                  const request: Model.ModelRequest = { parts: History.toParts(history), tools: [] }
                  const step = yield* loop.dispatch(request)
                  const response = yield* generate(options)
                  yield* loop.receive(step, request, Model.response({ text: response.text }))
                  return response
                })) as unknown as LanguageModel.LanguageModel["generateText"]
            }
          })
        ).pipe(Layer.provide(model.layer))
        const dropped = yield* againstReference(
          world,
          binding,
          calls.generateText(TwoTools).pipe(Effect.provide(toolless)),
          [specs.produce, specs.publish]
        )
        assert.deepStrictEqual(dropped.sent.parts, dropped.reference.parts, "the same prompt")
        assert.notDeepEqual(dropped.sent, dropped.reference)

        const wrapper = TesseraLanguageModel.layer(binding).pipe(Layer.provide(model.layer))
        const reordered = yield* againstReference(
          world,
          binding,
          calls.generateText(TwoTools).pipe(Effect.provide(wrapper)),
          [specs.publish, specs.produce]
        )
        assert.notDeepEqual(reordered.sent, reordered.reference)
      }).pipe(Effect.provide(twoToolsLayer))
    ))

  class Catalog extends Context.Service<Catalog, { readonly toolkit: typeof TwoTools }>()("test/Catalog") {}

  it("effect_ai_toolkit_effect_once: a toolkit given as an Effect that needs a service is run once per call in the caller's context; its tools are journaled and offered, and the wrapped model resolves calls with it", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted((step) => (step === 1 ? callTool("call-1", 12, "ab") : verdict))
        const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
        let runs = 0
        const toolkit = Effect.gen(function* () {
          runs++
          const catalog = yield* Catalog
          return yield* catalog.toolkit
        })
        const first = yield* LanguageModel.generateText({ prompt: taskText, toolkit }).pipe(
          Effect.provideService(LanguageModel.LanguageModel, wrapped.languageModel)
        )
        assert.strictEqual(runs, 1)
        const result = first.toolResults[0]
        assert.strictEqual(result?.name, "produce")
        assert.strictEqual(result?.result, "abababababab", "the wrapped model ran the handler of the resolved toolkit")
        const prompt = Prompt.concat(Prompt.make(taskText), Prompt.fromResponseParts(first.content))
        yield* Stream.runDrain(LanguageModel.streamText({ prompt, toolkit })).pipe(
          Effect.provideService(LanguageModel.LanguageModel, wrapped.languageModel)
        )
        assert.strictEqual(runs, 2)
        assert.deepStrictEqual(
          model.stepRequests().map((request) => request.tools.map((tool) => tool.name)),
          [
            ["produce", "publish"],
            ["produce", "publish"]
          ]
        )
        yield* dispatchAlone(binding, { parts: [Model.text("user", taskText)], tools: [specs.produce, specs.publish] })
        const dispatched = yield* requestsDispatched(world)
        assert.strictEqual(dispatched.length, 3, "two steps, then the reference")
        assert.strictEqual(dispatched[0]?.sha256, dispatched[2]?.sha256, "the first step carries both specs")
      }).pipe(Effect.provide(twoToolsLayer), Effect.provideService(Catalog, { toolkit: TwoTools }))
    ))

  it("effect_ai_tool_choice_journaled: with toolChoice { oneOf } the journal covers only the tools the provider is offered; with none, the whole toolkit LanguageModel hands it", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted(() => verdict)
        const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
        const withChoice = (toolChoice: LanguageModel.ToolChoice<"produce" | "publish">) =>
          LanguageModel.generateText({ prompt: taskText, toolkit: TwoTools, toolChoice }).pipe(
            Effect.provideService(LanguageModel.LanguageModel, wrapped.languageModel)
          )
        const oneOf = yield* againstReference(world, binding, withChoice({ oneOf: ["publish"] }), [specs.publish])
        assert.deepStrictEqual(oneOf.sent, oneOf.reference)
        const none = yield* againstReference(world, binding, withChoice("none"), [specs.produce, specs.publish])
        assert.deepStrictEqual(none.sent, none.reference)
        assert.notStrictEqual(oneOf.sent.sha256, none.sent.sha256)
        assert.deepStrictEqual(
          model.stepRequests().map((request) => request.tools.map((tool) => tool.name)),
          [["publish"], ["produce", "publish"]]
        )
      }).pipe(Effect.provide(twoToolsLayer))
    ))

  it("effect_ai_provider_tools_not_journaled: a provider-defined tool is offered but left out of the journaled request, as the AI SDK middleware leaves provider tools out", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const model = scripted(() => verdict)
        const wrapped = yield* TesseraLanguageModel.make(binding).pipe(Effect.provide(model.layer))
        const WebSearch = Tool.providerDefined({
          id: "test.web_search",
          customName: "WebSearch",
          providerName: "web_search",
          args: Schema.Struct({ maxUses: Schema.Number })
        })({ maxUses: 2 })
        const { sent, reference } = yield* againstReference(
          world,
          binding,
          LanguageModel.generateText({ prompt: taskText, toolkit: Toolkit.make(Produce, WebSearch) }).pipe(
            Effect.provideService(LanguageModel.LanguageModel, wrapped.languageModel)
          ),
          [specs.produce]
        )
        assert.deepStrictEqual(sent, reference)
        assert.deepStrictEqual(
          model.stepRequests().map((request) => request.tools.map((tool) => tool.name)),
          [["produce", "WebSearch"]]
        )
      }).pipe(Effect.provide(toolsLayer))
    ))
})
