/**
 * Native media parts as a harness builds them, with provider options JSON
 * cannot carry (bytes, a bigint): the reference scenario's tests check that
 * these very objects reach the adapter, unconverted.
 */
import { assert } from "@effect/vitest"
import type { Model } from "@tessera/runtime"

/**
 * A fresh pair of media parts (an inline image, a PDF by URL), new objects on every call. `durable`: without the
 * bigint, which a durable turn's transcript (JSON) refuses loudly (`TranscriptError`).
 */
export const mediaParts = (options: { readonly durable?: boolean } = {}): ReadonlyArray<Model.MediaPart> => [
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
      rawBytes: new Uint8Array([0, 255]),
      ...(options.durable === true ? {} : { budget: 12n })
    }
  },
  {
    _tag: "Media",
    role: "user",
    mediaType: "application/pdf",
    data: { _tag: "Url", url: "https://example.invalid/report.pdf" },
    providerOptions: { openai: { fileId: "file-123" } }
  }
]

/** Every request holds the very media parts the harness built, in order (identity, not equality). */
export const assertMediaUnconverted = (
  media: ReadonlyArray<Model.MediaPart>,
  received: ReadonlyArray<Model.ModelRequest>
) => {
  for (const request of received) {
    const arrived = request.parts.filter((part) => part._tag === "Media")
    assert.strictEqual(arrived.length, media.length)
    for (const [index, part] of arrived.entries()) assert.strictEqual(part, media[index], "the very part built")
  }
}
