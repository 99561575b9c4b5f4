/**
 * AiSdkModel against the AI SDK's own `MockLanguageModelV4`: every stream
 * part mapped, usage and finish reasons, requests (tools, media), errors
 * and their retry classification, retries on a Schedule honouring
 * Retry-After, the per-request timeout, and the abort signal.
 */
import {
  APICallError,
  type LanguageModelV4CallOptions,
  type LanguageModelV4Content,
  type LanguageModelV4FinishReason,
  type LanguageModelV4GenerateResult,
  type LanguageModelV4Message,
  type LanguageModelV4StreamPart,
  type LanguageModelV4Usage
} from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { AiSdkModel } from "@tessera/ai-sdk"
import { Ids } from "@tessera/core"
import { Model } from "@tessera/runtime"
import { MockLanguageModelV4 } from "ai/test"
import { Duration, Effect, Exit, Fiber, Option, Schedule, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"

const streamOf = (parts: ReadonlyArray<LanguageModelV4StreamPart>): ReadableStream<LanguageModelV4StreamPart> =>
  new ReadableStream({
    start: (controller) => {
      for (const part of parts) controller.enqueue(part)
      controller.close()
    }
  })

const usage = (input?: number, output?: number, cached?: number, reasoning?: number): LanguageModelV4Usage => ({
  inputTokens: {
    total: input,
    noCache: input === undefined ? undefined : input - (cached ?? 0),
    cacheRead: cached,
    cacheWrite: undefined
  },
  outputTokens: { total: output, text: output === undefined ? undefined : output - (reasoning ?? 0), reasoning }
})

const stop: LanguageModelV4FinishReason = { unified: "stop", raw: "stop" }
const request = (parts: ReadonlyArray<Model.Part> = [Model.text("user", "hi")]): Model.ModelRequest => ({
  parts,
  tools: []
})
const noRetry = { retry: Schedule.recurs(0) }

const generated = (content: Array<LanguageModelV4Content>, extra: Partial<LanguageModelV4GenerateResult> = {}) => ({
  content,
  finishReason: stop,
  usage: usage(10, 5),
  warnings: [],
  ...extra
})

const collectEvents = (model: Model.Model["Service"], req = request()) =>
  Stream.runCollect(model.stream(req)).pipe(Effect.map((chunk) => Array.from(chunk)))

const apiError = (status: number, headers: Record<string, string> = {}, isRetryable?: boolean) =>
  new APICallError({
    message: `status ${status}`,
    url: "http://127.0.0.1/v1/chat/completions",
    requestBodyValues: { messages: [{ role: "user", content: "the secret request text" }] },
    statusCode: status,
    responseHeaders: headers,
    responseBody: "{}",
    ...(isRetryable === undefined ? {} : { isRetryable })
  })

describe("AiSdkModel: stream parts", () => {
  const everyPart: ReadonlyArray<LanguageModelV4StreamPart> = [
    { type: "stream-start", warnings: [] },
    { type: "response-metadata", id: "resp-1", modelId: "m" },
    { type: "reasoning-start", id: "r1" },
    { type: "reasoning-delta", id: "r1", delta: "Think" },
    { type: "reasoning-delta", id: "r1", delta: "ing." },
    { type: "reasoning-end", id: "r1" },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: "Hel" },
    { type: "text-delta", id: "t1", delta: "lo" },
    { type: "text-end", id: "t1" },
    { type: "tool-input-start", id: "call-1", toolName: "produce" },
    { type: "tool-input-delta", id: "call-1", delta: '{"size":' },
    { type: "tool-input-delta", id: "call-1", delta: "3}" },
    { type: "tool-input-end", id: "call-1" },
    { type: "tool-call", toolCallId: "call-1", toolName: "produce", input: '{"size":3}' },
    // A call the provider runs itself (web search...): not Tessera's to dispatch.
    { type: "tool-input-start", id: "srv-1", toolName: "web_search", providerExecuted: true },
    { type: "tool-input-delta", id: "srv-1", delta: "{}" },
    { type: "tool-call", toolCallId: "srv-1", toolName: "web_search", input: "{}", providerExecuted: true },
    { type: "raw", rawValue: { anything: 1 } },
    { type: "ping" },
    {
      type: "finish",
      usage: usage(120, 30, 100, 7),
      finishReason: { unified: "tool-calls", raw: "tool_use" },
      providerMetadata: { mock: { requestId: "abc" } }
    }
  ]

  it.effect(
    "stream_parts_mapped: every part of a provider stream becomes its Tessera event, in order; metadata-only parts and provider-executed calls are left out",
    () =>
      Effect.gen(function* () {
        const model = AiSdkModel.make(new MockLanguageModelV4({ doStream: { stream: streamOf(everyPart) } }), noRetry)
        const events = yield* collectEvents(model)
        assert.deepStrictEqual(events, [
          { _tag: "ReasoningDelta", delta: "Think" },
          { _tag: "ReasoningDelta", delta: "ing." },
          { _tag: "TextDelta", delta: "Hel" },
          { _tag: "TextDelta", delta: "lo" },
          { _tag: "ToolCallDelta", id: "call-1", name: "produce", inputDelta: '{"size":' },
          { _tag: "ToolCallDelta", id: "call-1", name: "produce", inputDelta: "3}" },
          { _tag: "ToolCall", call: Model.toolCall("call-1", "produce", { size: 3 }) },
          { _tag: "Usage", usage: { inputTokens: 120, outputTokens: 30, cachedInputTokens: 100, reasoningTokens: 7 } },
          { _tag: "Finish", reason: "tool-calls", providerMetadata: { mock: { requestId: "abc" } } }
        ])
        const collected = yield* Model.collect(Stream.fromIterable(events))
        assert.strictEqual(collected.text, "Hello")
        assert.strictEqual(collected.reasoning, "Thinking.")
      })
  )

  it.effect("tokens arrive one by one: the first delta is seen before the provider sends the rest", () =>
    Effect.gen(function* () {
      let sentRest = false
      let pull = 0
      let markSeen: () => void = () => {}
      const seenFirst = new Promise<void>((resolve) => {
        markSeen = resolve
      })
      const stream = new ReadableStream<LanguageModelV4StreamPart>({
        pull: async (controller) => {
          pull++
          if (pull === 1) controller.enqueue({ type: "text-delta", id: "t", delta: "first" })
          else if (pull === 2) {
            // The rest is sent once the consumer saw the first delta (or after 300 ms, if it never does).
            await Promise.race([seenFirst, new Promise((resolve) => setTimeout(resolve, 300))])
            sentRest = true
            controller.enqueue({ type: "text-delta", id: "t", delta: " second" })
          } else {
            controller.enqueue({ type: "finish", usage: usage(1, 2), finishReason: stop })
            controller.close()
          }
        }
      })
      const model = AiSdkModel.make(new MockLanguageModelV4({ doStream: { stream } }), noRetry)
      const seen: Array<boolean> = []
      yield* Stream.runForEach(model.stream(request()), (event) =>
        Effect.sync(() => {
          if (event._tag === "TextDelta") seen.push(sentRest)
          markSeen()
        })
      )
      assert.deepStrictEqual(seen, [false, true])
    })
  )

  it("property: a streamed response collects to the response doGenerate gives for the same content; a mapper that drops usage (control) does not", async () => {
    const content = fc.array(
      fc.oneof(
        fc.record({ type: fc.constant("text" as const), text: fc.string({ minLength: 1 }) }),
        fc.record({ type: fc.constant("reasoning" as const), text: fc.string({ minLength: 1 }) }),
        fc.record({
          type: fc.constant("tool-call" as const),
          toolCallId: fc.uuid(),
          toolName: fc.constantFrom("a", "b"),
          input: fc.jsonValue().map((value) => JSON.stringify(value))
        })
      ),
      { maxLength: 8 }
    )
    const counts = fc.option(fc.nat({ max: 1_000_000 }), { nil: undefined })
    await fc.assert(
      fc.asyncProperty(
        content,
        counts,
        counts,
        counts,
        fc.constantFrom("stop", "length", "tool-calls", "content-filter", "error", "other" as const),
        async (parts, input, output, cached, unified) => {
          const ids = new Set<string>()
          const unique = parts.filter(
            (part) => part.type !== "tool-call" || (!ids.has(part.toolCallId) && ids.add(part.toolCallId))
          )
          const finishReason: LanguageModelV4FinishReason = { unified, raw: undefined }
          const reported = usage(input, output, cached)
          const streamParts = unique.flatMap(
            (part): Array<LanguageModelV4StreamPart> =>
              part.type === "text"
                ? [{ type: "text-delta", id: "t", delta: part.text }]
                : part.type === "reasoning"
                  ? [{ type: "reasoning-delta", id: "r", delta: part.text }]
                  : [
                      { type: "tool-input-start", id: part.toolCallId, toolName: part.toolName },
                      { type: "tool-input-delta", id: part.toolCallId, delta: part.input },
                      part
                    ]
          )
          streamParts.push({ type: "finish", usage: reported, finishReason })
          const mock = new MockLanguageModelV4({
            doGenerate: async () => generated(unique, { usage: reported, finishReason }),
            doStream: async () => ({ stream: streamOf(streamParts) })
          })
          const model = AiSdkModel.make(mock, noRetry)
          const direct = await Effect.runPromise(model.generate(request()))
          const events = await Effect.runPromise(collectEvents(model))
          const streamed = await Effect.runPromise(Model.collect(Stream.fromIterable(events)))
          assert.deepStrictEqual(streamed, direct)
          // Control: the same events with the usage dropped are told apart whenever usage was reported.
          if (direct.usage !== undefined) {
            const dropped = events.filter((event) => event._tag !== "Usage")
            assert.notDeepEqual(await Effect.runPromise(Model.collect(Stream.fromIterable(dropped))), direct)
          }
        }
      ),
      { numRuns: 60 }
    )
  })

  it.effect("a tool call whose input is not JSON fails InvalidResponse naming the call, never its input", () =>
    Effect.gen(function* () {
      const stream = streamOf([
        { type: "tool-call", toolCallId: "bad-1", toolName: "produce", input: "{secret-input" },
        { type: "finish", usage: usage(1, 1), finishReason: stop }
      ])
      const error = yield* Effect.flip(
        collectEvents(AiSdkModel.make(new MockLanguageModelV4({ doStream: { stream } }), noRetry))
      )
      assert.strictEqual(error.reason, "InvalidResponse")
      assert.include(error.detail, "bad-1")
      assert.notInclude(error.detail, "secret-input")
    })
  )

  it.effect(
    "an error part ends the stream with a ProviderFailure; the request is not sent again once parts were streamed",
    () =>
      Effect.gen(function* () {
        let calls = 0
        const mock = new MockLanguageModelV4({
          doStream: async () => {
            calls++
            return {
              stream: streamOf([
                { type: "text-delta", id: "t", delta: "partial" },
                { type: "error", error: apiError(503) }
              ])
            }
          }
        })
        const error = yield* Effect.flip(collectEvents(AiSdkModel.make(mock, { retry: Schedule.recurs(3) })))
        assert.strictEqual(error.reason, "ProviderFailure")
        assert.isTrue(error.retryable)
        assert.strictEqual(calls, 1)
      })
  )
})

