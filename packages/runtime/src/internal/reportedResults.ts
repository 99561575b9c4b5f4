/**
 * What a foreign loop remembers of the tool results reported through it:
 * per call id, what was kept of each (the pointer when offloaded) and the
 * original's length and digest, so the kept part replaces the original in
 * every later request (foreign loops hand over their whole history every
 * time) and a later call reusing the id with another body is never taken
 * for it.
 */
import * as Digest from "@tessera/core/Digest"
import * as Effect from "effect/Effect"
import type * as Model from "../Model.ts"

/**
 * A result reported through the loop: what was kept (the pointer when
 * offloaded), and the original's length and digest, so a history holding
 * the same call id with another body (ids repeat across prompts in some
 * loops) is never taken for it. `verified` is the last body found to be
 * the original, so it is hashed once, not on every request. Every call of
 * an id keeps its report: the caller's history holds them all.
 */
interface Reported {
  readonly kept: Model.ToolResultPart
  readonly length: number
  readonly sha256: string
  verified?: string
}

/** The memory of one loop's reported results. */
export interface ReportedResults {
  /** The pointer each offloaded call id was replaced by (the latest call of that id). */
  readonly pointers: ReadonlyMap<string, string>
  /** What was kept of the latest result reported for `callId`, if any was. */
  readonly latest: (callId: string) => Model.ToolResultPart | undefined
  /** Remembers that `kept` (measured as `measured`) was kept of `result`, the latest result of call `callId`. */
  readonly remember: (
    callId: string,
    result: Model.ToolResultPart,
    kept: Model.ToolResultPart,
    measured: Digest.Measure
  ) => Effect.Effect<void>
  /** The part to send for one of the history's parts: a result reported through the loop becomes what was kept of it. */
  readonly keptFor: (part: Model.Part) => Effect.Effect<Model.Part>
}

/** A new, empty memory. */
export const makeReportedResults = (): ReportedResults => {
  // Per call id, every call's report, the latest last.
  const results = new Map<string, Array<Reported>>()
  const pointers = new Map<string, string>()
  const keptFor = Effect.fnUntraced(function* (part: Model.Part) {
    if (part._tag !== "ToolResult") return part
    const reports = results.get(part.callId)
    if (reports === undefined) return part
    let measured: string | undefined
    for (let index = reports.length - 1; index >= 0; index--) {
      const known = reports[index] as Reported
      if (known.kept.content === part.content) return part
      if (known.verified === part.content) return known.kept
      if (known.length !== part.content.length) continue
      measured ??= (yield* Digest.measureText(part.content)).sha256
      if (measured !== known.sha256) continue
      known.verified = part.content
      return known.kept
    }
    return part
  })
  return {
    pointers,
    latest: (callId) => results.get(callId)?.at(-1)?.kept,
    remember: (callId, result, kept, measured) =>
      Effect.map(
        kept.content === result.content ? Effect.succeed(measured) : Digest.measureText(result.content),
        (original) => {
          const reported: Reported = { kept, length: result.content.length, sha256: original.sha256 }
          results.set(callId, [...(results.get(callId) ?? []), reported])
          if (kept.content !== result.content) pointers.set(callId, kept.content)
          else pointers.delete(callId)
        }
      ),
    keptFor
  }
}
