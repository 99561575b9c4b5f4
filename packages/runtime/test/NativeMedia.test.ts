import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@tessera/core"
import * as Executor from "@tessera/runtime/Executor"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import * as Model from "@tessera/runtime/Model"
import * as Tool from "@tessera/runtime/Tool"
import { Effect, FileSystem, Layer, Schema, Stream } from "effect"

const task = Schema.decodeUnknownSync(Ids.TaskId)("media-task")

/**
 * Native parts as a harness would build them for a provider, with options this library has never
 * heard of, including values JSON cannot carry (bytes, a date, an explicit undefined, a bigint).
 */
const makeMediaParts = (): ReadonlyArray<Model.MediaPart> => [
  {
    _tag: "Media",
    role: "user",
    mediaType: "image/png",
    data: {
      _tag: "Base64",
      base64: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    },
    providerOptions: {
      anthropic: { cacheControl: { type: "ephemeral" } },
      "x-vendor-unreleased": { detail: "high", crops: [{ x: 0, y: 0, w: 1, h: 1 }] },
      rawBytes: new Uint8Array([0, 1, 2, 255]),
      capturedAt: new Date(0),
      explicitlyUnset: undefined,
      budget: 12n
    }
  },
  {
    _tag: "Media",
    role: "user",
    mediaType: "application/pdf",
    data: { _tag: "Url", url: "https://example.invalid/report.pdf" },
    providerOptions: { openai: { fileId: "file-123" }, "unknown-key": null }
  }
]

/** The test adapter: records what reaches the provider boundary; asks for one tool step, then answers. */
const makeAdapter = (streaming: boolean) => {
  const received: Array<Model.ModelRequest> = []
  const answer = (request: Model.ModelRequest) =>
    Effect.sync(() => {
      received.push(request)
      return received.length === 1
        ? Model.response({ toolCalls: [Model.toolCall("c1", "look", { at: "picture" })] })
        : Model.response({ text: "a red pixel" })
    })
  const layer = streaming
    ? Model.layerFromStream((request) =>
        Stream.flatMap(Stream.fromEffect(answer(request)), (response) =>
          Stream.fromIterable(Model.responseEvents(response))
        )
      )
    : Model.layerFromGenerate(answer)
  return { layer, received }
}

const look = Tool.make({
  name: "look",
  description: "Looks",
  input: Schema.Struct({ at: Schema.String }),
  handler: ({ at }) => Effect.succeed(`looked at ${at}`)
})

/** Runs a stock turn whose task carries the media parts, with optional hooks. */
const runWithMedia = (hooks: Executor.Hooks, streaming = false) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
    const media = makeMediaParts()
    const expected = makeMediaParts()
    const adapter = makeAdapter(streaming)
    const history = History.make([Model.text("user", "What is in these?"), ...media])
    const observe = streaming ? { onEvent: () => Effect.void } : {}
    yield* Executor.runTurn({ tools: Tool.registry(look), maxSteps: 3, hooks, ...observe }, history).pipe(
      Effect.provide(Layer.merge(adapter.layer, Journal.layer({ folder, task })))
    )
    return { media, expected, received: adapter.received }
  })

/** What the guarantee asserts at the adapter for every request. */
const assertUnchanged = (
  media: ReadonlyArray<Model.MediaPart>,
  expected: ReadonlyArray<Model.MediaPart>,
  received: ReadonlyArray<Model.ModelRequest>
) => {
  assert.strictEqual(received.length, 2)
  for (const request of received) {
    const arrived = request.parts.filter((part) => part._tag === "Media")
    assert.deepStrictEqual(arrived, expected, "same contents, unknown provider options included")
    arrived.forEach((part, index) => {
      assert.strictEqual(part, media[index], "the very part the harness built")
      assert.strictEqual(part.providerOptions, media[index]?.providerOptions)
    })
  }
}

describe("native media boundary", () => {
  it.effect("media parts and their original provider options reach the adapter without conversion, on every step", () =>
    Effect.gen(function* () {
      const { expected, media, received } = yield* runWithMedia({})
      assertUnchanged(media, expected, received)
      // Nothing downstream mutated the caller's objects either.
      assert.deepStrictEqual(media, expected)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("a streamed turn hands a streaming adapter the same unconverted media parts", () =>
    Effect.gen(function* () {
      const { expected, media, received } = yield* runWithMedia({}, true)
      assertUnchanged(media, expected, received)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect("negative control: a pipeline that converts parts (JSON round trip) is caught by the same assertion", () =>
    Effect.gen(function* () {
      const converting: Executor.Hooks = {
        beforeModelStep: (_context, history) =>
          Effect.succeed({
            task: history.task.map((part) =>
              part._tag === "Media"
                ? (JSON.parse(
                    JSON.stringify(part, (_key, value: unknown) => (typeof value === "bigint" ? Number(value) : value))
                  ) as Model.Part)
                : part
            ),
            parts: history.parts
          })
      }
      const { expected, media, received } = yield* runWithMedia(converting)
      assert.throws(() => assertUnchanged(media, expected, received))
    }).pipe(Effect.provide(NodeServices.layer))
  )
})
