/**
 * The trim the peers without summarization are given (the AI SDK in
 * `prepareStep`, Pi in `transformContext`): once the history after the
 * task measures more than the workload's `triggerChars`, it keeps the task
 * and the newest whole rounds that fit in `keepChars` (always the newest
 * round, however large), and drops the rest. Nothing is summarized.
 */
import type { Workload } from "./PeerWorkload.ts"

/** How a side's messages are measured and where its rounds start. */
export interface Rounds<M> {
  /** The characters a message carries to the model (its text and tool results). */
  readonly sizeOf: (message: M) => number
  /** Whether a message opens a round (the assistant message that asks for the round's tool calls). */
  readonly startsRound: (message: M) => boolean
}

/**
 * The index of the first message to keep when `messages[from..]` measure
 * more than the workload's trigger: the start of the oldest of the newest
 * rounds that together fit in `keepChars` (the newest round is kept
 * whatever its size). `undefined` when nothing needs trimming. Measures
 * only `messages[from..]`, so a side that remembers its cut pays for the
 * window it sends, not for the whole transcript.
 */
export const trimFrom = <M>(
  messages: ReadonlyArray<M>,
  from: number,
  workload: Workload,
  rounds: Rounds<M>
): number | undefined => {
  let total = 0
  for (let index = from; index < messages.length; index++) total += rounds.sizeOf(messages[index] as M)
  if (total <= workload.triggerChars) return undefined
  let kept = 0
  let cut: number | undefined
  let pending = 0
  for (let index = messages.length - 1; index >= from; index--) {
    const message = messages[index] as M
    pending += rounds.sizeOf(message)
    if (!rounds.startsRound(message)) continue
    if (cut !== undefined && kept + pending > workload.keepChars) break
    kept += pending
    pending = 0
    cut = index
  }
  return cut === undefined || cut <= from ? undefined : cut
}
