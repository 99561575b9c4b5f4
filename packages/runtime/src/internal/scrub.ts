/**
 * The one scrub for what leaves Tessera carrying provider or tool text: an
 * error handed back to a caller, a value thrown into another framework, the
 * detail a journal records. Everything goes through the host's
 * `ArtifactRedactor` (when one is provided), deeply.
 *
 * A copy is made in three passes, so that a hostile value costs a bounded
 * amount of work and no text escapes the redactor:
 *
 * 1. a synchronous walk reads the value once (own data properties, own
 *    accessors called once, `AggregateError.errors`, `cause`, arrays, maps,
 *    sets; cycles and shared objects visited once) into a plan, within the
 *    depth, node and character bounds; what lies beyond them, and what
 *    cannot be read (a getter or a proxy trap that throws), becomes
 *    withheld text;
 * 2. every distinct text (values, and the keys of plain objects, which may
 *    be provider data) goes through the redactor once; a key it fails on
 *    drops its property (the key may be the secret);
 * 3. the plan is built into the copy: each object with its own prototype
 *    (so `instanceof` and marker symbols hold), every accessor a data
 *    property holding what it returned, scrubbed.
 *
 * Numbers, booleans, bigints, symbols, `null`, `undefined` and functions
 * (code, not data) are kept; a string `_tag` is kept verbatim (it is the
 * discriminator code wrote, and a tagged error must stay one), and so is a
 * `ModelError`'s `reason` (a literal its schema checked, which callers
 * match on even when the redactor fails). Binary data
 * (an `ArrayBuffer` or a view of one) cannot be scrubbed as text and is
 * withheld. The original is never changed.
 */
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ModelError } from "../Model.ts"

/**
 * How much of a value the scrub reads: objects nested at most `depth` deep
 * (the value itself is at depth 0), at most `nodes` objects and members
 * (properties, elements, entries) in all, at most `chars` UTF-16 code units
 * of distinct text (plain objects' keys included).
 */
export interface ScrubBounds {
  readonly depth: number
  readonly nodes: number
  readonly chars: number
}

/**
 * Room for a provider error with its request body, cause chain and
 * aggregated errors; a value larger than that is hostile or not worth the
 * redactor's time, and what lies past the bound is withheld.
 */
export const defaultBounds: ScrubBounds = { depth: 32, nodes: 20_000, chars: 8_000_000 }

/** A text the redactor failed on. */
export const redactorFailedText = "[detail withheld: the redactor failed on it]"
/** What replaces a part of a value past the scrub's bounds. */
export const beyondBoundText = "[withheld: beyond the scrub's bound]"
/** What replaces a part of a value that could not be read (a getter or a proxy that throws). */
export const unreadableText = "[withheld: could not be read]"
/** What replaces binary data. */
export const binaryText = "[withheld: binary data]"

/** A text scrubber that never fails. */
export type TextScrub = (text: string) => Effect.Effect<string>

/** `redactor`'s scrub of one text: a failure withholds the text. */
export const redactWith =
  (redactor: ArtifactRedactor.ArtifactRedactorShape): TextScrub =>
  (text) =>
    redactor.redact(text).pipe(Effect.orElseSucceed(() => redactorFailedText))

/** The host's redactor in context as a text scrub, or none when the host provided no redactor. */
export const hostScrub: Effect.Effect<Option.Option<TextScrub>> = Effect.map(
  ArtifactRedactor.provided,
  Option.map(redactWith)
)

/**
 * The host's redactor, captured for code that runs later outside the
 * context it was in (a foreign loop's members): `scrub`, its text scrub
 * (none without a redactor), and `provide`, which puts the same redactor
 * around an effect (the effect as it is without one).
 */
