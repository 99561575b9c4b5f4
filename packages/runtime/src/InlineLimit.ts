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
 * @since 0.1.0
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import * as CompactionPolicy from "./CompactionPolicy.ts"
import type * as Executor from "./Executor.ts"
import { cutWithNote } from "./internal/boundedText.ts"
import type { ToolResultPart } from "./Model.ts"

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
  checkBytes("InlineLimit.limitResult", maxBytes)
  const cut = cutWithNote(result.content, maxBytes, (kept, total) => note(kept, total, maxBytes))
  return cut === undefined ? result : { ...result, content: cut.text }
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
export const defaultBytes = (policy: CompactionPolicy.CompactionPolicy): number | undefined =>
  policy._tag === "Threshold" ? CompactionPolicy.bytesFor(policy.measure, policy.pieceLimit) : undefined

/**
 * The `onToolResult` hook that applies the limit.
 *
 * @throws InvalidInput when `maxBytes` is not an integer of at least 0,
 * when the hooks are made rather than at the first result.
 * @since 0.1.0
 * @category hooks
 */
export const inlineLimitHooks = (maxBytes: number): Executor.Hooks => {
  checkBytes("InlineLimit.inlineLimitHooks", maxBytes)
  return { onToolResult: (_context, result) => Effect.sync(() => limitResult(maxBytes, result)) }
}
