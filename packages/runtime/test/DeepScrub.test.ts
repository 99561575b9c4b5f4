/**
 * The one scrub of what leaves Tessera (`TaskExecution.scrubThrown`), held to
 * its guarantees on hostile shapes: errors nested in errors, aggregates,
 * causes, plain objects, arrays, getters, cycles, bounds.
 */
import { assert, describe, it } from "@effect/vitest"
import { Model, TaskExecution } from "@tessera/runtime"
import { Effect } from "effect"
import * as fc from "fast-check"
import { everyText } from "./support/everyText.ts"

const secret = "sk-SECRET-0123456789"
const scrub = (text: string) => Effect.succeed(text.split(secret).join("[REDACTED]"))
const scrubbed = (value: unknown, bounds?: Partial<TaskExecution.ScrubBounds>): unknown =>
  Effect.runSync(TaskExecution.scrubThrown(value, scrub, bounds))

const holds = (value: unknown, text: string): boolean => everyText(value).some((found) => found.includes(text))

/** A provider's error class with data of its own. */
class ProviderError extends Error {
  readonly status: number
  readonly retryable: boolean
  constructor(message: string, status: number, retryable: boolean, options?: ErrorOptions) {
    super(message, options)
    this.status = status
    this.retryable = retryable
  }
}

/** A tagged error as Effect code writes them. */
class Tagged extends Error {
  readonly _tag = "Tagged"
}

/** The shape of a value to build: every way a thrown value nests text. */
type Shape =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "number"; readonly value: number }
  | { readonly kind: "boolean"; readonly value: boolean }
  | { readonly kind: "null" }
  | { readonly kind: "error"; readonly message: string; readonly cause?: Shape; readonly tagged: boolean }
  | { readonly kind: "aggregate"; readonly errors: ReadonlyArray<Shape>; readonly message: string }
  | { readonly kind: "object"; readonly entries: ReadonlyArray<readonly [string, Shape]> }
  | { readonly kind: "array"; readonly items: ReadonlyArray<Shape> }
  | { readonly kind: "getter"; readonly inner: Shape }
  | { readonly kind: "throwingGetter" }
  | { readonly kind: "cycle"; readonly up: number }

const shapes = fc.letrec<{ shape: Shape }>((tie) => ({
  shape: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.string({ maxLength: 8 }).map((text): Shape => ({ kind: "text", text })),
    fc.integer().map((value): Shape => ({ kind: "number", value })),
    fc.boolean().map((value): Shape => ({ kind: "boolean", value })),
    fc.constant<Shape>({ kind: "null" }),
    fc
      .record({
        message: fc.string({ maxLength: 8 }),
        cause: fc.option(tie("shape"), { nil: undefined }),
        tagged: fc.boolean()
      })
      .map(
        ({ cause, message, tagged }): Shape => ({
          kind: "error",
          message,
          tagged,
          ...(cause === undefined ? {} : { cause })
        })
      ),
    fc
      .record({ errors: fc.array(tie("shape"), { maxLength: 3 }), message: fc.string({ maxLength: 8 }) })
      .map(({ errors, message }): Shape => ({ kind: "aggregate", errors, message })),
    fc
      .uniqueArray(fc.tuple(fc.string({ maxLength: 6 }), tie("shape")), { maxLength: 3, selector: ([key]) => key })
      .map((entries): Shape => ({ kind: "object", entries })),
    fc.array(tie("shape"), { maxLength: 3 }).map((items): Shape => ({ kind: "array", items })),
    tie("shape").map((inner): Shape => ({ kind: "getter", inner })),
    fc.constant<Shape>({ kind: "throwingGetter" }),
    fc.nat({ max: 4 }).map((up): Shape => ({ kind: "cycle", up }))
  )
})).shape