describe("AiSdkModel: usage and finish reasons", () => {
  it("property: usage maps input total, output total, cache reads and reasoning tokens, leaving unreported counts absent; reading noCache as the input (control) disagrees whenever cache reads were reported", () => {
    const count = fc.option(fc.nat({ max: 10_000_000 }), { nil: undefined })
    fc.assert(
      fc.property(count, count, count, count, (input, output, cached, reasoning) => {
        const u = usage(input, output, cached, reasoning)
        const mapped = AiSdkModel.toUsage(u)
        assert.strictEqual(mapped.inputTokens, input)
        assert.strictEqual(mapped.outputTokens, output)
        assert.strictEqual(mapped.cachedInputTokens, cached)
        assert.strictEqual(mapped.reasoningTokens, reasoning)
        assert.deepStrictEqual(
          Object.keys(mapped).length,
          [input, output, cached, reasoning].filter((n) => n !== undefined).length
        )
        const control = AiSdkModel.toUsage({ ...u, inputTokens: { ...u.inputTokens, total: u.inputTokens.noCache } })
        if (input !== undefined && cached !== undefined && cached > 0)
          assert.notStrictEqual(control.inputTokens, mapped.inputTokens)
      })
    )
  })

  it("every unified finish reason maps to Tessera's; interrupted becomes other", () => {
    const table: ReadonlyArray<[LanguageModelV4FinishReason["unified"], Model.FinishReason]> = [
      ["stop", "stop"],
      ["length", "length"],
      ["content-filter", "content-filter"],
      ["tool-calls", "tool-calls"],
      ["error", "error"],
      ["interrupted", "other"],
      ["other", "other"]
    ]
    for (const [unified, expected] of table) {
      assert.strictEqual(AiSdkModel.toFinishReason({ unified, raw: undefined }), expected)
      assert.isTrue(Schema.is(Model.FinishReason)(expected))
    }
  })

  it.effect(
    "generate maps text, reasoning, tool calls, usage, finish reason and provider metadata; provider-executed calls are left out",
    () =>
      Effect.gen(function* () {
        const mock = new MockLanguageModelV4({
          doGenerate: generated(
            [
              { type: "reasoning", text: "why" },
              { type: "text", text: "an " },
              { type: "tool-call", toolCallId: "c1", toolName: "produce", input: '{"size":1}' },
              { type: "tool-call", toolCallId: "s1", toolName: "search", input: "{}", providerExecuted: true },
              { type: "text", text: "answer" }
            ],
            {
              usage: usage(50, 9, 40, 3),
              finishReason: { unified: "tool-calls", raw: "tool_calls" },
              providerMetadata: { openai: { id: "x" } }
            }
          )
        })
        const response = yield* AiSdkModel.make(mock, noRetry).generate(request())
        assert.deepStrictEqual(response, {
          text: "an answer",
          toolCalls: [Model.toolCall("c1", "produce", { size: 1 })],
          reasoning: "why",
          usage: { inputTokens: 50, outputTokens: 9, cachedInputTokens: 40, reasoningTokens: 3 },
          finishReason: "tool-calls",
          providerMetadata: { openai: { id: "x" } }
        })
      })
  )
})

