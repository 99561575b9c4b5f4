/**
 * The history a turn builds its requests from, as an explicit value.
 *
 * A history keeps the user's original task apart from everything that
 * happened since, so that whatever rewrites the history (compaction) can keep
 * the task in every request, and it groups parts into rounds so that a tool
 * call and its result are never separated.
 *
 * @since 0.1.0
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Volume from "@tessera/core/Volume"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  carriedParts,
  type ForeignCarried,
  type ForeignContent,
  type ForeignFile,
  type ForeignItem,
  type ForeignMessage,
  type ForeignOrigin,
  type ForeignRole,
  type ForeignRun,
  messageParts,
  type PromptFields,
  type PromptMessage,
  type PromptPart,
  promptReader as readerOf,
  foreignRuns as runsOf,
  withoutAnsweredCarries as unansweredCarries
} from "./internal/foreignMessages.ts"
import type { ModelResponse, Part, ToolCallPart } from "./Model.ts"
import { Part as PartSchema, text } from "./Model.ts"

/**
 * `task`: the parts that state the task (system prompt, the user's request,
 * attached media); they open every request. `parts`: what followed, in order.
 *
 * @since 0.1.0
 * @category models
 */
export interface History {
  readonly task: ReadonlyArray<Part>
  readonly parts: ReadonlyArray<Part>
  /**
   * The summary standing in for compacted history, when there is one: the
   * parts that open every request (a reference to the summary file, then
   * its text) and the text itself, which the next summary builds on.
   */
  readonly summary?: HistorySummary
}

/**
 * A summary held by a history.
 *
 * @since 0.1.0
 * @category models
 */
export interface HistorySummary {
  readonly parts: ReadonlyArray<Part>
  readonly text: string
  /**
   * The staged file the summary's text is, when it is one: where it lies on
   * the private volume, and the size and SHA-256 of its bytes, as the
   * write that staged it (or the read that verified it) found them. A
   * transcript names the file by this digest instead of hashing the text
   * again. Absent for a summary built by hand.
   */
  readonly file?: SummaryFile
}

/**
 * A staged summary file as a history holds it: its volume, its path there,
 * and the size and SHA-256 of its bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface SummaryFile {
  readonly volume: Volume.VolumeRef
  readonly path: string
  readonly size: number
  readonly sha256: string
}

const withParts = (history: History, parts: ReadonlyArray<Part>): History =>
  history.summary === undefined
    ? { task: history.task, parts }
    : { task: history.task, parts, summary: history.summary }

/**
 * A history holding only the task.
 *
 * @example
 * ```ts
 * import { History, Model } from "@tessera/runtime"
 *
 * // The task's parts open the history; the turn appends the model's and the tools' parts after them.
 * export const history = History.make([Model.text("user", "Summarize the north report.")])
 *
 * console.log(History.toParts(history).length) // 1
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (task: ReadonlyArray<Part>): History => ({ task, parts: [] })

/**
 * Appends parts after the existing ones.
 *
 * @since 0.1.0
 * @category combinators
 */
export const append = (history: History, parts: ReadonlyArray<Part>): History =>
  withParts(history, [...history.parts, ...parts])

