/**
 * End to end: Tessera's own executor (`TaskExecution` on a `LocalHarness`
 * task) driving real AI SDK providers (`@ai-sdk/openai-compatible`,
 * `@ai-sdk/anthropic`) through `AiSdkModel`, against loopback servers that
 * speak the providers' wire formats (JSON and SSE).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { createAnthropic } from "@ai-sdk/anthropic"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import type { LanguageModelV4, LanguageModelV4CallOptions } from "@ai-sdk/provider"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { assert, describe, it } from "@effect/vitest"
import { AiSdkModel } from "@tessera/ai-sdk"
import { DefaultRedactor } from "@tessera/artifacts"
import { Ids } from "@tessera/core"
import { LocalHarness, NodeDurableFiles } from "@tessera/node"
import { Compaction, type Executor, History, Journal, JournalEntry, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Exit, Fiber, Layer, Schedule, Schema, Stream } from "effect"
import * as Loopback from "./support/loopback.ts"

type Format = "openai" | "anthropic"

const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const taskId = Schema.decodeUnknownSync(Ids.TaskId)

const providerModel = (format: Format, baseUrl: string): LanguageModelV4 =>
  format === "openai"
    ? createOpenAICompatible({ name: "loopback", baseURL: baseUrl, apiKey: "test-key", includeUsage: true }).chatModel(
        "loopback-model"
      )
    : createAnthropic({ baseURL: baseUrl, apiKey: "test-key" }).languageModel("claude-loopback")

const produce = Tool.make({
  name: "produce",
  description: "Produces a report of the given size, made of one repeated letter",
  input: Schema.Struct({ size: Schema.Number, fill: Schema.String }),
  handler: ({ fill, size }) => Effect.succeed(fill.repeat(size))
})
const tools = Tool.registry(produce)
const taskText = "Produce the three reports and tell me what they say."
const start = History.make([Model.text("system", "You are a careful assistant."), Model.text("user", taskText)])
const offload = { threshold: 4_000, readTool: "read_artifact", destination: "Private" } as const
const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 500, pieceLimit: 100_000 })

const { isSummary, summaryMarker } = Loopback
const finalText = "Report A is all a; reports B and C are all b and c."

/** Three tool calls (one result large enough to offload, two that push the history over the limit), then the answer. */
const turnScript = (): { readonly script: Loopback.Script; readonly replies: Array<Loopback.Reply> } => {
  const replies: Array<Loopback.Reply> = []
  let step = 0
  const script: Loopback.Script = (body, index) => {
    const usage = { input: 1_000 + 7 * index, output: 20 + index, cached: 3 * index }
    let reply: Loopback.Reply
    if (isSummary(body)) reply = { _tag: "Reply", text: "Summary: reports A and B were produced.", usage }
    else {
      step++
      const call = (id: string, size: number, fill: string) => ({ id, name: "produce", input: { size, fill } })
      reply =
        step === 1
          ? { _tag: "Reply", text: "Starting.", toolCalls: [call("call_a", 20_000, "a")], usage }
          : step === 2
            ? { _tag: "Reply", toolCalls: [call("call_b", 3_000, "b")], usage }
            : step === 3
              ? { _tag: "Reply", toolCalls: [call("call_c", 3_000, "c")], usage }
              : { _tag: "Reply", text: finalText, usage }
    }
    replies.push(reply)
    return reply
  }
  return { script, replies }
}

const withoutSignal = ({ abortSignal: _signal, ...options }: LanguageModelV4CallOptions): LanguageModelV4CallOptions =>
  options

const platform = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer)

