import * as v8 from "node:v8"
import * as vm from "node:vm"
import { assert, describe, it } from "@effect/vitest"
import * as NodeDigest from "@tessera/node/NodeDigest"
import * as Model from "@tessera/runtime/Model"
import { Effect } from "effect"
import * as fc from "fast-check"
// The request measure is internal (the package blocks `./internal/*`); the test reaches it by path.
import {
  legacyRequestSha256,
  type Measure,
  makeRequestChain,
  measureRequest,
  type RequestChain,
  rememberBody
} from "../../../runtime/src/internal/digest.js"
import { expectedRequestMeasure, sha256 } from "../support/requestMeasure.ts"

// A full collection on demand, without starting the test process with `--expose-gc`.
v8.setFlagsFromString("--expose-gc")
const collectGarbage = vm.runInNewContext("gc") as () => void

const expected = expectedRequestMeasure

// A small pool of part objects, reused across requests in any order, so that
// cached prefixes are shared, broken, re-extended and revisited. Every run
// gets fresh objects: nothing cached by an earlier run applies, and a failing
// sequence shrinks to the requests that break it.
// Bodies with characters JSON escapes, a part without a body, and a result whose body measure its producer
// remembered (as the executor does), so that every way a part is measured is in every sequence.
const makePool = (): ReadonlyArray<Model.Part> => {
  const remembered = Model.toolResult({ callId: "r2", name: "read", content: "rememberd ✓ 🧪", isError: false })
  rememberBody(remembered, NodeDigest.nodeCrypto.measureTextSync?.(remembered.content) as Measure)
  return [
    ...["a", "dé"].map((body) => Model.text("user", body)),
    Model.toolResult({ callId: "r1", name: "read", content: 'line "one"\n\tzwei ünï 🧪 \\ \u0001', isError: false }),
    Model.toolCall("c1", "read", { path: "a b", n: 1 }),
    remembered,
    Model.text("assistant", "")
  ]
}
const size = makePool().length
const tools: Model.ModelRequest["tools"] = []

// NodeDigest's measure is synchronous, so the request measure runs with runSync; without a host digest it
// runs on WebCrypto. The same algorithm runs on both. With a chain, the requests are one conversation's: each
// is measured from the links of the one before (the prefix they share).
const measureSync = (request: Model.ModelRequest, chain?: RequestChain) =>
  Effect.runSync(measureRequest(request, chain).pipe(Effect.provide(NodeDigest.layer)))
const measureWithEffects = (request: Model.ModelRequest, chain?: RequestChain) =>
  Effect.runPromise(measureRequest(request, chain))

const requestSequences = fc.array(fc.array(fc.integer({ min: 0, max: size - 1 }), { maxLength: 8 }), {
  minLength: 1,
  maxLength: 12
})

const check = (request: Model.ModelRequest, measured: { readonly size: number; readonly sha256: string }) =>
  assert.deepStrictEqual({ size: measured.size, sha256: measured.sha256 }, expected(request))

describe("request measure", () => {
  it("a remembered body measure is the one the request uses (a wrong one changes the digest: the memo is consulted, not recomputed)", () => {
    const honest = Model.toolResult({ callId: "x", name: "read", content: "body ✓", isError: false })
    const lied = Model.toolResult({ callId: "x", name: "read", content: "body ✓", isError: false })
    rememberBody(lied, { size: 999, sha256: "0".repeat(64) })
    const request = (part: Model.Part): Model.ModelRequest => ({ parts: [part], tools })
    check(request(honest), measureSync(request(honest)))
    const measured = measureSync(request(lied))
    assert.notStrictEqual(measured.sha256, expected(request(lied)).sha256)
    assert.notStrictEqual(measured.size, expected(request(lied)).size)
  })

  it("legacy digest: journals written before bodies were measured on their own are checked against h(c(p)) chains", () => {
    const pool = makePool()
    const request: Model.ModelRequest = { parts: pool, tools }
    const legacy = sha256(
      request.parts.reduce((link, part) => sha256(link + sha256(JSON.stringify(part))), "") +
        sha256(JSON.stringify(request.tools))
    )
    assert.strictEqual(Effect.runSync(legacyRequestSha256(request).pipe(Effect.provide(NodeDigest.layer))), legacy)
    assert.notStrictEqual(measureSync(request).sha256, legacy)
  })

  it("property: a sequence of requests over shared part objects measures as if each were measured from scratch", () =>
    fc.assert(
      fc.property(requestSequences, (requests) => {
        const pool = makePool()
        const chain = makeRequestChain()
        for (const indexes of requests) {
          const request: Model.ModelRequest = { parts: indexes.map((index) => pool[index] as Model.Part), tools }
          check(request, measureSync(request, chain))
          check(request, measureSync(request))
        }
      }),
      { numRuns: 300 }
    ))

  it("property: measured one effect per digest (WebCrypto), the same sequences give the same measures", async () => {
    await fc.assert(
      fc.asyncProperty(requestSequences, async (requests) => {
        const pool = makePool()
        const chain = makeRequestChain()
        for (const indexes of requests) {
          const request: Model.ModelRequest = { parts: indexes.map((index) => pool[index] as Model.Part), tools }
          check(request, await measureWithEffects(request, chain))
        }
      }),
      { numRuns: 100 }
    )
  })

  it("a memo left under a replaced first part keeps none of its parts alive", async () => {
    // Compaction replaces a conversation's first part (the summary) and drops old results. The old
    // summary part may live on (a harness keeping old histories, or V8's young collections treating it
    // as live until a full one), and the conversation's request chain must not keep the results it was
    // measured from.
    const chain = makeRequestChain()
    const task = Model.text("user", "the task")
    const firstSummary = Model.text("user", "summary 1")
    const sendResult = (): WeakRef<Model.Part> => {
      const result = Model.toolResult({
        callId: "call-1",
        name: "produce",
        content: "r".repeat(50_000),
        isError: false
      })
      const request: Model.ModelRequest = { parts: [firstSummary, task, result], tools }
      check(request, measureSync(request, chain))
      return new WeakRef(result)
    }
    const dropped = sendResult()
    const compacted: Model.ModelRequest = { parts: [Model.text("user", "summary 2"), task], tools }
    check(compacted, measureSync(compacted, chain))
    // A WeakRef keeps its target until the current job ends; collect after it.
    await new Promise((resolve) => setTimeout(resolve, 0))
    collectGarbage()
    assert.isTrue(dropped.deref() === undefined, "the dropped tool result was kept by the old summary's memo")
    // The chain still serves a request that opens with the old summary again.
    const again: Model.ModelRequest = { parts: [firstSummary, task, Model.text("user", "next")], tools }
    check(again, measureSync(again, chain))
  })

  it("a part sent after a prefix that changed is not measured with its old link", () => {
    // [x, y, z], then [w, x, y] relinks x and y, then [x, y', ...] relinks x alone: y keeps
    // a link whose predecessor is x's older link, which must not be reused for [x, y, z].
    const [x, y, z, w, other] = makePool() as [Model.Part, Model.Part, Model.Part, Model.Part, Model.Part]
    const sequence: ReadonlyArray<ReadonlyArray<Model.Part>> = [
      [x, y, z],
      [w, x, y],
      [x, other],
      [x, y, z]
    ]
    const chain = makeRequestChain()
    for (const parts of sequence) {
      const request: Model.ModelRequest = { parts, tools }
      check(request, measureSync(request, chain))
    }
  })
})
