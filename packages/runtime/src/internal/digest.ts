/**
 * Sizes and SHA-256 digests of what the journal describes but never stores,
 * computed with the {@link Digest} in the context (WebCrypto by default).
 */

import type { Measure } from "@tessera/core/Digest"
import { Digest, measureText } from "@tessera/core/Digest"
import * as Effect from "effect/Effect"
import type { ModelRequest } from "../Model.ts"

export type { Measure } from "@tessera/core/Digest"

/** SHA-256 of raw bytes and size and digest of a text, with the host's digest. */
export { measureText, sha256 as sha256Bytes } from "@tessera/core/Digest"

/**
 * Canonical text of a JSON-like value for measuring. Provider options are
 * opaque and may hold values JSON cannot express (a bigint, a cycle); those
 * are measured through a stand-in rather than failing the step, because the
 * measure only feeds the journal's size and digest.
 */
export const canonicalJson = (value: unknown): string => {
  // Plain JSON.stringify is several times faster than with a replacer, and
  // gives the same text whenever it succeeds (it throws on a bigint).
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    try {
      return (
        JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? `${inner}n` : inner)) ?? "null"
      )
    } catch {
      return String(value)
    }
  }
}

/** Size and digest of a JSON-like value. */
export const measureJson = (value: unknown): Effect.Effect<Measure> => measureText(canonicalJson(value))

/**
 * Measures of request parts (and tool spec lists), by object. A history
 * hands the same part objects to every later request, so each part is
 * stringified and hashed once, when it is first sent, instead of once per
 * step. Parts are immutable values (every field is readonly); a part changed
 * in place after it was sent keeps its first measure.
 */
const measured = new WeakMap<object, Measure>()

/** `{"parts":[` and `],"tools":` and `}`: the bytes the request's JSON adds around its parts and tools. */
const requestFrameBytes = 21

/** The hash chain and byte count (commas included) of a request's parts up to one of them. */
interface Link {
  readonly chain: string
  readonly size: number
}

/**
 * The hash chain of the last request one conversation measured through it:
 * that request's parts and the link after each. The conversation's next
 * request shares a prefix with it (the same part objects, found by
 * identity), whose links hold and are not hashed again; only the parts
 * after it are. One chain serves one conversation, made by whoever sends
 * its requests and kept as long as the conversation is (a turn's loop, a
 * foreign agent's loop): a measure given no chain computes every link.
 */
export interface RequestChain {
  last: {
    readonly parts: ReadonlyArray<object>
    readonly links: Array<Link>
  }
}

// What a chain holds before its first measure and while a measure has it: shared, so never extended.
const noLinks: RequestChain["last"] = { parts: [], links: [] }

/** A chain that has measured nothing yet (see {@link RequestChain}). */
export const makeRequestChain = (): RequestChain => ({ last: noLinks })

/**
 * The measure of a request, composed from the measures of its parts and of
 * its tool specs (see `RequestDispatched` in `Journal.ts` for the
 * definition):
 *
 * - size: the UTF-8 length of `{"parts":[p1,p2,...],"tools":t}`, where each
 *   `pi` and `t` is the canonical JSON of that part and of the tool specs;
 *   for a plain JSON request that is exactly `JSON.stringify(request)`.
 * - sha256: a hash chain over the parts' digests in request order, closed by
 *   the tool specs' digest.
 *
 * With the conversation's `chain`, a step hashes only the parts after the
 * prefix it shares (the same part objects) with the conversation's previous
 * request, and leaves this request's links in the chain for the next one.
 * The measure is the same with or without it.
 */
export const measureRequest = (request: ModelRequest, chain?: RequestChain): Effect.Effect<Measure> =>
  Digest.use((digest) => requestMeasure(request, chain, digest.measureText))