/** How many text places `shape` has (object keys included): where the secret can be planted. */
const places = (shape: Shape): number => {
  switch (shape.kind) {
    case "text":
      return 1
    case "error":
      return 1 + (shape.cause === undefined ? 0 : places(shape.cause))
    case "aggregate":
      return 1 + shape.errors.reduce((total, error) => total + places(error), 0)
    case "object":
      return shape.entries.reduce((total, [, inner]) => total + 1 + places(inner), 0)
    case "array":
      return shape.items.reduce((total, item) => total + places(item), 0)
    case "getter":
      return places(shape.inner)
    default:
      return 0
  }
}

/**
 * The value `shape` describes, under a root `ProviderError` whose message is
 * the first text place, with the secret planted in text place `plant` (a
 * throwing getter always throws it; a cycle points `up` levels back).
 */
const build = (shape: Shape, plant: number): ProviderError => {
  let place = 0
  const text = (content: string) => (place++ === plant ? `${content}${secret}${content}` : content)
  const ancestors: Array<object> = []
  const make = (node: Shape): unknown => {
    switch (node.kind) {
      case "text":
        return text(node.text)
      case "number":
      case "boolean":
        return node.value
      case "null":
        return null
      case "cycle":
        return ancestors.length === 0 ? 0 : ancestors[Math.max(0, ancestors.length - 1 - node.up)]
      case "throwingGetter": {
        const holder = {}
        Object.defineProperty(holder, "broken", {
          enumerable: true,
          get: () => {
            throw new Error(`getter failed on ${secret}`)
          }
        })
        return holder
      }
      case "error": {
        const error = node.tagged ? new Tagged("") : new Error("")
        ancestors.push(error)
        error.message = text(node.message)
        if (node.cause !== undefined) error.cause = make(node.cause)
        ancestors.pop()
        return error
      }
      case "aggregate": {
        const error = new AggregateError([], "")
        ancestors.push(error)
        error.message = text(node.message)
        error.errors = node.errors.map(make)
        ancestors.pop()
        return error
      }
      case "object": {
        const object: Record<string, unknown> = {}
        ancestors.push(object)
        for (const [key, inner] of node.entries) object[text(key)] = make(inner)
        ancestors.pop()
        return object
      }
      case "array": {
        const array: Array<unknown> = []
        ancestors.push(array)
        for (const item of node.items) array.push(make(item))
        ancestors.pop()
        return array
      }
      case "getter": {
        const holder = {}
        ancestors.push(holder)
        const inner = make(node.inner)
        ancestors.pop()
        Object.defineProperty(holder, "value", { enumerable: true, get: () => inner })
        return holder
      }
    }
  }
  const root = new ProviderError(text("provider said "), 429, true)
  ancestors.push(root)
  root.cause = make(shape)
  return root
}

const planted = fc.tuple(shapes, fc.nat()).map(([shape, at]) => ({ shape, plant: at % (1 + places(shape)) }))

/** The scrub as it was before it went deep (kept verbatim for the negative controls). */
const isRecord = (value: unknown): value is object => typeof value === "object" && value !== null
const shallowScrubThrown = (
  error: unknown,
  scrub: (text: string) => Effect.Effect<string>,
  depth = 3
): Effect.Effect<unknown> =>
  Effect.suspend((): Effect.Effect<unknown> => {
    if (typeof error === "string") return scrub(error)
    if (!isRecord(error)) return Effect.succeed(error)
    if (depth <= 0) return Effect.succeed("[detail withheld: the redactor failed on it]")
    const proto: unknown = Object.getPrototypeOf(error)
    if (proto === Object.prototype || proto === null || Array.isArray(error)) {
      let json: string | undefined
      try {
        json = JSON.stringify(error)
      } catch {
        return Effect.succeed("[detail withheld: the redactor failed on it]")
      }
      if (json === undefined) return Effect.succeed(error)
      return Effect.map(scrub(json), (scrubbed) => {
        if (scrubbed === json) return error
        try {
          return JSON.parse(scrubbed) as unknown
        } catch {
          return scrubbed
        }
      })
    }
    const copy = Object.create(proto as object) as Record<PropertyKey, unknown>
    return Effect.as(
      Effect.forEach(
        Reflect.ownKeys(error),
        (key) => {
          const descriptor = Object.getOwnPropertyDescriptor(error, key)
          if (descriptor === undefined) return Effect.void
          if (!("value" in descriptor)) return Effect.sync(() => Object.defineProperty(copy, key, descriptor))
          return Effect.map(shallowScrubThrown(descriptor.value, scrub, depth - 1), (value) => {
            Object.defineProperty(copy, key, { ...descriptor, value })
          })
        },
        { discard: true }
      ),
      copy
    )
  })