/**
 * A conversation another library keeps (an AI SDK prompt, an Effect AI
 * prompt, Pi's messages) as a history: every message up to and including
 * the first user message is the task, which opens every request and is
 * never summarized; everything after it is history. The rule every adapter
 * follows, stated here once; `partsOf` converts one message.
 *
 * `carried`, when given, names parts a message carries besides its own
 * (`of`, such as the files inside tool results): they are placed after the
 * run of messages `within` holds for (the tool messages), never among them,
 * so they cannot open a round that separates later calls from their
 * results.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromMessages = <M>(
  messages: Iterable<M>,
  isUser: (message: M) => boolean,
  partsOf: (message: M) => ReadonlyArray<Part>,
  carried?: {
    readonly of: (message: M) => ReadonlyArray<Part>
    readonly within: (message: M) => boolean
  }
): History => {
  const task: Array<Part> = []
  const parts: Array<Part> = []
  let taskDone = false
  let held: Array<Part> = []
  const release = () => {
    for (const part of held) (taskDone ? parts : task).push(part)
    held = []
  }
  for (const message of messages) {
    if (carried !== undefined && held.length > 0 && !carried.within(message)) release()
    const target = taskDone ? parts : task
    for (const part of partsOf(message)) target.push(part)
    if (carried !== undefined) held.push(...carried.of(message))
    if (isUser(message)) taskDone = true
  }
  release()
  return append(make(task), parts)
}

/**
 * The neutral shapes of another library's messages, which {@link fromForeign}
 * reads and {@link foreignRuns} renders (declared in the package's internals):
 *
 * - {@link ForeignMessage}: the library's own message, its role, its items in
 *   order and the files its tool results carry. An adapter's converter is
 *   only the mapping from its library's message to this shape.
 * - {@link ForeignRole}: who sent it; `custom` is a message kind the
 *   library's core does not know (an app's own), read as the user's without
 *   ending the task.
 * - {@link ForeignItem}: one item, the library's own object and what it
 *   says ({@link ForeignContent}): text (a text, reasoning or thinking block,
 *   or the stand-in of anything else), a tool call, a tool result (its text
 *   as the model reads it), or a file with the text that stands in for it
 *   where it cannot be media.
 * - {@link ForeignFile}: a file's media type, its inline data as base64
 *   (`undefined` when the provider fetches or reads it otherwise) and the
 *   library's provider options object; {@link ForeignCarried}: a file inside
 *   a tool result's output, with the call whose result carries it.
 * - {@link ForeignOrigin}: where a part made by {@link fromForeign} came
 *   from: the message's role (`user` for a carried file), the library's own
 *   item, its message (none for a carried file) and, for a carried file, the
 *   call carrying it.
 * - {@link ForeignRun}: one message {@link foreignRuns} renders: its role,
 *   the message it came from (none for parts Tessera made), its items.
 * - {@link PromptMessage}: the prompt shape the AI SDK and Effect AI share,
 *   which {@link promptReader} reads (a system message's text, or the
 *   `type`-tagged parts of a user, assistant or tool message);
 *   {@link PromptPart}: its parts; {@link PromptFields}: where a library
 *   keeps each fact of them (a text's text, a call's and a result's fields,
 *   the files a result carries, a file's data, and by type what a part only
 *   that library has says, `others`).
 *
 * @since 0.1.0
 * @category foreign messages
 */
export type {
  ForeignCarried,
  ForeignContent,
  ForeignFile,
  ForeignItem,
  ForeignMessage,
  ForeignOrigin,
  ForeignRole,
  ForeignRun,
  PromptFields,
  PromptMessage,
  PromptPart
}

/**
 * The reader of one library's prompt messages as {@link ForeignMessage}s
 * (for {@link fromForeign}), the mapping rules stated once for every
 * adapter whose prompt has {@link PromptMessage}'s shape, so that they map
 * the same parts alike:
 *
 * - a system message is one text item, its text;
 * - a `text` or `reasoning` part is text, a `tool-call` a call, a
 *   `tool-result` a result, a `file` a file whose stand-in is
 *   `[file <media type>]`;
 * - a part of any other type is what `fields.others` says for its type,
 *   and without an entry the text stand-in `[<type>]`;
 * - a tool message carries the files `fields.resultFiles` finds in its
 *   results, each with its result's call.
 *
 * Every item is the library's own part (a system message's, its text), so
 * {@link foreignRuns} renders it as the very original. `fields` states only
 * where the library keeps each fact ({@link PromptFields}).
 *
 * @since 0.1.0
 * @category foreign messages
 */
export const promptReader: <M extends PromptMessage>(
  fields: PromptFields<PromptPart<M>>
) => (message: M) => ForeignMessage<M, PromptPart<M> | string> = readerOf

/**
 * A conversation another library keeps, as a history, with the origin of
 * every part made from it and the own parts of each message.
 *
 * @since 0.1.0
 * @category foreign messages
 */