/** A fresh harness folder for `body`, removed afterwards; a loopback server speaking `format`, closed afterwards. */
const withServer = async <A>(
  format: Format,
  script: Loopback.Script,
  body: (
    server: Loopback.Loopback,
    harness: LocalHarness.LocalHarnessService
  ) => Effect.Effect<A, unknown, Layer.Success<typeof platform>>
): Promise<A> => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-loopback-"))
  const server = await Loopback.start(format, script)
  try {
    const program = Effect.gen(function* () {
      const harness = yield* LocalHarness.open({ stateDir, namespace: "loopback", agent })
      return yield* body(server, harness)
    })
    return await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(platform)) as Effect.Effect<A>)
  } finally {
    await server.close()
    fs.rmSync(stateDir, { recursive: true, force: true })
  }
}

const entriesOf = (harness: LocalHarness.LocalHarnessService, task: Ids.TaskId) =>
  Journal.readEntries({ folder: harness.journalFolder, task })

const counted = (usage: Model.Usage) => ({
  inputTokens: usage.inputTokens,
  outputTokens: usage.outputTokens,
  cachedInputTokens: usage.cachedInputTokens
})

/** A model whose usage mapping is broken: every response loses its usage (the control of the totals test). */
const droppingUsage = (model: Model.Model["Service"]): Model.Model["Service"] =>
  Model.Model.of({
    generate: (request) => Effect.map(model.generate(request), ({ usage: _usage, ...rest }) => rest),
    stream: (request) => Stream.filter(model.stream(request), (event) => event._tag !== "Usage")
  })

/** The multi-step turn, through runTurn (non-streaming requests) or streamTurn (streaming); what it left behind. */
const multiStepTurn = (
  format: Format,
  streaming: boolean,
  wrap: (model: Model.Model["Service"]) => Model.Model["Service"] = (m) => m
) => {
  const { replies, script } = turnScript()
  return withServer(format, script, (server, harness) =>
    Effect.gen(function* () {
      const task = taskId(`${format}-${streaming ? "stream" : "json"}`)
      const model = wrap(AiSdkModel.make(providerModel(format, server.baseUrl), { retry: Schedule.recurs(0) }))
      const events: Array<Executor.TurnEvent> = []
      const text = yield* harness.withTask(
        task,
        (binding) =>
          (streaming
            ? Stream.runForEach(TaskExecution.streamTurn(binding, start, { tools, maxSteps: 10, offload }), (event) =>
                Effect.sync(() => events.push(event))
              ).pipe(
                Effect.map(() => {
                  const closed = events.at(-1)
                  return closed?._tag === "TurnClosed" ? closed.outcome.text : ""
                })
              )
            : Effect.map(
                TaskExecution.runTurn(binding, start, { tools, maxSteps: 10, offload }),
                (outcome) => outcome.text
              )
          ).pipe(Effect.provide(Layer.merge(Layer.succeed(Model.Model)(model), DefaultRedactor.layer()))),
        { policy }
      )
      const entries = yield* entriesOf(harness, task)
      return { text, entries, events, replies, received: server.received }
    })
  )
}

