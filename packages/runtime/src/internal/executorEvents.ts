/**
 * What a turn's `onEvent` hears: {@link TurnEvent}, and the journal entries
 * among them ({@link JournalEntryEvent}). Declared here so the turn's pieces
 * and the public `Executor` module share them without importing each
 * other; `Executor` re-exports both under the same names.
 */
import type * as JournalEntry from "../JournalEntry.ts"
import type { FinishReason, ToolCallPart, ToolResultPart, Usage } from "../Model.ts"
import type { EntryTurnEvent } from "./entryFacts.ts"
import type { TurnAnswered, TurnAwaitingApproval } from "./executorOutcomes.ts"

/**
 * A journal entry a hook wrote during the turn, as the turn's `onEvent`
 * hears it: the entry under its own tag. These are the offloads
 * (`ArtifactOffloaded`), the staged summaries (`SummaryStaged`) and the
 * answered summary requests (`SummaryRequestAnswered`), whichever hook
 * writes them.
 *
 * @since 0.1.0
 * @category events
 */
export type JournalEntryEvent =
  | { readonly _tag: "SummaryStaged"; readonly entry: typeof JournalEntry.SummaryStaged.Type }
  | { readonly _tag: "ArtifactOffloaded"; readonly entry: typeof JournalEntry.ArtifactOffloaded.Type }
  | { readonly _tag: "SummaryRequestAnswered"; readonly entry: typeof JournalEntry.SummaryRequestAnswered.Type }

// Which entries become turn events is the `turnEvent` column of the table of entry facts: the union above
// spells them out for readers, and this check keeps it the table's (a row flipped either way fails to compile).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type Holds<T extends true> = T
/** Compiles only while {@link JournalEntryEvent} names exactly the table's turn events. */
export type JournalEntryEventFollowsTable = Holds<Same<JournalEntryEvent, EntryTurnEvent>>

/**
 * What happens in a turn, as a host forwards it (to a chat UI, a log), in
 * order: each step starts, streams its deltas, finishes (with the
 * provider's usage and finish reason); each tool call is called and
 * resulted; offloads and staged summaries the hooks make are reported as
 * the journal entries that record them ({@link JournalEntryEvent}); the turn
 * closes with its outcome. Deltas are for display; the history and the
 * journal are built from the completed response, as without streaming.
 *
 * @since 0.1.0
 * @category events
 */
export type TurnEvent =
  | { readonly _tag: "StepStarted"; readonly turn: number; readonly step: number }
  | { readonly _tag: "TextDelta"; readonly turn: number; readonly step: number; readonly delta: string }
  | { readonly _tag: "ReasoningDelta"; readonly turn: number; readonly step: number; readonly delta: string }
  | {
      readonly _tag: "ToolCallDelta"
      readonly turn: number
      readonly step: number
      readonly callId: string
      readonly name: string
      readonly inputDelta: string
    }
  | { readonly _tag: "ToolCalled"; readonly turn: number; readonly step: number; readonly call: ToolCallPart }
  | { readonly _tag: "ToolResulted"; readonly turn: number; readonly step: number; readonly result: ToolResultPart }
  | JournalEntryEvent
  | {
      readonly _tag: "StepFinished"
      readonly turn: number
      readonly step: number
      readonly toolCalls: number
      readonly usage?: Usage
      readonly finishReason?: FinishReason
    }
  | { readonly _tag: "TurnClosed"; readonly outcome: TurnAnswered }
  | { readonly _tag: "AwaitingApproval"; readonly outcome: TurnAwaitingApproval }
