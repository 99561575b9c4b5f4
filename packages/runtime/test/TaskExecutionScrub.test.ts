import { assert, describe, it } from "@effect/vitest"
import { TaskExecution } from "@tessera/runtime"
import { Effect } from "effect"
import * as fc from "fast-check"

const secret = "sk-SECRET-0123456789"
const scrub = (text: string) => Effect.succeed(text.split(secret).join("[REDACTED]"))

/** Any JSON value with the secret planted in some of its strings. */
const planted = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.string().map((text) => `${text}${secret}${text}`),
    fc.string(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie("value"), { maxKeys: 4 })
  )
})).value

class ProviderError extends Error {
  readonly body: unknown
  readonly retryable: boolean
  constructor(message: string, body: unknown, retryable: boolean) {
    super(message)
    this.body = body
    this.retryable = retryable
  }
}

describe("TaskExecution.scrubThrown", () => {
  it("foreign_loop_scrub_thrown: no text of a thrown value keeps the secret, its class and flags stay, the original is untouched", async () => {
    await fc.assert(
      fc.asyncProperty(planted, fc.string(), fc.boolean(), async (body, prefix, retryable) => {
        const original = new ProviderError(`${prefix} key ${secret}`, body, retryable)
        original.cause = new Error(`inner ${secret}`)
        const before = JSON.stringify(original.body)
        const copy = (await Effect.runPromise(TaskExecution.scrubThrown(original, scrub))) as ProviderError
        assert.instanceOf(copy, ProviderError)
        assert.strictEqual(copy.retryable, retryable)
        assert.notInclude(copy.message, secret)
        assert.notInclude(copy.stack ?? "", secret)
        assert.notInclude(JSON.stringify(copy.body) ?? "", secret)
        assert.notInclude(String((copy.cause as Error).message), secret)
        assert.include(original.message, secret, "the original is not changed")
        assert.strictEqual(JSON.stringify(original.body), before)
      }),
      { numRuns: 200 }
    )
  })

  it("negative control: a shallow copy (message only) leaves the secret in the body and the cause", async () => {
    const original = new ProviderError(`key ${secret}`, { detail: `body ${secret}` }, false)
    original.cause = new Error(`inner ${secret}`)
    const shallow = Object.assign(Object.create(ProviderError.prototype) as ProviderError, original, {
      message: await Effect.runPromise(scrub(original.message))
    })
    assert.notInclude(shallow.message, secret)
    assert.include(JSON.stringify(shallow.body), secret)
  })
})