export interface CapturedRedactor {
  readonly scrub: Option.Option<TextScrub>
  readonly provide: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/** The host's redactor in context, captured (see {@link CapturedRedactor}). */
export const captureRedactor: Effect.Effect<CapturedRedactor> = Effect.map(ArtifactRedactor.provided, (redactor) => ({
  scrub: Option.map(redactor, redactWith),
  provide: (effect) =>
    Option.isSome(redactor) ? Effect.provideService(effect, ArtifactRedactor.ArtifactRedactor, redactor.value) : effect
}))

type Plan =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "kept"; readonly value: unknown }
  | { readonly kind: "array"; readonly proto: object | null; length: number; readonly items: Array<Plan | undefined> }
  | { readonly kind: "object"; readonly proto: object | null; readonly entries: Array<Entry> }
  | { readonly kind: "map"; readonly proto: object | null; readonly entries: Array<readonly [Plan, Plan]> }
  | { readonly kind: "set"; readonly proto: object | null; readonly items: Array<Plan> }
  | { readonly kind: "date"; readonly proto: object | null; readonly time: number }

interface Entry {
  readonly key: string | symbol
  /** Whether the name is data (a plain object's key) to scrub, rather than a field code named. */
  readonly scrubKey: boolean
  readonly value: Plan
  readonly enumerable: boolean
  readonly writable: boolean
  readonly configurable: boolean
}

const kept = (value: unknown): Plan => ({ kind: "kept", value })
const beyond = kept(beyondBoundText)
const unreadable = kept(unreadableText)
const binary = kept(binaryText)

const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, "size")?.get as () => unknown
const setSize = Object.getOwnPropertyDescriptor(Set.prototype, "size")?.get as () => unknown
const mapEntries = Map.prototype.entries as (this: Map<unknown, unknown>) => Iterator<[unknown, unknown]>
const setValues = Set.prototype.values as (this: Set<unknown>) => Iterator<unknown>
const iterate = <A>(iterator: Iterator<A>): Iterable<A> => ({ [Symbol.iterator]: () => iterator })

// Texts code wrote, never provider text: a tag, and a model error's reason (a literal its schema checked).
const tagOnly: ReadonlySet<string | symbol> = new Set(["_tag"])
const modelErrorLiterals: ReadonlySet<string | symbol> = new Set(["_tag", "reason"])

const isBinary = (value: object): boolean =>
  ArrayBuffer.isView(value) ||
  value instanceof ArrayBuffer ||
  (typeof SharedArrayBuffer !== "undefined" && value instanceof SharedArrayBuffer)

