/**
 * Summary requests: what each one carries, how a summary is asked for piece
 * by piece ({@link summarizeWith}), journaled and bounded. `Compaction`
 * states the public part of it (the instruction, `summarize`).
 */
import * as ArtifactPointer from "@tessera/artifacts/ArtifactPointer"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Journal, JournalIoError, JournalSequenceError } from "../Journal.ts"
import type { MediaPart, ModelError, ModelRequest, ModelResponse, Part } from "../Model.ts"
import { type Model, text } from "../Model.ts"
import * as Observability from "../Observability.ts"
import { cutWithNote } from "./boundedText.ts"
import { sizedPieces, summaryRendering } from "./compactionPlan.ts"
import { scrubFailures } from "./scrub.ts"
import * as Summarizer from "./summarizer.ts"
import { defaultInstruction } from "./summarizer.ts"

/** See `Compaction.summaryInstruction`. */
export const summaryInstruction = defaultInstruction

/** See `Compaction.isSummaryRequestFor`. */
export const isSummaryRequestFor =
  (instruction: string) =>
  (request: ModelRequest): boolean => {
    const first = request.parts[0]
    return first?._tag === "Text" && first.role === "system" && first.text === instruction
  }

/** See `Compaction.isSummaryRequest`. */
export const isSummaryRequest: (request: ModelRequest) => boolean = isSummaryRequestFor(summaryInstruction)

/**
 * One summary request: the instruction, the user's original task, the
 * previous summary (if any) and one piece of history, last. With `media`
 * (the piece's own, {@link summaryHistoryPieces}), those parts, as given,
 * come just before the piece, whose opening line then says how many there
 * are and that they follow its `[media <type>]` placeholders in order;
 * without (or with none), the request is the one it always was.
 *
 * @since 0.1.0
 * @category requests
 */
export const summaryRequest = (options: {
  readonly task: ReadonlyArray<Part>
  readonly previousSummary: Option.Option<string>
  readonly piece: string
  readonly index: number
  readonly count: number
  /** The media the piece's placeholders stand for, sent as native parts. */
  readonly media?: ReadonlyArray<MediaPart>
  /** The system instruction; the library's ({@link summaryInstruction}) when absent. */
  readonly instruction?: string
}): ModelRequest => {
  const media = options.media ?? []
  return {
    parts: [
      text("system", options.instruction ?? summaryInstruction),
      ...options.task,
      ...Option.match(options.previousSummary, {
        onNone: () => [],
        onSome: (summary) => [text("user", `Previous summary:\n${summary}`)]
      }),
      ...media,
      text(
        "user",
        `History to summarize (part ${options.index + 1} of ${options.count}${attachedNote(media.length)}):\n${options.piece}`
      )
    ],
    tools: []
  }
}

// The task's own media may come just before the piece's (when there is no previous summary): the count tells
// the summarizer which of them the placeholders stand for.
const attachedNote = (count: number): string =>
  count === 0
    ? ""
    : count === 1
      ? ", with the 1 media item its [media ...] placeholder stands for attached just before this text"
      : `, with its ${count} media items attached just before this text, in the order of its [media ...] placeholders`

/** See `Compaction.SummaryInput`. */
export interface SummaryInput {
  readonly task: ReadonlyArray<Part>
  readonly previousSummary: Option.Option<string>
  readonly rounds: ReadonlyArray<ReadonlyArray<Part>>
  readonly pieceBytes: number
  /** The longest summary kept, in UTF-8 bytes; a longer answer is cut ({@link boundSummary}). No bound when absent. */
  readonly summaryBytes?: number
  /** The requests' system instruction; the library's ({@link summaryInstruction}) when absent. */
  readonly instruction?: string
}

/**
 * The note that ends a summary cut to its limit.
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summaryCutNote = (keptBytes: number, totalBytes: number, limit: number): string =>
  `\n[summary cut: the model wrote ${totalBytes} bytes; the summary limit is ${limit} bytes, so only the first ${keptBytes} are kept]`

/**
 * A summary answer bounded to `maxBytes` UTF-8 bytes: unchanged when it
 * fits, else its longest prefix (between graphemes) followed by
 * {@link summaryCutNote}, together at most `maxBytes` (or the note alone,
 * when the limit is shorter than the note).
 *
 * @since 0.1.0
 * @category summarizing
 */
export const boundSummary = (answer: string, maxBytes: number): string =>
  cutWithNote(answer, maxBytes, (kept, total) => summaryCutNote(kept, total, maxBytes))?.text ?? answer

/** See `Compaction.SummaryOutcome`. */
export interface SummaryOutcome {
  readonly text: string
  readonly requests: number
}

/**
 * Which summary request of a summary this is: zero-based `index` of `count`.
 *
 * @since 0.1.0
 * @category summarizing
 */
export interface SummaryPiece {
  readonly index: number
  readonly count: number
}

/**
 * `generate` with every answered summary request journaled as its own
 * `SummaryRequestAnswered` entry (piece, answer size, the provider's usage
 * and finish reason), so a task's token total counts summary requests too.
 * A request that fails is not journaled (it has no usage to account).
 *
 * @since 0.1.0
 * @category summarizing
 */