/** The property both scrubs are held to: the secret is planted, and the copy holds it nowhere. */
const neverLeaks = (scrubThrown: (value: unknown) => unknown) =>
  fc.property(planted, ({ plant, shape }) => {
    const original = build(shape, plant)
    assert.isTrue(holds(original, secret), "the secret is planted where a caller can reach it")
    const copy = scrubThrown(original) as ProviderError
    assert.isFalse(holds(copy, secret), "no text of the copy holds the secret")
    assert.instanceOf(copy, ProviderError)
    assert.strictEqual(copy.status, 429)
    assert.isTrue(copy.retryable)
    assert.isTrue(holds(original, secret), "the original is unchanged")
  })

describe("the one scrub (TaskExecution.scrubThrown)", () => {
  it("deep_scrub_never_leaks: Error, AggregateError, cause, plain objects, arrays, getters and cycles nested any way, the secret planted anywhere: the copy holds it nowhere, keeps its class and data, terminates", () => {
    fc.assert(
      neverLeaks((value) => scrubbed(value)),
      { numRuns: 300 }
    )
  })

  it("negative control: the shallow scrub it replaced fails the same property", () => {
    const outcome = fc.check(
      neverLeaks((value) => Effect.runSync(shallowScrubThrown(value, scrub))),
      { numRuns: 300 }
    )
    assert.isTrue(outcome.failed, "the shallow scrub leaks for some nesting")
    assert.include(String(outcome.errorInstance), "no text of the copy holds the secret")
  })

  it("deep_scrub_doors: an AggregateError's errors, an Error inside a plain object or a cause, an own getter: scrubbed by the deep scrub, leaked by the shallow one", () => {
    const aggregate = new AggregateError([new Error(`first ${secret}`)], "two requests failed")
    const nested = { response: { error: new Error(`body ${secret}`) } }
    const caused = new Error("outer", { cause: { request: [new Error(`inner ${secret}`)] } })
    const getter = new Error("outer")
    Object.defineProperty(getter, "body", { enumerable: true, get: () => `lazy ${secret}` })
    for (const [name, value] of Object.entries({ aggregate, nested, caused, getter })) {
      assert.isTrue(holds(value, secret), name)
      assert.isTrue(holds(Effect.runSync(shallowScrubThrown(value, scrub)), secret), `the shallow scrub leaks: ${name}`)
      const copy = scrubbed(value)
      assert.isFalse(holds(copy, secret), `the deep scrub does not: ${name}`)
      assert.include(everyText(copy).join("\n"), "[REDACTED]", name)
    }
    const copy = scrubbed(getter) as Error & { body: string }
    const descriptor = Object.getOwnPropertyDescriptor(copy, "body")
    assert.isTrue(descriptor !== undefined && "value" in descriptor, "the getter became a data property")
    assert.strictEqual(copy.body, "lazy [REDACTED]")
  })

  it("deep_scrub_shapes_kept: a ModelError stays a ModelError (tag, reason, retryable, scrubbed detail and message); numbers, booleans, maps, sets, dates and shared objects keep their kind", () => {
    const error = new Model.ModelError({ reason: "ProviderFailure", detail: `key ${secret}`, retryable: true })
    const copy = scrubbed(error) as Model.ModelError
    assert.instanceOf(copy, Model.ModelError)
    assert.strictEqual(copy._tag, "ModelError")
    assert.strictEqual(copy.reason, "ProviderFailure")
    assert.isTrue(copy.retryable)
    assert.strictEqual(copy.detail, "key [REDACTED]")
    assert.strictEqual(copy.message, "model error (ProviderFailure): key [REDACTED]")
    assert.isFalse(holds(copy, secret))
    assert.include(error.detail, secret, "the original is unchanged")

    const shared = { note: secret }
    const value = {
      count: 3,
      ok: false,
      big: 10n,
      at: new Date(0),
      headers: new Map([[`x-${secret}`, secret]]),
      tags: new Set([secret, "plain"]),
      first: shared,
      second: shared
    }
    const out = scrubbed(value) as typeof value
    assert.strictEqual(out.count, 3)
    assert.isFalse(out.ok)
    assert.strictEqual(out.big, 10n)
    assert.instanceOf(out.at, Date)
    assert.strictEqual(out.at.getTime(), 0)
    assert.instanceOf(out.headers, Map)
    assert.deepStrictEqual([...out.headers], [["x-[REDACTED]", "[REDACTED]"]])
    assert.deepStrictEqual([...out.tags], ["[REDACTED]", "plain"])
    assert.strictEqual(out.first, out.second, "a shared object stays shared")
    assert.isFalse(holds(out, secret))
  })

  it("deep_scrub_bounded: an endless getter chain, a huge array, a wide object, a throwing getter, a revoked proxy and binary data end as withheld text, never as the secret", () => {
    const endless = (): object => ({
      note: secret,
      get next() {
        return endless()
      }
    })
    const huge = Array.from({ length: 100_000 }, () => secret)
    const wide = Object.fromEntries(Array.from({ length: 50_000 }, (_, index) => [`k${index}`, secret]))
    const throwing = {}
    Object.defineProperty(throwing, "body", {
      enumerable: true,
      get: () => {
        throw new Error(secret)
      }
    })
    const revocable = Proxy.revocable({ note: secret }, {})
    revocable.revoke()
    const binary = new TextEncoder().encode(secret)
    // A map whose entries add another entry each time one is read.
    const growing = new Map<number, unknown>()
    const grow = (key: number) => ({
      get note() {
        growing.set(key + 1, grow(key + 1))
        return secret
      }
    })
    growing.set(0, grow(0))
    const started = performance.now()
    const copy = scrubbed({
      endless: endless(),
      huge,
      wide,
      throwing,
      proxy: revocable.proxy,
      binary,
      growing
    }) as Record<string, unknown>
    assert.isBelow(performance.now() - started, 2_000, "the scrub stops at its bounds")
    assert.isFalse(holds(copy, secret))
    const all = everyText(copy).join("\n")
    assert.include(all, "beyond the scrub's bound", "past the depth and size bounds")
    assert.strictEqual(copy.huge, "[withheld: beyond the scrub's bound]")
    assert.strictEqual(copy.wide, "[withheld: beyond the scrub's bound]")
    assert.strictEqual((copy.throwing as { body: unknown }).body, "[withheld: could not be read]")
    assert.strictEqual(copy.proxy, "[withheld: could not be read]")
    assert.strictEqual(copy.binary, "[withheld: binary data]")
    assert.strictEqual((copy.growing as Map<number, unknown>).size, 1, "only the entries there when it was reached")
  })

  it("deep_scrub_bounds_configurable: a tighter depth withholds what lies deeper", () => {
    const deep = { a: { b: { c: { d: "kept only within depth" } } } }
    const shallow = scrubbed(deep, { depth: 2 }) as { a: { b: { c: unknown } } }
    assert.strictEqual(shallow.a.b.c, "[withheld: beyond the scrub's bound]")
    const whole = scrubbed(deep) as typeof deep
    assert.strictEqual(whole.a.b.c.d, "kept only within depth")
  })
})