describe("AiSdkModel: requests", () => {
  const volume = Schema.decodeUnknownSync(Ids.VolumeId)("researcher-private")
  const store = Schema.decodeUnknownSync(Ids.StoreId)("store-1")
  it.effect(
    "request_mapping: system messages stay system messages in order, tools become function tools, a media part reaches the provider as a file part carrying the very providerOptions object",
    () =>
      Effect.gen(function* () {
        const providerOptions = { anthropic: { cacheControl: { type: "ephemeral" } }, unknownVendor: { x: 1 } }
        const media: Model.MediaPart = {
          _tag: "Media",
          role: "user",
          mediaType: "image/png",
          data: { _tag: "Base64", base64: "iVBORw0KGgo=" },
          providerOptions
        }
        const parts: ReadonlyArray<Model.Part> = [
          Model.text("system", "Be brief."),
          Model.fileReference({
            role: "user",
            volume: { store, volume },
            path: "summaries/t1/s1.md",
            mediaType: "text/markdown"
          }),
          Model.text("user", "Look at this:"),
          media,
          Model.text("assistant", "Calling."),
          Model.toolCall("c1", "produce", { size: 2 }),
          Model.toolResult({ callId: "c1", name: "produce", content: "xx", isError: false }),
          Model.toolResult({ callId: "c2", name: "produce", content: "failed", isError: true })
        ]
        const mock = new MockLanguageModelV4({ doGenerate: generated([{ type: "text", text: "ok" }]) })
        yield* AiSdkModel.make(mock, noRetry).generate({
          parts,
          tools: [{ name: "produce", description: "makes", inputSchema: { type: "object" } }]
        })
        const sent = mock.doGenerateCalls[0] as LanguageModelV4CallOptions
        assert.deepStrictEqual(
          sent.prompt.map((message) => message.role),
          ["system", "user", "assistant", "tool"]
        )
        assert.deepStrictEqual(sent.tools, [
          { type: "function", name: "produce", description: "makes", inputSchema: { type: "object" } }
        ])
        const user = sent.prompt[1]
        assert(user?.role === "user")
        assert.include(JSON.stringify(user.content[0]), "summaries/t1/s1.md")
        const file = user.content[2]
        assert(file?.type === "file")
        assert.strictEqual(file.providerOptions, providerOptions, "the harness's own object, not a copy")
        assert.deepStrictEqual(file.data, { type: "data", data: "iVBORw0KGgo=" })
        const tool = sent.prompt[3]
        assert(tool?.role === "tool")
        assert.deepStrictEqual(
          tool.content.map((part) => (part.type === "tool-result" ? part.output.type : part.type)),
          ["text", "error-text"]
        )
        // Control: a copy of the options (what a decode/encode round trip gives) is not the same object.
        assert.notStrictEqual(structuredClone(providerOptions), file.providerOptions)
      })
  )

  it("property: toPrompt keeps every part once and in order, system texts as system messages, tool results in tool messages, and never puts two messages of one role side by side; one message per part (control) does", () => {
    const part = fc.oneof(
      fc
        .record({ role: fc.constantFrom("system", "user", "assistant" as const), text: fc.string() })
        .map(({ role, text }) => Model.text(role, text)),
      fc.uuid().map((id) => Model.toolCall(id, "tool", { id })),
      fc
        .record({ id: fc.uuid(), isError: fc.boolean() })
        .map(({ id, isError }) => Model.toolResult({ callId: id, name: "tool", content: `result ${id}`, isError })),
      fc.constantFrom("user", "assistant" as const).map(
        (role): Model.MediaPart => ({
          _tag: "Media",
          role,
          mediaType: "image/png",
          data: { _tag: "Url", url: "https://example.com/a.png" },
          providerOptions: { vendor: { x: 1 } }
        })
      )
    )
    type Made = string | Exclude<LanguageModelV4Message["content"], string>[number]
    /** The prompt's contents, flattened: what each part became, in order. */
    const flatten = (prompt: ReturnType<typeof AiSdkModel.toPrompt>): Array<Made> =>
      prompt.flatMap((message): Array<Made> => (message.role === "system" ? [message.content] : message.content))
    const adjacentSameRole = (prompt: ReturnType<typeof AiSdkModel.toPrompt>) =>
      prompt.some(
        (message, index) => index > 0 && message.role !== "system" && prompt[index - 1]?.role === message.role
      )
    fc.assert(
      fc.property(fc.array(part, { maxLength: 20 }), (parts) => {
        const prompt = AiSdkModel.toPrompt(parts)
        const flat = flatten(prompt)
        assert.strictEqual(flat.length, parts.length)
        parts.forEach((source, index) => {
          const made = flat[index]
          switch (source._tag) {
            case "Text":
              if (source.role === "system") assert.strictEqual(made, source.text)
              else assert.deepStrictEqual(made, { type: "text", text: source.text })
              break
            case "ToolCall":
              assert(typeof made === "object" && made.type === "tool-call" && made.toolCallId === source.id)
              break
            case "ToolResult":
              assert(typeof made === "object" && made.type === "tool-result" && made.toolCallId === source.callId)
              break
            case "Media":
              assert(typeof made === "object" && made?.type === "file")
              assert.strictEqual(made.providerOptions, source.providerOptions)
          }
        })
        for (const message of prompt) {
          if (message.role === "tool") assert.isTrue(message.content.every((item) => item.type === "tool-result"))
          if (message.role === "user") {
            assert.isTrue(message.content.every((item) => ["text", "file"].includes(item.type as string)))
          }
        }
        assert.isFalse(adjacentSameRole(prompt))
      })
    )
    // Control: one message per part puts two user messages side by side.
    const perPart = [Model.text("user", "a"), Model.text("user", "b")].flatMap((one) => AiSdkModel.toPrompt([one]))
    assert.isTrue(adjacentSameRole(perPart))
  })

  it.effect("callOptions reach every call; the adapter sets prompt, tools and the abort signal", () =>
    Effect.gen(function* () {
      const mock = new MockLanguageModelV4({ doGenerate: generated([{ type: "text", text: "ok" }]) })
      yield* AiSdkModel.make(mock, { ...noRetry, callOptions: { temperature: 0.2, maxOutputTokens: 64 } }).generate(
        request()
      )
      const sent = mock.doGenerateCalls[0] as LanguageModelV4CallOptions
      assert.strictEqual(sent.temperature, 0.2)
      assert.strictEqual(sent.maxOutputTokens, 64)
      assert.instanceOf(sent.abortSignal, AbortSignal)
    })
  )
})