export interface ForeignHistory<M, I> {
  readonly history: History
  readonly origins: WeakMap<Part, ForeignOrigin<M, I>>
  /** Each message's own parts (not the files its results carry), in order. */
  readonly messageParts: ReadonlyMap<M, ReadonlyArray<Part>>
}

/**
 * The one bridge from another library's conversation (mapped to
 * {@link ForeignMessage}s) to a history, every adapter's:
 *
 * - the task is every message up to and including the first `user` one
 *   ({@link fromMessages});
 * - a text item is a `Text` part of the message's speaker (`assistant` for
 *   the assistant's, `system` for a system message's, `user` for every
 *   other), a call a `ToolCall`, a result a `ToolResult`;
 * - a file is a `Media` part (role `user`, base64 data, the library's own
 *   provider options object) only in a user message and only with inline
 *   data; any other file is its stand-in text, of the message's speaker;
 * - the files a tool message's results carry (inline data only) are user
 *   `Media` parts placed after the run of tool messages, never among them
 *   (see {@link fromMessages}'s `carried`);
 * - every part made remembers its origin (the item as the library's own
 *   object), so {@link foreignRuns} renders it as the very original.
 *
 * @since 0.1.0
 * @category foreign messages
 */
export const fromForeign = <M, I>(messages: Iterable<ForeignMessage<M, I>>): ForeignHistory<M, I> => {
  const origins = new WeakMap<Part, ForeignOrigin<M, I>>()
  const ownParts = new Map<M, ReadonlyArray<Part>>()
  const history = fromMessages(
    messages,
    (message) => message.role === "user",
    (message) => {
      const own = messageParts(message, origins)
      ownParts.set(message.message, own)
      return own
    },
    { of: (message) => carriedParts(message, origins), within: (message) => message.role === "tool" }
  )
  return { history, origins, messageParts: ownParts }
}

/**
 * One foreign message's parts as the library sends them: its own parts
 * (as {@link fromForeign} makes them), then the files its results carry,
 * in place. For measuring a request as it is sent, not for a history.
 *
 * @since 0.1.0
 * @category foreign messages
 */
export const foreignParts = <M, I>(message: ForeignMessage<M, I>): ReadonlyArray<Part> => {
  const origins = new WeakMap<Part, ForeignOrigin<M, I>>()
  return [...messageParts(message, origins), ...carriedParts(message, origins)]
}

/**
 * `parts` without the carried files (from {@link fromForeign}) whose call
 * has a result among them: that result, or what replaced it, is how the
 * conversation carries them.
 *
 * @since 0.1.0
 * @category foreign messages
 */
export const withoutAnsweredCarries: <M, I>(
  parts: ReadonlyArray<Part>,
  origins: WeakMap<Part, ForeignOrigin<M, I>>
) => ReadonlyArray<Part> = unansweredCarries

/**
 * Parts (a history's, or a summary request's) as runs of foreign messages,
 * the way back of {@link fromForeign}. A part that came from a message is
 * its original item, in a run of that message: messages are never merged,
 * so a conversation nothing was replaced in comes back as the same
 * messages and items. A part Tessera made (a summary reference, an
 * offloaded result) is `render`ed into a run of its role (a result's is
 * `tool`, a call's `assistant`, any other part's its own role) with the
 * made parts next to it; an offloaded result joins the open tool run. A
 * carried file is left out while its call has a result among `parts`;
 * without one (a summary request) it is its original item, in a user run.
 *
 * @since 0.1.0
 * @category foreign messages
 */
export const foreignRuns: <M, I>(
  parts: ReadonlyArray<Part>,
  origins: WeakMap<Part, ForeignOrigin<M, I>>,
  render: (part: Part) => I
) => Array<ForeignRun<M, I>> = runsOf

/**
 * The parts a model response adds to a history: its text (when not empty)
 * as the assistant's, then its tool calls. The executor appends exactly
 * these after each step, and a transcript rebuilds a step from them.
 *
 * @since 0.1.0
 * @category combinators
 */
