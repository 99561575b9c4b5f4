/**
 * The request measure as `RequestDispatched`'s documentation defines it,
 * computed from scratch with an independent SHA-256: what the journal's
 * `size` and `sha256` of a request must be.
 */
import { createHash } from "node:crypto"
import type * as Model from "@tessera/runtime/Model"

export const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")
const bytes = (text: string) => Buffer.byteLength(text, "utf8")

/** A part's digest and size: its body (a text's text, a result's content) stands in as `sha256:<digest>`. */
export const partMeasure = (part: Model.Part): { readonly size: number; readonly sha256: string } => {
  const field = part._tag === "ToolResult" ? "content" : part._tag === "Text" ? "text" : undefined
  if (field === undefined) return { size: bytes(JSON.stringify(part)), sha256: sha256(JSON.stringify(part)) }
  const body = (part as unknown as Record<string, string>)[field] as string
  const standIn = `sha256:${sha256(body)}`
  const json = JSON.stringify({ ...part, [field]: standIn })
  return { size: bytes(json) - bytes(JSON.stringify(standIn)) + 2 + bytes(body), sha256: sha256(json) }
}

/** A request's size and digest. */
export const expectedRequestMeasure = (
  request: Model.ModelRequest
): { readonly size: number; readonly sha256: string } => {
  const parts = request.parts.map(partMeasure)
  return {
    size:
      bytes('{"parts":[],"tools":}') +
      parts.reduce((total, part) => total + part.size, 0) +
      Math.max(0, parts.length - 1) +
      bytes(JSON.stringify(request.tools)),
    sha256: sha256(parts.reduce((link, part) => sha256(link + part.sha256), "") + sha256(JSON.stringify(request.tools)))
  }
}
