import * as fs from "node:fs"
import * as path from "node:path"
import { APICallError, type LanguageModelV4CallOptions, type LanguageModelV4Middleware } from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { TesseraMiddleware } from "@tessera/ai-sdk"
import { DefaultRedactor } from "@tessera/artifacts"
import { Compaction } from "@tessera/runtime"
import { generateText, type ModelMessage, stepCountIs, wrapLanguageModel } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { Effect } from "effect"
import {
  answer,
  bindTask,
  callTool,
  inWorld,
  isSummaryRequest,
  journalText,
  privateFolder,
  produce,
  promptText,
  taskText
} from "./support/world.ts"

const tools = { produce }
const start: Array<ModelMessage> = [{ role: "user", content: taskText }]

/** A mock that calls the tool `calls` times (results of `size`), then answers; summary requests get a summary. */
const scripted = (calls: number, size: number) => {
  let steps = 0
  let summaries = 0
  const model = new MockLanguageModelV4({
    doGenerate: async (options) => {
      if (isSummaryRequest(options)) {
        summaries++
        return answer(`summary number ${summaries}: the reports so far are filler`)
      }
      steps++
      return steps <= calls ? callTool(`call-${steps}`, size, `r${steps}-`) : answer("All reports are filler.")
    }
  })
  const turnRequests = () => model.doGenerateCalls.filter((call) => !isSummaryRequest(call))
  return { model, turnRequests }
}

const longPolicy = Compaction.threshold({
  measure: "bytes",
  limit: 8_000,
  keepRecent: 2_000,
  pieceLimit: 100_000
})
const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const

const largestUpTo = (requests: ReadonlyArray<LanguageModelV4CallOptions>, step: number): number =>
  Math.max(...requests.slice(0, step).map((request) => promptText(request.prompt).length))

// One 200-step conversation, shared by the tests that look at it.
let longRun:
  | Promise<{ readonly requests: ReadonlyArray<LanguageModelV4CallOptions>; readonly text: string }>
  | undefined
const runLong = () => {
  longRun ??= inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, longPolicy)
      const tessera = yield* TesseraMiddleware.make(binding, { offload })
      const { model, turnRequests } = scripted(199, 6_000)
      const result = yield* Effect.promise(() =>
        generateText({
          model: wrapLanguageModel({ model, middleware: tessera.middleware }),
          tools,
          messages: start,
          stopWhen: stepCountIs(200)
        })
      )
      return { requests: turnRequests(), text: result.text }
    })
  )
  return longRun
}