export const journaledSummaryRequests =
  <E, R>(
    generate: (request: ModelRequest) => Effect.Effect<ModelResponse, E, R>,
    journal: Journal["Service"],
    at: { readonly operation: string; readonly step?: number; readonly turn?: number }
  ) =>
  (
    request: ModelRequest,
    piece: SummaryPiece
  ): Effect.Effect<ModelResponse, E | JournalIoError | JournalSequenceError, R> =>
    Effect.tap(generate(request), (response) =>
      journal.append({
        _tag: "SummaryRequestAnswered",
        ...(at.turn === undefined ? {} : { turn: at.turn }),
        ...(at.step === undefined ? {} : { step: at.step }),
        operation: at.operation,
        piece: piece.index + 1,
        pieces: piece.count,
        textSize: ArtifactPointer.utf8Length(response.text),
        ...(response.usage === undefined ? {} : { usage: response.usage }),
        ...(response.finishReason === undefined ? {} : { finishReason: response.finishReason })
      })
    )

/**
 * {@link summarize} with an explicit `generate` (a wrapped or instrumented
 * model). Sends exactly one request per piece, in order, each building on
 * the summary so far (starting from `previousSummary`); returns the final
 * summary text and how many requests were sent. The pieces are
 * {@link summaryHistoryPieces} (the texts of {@link summaryPieces}): what
 * the model wrote is held to the piece limit, so it costs a few requests per
 * part at most, whatever its size, and each request carries its piece's
 * media as the history's own parts ({@link summaryRequest}). With
 * `summaryBytes`, every answer is bounded ({@link boundSummary}) before the
 * next request builds on it, so the previous summary a request carries is
 * never longer than that.
 * A request that fails (an error or a defect) fails the summary with its
 * error scrubbed by the host's `ArtifactRedactor`, when one is provided,
 * deeply (see `TaskExecution.scrubThrown`, the one scrub): the provider's
 * text echoes the history being summarized.
 *
 * @since 0.1.0
 * @category summarizing
 */
export const summarizeWith = <E, R>(
  generate: (request: ModelRequest, piece: SummaryPiece) => Effect.Effect<ModelResponse, E, R>,
  input: SummaryInput
): Effect.Effect<SummaryOutcome, E, R> =>
  summarizing(generate, input).pipe(
    Observability.withSpan("Compaction.summarize", () => ({
      attributes: { "tessera.summary.rounds": input.rounds.length }
    }))
  )

const timeSummaryRequest = Observability.timeModelRequest("summary")

// One span per summary request, beside the model step's own: sizes, never the piece or the answer. The piece's
// size stands for the request's: measuring the whole request would hash it.
const summaryRequestSpan = <E, R>(
  index: number,
  count: number,
  pieceBytes: number,
  generate: Effect.Effect<ModelResponse, E, R>
): Effect.Effect<ModelResponse, E, R> =>
  timeSummaryRequest(generate).pipe(
    Effect.tap((response) =>
      Effect.andThen(
        Observability.annotate("tessera.response.size", ArtifactPointer.utf8Length(response.text)),
        Observability.recordUsage("summary", Observability.usageOf(response))
      )
    ),
    Observability.withSpan("Compaction.summaryRequest", () => ({
      kind: "client",
      attributes: {
        "gen_ai.operation.name": "chat",
        "tessera.summary.piece": index + 1,
        "tessera.summary.pieces": count,
        "tessera.summary.piece.size": pieceBytes
      }
    }))
  )

// Defined once rather than as a generator function created per call (see `modelStep` in `Executor.ts`).
const summarizing = Effect.fnUntraced(function* <E, R>(
  generate: (request: ModelRequest, piece: SummaryPiece) => Effect.Effect<ModelResponse, E, R>,
  input: SummaryInput
): Effect.fn.Return<SummaryOutcome, E, R> {
  const all = sizedPieces(input.rounds, input.pieceBytes, summaryRendering(input.pieceBytes))
  let summary = input.previousSummary
  for (let index = 0; index < all.length; index++) {
    const piece = all[index]?.text ?? ""
    const media = all[index]?.media ?? []
    const response = yield* summaryRequestSpan(
      index,
      all.length,
      all[index]?.bytes ?? 0,
      // A provider's error echoes the request, and so the history being summarized: it is scrubbed before the
      // spans record it and before it reaches the caller (the executor, an adapter's loop, `summarize`'s caller).
      scrubFailures(
        generate(
          summaryRequest({
            task: input.task,
            previousSummary: summary,
            piece,
            index,
            count: all.length,
            media,
            ...(input.instruction === undefined ? {} : { instruction: input.instruction })
          }),
          { index, count: all.length }
        )
      )
    )
    summary = Option.some(
      input.summaryBytes === undefined ? response.text : boundSummary(response.text, input.summaryBytes)
    )
  }
  yield* Observability.annotate("tessera.summary.requests", all.length)
  return { text: Option.getOrElse(summary, () => ""), requests: all.length }
})

/** See `Compaction.summarize`. */
export const summarize = (input: SummaryInput): Effect.Effect<SummaryOutcome, ModelError, Model> =>
  Effect.flatMap(Summarizer.current, (summarizer) =>
    summarizeWith(summarizer.model.generate, { instruction: summarizer.instruction, ...input })
  )