/** Pass 1: reads `root` once into a plan, collecting every distinct text to scrub. */
const planOf = (root: unknown, bounds: ScrubBounds) => {
  const texts = new Set<string>()
  const seen = new Map<object, Plan>()
  let nodes = 0
  let chars = 0

  const text = (value: string): Plan => {
    if (!texts.has(value)) {
      if (chars + value.length > bounds.chars) return beyond
      chars += value.length
      texts.add(value)
    }
    return { kind: "text", text: value }
  }

  // Whether a plain object's key fits the bounds (a key too long to scrub is dropped with its property).
  const named = (name: string | symbol): boolean => {
    if (typeof name === "symbol" || texts.has(name)) return true
    if (chars + name.length > bounds.chars) return false
    texts.add(name)
    chars += name.length
    return true
  }

  // Reserves room for an object and its `count` members; none left means the whole object is withheld.
  const reserve = (count: number): boolean => {
    if (nodes + 1 + count > bounds.nodes) return false
    nodes += 1 + count
    return true
  }

  // What a property holds, read once: a getter is called on the original; one that throws is unreadable.
  const read = (holder: object, descriptor: PropertyDescriptor): { readonly value: unknown } | undefined => {
    if ("value" in descriptor) return { value: descriptor.value }
    if (descriptor.get === undefined) return { value: undefined }
    try {
      return { value: descriptor.get.call(holder) }
    } catch {
      return undefined
    }
  }

  const walk = (value: unknown, depth: number, verbatim = false): Plan => {
    if (typeof value === "string") return verbatim ? kept(value) : text(value)
    if (typeof value !== "object" || value === null) return kept(value)
    const known = seen.get(value)
    if (known !== undefined) return known
    if (depth > bounds.depth) return beyond
    try {
      return walkObject(value, depth)
    } catch {
      // A proxy whose traps throw, or an exotic object that refuses to be read.
      return unreadable
    }
  }

  const walkObject = (value: object, depth: number): Plan => {
    if (isBinary(value)) return binary
    const proto = Object.getPrototypeOf(value) as object | null
    if (value instanceof Date) {
      const plan: Plan = { kind: "date", proto, time: value.getTime() }
      seen.set(value, plan)
      return plan
    }
    // Maps and sets are read through the built-in size and iterators: an own `size` or iterator could lie or never end.
    // Only the entries reserved for are read: a getter met on the way may add more, without end.
    if (value instanceof Map) {
      const size = mapSize.call(value) as number
      if (!reserve(2 * size)) return beyond
      const plan: Plan = { kind: "map", proto, entries: [] }
      seen.set(value, plan)
      for (const [entryKey, entryValue] of iterate(mapEntries.call(value))) {
        if (plan.entries.length >= size) break
        plan.entries.push([walk(entryKey, depth + 1), walk(entryValue, depth + 1)])
      }
      return plan
    }
    if (value instanceof Set) {
      const size = setSize.call(value) as number
      if (!reserve(size)) return beyond
      const plan: Plan = { kind: "set", proto, items: [] }
      seen.set(value, plan)
      for (const item of iterate(setValues.call(value))) {
        if (plan.items.length >= size) break
        plan.items.push(walk(item, depth + 1))
      }
      return plan
    }
    if (Array.isArray(value)) {
      const length = value.length
      if (!reserve(length)) return beyond
      const plan: Plan = { kind: "array", proto, length, items: new Array(length) }
      seen.set(value, plan)
      for (let index = 0; index < length; index++) {
        const descriptor = Object.getOwnPropertyDescriptor(value, index)
        if (descriptor === undefined) continue
        const held = read(value, descriptor)
        plan.items[index] = held === undefined ? unreadable : walk(held.value, depth + 1)
      }
      return plan
    }
    const keys = Reflect.ownKeys(value)
    if (!reserve(keys.length)) return beyond
    const plan: Plan = { kind: "object", proto, entries: [] }
    seen.set(value, plan)
    // A plain object's keys may be provider data (a parsed body); an instance's own keys are the fields its code names.
    const scrubKey = proto === Object.prototype || proto === null
    const literals = value instanceof ModelError ? modelErrorLiterals : tagOnly
    for (const name of keys) {
      const descriptor = Object.getOwnPropertyDescriptor(value, name)
      if (descriptor === undefined || (scrubKey && !named(name))) continue
      const held = read(value, descriptor)
      const accessor = !("value" in descriptor)
      plan.entries.push({
        key: name,
        scrubKey,
        value: held === undefined ? unreadable : walk(held.value, depth + 1, literals.has(name)),
        enumerable: descriptor.enumerable ?? false,
        writable: accessor || (descriptor.writable ?? false),
        configurable: accessor || (descriptor.configurable ?? false)
      })
    }
    return plan
  }

  return { plan: walk(root, 0), texts }
}