export const responseParts = (response: Pick<ModelResponse, "text" | "toolCalls">): ReadonlyArray<Part> =>
  response.text.length > 0 ? [text("assistant", response.text), ...response.toolCalls] : response.toolCalls

/**
 * The parts of the next request: the task's leading system messages, the
 * summary (when history was compacted), the rest of the task, then
 * everything that followed. System messages open every request, compacted
 * or not: providers that require them first, and the model's
 * instruction-following, see them before any summary. The part objects are
 * the history's own (not copies).
 *
 * @example
 * ```ts
 * import { History, Model } from "@tessera/runtime"
 *
 * const history = History.append(History.make([Model.text("user", "Check both reports.")]), [
 *   Model.toolCall("c1", "fetch_report", { name: "north" }),
 *   Model.toolResult({ callId: "c1", name: "fetch_report", content: "all nominal", isError: false })
 * ])
 *
 * // The parts in the order the model sees them: the task's, then the rest (a summary in place of compacted rounds).
 * for (const part of History.toParts(history)) console.log(part._tag) // "Text", "ToolCall", "ToolResult"
 * ```
 *
 * @since 0.1.0
 * @category getters
 */
export const toParts = (history: History): ReadonlyArray<Part> => {
  if (history.summary === undefined) return [...history.task, ...history.parts]
  const leading = leadingSystemCount(history.task)
  return leading === 0
    ? [...history.summary.parts, ...history.task, ...history.parts]
    : [...history.task.slice(0, leading), ...history.summary.parts, ...history.task.slice(leading), ...history.parts]
}

const leadingSystemCount = (task: ReadonlyArray<Part>): number => {
  let count = 0
  while (count < task.length) {
    const part = task[count] as Part
    if (part._tag !== "Text" || part.role !== "system") break
    count++
  }
  return count
}

/**
 * The text of the history's current summary, if it has one.
 *
 * @since 0.1.0
 * @category getters
 */
export const summaryText = (history: History): Option.Option<string> =>
  history.summary === undefined ? Option.none() : Option.some(history.summary.text)

type Kind = "input" | "assistant" | "result"

const kindOf = (part: Part): Kind =>
  part._tag === "ToolResult"
    ? "result"
    : part._tag === "ToolCall" || (part._tag === "Text" && part.role === "assistant")
      ? "assistant"
      : "input"

/**
 * Splits `parts` (not the task) into rounds: a run of input parts, or a run
 * of model output (text and tool calls) together with the tool results that
 * follow it. Tool results always stay in the round of the output before
 * them, so replacing whole rounds never separates a call from its result.
 *
 * @since 0.1.0
 * @category getters
 */
export const rounds = (history: History): ReadonlyArray<ReadonlyArray<Part>> => {
  const out: Array<Array<Part>> = []
  let lastKind: Kind | undefined
  for (const part of history.parts) {
    const kind = kindOf(part)
    const current = out.at(-1)
    const joins = current !== undefined && (kind === "result" || kind === lastKind)
    if (joins) current.push(part)
    else out.push([part])
    lastKind = kind
  }
  return out
}

/**
 * Replaces the first `count` rounds by `replacement` (for example a pointer
 * to a summary of them). The task is kept. `count` is clamped to the number
 * of rounds.
 *
 * @since 0.1.0
 * @category combinators
 */
export const replaceLeadingRounds = (history: History, count: number, replacement: ReadonlyArray<Part>): History =>
  withParts(history, [...replacement, ...dropLeadingRounds(history, count)])

const dropLeadingRounds = (history: History, count: number): ReadonlyArray<Part> => {
  const all = rounds(history)
  return all.slice(Math.max(0, Math.min(count, all.length))).flat()
}

/**
 * Replaces the first `count` rounds by a summary of them (and of the
 * previous summary, which it supersedes). The task is kept; the summary's
 * parts open every later request.
 *
 * @since 0.1.0
 * @category combinators
 */
export const summarizeLeadingRounds = (history: History, count: number, summary: HistorySummary): History => ({
  task: history.task,
  parts: dropLeadingRounds(history, count),
  summary
})

