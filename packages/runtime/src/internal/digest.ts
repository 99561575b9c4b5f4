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

/**
 * The hash chain and byte count (commas included) of a request's parts up to
 * one of them, and that part's own measure (the cached object).
 */
interface Link {
  readonly chain: string
  readonly size: number
  readonly part: Measure
}

/**
 * The links of the last request measured for a conversation, one per part.
 * Keyed by the request's first part: concurrent tasks start their requests
 * with different parts, so each keeps its own.
 *
 * Only the memo used last keeps the parts its links were made from, so that
 * a conversation measured step after step finds its shared prefix by
 * identity; every other memo finds it through the parts' cached measures
 * (slower: a lookup per part). When every memo kept its parts, a memo left
 * under a first part that compaction had replaced kept that request's parts,
 * tool results included, after the history had dropped them, and in a run
 * that compacts every few steps V8's young collections kept such memos and
 * all they held until the next full collection: about 15 MB surviving each
 * young collection, against about 0.5 MB now (see `bench/NOTES.md`, fifth round).
 */
interface Memo {
  readonly links: Array<Link>
  parts: ReadonlyArray<object> | undefined
}

const memos = new WeakMap<object, Memo>()

/** The memo used last: the only one holding its parts. */
let latest: Memo | undefined

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
 * The chain up to each part of the previous request is kept, so a step
 * hashes only the parts after the prefix it shares (the same part objects)
 * with the previous request of the same conversation.
 */
export const measureRequest = (request: ModelRequest): Effect.Effect<Measure> =>
  Digest.use((digest) => {
    const { measureTextSync } = digest
    return measureTextSync === undefined
      ? driveWithEffects(requestMeasure(request), digest.measureText)
      : Effect.sync(() => driveSynchronously(requestMeasure(request), measureTextSync))
  })

/** A measure in progress: it yields the texts it needs measured and is resumed with their measures. */
type Measuring<A> = Generator<string, A, Measure>

/**
 * The algorithm of {@link measureRequest}, written once: it yields each text
 * to measure and is resumed with that text's measure, so the same steps run
 * synchronously with a synchronous digest and through effects otherwise.
 *
 * It takes the conversation's memo over for its duration (and hands back a
 * new one when done), so it may extend the memo's links in place instead of
 * copying them every step; a measure of the same conversation running
 * meanwhile finds no memo and starts from scratch.
 */
function* requestMeasure(request: ModelRequest): Measuring<Measure> {
  const parts: ReadonlyArray<object> = request.parts
  const key = parts[0]
  const memo = key === undefined ? undefined : memos.get(key)
  if (key !== undefined) memos.delete(key)
  // The prefix shared with the conversation's previous request: its links still hold. Without the parts
  // themselves, a part whose cached measure is the one its link was made from is the same part (or one
  // measuring the same).
  const links: Array<Link> = memo?.links ?? []
  const previous = memo?.parts
  const limit = Math.min(links.length, parts.length)
  let shared = 0
  if (previous !== undefined) while (shared < limit && previous[shared] === parts[shared]) shared++
  else while (shared < limit && measured.get(parts[shared] as object) === links[shared]?.part) shared++
  links.length = shared
  for (let index = shared; index < parts.length; index++) {
    const part = yield* measuredOnce(parts[index] as object)
    const before = links.at(-1)
    const link = yield `${before?.chain ?? ""}${part.sha256}`
    links.push({ chain: link.sha256, size: (before === undefined ? 0 : before.size + 1) + part.size, part })
  }
  if (key !== undefined) {
    const next: Memo = memo ?? { links, parts: undefined }
    next.parts = parts
    if (latest !== undefined && latest !== next) latest.parts = undefined
    latest = next
    memos.set(key, next)
  }
  const tools = yield* measuredOnce(request.tools)
  const last = links.at(-1)
  const closed = yield `${last?.chain ?? ""}${tools.sha256}`
  return { size: requestFrameBytes + (last?.size ?? 0) + tools.size, sha256: closed.sha256 }
}

/** The measure of a part (or tool list) from the cache, or measured now and cached. */
function* measuredOnce(value: object): Measuring<Measure> {
  const known = measured.get(value)
  if (known !== undefined) return known
  const field = bodyField(value)
  const measure = field === undefined ? yield canonicalJson(value) : yield* withBody(value, field)
  measured.set(value, measure)
  return measure
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
function* withBody(part: object, field: "content" | "text"): Measuring<Measure> {
  const body = (part as Record<typeof field, string>)[field]
  const known = bodies.get(part)
  const bodyMeasure = known ?? (yield body)
  const standIn = yield canonicalJson({ ...part, [field]: `sha256:${bodyMeasure.sha256}` })
  return { size: standIn.size - standInBytes + 2 + bodyMeasure.size, sha256: standIn.sha256 }
}

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

const driveSynchronously = (measuring: Measuring<Measure>, measure: (text: string) => Measure): Measure => {
  let step = measuring.next()
  while (!step.done) step = measuring.next(measure(step.value))
  return step.value
}

const driveWithEffects = (measuring: Measuring<Measure>, measure: (text: string) => Effect.Effect<Measure>) => {
  const resume = (step: IteratorResult<string, Measure>): Effect.Effect<Measure> =>
    step.done ? Effect.succeed(step.value) : Effect.flatMap(measure(step.value), (next) => resume(measuring.next(next)))
  return Effect.suspend(() => resume(measuring.next()))
}