/** Pass 3: the copy `plan` describes, with every text replaced by its scrubbed form. */
const build = (root: Plan, scrubbed: ReadonlyMap<string, string>): unknown => {
  const built = new Map<Plan, unknown>()
  const textOf = (text: string): string => scrubbed.get(text) ?? redactorFailedText
  const make = (plan: Plan): unknown => {
    switch (plan.kind) {
      case "text":
        return textOf(plan.text)
      case "kept":
        return plan.value
    }
    const known = built.get(plan)
    if (known !== undefined) return known
    switch (plan.kind) {
      case "date": {
        const copy = new Date(plan.time)
        if (plan.proto !== Date.prototype) Object.setPrototypeOf(copy, plan.proto)
        built.set(plan, copy)
        return copy
      }
      case "array": {
        const copy: Array<unknown> = new Array(plan.length)
        if (plan.proto !== Array.prototype) Object.setPrototypeOf(copy, plan.proto)
        built.set(plan, copy)
        plan.items.forEach((item, index) => {
          if (item !== undefined) copy[index] = make(item)
        })
        return copy
      }
      case "map": {
        const copy = new Map<unknown, unknown>()
        if (plan.proto !== Map.prototype) Object.setPrototypeOf(copy, plan.proto)
        built.set(plan, copy)
        for (const [entryKey, entryValue] of plan.entries)
          Map.prototype.set.call(copy, make(entryKey), make(entryValue))
        return copy
      }
      case "set": {
        const copy = new Set<unknown>()
        if (plan.proto !== Set.prototype) Object.setPrototypeOf(copy, plan.proto)
        built.set(plan, copy)
        for (const item of plan.items) Set.prototype.add.call(copy, make(item))
        return copy
      }
      case "object": {
        const copy = Object.create(plan.proto) as object
        built.set(plan, copy)
        for (const entry of plan.entries) {
          const name = typeof entry.key === "symbol" || !entry.scrubKey ? entry.key : textOf(entry.key)
          // A name the redactor failed on may be the secret itself: the property goes, rather than the name.
          if (name === redactorFailedText) continue
          try {
            Object.defineProperty(copy, name, {
              value: make(entry.value),
              enumerable: entry.enumerable,
              writable: entry.writable,
              configurable: entry.configurable
            })
          } catch {
            // Two names the redactor made equal, the first not configurable: the second is dropped, never leaked.
          }
        }
        return copy
      }
    }
  }
  return make(root)
}

/**
 * A copy of `value` with every text in it passed through `scrub` (see the
 * module comment); a string is scrubbed, other primitives are kept.
 */
export const scrubValue = (
  value: unknown,
  scrub: TextScrub,
  bounds: Partial<ScrubBounds> = {}
): Effect.Effect<unknown> =>
  Effect.suspend(() => {
    if (typeof value === "string") return scrub(value)
    if (typeof value !== "object" || value === null) return Effect.succeed(value)
    const { plan, texts } = planOf(value, { ...defaultBounds, ...bounds })
    const distinct = Array.from(texts)
    return Effect.map(Effect.forEach(distinct, scrub), (results) => {
      const scrubbed = new Map<string, string>()
      for (let index = 0; index < distinct.length; index++) {
        scrubbed.set(distinct[index] as string, results[index] ?? redactorFailedText)
      }
      return build(plan, scrubbed)
    })
  })

/**
 * `error` scrubbed by the host's redactor in context (unchanged, the same
 * value, without one). The copy keeps the error's prototype, so its type
 * holds.
 */
export const scrubError = <E>(error: E): Effect.Effect<E> =>
  Effect.flatMap(hostScrub, (scrub) =>
    Option.isNone(scrub) ? Effect.succeed(error) : (scrubValue(error, scrub.value) as Effect.Effect<E>)
  )

/**
 * `self` with the errors and defects it fails with scrubbed by the host's
 * redactor in context (see {@link scrubError}); an interruption is kept
 * as it is. Without a redactor, `self`'s failures pass unchanged.
 */
export const scrubFailures = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.catchCause(self, (cause) =>
    Effect.flatMap(hostScrub, (scrub) =>
      Option.isNone(scrub) ? Effect.failCause(cause) : Effect.flatMap(scrubCause(cause, scrub.value), Effect.failCause)
    )
  )

const scrubCause = <E>(cause: Cause.Cause<E>, scrub: TextScrub): Effect.Effect<Cause.Cause<E>> =>
  Effect.map(
    Effect.forEach(cause.reasons, (reason): Effect.Effect<Cause.Reason<E>> => {
      if (Cause.isFailReason(reason)) {
        return Effect.map(scrubValue(reason.error, scrub), (error) => Cause.makeFailReason(error as E))
      }
      if (Cause.isDieReason(reason)) return Effect.map(scrubValue(reason.defect, scrub), Cause.makeDieReason)
      return Effect.succeed(reason)
    }),
    Cause.fromReasons
  )