/**
 * Tool calls in `parts` that have no result after them, in order. A turn is
 * resumable from a history exactly when these are the calls the journal
 * still owes.
 *
 * @since 0.1.0
 * @category getters
 */
export const unansweredCalls = (history: History): ReadonlyArray<ToolCallPart> => {
  // A result answers the earliest open call with its id before it: models that number their calls per
  // response (call ids repeated turn after turn) must not have a later call taken for answered.
  const open: Array<ToolCallPart> = []
  for (const part of history.parts) {
    if (part._tag === "ToolCall") open.push(part)
    else if (part._tag === "ToolResult") {
      const answered = open.findIndex((call) => call.id === part.callId)
      if (answered >= 0) open.splice(answered, 1)
    }
  }
  return open
}

/**
 * The Schema of a {@link HistorySummary}.
 *
 * @since 0.1.0
 * @category codec
 */
export const HistorySummarySchema = Schema.Struct({
  parts: Schema.Array(PartSchema),
  text: Schema.String,
  file: Schema.optionalKey(
    Schema.Struct({ volume: Volume.VolumeRef, path: Schema.String, size: Schema.Number, sha256: Schema.String })
  )
})

/**
 * The Schema of a {@link History}: its task, its parts and its summary
 * (when it has one), every part as `Model.Part` describes it. Decoding
 * yields a history equal to the one encoded (same parts, same order, same
 * fields), so a request built from it has the same digest.
 *
 * @since 0.1.0
 * @category codec
 */
export const HistorySchema = Schema.Struct({
  task: Schema.Array(PartSchema),
  parts: Schema.Array(PartSchema),
  summary: Schema.optionalKey(HistorySummarySchema)
})

/**
 * A history as JSON text, for a host that exports a conversation and
 * imports it later (or elsewhere).
 *
 * @since 0.1.0
 * @category codec
 */
export const HistoryJson = Schema.fromJsonString(HistorySchema)

const encodeJson = Schema.encodeEffect(HistoryJson)
const decodeJson = Schema.decodeUnknownEffect(HistoryJson)

/**
 * Exports a history as JSON text ({@link HistoryJson}). Fails
 * `InvalidInput` (field `history`) when a part is not what `Model.Part`
 * describes (for example provider options JSON cannot hold).
 *
 * @example
 * ```ts
 * import { History, Model } from "@tessera/runtime"
 * import { Effect } from "effect"
 *
 * // Export a conversation (to hand to another process or store beside the task) and read it back.
 * export const roundTrip = Effect.gen(function* () {
 *   const json = yield* History.toJson(History.make([Model.text("user", "Hello.")]))
 *   const back = yield* History.fromJson(json)
 *   return History.toParts(back).length // 1
 * })
 * ```
 *
 * @since 0.1.0
 * @category codec
 */
export const toJson = (history: History): Effect.Effect<string, InvalidInput.InvalidInput> =>
  encodeJson(history).pipe(
    Effect.mapError(
      (issue) =>
        new InvalidInput.InvalidInput({
          entry: "History.toJson",
          field: "history",
          value: InvalidInput.renderValue(history),
          detail: issue.message
        })
    )
  )

/**
 * Imports a history exported by {@link toJson}. Fails `InvalidInput` (field
 * `json`) naming what does not decode.
 *
 * @example
 * ```ts
 * import { History } from "@tessera/runtime"
 * import { Effect } from "effect"
 *
 * // Text that is not a history fails `InvalidInput` naming what is wrong; nothing half-decoded comes back.
 * export const refused = History.fromJson('{"task": "not a list"}').pipe(
 *   Effect.flip,
 *   Effect.map((error) => error._tag) // "InvalidInput"
 * )
 * ```
 *
 * @since 0.1.0
 * @category codec
 */
export const fromJson = (json: string): Effect.Effect<History, InvalidInput.InvalidInput> =>
  decodeJson(json).pipe(
    Effect.mapError(
      (issue) =>
        new InvalidInput.InvalidInput({
          entry: "History.fromJson",
          field: "json",
          value: InvalidInput.renderValue(json),
          detail: issue.message
        })
    )
  )