for (const format of ["openai", "anthropic"] as const) {
  describe(`loopback ${format === "openai" ? "OpenAI chat completions (@ai-sdk/openai-compatible)" : "Anthropic messages (@ai-sdk/anthropic)"}`, () => {
    for (const streaming of [false, true]) {
      it(`${format}_multi_step_turn_${streaming ? "sse" : "json"}: tool calls, an offloaded result and a staged private summary in one turn; the journal's usage totals equal the sum the server reported, summary requests included`, async () => {
        const run = await multiStepTurn(format, streaming)
        assert.strictEqual(run.text, finalText)
        // The turn's own requests stream when the turn does; summary requests are plain requests either way.
        assert.isTrue(
          run.received.every((request) => (request.body.stream === true) === (streaming && !isSummary(request.body))),
          `every turn request was ${streaming ? "streamed" : "a plain JSON request"}`
        )
        const tags = run.entries.map((entry) => entry._tag)
        assert.strictEqual(tags.filter((tag) => tag === "ToolResulted").length, 3)
        assert.strictEqual(tags.filter((tag) => tag === "ArtifactOffloaded").length, 1)
        assert.isAtLeast(tags.filter((tag) => tag === "SummaryStaged").length, 1)
        const summaries = run.received.filter((request) => isSummary(request.body)).length
        assert.isAtLeast(summaries, 1, "a summary request went to the server")
        assert.strictEqual(tags.filter((tag) => tag === "SummaryRequestAnswered").length, summaries)
        assert.strictEqual(tags.at(-1), "TurnClosed")
        // The offloaded body never reached the server: the 20,000-letter report is not in any request.
        assert.isTrue(run.received.every((request) => !JSON.stringify(request.body).includes("a".repeat(5_000))))
        // The last request after compaction opens with the system message, then the summary reference.
        const last = run.received.at(-1)?.body
        const lastText = JSON.stringify(last)
        assert.include(lastText, "summaries/")
        if (format === "openai") {
          const messages = (last as { messages: ReadonlyArray<{ role: string }> }).messages
          assert.strictEqual(messages[0]?.role, "system")
        }

        const total = JournalEntry.totalUsage(run.entries)
        assert.strictEqual(total.responses, run.received.length)
        assert.strictEqual(total.reported, run.received.length)
        assert.deepStrictEqual(counted(total.usage), Loopback.reportedTotal(run.replies))

        if (streaming) {
          const firstFinish = run.events.findIndex((event) => event._tag === "StepFinished")
          assert.isTrue(
            run.events.slice(0, firstFinish).some((event) => event._tag === "TextDelta"),
            "text deltas arrived before the first step finished"
          )
          assert.isTrue(
            run.events.some((event) => event._tag === "ToolCallDelta"),
            "tool-call input streamed"
          )
          assert.isTrue(run.events.some((event) => event._tag === "SummaryStaged"))
        }
      }, 60_000)
    }

    it(`${format} usage totals negative control: an adapter that drops usage fails the same totals check`, async () => {
      const run = await multiStepTurn(format, true, droppingUsage)
      assert.strictEqual(run.text, finalText)
      const total = JournalEntry.totalUsage(run.entries)
      assert.notDeepEqual(counted(total.usage), Loopback.reportedTotal(run.replies))
      assert.strictEqual(total.reported, 0)
    }, 60_000)

    /** Interrupts a turn while the server holds its first response open; what the server and the journal saw. */
    const interruptHeld = (streaming: boolean, strip: boolean, beforeHeaders: boolean) => {
      const script: Loopback.Script = (_body, index) =>
        index === 0
          ? { _tag: "Hold", beforeHeaders }
          : { _tag: "Reply", text: "fine now", usage: { input: 5, output: 2 } }
      return withServer(format, script, (server, harness) =>
        Effect.gen(function* () {
          const task = taskId(`${format}-held-${streaming ? "stream" : "json"}`)
          const provider = providerModel(format, server.baseUrl)
          // The control's broken wiring: the provider never receives the abort signal.
          const wired: LanguageModelV4 = strip
            ? {
                ...provider,
                supportedUrls: provider.supportedUrls,
                doGenerate: (options) => provider.doGenerate(withoutSignal(options)),
                doStream: (options) => provider.doStream(withoutSignal(options))
              }
            : provider
          const layer = Layer.succeed(Model.Model)(AiSdkModel.make(wired, { retry: Schedule.recurs(0) }))
          return yield* harness.withTask(task, (binding) =>
            Effect.gen(function* () {
              const turn = streaming
                ? Stream.runDrain(TaskExecution.streamTurn(binding, start, { tools, maxSteps: 4 }))
                : Effect.asVoid(TaskExecution.runTurn(binding, start, { tools, maxSteps: 4 }))
              const fiber = yield* Effect.forkChild(turn)
              while (server.received.length === 0) yield* Effect.sleep("5 millis")
              yield* Effect.sleep("50 millis")
              yield* Fiber.interrupt(fiber)
              const exit = yield* Fiber.await(fiber)
              const closed = yield* Effect.promise(() =>
                Promise.race([server.closedAt(0), new Promise<undefined>((resolve) => setTimeout(resolve, 500))])
              )
              const journal = yield* Journal.Journal
              const state = yield* journal.state
              const next = yield* TaskExecution.runTurn(binding, start, { tools, maxSteps: 4 })
              return { exit, closed, status: state.turns[0]?.status, next: next.text }
            }).pipe(Effect.provide(layer))
          )
        })
      )
    }

    const held = [
      { name: "json", streaming: false, beforeHeaders: true },
      { name: "sse_before_headers", streaming: true, beforeHeaders: true },
      { name: "sse_mid_stream", streaming: true, beforeHeaders: false }
    ] as const
    for (const { beforeHeaders, name, streaming } of held) {
      it(`${format}_abort_observed_${name}: interrupting the turn while the server holds the response open closes the request before its response ended; the turn is abandoned in the journal and the next runTurn succeeds`, async () => {
        const run = await interruptHeld(streaming, false, beforeHeaders)
        assert.isTrue(Exit.hasInterrupts(run.exit))
        assert.deepStrictEqual(run.closed, { beforeEnd: true }, "the server saw the request aborted")
        assert.strictEqual(run.status, "Abandoned")
        assert.strictEqual(run.next, "fine now")
      }, 30_000)
    }

    it(`${format} abort negative control: without the abort signal, a request held before its response started stays open after the interruption`, async () => {
      for (const streaming of [false, true]) {
        const run = await interruptHeld(streaming, true, true)
        assert.isTrue(Exit.hasInterrupts(run.exit))
        assert.isUndefined(run.closed, "nothing told the server")
        assert.strictEqual(run.status, "Abandoned", "the journal closes the turn either way")
      }
    }, 30_000)

    it(`${format}_media_on_the_wire: a task's native image reaches the server as the provider's own image block, carrying the part's providerOptions (keys Tessera does not know); control: the same image with its options dropped does not`, async () => {
      const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
      const sendImage = (providerOptions: Record<string, unknown>) =>
        withServer(
          format,
          () => ({ _tag: "Reply", text: "A single pixel.", usage: { input: 50, output: 4 } }),
          (server, harness) =>
            Effect.gen(function* () {
              const media: Model.MediaPart = {
                _tag: "Media",
                role: "user",
                mediaType: "image/png",
                data: { _tag: "Base64", base64: png },
                providerOptions
              }
              const history = History.make([Model.text("user", "What is in this image?"), media])
              const model = Layer.succeed(Model.Model)(
                AiSdkModel.make(providerModel(format, server.baseUrl), { retry: Schedule.recurs(0) })
              )
              const outcome = yield* harness.withTask(taskId(`${format}-media`), (binding) =>
                TaskExecution.runTurn(binding, history, { tools, maxSteps: 2 }).pipe(Effect.provide(model))
              )
              return { text: outcome.text, body: server.received[0]?.body }
            })
        )
      // Each provider's own option key for a content part: spread onto the part (OpenAI-compatible), cache_control (Anthropic).
      const options =
        format === "openai"
          ? { openaiCompatible: { vendor_hint: "keep-me" } }
          : { anthropic: { cacheControl: { type: "ephemeral" } } }
      const run = await sendImage(options)
      assert.strictEqual(run.text, "A single pixel.")
      const wire = JSON.stringify(run.body)
      assert.include(wire, png, "the image's bytes are on the wire")
      const optionOnWire = format === "openai" ? '"vendor_hint":"keep-me"' : '"cache_control":{"type":"ephemeral"}'
      assert.include(wire, optionOnWire)
      const control = await sendImage({})
      assert.notInclude(JSON.stringify(control.body), optionOnWire)
    }, 30_000)

    it(`${format}_retry_after: a 429 with Retry-After: 1 is retried after the stated second, then succeeds; without the header (control) the schedule's 10 ms apply`, async () => {
      const rateLimited = (headers: Record<string, string>) => {
        const script: Loopback.Script = (_body, index) =>
          index === 0
            ? {
                _tag: "Failure",
                status: 429,
                headers,
                body:
                  format === "openai"
                    ? { error: { message: "Rate limit reached", type: "rate_limit_exceeded", code: "rate_limit" } }
                    : { type: "error", error: { type: "rate_limit_error", message: "Rate limit reached" } }
              }
            : { _tag: "Reply", text: "after the wait", usage: { input: 5, output: 2 } }
        return withServer(format, script, (server) =>
          Effect.gen(function* () {
            const model = AiSdkModel.make(providerModel(format, server.baseUrl), {
              retry: Schedule.spaced("10 millis").pipe(Schedule.upTo({ times: 2 }))
            })
            const response = yield* model.generate({ parts: start.task, tools: [] })
            const [first, second] = server.received
            return { text: response.text, gap: (second?.at ?? 0) - (first?.at ?? 0), requests: server.received.length }
          })
        )
      }
      const honoured = await rateLimited({ "retry-after": "1" })
      assert.strictEqual(honoured.text, "after the wait")
      assert.strictEqual(honoured.requests, 2)
      assert.isAtLeast(honoured.gap, 990, `retried ${honoured.gap} ms after the 429`)
      const control = await rateLimited({})
      assert.strictEqual(control.requests, 2)
      assert.isBelow(control.gap, 500, `control: retried ${control.gap} ms after the 429`)
    }, 30_000)
  })
}