// Defined once rather than as a generator function created per call: this runs at every model step.
const requestMeasure = Effect.fnUntraced(function* (
  request: ModelRequest,
  chain: RequestChain | undefined,
  measureText: (text: string) => Effect.Effect<Measure>
) {
  const parts: ReadonlyArray<object> = request.parts
  const previous = chain?.last
  // Taken over for the measure's duration, so its links are extended in place instead of copied (a copy every
  // step doubled a step's measure on a history of 1,000 parts); a measure of the same conversation meanwhile
  // starts from an empty chain.
  if (chain !== undefined) chain.last = noLinks
  let shared = 0
  if (previous !== undefined) {
    const limit = Math.min(previous.parts.length, parts.length)
    while (shared < limit && previous.parts[shared] === parts[shared]) shared++
  }
  const links: Array<Link> = previous === undefined || previous === noLinks ? [] : previous.links
  links.length = shared
  for (let index = shared; index < parts.length; index++) {
    const part = yield* measuredOnce(parts[index] as object, measureText)
    const before = links.at(-1)
    const link = yield* measureText(`${before?.chain ?? ""}${part.sha256}`)
    links.push({ chain: link.sha256, size: (before === undefined ? 0 : before.size + 1) + part.size })
  }
  if (chain !== undefined) chain.last = { parts, links }
  const tools = yield* measuredOnce(request.tools, measureText)
  const last = links.at(-1)
  const closed = yield* measureText(`${last?.chain ?? ""}${tools.sha256}`)
  return { size: requestFrameBytes + (last?.size ?? 0) + tools.size, sha256: closed.sha256 }
})

/** The measure of a part (or tool list) from the cache, or measured now and cached. */
const measuredOnce = (value: object, measureText: (text: string) => Effect.Effect<Measure>): Effect.Effect<Measure> => {
  const known = measured.get(value)
  if (known !== undefined) return Effect.succeed(known)
  const field = bodyField(value)
  const measure = field === undefined ? measureText(canonicalJson(value)) : withBody(value, field, measureText)
  return Effect.map(measure, (taken) => {
    measured.set(value, taken)
    return taken
  })
}

/**
 * The field of a part that holds its body text (a tool result's content, a
 * text's text): the one field that can be megabytes, measured on its own.
 */
const bodyField = (value: object): "content" | "text" | undefined => {
  const tag = (value as { readonly _tag?: unknown })._tag
  if (tag === "ToolResult" && typeof (value as { readonly content?: unknown }).content === "string") return "content"
  if (tag === "Text" && typeof (value as { readonly text?: unknown }).text === "string") return "text"
  return undefined
}

/** `"sha256:"` and 64 hex digits, quoted: the bytes a body's stand-in takes in a part's canonical JSON. */
const standInBytes = 2 + 7 + 64

/**
 * A part with a body, measured as `RequestDispatched` defines it: the digest
 * of its canonical JSON with the body replaced by `sha256:<the body's
 * digest>`, and the size of its canonical JSON with the body counted as its
 * UTF-8 bytes between quotes. The body's measure comes from {@link
 * rememberBody} when the caller already took it.
 */
const withBody = Effect.fnUntraced(function* (
  part: object,
  field: "content" | "text",
  measureText: (text: string) => Effect.Effect<Measure>
) {
  const body = (part as Record<typeof field, string>)[field]
  const bodyMeasure = bodies.get(part) ?? (yield* measureText(body))
  const standIn = yield* measureText(canonicalJson({ ...part, [field]: `sha256:${bodyMeasure.sha256}` }))
  return { size: standIn.size - standInBytes + 2 + bodyMeasure.size, sha256: standIn.sha256 }
})

/** Measures of parts' bodies that their producer took already, by part. */
const bodies = new WeakMap<object, Measure>()

/**
 * Records that `measure` is the measure of `part`'s body (a tool result's
 * content, a text's text), taken by the caller that made the part: a request
 * carrying the part then does not hash the body again, and compaction does
 * not count its bytes again. The caller must pass the measure of that very
 * text.
 */
export const rememberBody = (part: object, measure: Measure): void => {
  if (bodyField(part) !== undefined) bodies.set(part, measure)
}

/** The UTF-8 size of `part`'s body, when it was remembered. */
export const rememberedBodySize = (part: object): number | undefined => bodies.get(part)?.size

/**
 * The request digest as journals written before bodies were measured on
 * their own define it (`ki = h(k(i-1) + h(c(pi)))` over each part's whole
 * canonical JSON), from scratch: a resume of such a journal checks its
 * requests against this one when the current definition differs.
 */
export const legacyRequestSha256 = (request: ModelRequest): Effect.Effect<string> =>
  Effect.gen(function* () {
    let chain = ""
    for (const part of request.parts) {
      const partDigest = (yield* measureText(canonicalJson(part))).sha256
      chain = (yield* measureText(`${chain}${partDigest}`)).sha256
    }
    const toolsDigest = (yield* measureText(canonicalJson(request.tools))).sha256
    return (yield* measureText(`${chain}${toolsDigest}`)).sha256
  })
