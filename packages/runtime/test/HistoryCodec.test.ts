import { assert, describe, it } from "@effect/vitest"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as Transcript from "@tessera/runtime/Transcript"
import { Effect, Schema } from "effect"
import * as fc from "fast-check"

const identifier = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,12}$/)
const role = fc.constantFrom<Model.Role>("system", "user", "assistant")
const text = fc.string({ unit: "grapheme", maxLength: 40 })
// JSON values as JSON holds them: JSON has no -0 (it reads back as 0), so a value is normalized through JSON once.
const json = (maxDepth: number) =>
  fc.jsonValue({ maxDepth }).map((value) => JSON.parse(JSON.stringify(value)) as Schema.Json)

const part: fc.Arbitrary<Model.Part> = fc.oneof(
  fc.record({ role, body: text }).map(({ body, role }) => Model.text(role, body)),
  fc
    .record({ id: text, name: identifier, input: json(3) })
    .map(({ id, input, name }) => Model.toolCall(id, name, input as Schema.Json)),
  fc
    .record({ callId: text, name: identifier, content: text, isError: fc.boolean() })
    .map((fields) => Model.toolResult(fields)),
  fc.record({ role, store: identifier, volume: identifier, path: text, mediaType: text }).map((fields) =>
    Model.fileReference({
      role: fields.role,
      volume: Schema.decodeUnknownSync(Schema.Struct({ store: Schema.String, volume: Schema.String }))({
        store: fields.store,
        volume: fields.volume
      }) as Model.FileReferencePart["volume"],
      path: fields.path,
      mediaType: fields.mediaType
    })
  ),
  fc
    .record({
      role,
      mediaType: text,
      data: fc.oneof(
        fc.base64String({ maxLength: 24 }).map((base64) => ({ _tag: "Base64" as const, base64 })),
        fc.webUrl().map((url) => ({ _tag: "Url" as const, url }))
      ),
      providerOptions: fc.dictionary(identifier, json(2), { maxKeys: 3 })
    })
    .map((fields) => ({ _tag: "Media" as const, ...fields }))
)

const history: fc.Arbitrary<History.History> = fc
  .record({
    task: fc.array(part, { maxLength: 3 }),
    parts: fc.array(part, { maxLength: 8 }),
    summary: fc.option(fc.record({ parts: fc.array(part, { maxLength: 2 }), text }), { nil: undefined })
  })
  .map(({ parts, summary, task }) => (summary === undefined ? { task, parts } : { task, parts, summary }))

describe("History codec", () => {
  it("history_codec_round_trip: any history exported and imported is equal, and its requests are byte-identical", async () => {
    await fc.assert(
      fc.asyncProperty(history, async (original) => {
        const json = await Effect.runPromise(History.toJson(original))
        const imported = await Effect.runPromise(History.fromJson(json))
        assert.deepStrictEqual(imported, original)
        // Byte identity of what a request is built from: same fields in the same order.
        assert.strictEqual(JSON.stringify(History.toParts(imported)), JSON.stringify(History.toParts(original)))
      }),
      { numRuns: 200 }
    )
  })

  it("a text that is not an exported history is refused as InvalidInput naming json", async () => {
    for (const bad of ["", "{", '{"task":[],"parts":[{"_tag":"Nope"}]}', '{"task":[]}']) {
      const error = await Effect.runPromise(Effect.flip(History.fromJson(bad)))
      assert.strictEqual(error._tag, "InvalidInput")
      assert.strictEqual(error.field, "json")
      assert.strictEqual(error.entry, "History.fromJson")
    }
  })

  it("negative control: a codec that drops the summary does not round-trip (the property can fail)", async () => {
    const withSummary: History.History = {
      task: [Model.text("user", "the task")],
      parts: [],
      summary: { parts: [Model.text("user", "summary")], text: "summary" }
    }
    const lossy = Schema.fromJsonString(
      Schema.Struct({ task: History.HistorySchema.fields.task, parts: History.HistorySchema.fields.parts })
    )
    const json = Schema.encodeSync(lossy)(withSummary)
    const imported = await Effect.runPromise(History.fromJson(json))
    assert.notDeepEqual(imported, withSummary)
  })
})

describe("transcript record codec", () => {
  const record: fc.Arbitrary<Transcript.TranscriptRecord> = fc.oneof(
    history.map((value) => ({
      _tag: "Opened" as const,
      history:
        value.summary === undefined
          ? { task: value.task, parts: value.parts }
          : {
              task: value.task,
              parts: value.parts,
              summary: { _tag: "SummaryInline" as const, parts: value.summary.parts, text: value.summary.text }
            },
      redacted: false
    })),
    fc
      .record({ text, calls: fc.array(part, { maxLength: 3 }), redacted: fc.boolean() })
      .map(({ calls, redacted, text }) => ({
        _tag: "Responded" as const,
        text,
        toolCalls: calls.filter((value): value is Model.ToolCallPart => value._tag === "ToolCall"),
        redacted
      })),
    fc
      .record({ drop: fc.nat({ max: 50 }), redacted: fc.boolean() })
      .map(({ drop, redacted }) => ({ _tag: "Rewritten" as const, drop, redacted }))
  )

  it("transcript_record_round_trip: any record written as JSON reads back equal (what a resume rebuilds from)", () => {
    fc.assert(
      fc.property(record, (original) => {
        const json = Schema.encodeSync(Transcript.TranscriptRecordJson)(original)
        assert.deepStrictEqual(Schema.decodeUnknownSync(Transcript.TranscriptRecordJson)(json), original)
      }),
      { numRuns: 200 }
    )
  })
})