describe("TesseraMiddleware (Vercel AI SDK 7)", () => {
  it("ai_sdk_long_conversation_bounded: the largest request up to step 200 is at most 1.1x the largest up to step 50", async () => {
    const { requests, text } = await runLong()
    assert.strictEqual(requests.length, 200)
    assert.strictEqual(text, "All reports are filler.")
    const at50 = largestUpTo(requests, 50)
    const at200 = largestUpTo(requests, 200)
    assert.isAtMost(at200, 1.1 * at50, `largest request: ${at200} bytes by step 200, ${at50} by step 50`)
  }, 120_000)

  it("ai_sdk_task_kept: the user's task opens the 200th request", async () => {
    const { requests } = await runLong()
    const last = requests.at(-1)?.prompt ?? []
    const first = last.find((message) => message.role === "user" && promptText([message]).includes(taskText))
    assert.isDefined(first, "the task message is in the last request")
    assert.include(promptText(last), "summaries/task-1-t1/", "the last request carries a summary reference")
  }, 120_000)

  it("negative control: the same conversation without the middleware grows linearly", async () => {
    const { model, turnRequests } = scripted(199, 6_000)
    await generateText({ model, tools, messages: start, stopWhen: stepCountIs(200) })
    const requests = turnRequests()
    assert.strictEqual(requests.length, 200)
    const at50 = largestUpTo(requests, 50)
    const at200 = largestUpTo(requests, 200)
    assert.isAbove(at200, 3.5 * at50, `without Tessera: ${at200} bytes by step 200, ${at50} by step 50`)
  })

  it("ai_sdk_four_requests: two large tool results, no output volume: exactly 4 model requests, the last starts with a summary file on the private volume", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(
          world,
          true,
          Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const tessera = yield* TesseraMiddleware.make(binding)
        const { model } = scripted(2, 20_000)
        const result = yield* Effect.promise(() =>
          generateText({
            model: wrapLanguageModel({ model, middleware: tessera.middleware }),
            tools,
            messages: start,
            stopWhen: stepCountIs(8)
          })
        )
        const sent = model.doGenerateCalls
        assert.strictEqual(sent.length, 4, "three steps and one summary request")
        assert.isTrue(isSummaryRequest(sent[2] as LanguageModelV4CallOptions), "the third request is the summary")
        const last = (sent[3] as LanguageModelV4CallOptions).prompt
        assert.match(promptText(last.slice(0, 1)), /summaries\/task-1-t1\/3\.txt/)
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
        assert.strictEqual(journal.split('"_tag":"RequestDispatched"').length - 1, 3)
        assert.notInclude(journal, "summary number 1", "the journal records where, never what")
        // The summary request's usage reaches the host: in the step's usage and its provider metadata.
        assert.strictEqual(result.totalUsage.inputTokens, 40)
        assert.strictEqual(result.totalUsage.outputTokens, 20)
        assert.deepStrictEqual(result.steps[2]?.providerMetadata?.tessera, {
          summaryRequests: 1,
          summaryInputTokens: 10,
          summaryOutputTokens: 5
        })
        assert.deepStrictEqual(tessera.summaryUsage(), { requests: 1, inputTokens: 10, outputTokens: 5 })
      })
    ))

  it("ai_sdk_writerless_refused: a writerless binding with private offload is refused, zero model requests", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const { model } = scripted(2, 20_000)
        const refused = yield* Effect.flip(TesseraMiddleware.make(binding, { offload }))
        assert.strictEqual(refused._tag, "Unauthorized")
        assert.strictEqual(model.doGenerateCalls.length, 0)
        assert.strictEqual(journalText(world), "", "nothing journaled")
        const armed = yield* Effect.flip(
          bindTask(
            world,
            false,
            Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 0, pieceLimit: 200_000 })
          )
        )
        assert.strictEqual(armed._tag, "Unauthorized")
      })
    ))

  it("negative control: a middleware that resolves the writer after dispatch sends one request before failing", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const { model } = scripted(2, 20_000)
        const context = yield* Effect.context<never>()
        // Deliberately broken wiring: the model is asked first, the capability resolved afterwards.
        const late: LanguageModelV4Middleware = {
          specificationVersion: "v4",
          wrapGenerate: async ({ doGenerate }) => {
            const result = await doGenerate()
            await Effect.runPromiseWith(context)(TesseraMiddleware.make(binding, { offload }) as Effect.Effect<unknown>)
            return result
          }
        }
        const failed = yield* Effect.promise(() =>
          generateText({ model: wrapLanguageModel({ model, middleware: late }), tools, messages: start }).then(
            () => false,
            () => true
          )
        )
        assert.isTrue(failed)
        assert.strictEqual(model.doGenerateCalls.length, 1)
      })
    ))

  it("ai_sdk_offloaded_never_resent: an offloaded payload reaches the model in no later request, across generateText calls", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload })
        const { model } = scripted(1, 10_000)
        const wrapped = wrapLanguageModel({ model, middleware: tessera.middleware })
        const first = yield* Effect.promise(() =>
          generateText({
            model: wrapped,
            tools,
            messages: start,
            stopWhen: stepCountIs(5),
            prepareStep: tessera.prepareStep
          })
        )
        const pointer = tessera.offloaded.get("call-1")
        assert.isDefined(pointer)
        assert.match(pointer ?? "", /read_artifact/)
        // The caller's own history still holds the body; the middleware keeps it out of every request.
        yield* Effect.promise(() =>
          generateText({
            model: wrapped,
            tools,
            messages: [
              ...start,
              ...first.steps.flatMap((step) => step.response.messages),
              { role: "user", content: "And once more?" }
            ]
          })
        )
        assert.strictEqual(model.doGenerateCalls.length, 3)
        for (const call of model.doGenerateCalls) assert.notInclude(promptText(call.prompt), "r1-".repeat(100))
        assert.include(promptText((model.doGenerateCalls[2] as LanguageModelV4CallOptions).prompt), "read_artifact")
        // prepareStep shrinks the caller's copy too.
        const shrunk = tessera.prepareStep({
          messages: [...start, ...first.steps.flatMap((step) => step.response.messages)]
        })
        assert.notInclude(JSON.stringify(shrunk.messages), "r1-".repeat(100))
        assert.include(journalText(world), '"_tag":"ArtifactOffloaded"')
      })
    ))

  it("negative control: without the middleware the payload is sent again", async () => {
    const { model } = scripted(1, 10_000)
    const first = await generateText({ model, tools, messages: start, stopWhen: stepCountIs(5) })
    await generateText({
      model,
      tools,
      messages: [
        ...start,
        ...first.steps.flatMap((step) => step.response.messages),
        { role: "user", content: "And once more?" }
      ]
    })
    assert.include(promptText((model.doGenerateCalls[2] as LanguageModelV4CallOptions).prompt), "r1-".repeat(100))
  })

  it("ai_sdk_redacted_before_disk: an offloaded result is scrubbed before it is written, and the model sees the scrubbed abstract", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload }).pipe(
          Effect.provide(DefaultRedactor.layer())
        )
        let steps = 0
        const model = new MockLanguageModelV4({
          doGenerate: async () => {
            steps++
            return steps === 1 ? callTool("leak", 6_000, "config") : answer("done")
          }
        })
        // The tool's result holds a credential its input never named.
        const leaky = {
          produce: { ...produce, execute: async () => "aws_access_key_id=AKIAIOSFODNN7EXAMPLE\n".repeat(200) }
        }
        yield* Effect.promise(() =>
          generateText({
            model: wrapLanguageModel({ model, middleware: tessera.middleware }),
            tools: leaky,
            messages: start,
            stopWhen: stepCountIs(5)
          })
        )
        const folder = path.join(privateFolder(world), "artifacts", "tool-results")
        const files = fs.readdirSync(folder)
        assert.strictEqual(files.length, 1)
        const stored = fs.readFileSync(path.join(folder, files[0] as string), "utf8")
        assert.notInclude(stored, "AKIAIOSFODNN7EXAMPLE")
        assert.include(stored, "[REDACTED:")
        for (const call of model.doGenerateCalls) assert.notInclude(promptText(call.prompt), "AKIAIOSFODNN7EXAMPLE")
      })
    ))

  it("a failed model call is journaled as ModelFailed, scrubbed, and the AI SDK's retry continues the same turn", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload }).pipe(
          Effect.provide(DefaultRedactor.layer())
        )
        let attempts = 0
        const model = new MockLanguageModelV4({
          doGenerate: async () => {
            attempts++
            if (attempts === 1) {
              throw new APICallError({
                message: "upstream 503 for key aws_access_key_id=AKIAIOSFODNN7EXAMPLE",
                url: "https://provider.invalid/v1",
                requestBodyValues: {},
                isRetryable: true
              })
            }
            return attempts === 2 ? callTool("call-1", 10, "x") : answer("done")
          }
        })
        const result = yield* Effect.promise(() =>
          generateText({
            model: wrapLanguageModel({ model, middleware: tessera.middleware }),
            tools,
            messages: start,
            stopWhen: stepCountIs(5),
            maxRetries: 1
          })
        )
        assert.strictEqual(result.text, "done")
        const journal = journalText(world)
        assert.include(journal, '"_tag":"ModelFailed"')
        assert.notInclude(
          journal,
          "AKIAIOSFODNN7EXAMPLE",
          "the provider's error text is scrubbed before it is journaled"
        )
        assert.include(journal, '"_tag":"TurnClosed"')
        assert.strictEqual(journal.split('"_tag":"TurnOpened"').length - 1, 1, "one turn")
      })
    ))

  const secret = "AKIAIOSFODNN7EXAMPLE"
  const failingModel = () =>
    new MockLanguageModelV4({
      doGenerate: async () => {
        throw new APICallError({
          message: `upstream 400 for key aws_access_key_id=${secret}`,
          url: "https://provider.invalid/v1",
          requestBodyValues: { note: `aws_access_key_id=${secret}` },
          responseBody: `{"error":"bad key aws_access_key_id=${secret}"}`,
          statusCode: 400,
          isRetryable: false
        })
      }
    })

  it("ai_sdk_provider_error_scrubbed: the provider error generateText rethrows to the caller is scrubbed, and still an APICallError", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload }).pipe(
          Effect.provide(DefaultRedactor.layer())
        )
        const model = failingModel()
        const caught = yield* Effect.promise(() =>
          generateText({
            model: wrapLanguageModel({ model, middleware: tessera.middleware }),
            tools,
            messages: start,
            maxRetries: 0
          }).then(
            () => undefined,
            (error: unknown) => error
          )
        )
        assert.isTrue(APICallError.isInstance(caught), "the SDK's error class (and its retry decision) is kept")
        const error = caught as APICallError
        assert.strictEqual(error.statusCode, 400)
        assert.isFalse(error.isRetryable)
        for (const text of [
          error.message,
          error.responseBody ?? "",
          JSON.stringify(error.requestBodyValues),
          error.stack
        ]) {
          assert.notInclude(text ?? "", secret)
        }
        assert.include(error.message, "[REDACTED:")
        assert.notInclude(journalText(world), secret)
      })
    ))

  it("negative control: a middleware that rethrows the provider's error as it came hands the secret to the caller", async () => {
    const model = failingModel()
    const raw: LanguageModelV4Middleware = {
      specificationVersion: "v4",
      wrapGenerate: ({ doGenerate }) => doGenerate()
    }
    const caught = await generateText({
      model: wrapLanguageModel({ model, middleware: raw }),
      tools,
      messages: start,
      maxRetries: 0
    }).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.include((caught as Error).message, secret)
  })

  it("ai_sdk_to_model_output: with toModelOutput the caller's own history holds the pointer as soon as the tool returns", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload })
        const { model } = scripted(2, 10_000)
        const shrinking = { produce: { ...produce, toModelOutput: tessera.toModelOutput("produce") } }
        const result = yield* Effect.promise(() =>
          generateText({
            model: wrapLanguageModel({ model, middleware: tessera.middleware }),
            tools: shrinking,
            messages: start,
            stopWhen: stepCountIs(5)
          })
        )
        const history = JSON.stringify(result.steps.map((step) => step.response.messages))
        assert.notInclude(history, "r1-".repeat(100), "the caller's history holds no body")
        assert.notInclude(history, "r2-".repeat(100))
        assert.include(history, "read_artifact")
        for (const call of model.doGenerateCalls) assert.notInclude(promptText(call.prompt), "r1-".repeat(100))
        const journal = journalText(world)
        assert.strictEqual(journal.split('"_tag":"ToolResulted"').length - 1, 2, "each result journaled once")
        assert.strictEqual(journal.split('"_tag":"ArtifactOffloaded"').length - 1, 2)
        assert.include(journal, '"_tag":"TurnClosed"')
      })
    ))

  it("negative control: without toModelOutput the caller's history keeps the body", async () => {
    const { model } = scripted(2, 10_000)
    const result = await generateText({ model, tools, messages: start, stopWhen: stepCountIs(5) })
    assert.include(JSON.stringify(result.steps.map((step) => step.response.messages)), "r1-".repeat(100))
  })

  /**
   * Two `generateText` calls on one middleware whose provider gives both
   * tool calls the id `call-1`: a large result first (offloaded), then a
   * small one (kept). The caller carries the first call's messages into
   * the second. `wire` may break the middleware or the tool around the
   * real ones (the controls).
   */
  const reusedId = (wire: {
    readonly middleware?: (middleware: LanguageModelV4Middleware) => LanguageModelV4Middleware
    readonly toModelOutput?: boolean
    readonly output?: (
      output: ReturnType<TesseraMiddleware.TesseraAiSdk["toModelOutput"]>
    ) => ReturnType<TesseraMiddleware.TesseraAiSdk["toModelOutput"]>
  }) =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraMiddleware.make(binding, { offload })
        const script = [callTool("call-1", 10_000, "r1-"), answer("first done"), callTool("call-1", 600, "r2-")]
        let steps = 0
        const model = new MockLanguageModelV4({
          doGenerate: async () => script[steps++] ?? answer("second done")
        })
        const middleware = wire.middleware?.(tessera.middleware) ?? tessera.middleware
        const wrapped = wrapLanguageModel({ model, middleware })
        const toModelOutput = tessera.toModelOutput("produce")
        const shrinking =
          wire.toModelOutput === true
            ? { produce: { ...produce, toModelOutput: wire.output?.(toModelOutput) ?? toModelOutput } }
            : tools
        const first = yield* Effect.promise(() =>
          generateText({ model: wrapped, tools: shrinking, messages: start, stopWhen: stepCountIs(5) })
        )
        const pointer = tessera.offloaded.get("call-1") ?? ""
        yield* Effect.promise(() =>
          generateText({
            model: wrapped,
            tools: shrinking,
            messages: [
              ...start,
              ...first.steps.flatMap((step) => step.response.messages),
              { role: "user", content: "And once more?" }
            ],
            stopWhen: stepCountIs(5)
          })
        )
        const prompts = model.doGenerateCalls.map((call) => promptText(call.prompt))
        return { pointer, prompts, journal: journalText(world), latest: tessera.offloaded.get("call-1") }
      })
    )

  const reuseHolds = (run: Awaited<ReturnType<typeof reusedId>>) => {
    assert.strictEqual(run.prompts.length, 4)
    assert.match(run.pointer, /read_artifact/)
    for (const prompt of run.prompts) assert.notInclude(prompt, "r1-".repeat(100), "the first body is never resent")
    const last = run.prompts[3] ?? ""
    assert.include(last, JSON.stringify(run.pointer).slice(1, -1), "the first call keeps its own pointer")
    assert.include(last, "r2-".repeat(100), "the second call of the id reaches the model as its tool gave it")
    assert.strictEqual(run.journal.split('"_tag":"ToolResulted"').length - 1, 2, "both calls journaled")
    assert.strictEqual(run.journal.split('"_tag":"ArtifactOffloaded"').length - 1, 1)
    assert.isUndefined(run.latest, "the latest call of the id was not offloaded")
  }

  /** Deliberately broken: results remembered by call id alone, the first one seen winning (the bug the middleware had). */
  const byIdAlone = (middleware: LanguageModelV4Middleware): LanguageModelV4Middleware => {
    const seen = new Map<string, unknown>()
    return {
      ...middleware,
      transformParams: async (options) => {
        const params = (await middleware.transformParams?.(options)) ?? options.params
        const prompt = params.prompt.map((message) => {
          if (message.role !== "tool") return message
          const content = message.content.map((part) => {
            if (part.type !== "tool-result") return part
            if (!seen.has(part.toolCallId)) seen.set(part.toolCallId, part.output)
            return { ...part, output: seen.get(part.toolCallId) as typeof part.output }
          })
          return { ...message, content }
        })
        return { ...params, prompt }
      }
    }
  }

  it("ai_sdk_reused_call_id: a call id the provider uses again in a later prompt is a new call, never given the first call's pointer, and the first body stays out", async () => {
    reuseHolds(await reusedId({}))
  })

  it("negative control: a middleware remembering results by call id alone sends the first call's pointer for the second", async () => {
    const run = await reusedId({ middleware: byIdAlone })
    assert.throws(() => reuseHolds(run))
    assert.notInclude(run.prompts[3] ?? "", "r2-".repeat(100))
  })

  it("ai_sdk_reused_call_id_to_model_output: with toModelOutput, the second call of a reused id is recorded as itself, not answered with the first call's pointer", async () => {
    reuseHolds(await reusedId({ toModelOutput: true }))
  })

  it("negative control: a toModelOutput that remembers its answers by call id alone hands the second call the first call's pointer", async () => {
    const run = await reusedId({
      toModelOutput: true,
      output: (inner) => {
        const answers = new Map<string, ReturnType<typeof inner>>()
        return (options) => {
          const known = answers.get(options.toolCallId)
          if (known !== undefined) return known
          const made = inner(options)
          answers.set(options.toolCallId, made)
          return made
        }
      }
    })
    assert.throws(() => reuseHolds(run))
    assert.notInclude(run.prompts[3] ?? "", "r2-".repeat(100))
  })

  /** The four-request scenario, sent with headers, provider options and an abort signal; the calls the mock saw. */
  const summaryCallOptions = () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(
          world,
          true,
          Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const tessera = yield* TesseraMiddleware.make(binding)
        const { model } = scripted(2, 20_000)
        const abort = new AbortController()
        yield* Effect.promise(() =>
          generateText({
            model: wrapLanguageModel({ model, middleware: tessera.middleware }),
            tools,
            messages: start,
            stopWhen: stepCountIs(8),
            headers: { "x-tenant": "tenant-7" },
            providerOptions: { mock: { region: "eu" } },
            abortSignal: abort.signal
          })
        )
        return model.doGenerateCalls
      })
    )

  /** A summary request borrows how its request reaches the provider, never its tools. */
  const borrows = (summary: LanguageModelV4CallOptions | undefined) => {
    assert.isDefined(summary)
    assert.strictEqual(summary?.headers?.["x-tenant"], "tenant-7")
    assert.deepStrictEqual(summary?.providerOptions, { mock: { region: "eu" } })
    assert.isDefined(summary?.abortSignal)
    assert.isUndefined(summary?.tools, "the summary request offers no tools")
  }

  it("ai_sdk_summary_request_options: the summary request carries the headers, provider options and abort signal of the request it precedes, and no tools", async () => {
    const sent = await summaryCallOptions()
    assert.strictEqual(sent.length, 4)
    const summary = sent.find(isSummaryRequest)
    borrows(summary)
    assert.isDefined(sent[3]?.tools, "the turn's own requests keep their tools")
  })

  it("negative control: a summary request sent with its prompt alone (as before) fails the check", async () => {
    const sent = await summaryCallOptions()
    const summary = sent.find(isSummaryRequest)
    assert.isDefined(summary)
    const promptOnly = { prompt: summary?.prompt ?? [] } as LanguageModelV4CallOptions
    assert.throws(() => borrows(promptOnly))
  })
})