describe("provider errors in the journal", () => {
  const leaked = "AKIAIOSFODNN7EXAMPLE"
  /** A turn whose request the server rejects with a message echoing a credential; the error and the journal's detail. */
  const rejected = (redact: boolean) =>
    withServer(
      "openai",
      () => ({
        _tag: "Failure",
        status: 400,
        body: {
          error: {
            message: `invalid request: aws_access_key_id=${leaked} is not allowed`,
            type: "invalid_request_error"
          }
        }
      }),
      (server, harness) =>
        Effect.gen(function* () {
          const task = taskId(`rejected-${redact}`)
          const model = Layer.succeed(Model.Model)(
            AiSdkModel.make(providerModel("openai", server.baseUrl), { retry: Schedule.recurs(3) })
          )
          const error = yield* harness.withTask(task, (binding) =>
            Effect.flip(TaskExecution.runTurn(binding, start, { tools, maxSteps: 2 })).pipe(
              Effect.provide(redact ? Layer.merge(model, DefaultRedactor.layer()) : model)
            )
          )
          const failed = (yield* entriesOf(harness, task)).find((entry) => entry._tag === "ModelFailed")
          return {
            error,
            detail: failed?._tag === "ModelFailed" ? failed.detail : undefined,
            requests: server.received.length
          }
        })
    )

  it("provider_error_scrubbed: a rejected request fails the turn with a non-retryable ModelError, sent once; the provider's message reaches the journal through the host's redactor, and the flag survives the scrub; without a redactor (control) the credential is journaled", async () => {
    const run = await rejected(true)
    assert.strictEqual(run.requests, 1, "a 400 is not retried")
    assert.strictEqual(run.error._tag, "ModelError")
    assert(run.error._tag === "ModelError")
    assert.strictEqual(run.error.reason, "ProviderFailure")
    assert.strictEqual(run.error.retryable, false)
    assert.include(run.detail, "HTTP 400")
    assert.notInclude(run.detail, leaked)
    assert.notInclude(run.error.detail, leaked)
    const control = await rejected(false)
    assert.include(control.detail, leaked)
  }, 30_000)
})

describe("loopback summary requests", () => {
  it("the summary marker the servers look for is the runtime's own summary instruction", () => {
    assert.isTrue(Compaction.summaryInstruction.startsWith(summaryMarker))
  })
})