describe("AiSdkModel: errors and retries", () => {
  it("property: an API error is retryable exactly for 408, 409, 429 and 5xx or when the AI SDK says so; its detail names the status, never the request body", () => {
    fc.assert(
      fc.property(fc.integer({ min: 400, max: 599 }), fc.boolean(), (status, sdkSays) => {
        const failure = AiSdkModel.classify(apiError(status, {}, sdkSays))
        const expected = sdkSays || status === 408 || status === 409 || status === 429 || status >= 500
        assert.strictEqual(failure.error.retryable, expected)
        assert.strictEqual(failure.error.reason, "ProviderFailure")
        assert.strictEqual(failure.status, status)
        assert.include(failure.error.detail, `HTTP ${status}`)
        assert.notInclude(failure.error.detail, "the secret request text")
      })
    )
    // Control: the request body is on the AI SDK's error, so a detail built from it would carry it.
    assert.include(JSON.stringify(apiError(400).requestBodyValues), "the secret request text")
  })

  it("network failures are retryable; other errors (a missing key, a bad prompt) are not", () => {
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" })
    assert.isTrue(AiSdkModel.classify(reset).error.retryable)
    assert.isTrue(
      AiSdkModel.classify(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } })).error.retryable
    )
    assert.isFalse(AiSdkModel.classify(new Error("API key is missing")).error.retryable)
    assert.isFalse(AiSdkModel.classify("weird").error.retryable)
  })

  it("retry-after-ms wins over Retry-After; Retry-After takes seconds or an HTTP date; nonsense is ignored", () => {
    const now = Date.parse("2026-12-01T08:00:00Z")
    const ms = (headers: Record<string, string>) => Option.map(AiSdkModel.retryAfter(headers, now), Duration.toMillis)
    assert.deepStrictEqual(ms({ "retry-after-ms": "250", "retry-after": "9" }), Option.some(250))
    assert.deepStrictEqual(ms({ "Retry-After": "2" }), Option.some(2000))
    assert.deepStrictEqual(ms({ "retry-after": "Tue, 01 Dec 2026 08:00:03 GMT" }), Option.some(3000))
    assert.deepStrictEqual(ms({ "retry-after": "soon" }), Option.none())
    assert.deepStrictEqual(ms({ "retry-after-ms": "-5" }), Option.none())
    assert.deepStrictEqual(ms({}), Option.none())
  })

  const flaky = (failures: ReadonlyArray<APICallError>) => {
    const mock = new MockLanguageModelV4({
      doGenerate: async () => {
        const failure = failures[mock.doGenerateCalls.length - 1]
        if (failure !== undefined) throw failure
        return generated([{ type: "text", text: "finally" }])
      }
    })
    return mock
  }

  it.effect(
    "retryable failures are retried on the schedule until success; a non-retryable one is not retried and keeps retryable=false",
    () =>
      Effect.gen(function* () {
        const mock = flaky([apiError(503), apiError(429)])
        const response = yield* AiSdkModel.make(mock, { retry: Schedule.recurs(3) }).generate(request())
        assert.strictEqual(response.text, "finally")
        assert.strictEqual(mock.doGenerateCalls.length, 3)

        const rejected = flaky([apiError(400), apiError(400)])
        const error = yield* Effect.flip(AiSdkModel.make(rejected, { retry: Schedule.recurs(3) }).generate(request()))
        assert.strictEqual(rejected.doGenerateCalls.length, 1)
        assert.isFalse(error.retryable)

        // Control: a schedule of no retries gives the first failure back.
        const once = flaky([apiError(503)])
        const first = yield* Effect.flip(AiSdkModel.make(once, noRetry).generate(request()))
        assert.strictEqual(once.doGenerateCalls.length, 1)
        assert.isTrue(first.retryable)
      })
  )

  it.effect(
    "retry_after_honoured: a 429 asking for 5 s is retried no earlier than 5 s, although the schedule says 10 ms; without the header (control) it is retried at 10 ms",
    () =>
      Effect.gen(function* () {
        const run = (headers: Record<string, string>) =>
          Effect.gen(function* () {
            const mock = flaky([apiError(429, headers)])
            const fiber = yield* Effect.forkChild(
              AiSdkModel.make(mock, { retry: Schedule.spaced("10 millis").pipe(Schedule.upTo({ times: 3 })) }).generate(
                request()
              )
            )
            yield* TestClock.adjust("10 millis")
            const at10ms = mock.doGenerateCalls.length
            yield* TestClock.adjust("4980 millis")
            const before5s = mock.doGenerateCalls.length
            yield* TestClock.adjust("10 millis")
            const response = yield* Fiber.join(fiber)
            return { at10ms, before5s, after: mock.doGenerateCalls.length, text: response.text }
          })
        assert.deepStrictEqual(yield* run({ "retry-after": "5" }), {
          at10ms: 1,
          before5s: 1,
          after: 2,
          text: "finally"
        })
        assert.deepStrictEqual(yield* run({ "retry-after-ms": "5000" }), {
          at10ms: 1,
          before5s: 1,
          after: 2,
          text: "finally"
        })
        const control = yield* run({})
        assert.strictEqual(control.at10ms, 2, "control: without a stated delay the schedule's 10 ms apply")
      })
  )

  it.effect("a server asking to wait longer than maxRetryAfter is not retried; the caller gets a retryable error", () =>
    Effect.gen(function* () {
      const mock = flaky([apiError(429, { "retry-after": "3600" })])
      const error = yield* Effect.flip(
        AiSdkModel.make(mock, { retry: Schedule.recurs(3), maxRetryAfter: "60 seconds" }).generate(request())
      )
      assert.strictEqual(mock.doGenerateCalls.length, 1)
      assert.isTrue(error.retryable)
    })
  )
})

