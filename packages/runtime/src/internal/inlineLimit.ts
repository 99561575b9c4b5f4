/**
 * The hard limit on a tool result kept inline.
 *
 * A result that was not offloaded (no offload configured, or the offload
 * was refused, for example on a full disk) enters the history whole, and
 * everything after it pays for its size: every request carries it until
 * compaction summarizes it, in as many summary requests as it has pieces.
 * A result above the inline limit is therefore cut before it enters the
 * history: its first bytes are kept, followed by a note that says how large
 * it was and that the rest was not kept. Compaction's cost for it is then
 * bounded by the limit, not by the payload.
 *
 * The limit applies last, after offload and after the harness's own
 * `onToolResult` hooks, so it holds for whatever those leave inline.
 *
 * What the model itself sends (a tool call's id, name and input, its own
 * text) is not cut in the history: the tool must get its real input, and the
 * journal digests what was sent. Summary requests render it held to the
 * same limit instead ({@link limitRendered}, used by `Compaction`), so a
 * hostile model's 50 MB argument costs no more summary requests than a
 * 50 MB result does.
 *
 * @since 0.1.0
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import type * as Executor from "../Executor.ts"
import type { ToolResultPart } from "../Model.ts"
import { cutWithNote } from "./boundedText.ts"
import { type Policy, pieceBytes } from "./compactionPolicy.ts"

/**
 * The note that follows a cut result.
 *
 * @since 0.1.0
 * @category rendering
 */
export const note = (keptBytes: number, totalBytes: number, limit: number): string =>
  `\n[tessera: this tool result was ${totalBytes} bytes, over the inline limit of ${limit} bytes, and was not offloaded; only its first ${keptBytes} bytes are kept above]`

/**
 * Throws `InvalidInput` (field `maxBytes`) unless `maxBytes` is an integer
 * of at least 0: a string or `NaN` would otherwise compare its own way and
 * cut every result to the note, or none.
 */
const checkBytes = (entry: string, maxBytes: number): void => {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new InvalidInput.InvalidInput({
      entry,
      field: "maxBytes",
      value: InvalidInput.renderValue(maxBytes),
      detail: "expected an integer number of bytes >= 0"
    })
  }
}

/**
 * `result` with its content cut to at most `maxBytes` UTF-8 bytes, note
 * included (between graphemes, never inside a character), or `result`
 * itself when it fits. The note is always kept whole, so a limit smaller
 * than the note yields the note alone.
 *
 * @throws InvalidInput when `maxBytes` is not an integer of at least 0.
 * @since 0.1.0
 * @category limiting
 */
export const limitResult = (maxBytes: number, result: ToolResultPart): ToolResultPart => {
  checkBytes("ToolResults.limitResult", maxBytes)
  const cut = cutWithNote(result.content, maxBytes, (kept, total) => note(kept, total, maxBytes))
  return cut === undefined ? result : { ...result, content: cut.text }
}

/**
 * What a summary request's rendering of a part may be cut for: what the
 * model wrote (a tool call, its own text) and the header of a tool result,
 * which echoes the call's id and name.
 *
 * @since 0.1.0
 * @category rendering
 */
export type RenderedKind = "tool call" | "assistant text" | "tool result header"

/**
 * The note that follows a part's rendering cut for a summary request. It
 * says that only the rendering was cut: the history keeps the part whole.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderedNote = (kind: RenderedKind, keptBytes: number, totalBytes: number, limit: number): string =>
  `\n[tessera: this ${kind} was ${totalBytes} bytes as rendered, over the inline limit of ${limit} bytes; only its first ${keptBytes} bytes are shown to this summary, the history keeps it whole]`

/**
 * A part's rendering held to the inline limit, the way {@link limitResult}
 * holds a result's content: `undefined` when `rendered` measures at most
 * `maxBytes` UTF-8 bytes; otherwise its longest prefix (between graphemes)
 * followed by {@link renderedNote}, together at most `maxBytes` (or the note
 * alone, when the limit is shorter than the note), with its size in bytes.
 * Costs the kept prefix and one count of `rendered`, however long it is.
 *
 * @throws InvalidInput when `maxBytes` is not an integer of at least 0.
 * @since 0.1.0
 * @category limiting
 */
export const limitRendered = (
  maxBytes: number,
  kind: RenderedKind,
  rendered: string
): { readonly text: string; readonly bytes: number } | undefined => {
  checkBytes("ToolResults.limitRendered", maxBytes)
  const cut = cutWithNote(rendered, maxBytes, (kept, total) => renderedNote(kind, kept, total, maxBytes))
  return cut === undefined
    ? undefined
    : {
        text: cut.text,
        bytes: cut.keptBytes + ArtifactPointer.utf8Length(renderedNote(kind, cut.keptBytes, cut.totalBytes, maxBytes))
      }
}

/**
 * The default limit under a compaction policy: its piece limit, in bytes.
 * A result kept inline then fits in one summary piece (with its round's
 * frame, in at most two), so the summary requests it can ever cost are
 * bounded by the policy, not by the payload. `Disabled` has no default:
 * without compaction nothing depends on it.
 *
 * @since 0.1.0
 * @category defaults
 */
export const defaultInlineBytes = (policy: Policy): number | undefined =>
  policy._tag === "Threshold" ? pieceBytes(policy) : undefined

/**
 * The `onToolResult` hook that applies the limit.
 *
 * @throws InvalidInput when `maxBytes` is not an integer of at least 0,
 * when the hooks are made rather than at the first result.
 * @since 0.1.0
 * @category hooks
 */
export const inlineLimitHooks = (maxBytes: number): Executor.Hooks => {
  checkBytes("ToolResults.inlineLimitHooks", maxBytes)
  return { onToolResult: (_context, result) => Effect.sync(() => limitResult(maxBytes, result)) }
}