describe("AiSdkModel: timeouts and aborts", () => {
  /** A provider that answers only when aborted (then it rejects, as fetch does), recording the signals it got. */
  const hanging = () => {
    const signals: Array<AbortSignal> = []
    const wait = (options: LanguageModelV4CallOptions) =>
      new Promise<never>((_, reject) => {
        const signal = options.abortSignal as AbortSignal
        signals.push(signal)
        signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")))
      })
    const mock = new MockLanguageModelV4({ doGenerate: wait, doStream: wait })
    return { mock, signals }
  }

  it.live(
    "request_timeout: a request outliving its timeout is aborted and fails Timeout, each attempt timed on its own",
    () =>
      Effect.gen(function* () {
        const { mock, signals } = hanging()
        const error = yield* Effect.flip(
          AiSdkModel.make(mock, {
            timeout: "50 millis",
            retry: Schedule.spaced("1 millis").pipe(Schedule.upTo({ times: 1 }))
          }).generate(request())
        )
        assert.strictEqual(error.reason, "Timeout")
        assert.isTrue(error.retryable)
        assert.strictEqual(signals.length, 2, "the timed-out attempt was retried once")
        assert.isTrue(
          signals.every((signal) => signal.aborted),
          "every timed-out request was aborted"
        )

        const streamed = hanging()
        const streamError = yield* Effect.flip(
          collectEvents(AiSdkModel.make(streamed.mock, { ...noRetry, timeout: "50 millis" }))
        )
        assert.strictEqual(streamError.reason, "Timeout")
        assert.isTrue(streamed.signals[0]?.aborted)
      })
  )

  it.live("a stream that stalls after its first part is cut at the timeout", () =>
    Effect.gen(function* () {
      let signal: AbortSignal | undefined
      const mock = new MockLanguageModelV4({
        doStream: async (options) => {
          signal = options.abortSignal
          return {
            stream: new ReadableStream<LanguageModelV4StreamPart>({
              start: (controller) => controller.enqueue({ type: "text-delta", id: "t", delta: "a" })
            })
          }
        }
      })
      const started = Date.now()
      const error = yield* Effect.flip(collectEvents(AiSdkModel.make(mock, { ...noRetry, timeout: "80 millis" })))
      assert.strictEqual(error.reason, "Timeout")
      assert.isAtLeast(Date.now() - started, 70)
      assert.isTrue(signal?.aborted)
    })
  )

  it.live("abort_on_interrupt: interrupting a generate or a stream aborts the provider's request", () =>
    Effect.gen(function* () {
      for (const call of ["generate", "stream"] as const) {
        const { mock, signals } = hanging()
        const model = AiSdkModel.make(mock, noRetry)
        const fiber = yield* Effect.forkChild(call === "generate" ? model.generate(request()) : collectEvents(model))
        yield* Effect.sleep("20 millis")
        assert.strictEqual(signals.length, 1)
        assert.isFalse(signals[0]?.aborted)
        yield* Fiber.interrupt(fiber)
        assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(fiber)))
        assert.isTrue(signals[0]?.aborted, `${call}: the request's signal was aborted`)
      }
    })
  )
})
