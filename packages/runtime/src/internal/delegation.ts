/**
 * Delegation: a parent task's `delegate` tool runs each sub-task as a child
 * task of its own, for a child agent the host offers, on a host's child
 * harness (`ChildHarness`: the child's own scope, private volume and
 * journal). The child's answer is the call's result, so it reaches the
 * parent through the parent's own result pipeline (offloaded to the
 * parent's private volume when large, scrubbed); nothing else of the child
 * does. `Delegation` states the contract.
 */

import type * as DurableFiles from "@tessera/core/DurableFiles"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as EntryGate from "../EntryGate.ts"
import * as History from "../History.ts"
import { Journal, type JournalIoError, type JournalSequenceError, openTurn, readEntries } from "../Journal.ts"
import { totalUsage } from "../JournalEntry.ts"
import * as Model from "../Model.ts"
import * as Tool from "../Tool.ts"
import * as ToolResults from "../ToolResults.ts"
import { ChildBindingMismatch } from "./childBinding.ts"
import { publishTool, type Received, receive } from "./childOutput.ts"

// The child's binding and the output binding's half of the contract, offered with the tool.
export { bindChild, ChildBindingMismatch, childVolumes } from "./childBinding.ts"
export {
  maxPublishedBytes,
  PublishedArtifactChanged,
  PublishProblem,
  PublishRefused,
  publishToolName
} from "./childOutput.ts"

import { type CallPosition, CurrentCall, CurrentCallAwaiting } from "./currentCall.ts"
import { type DelegatedDecision, delegatedDecision, forward } from "./delegatedApprovals.ts"
import { measureText, sha256Bytes } from "./digest.ts"
import { restoreHistory, resume } from "./durableTurns.ts"
import type { ExecutionConfig } from "./gatedTurn.ts"
import { entriesOf } from "./journalWriter.ts"
import { runTurn } from "./turnEntries.ts"

/** See `Delegation.ChildAgent`. */
export interface ChildAgent<R = never> {
  readonly agent: string
  readonly description: string
  readonly tools?: ReadonlyArray<Tool.Tool<R>>
  readonly maxSteps?: number
  readonly timeLimit?: Duration.Input
  readonly children?: ReadonlyArray<ChildAgent<R>>
}

/** See `Delegation.Limits`. */
export interface Limits {
  readonly maxChildren?: number
  readonly maxConcurrent?: number
  readonly maxDepth?: number
}

/** See `Delegation.defaultLimits`. */
export const defaultLimits = { maxChildren: 4, maxConcurrent: 2, maxDepth: 2 } as const

/** See `Delegation.defaultChildSteps`. */
export const defaultChildSteps = 8

/** See `Delegation.toolName`. */
export const toolName = "delegate"

/** See `Delegation.ChildHarness`. */
export interface ChildHarness<E, R, Provided> {
  readonly withChild: <A, E2, R2>(
    parent: EntryGate.TaskBinding,
    child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId },
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E2, R2>
  ) => Effect.Effect<A, E | E2, Exclude<R2, Provided> | R>
  /**
   * Types only, never present: what `tool` reads the harness's error, requirement and provided types from (a
   * generic `withChild` alone gives inference nothing to match).
   */
  readonly "~tessera/ChildHarness"?: {
    readonly error: (_: never) => E
    readonly requires: (_: never) => R
    readonly provides: (_: never) => Provided
  }
}

/** The types a child harness declares (its `"~tessera/ChildHarness"`), read by `tool`. */
type Declared<H> = NonNullable<H extends { readonly "~tessera/ChildHarness"?: infer T } ? T : never>
type ErrorOf<H> = Declared<H> extends { readonly error: (_: never) => infer E } ? E : never
type RequiresOf<H> = Declared<H> extends { readonly requires: (_: never) => infer R } ? R : never
type ProvidesOf<H> = Declared<H> extends { readonly provides: (_: never) => infer P } ? P : never

const entry = "Delegation.tool"

/**
 * The offers of a host, checked as a JavaScript caller may pass them: each
 * agent an identifier (it names the child's volume and journal), offered
 * once, with a description; the limits whole numbers of at least 1.
 */
const refuse = (field: string, value: unknown, detail: string) =>
  new InvalidInput.InvalidInput({ entry, field, value: InvalidInput.renderValue(value), detail })

const checkLimits = (limits: Limits) =>
  Effect.gen(function* () {
    for (const field of ["maxChildren", "maxConcurrent", "maxDepth"] as const) {
      const value: unknown = limits[field]
      if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= 1)) {
        return yield* refuse(`limits.${field}`, value, "expected a whole number of at least 1")
      }
    }
  })

/**
 * A level of offers, checked as a JavaScript caller may pass them, and every level below it: each agent an
 * identifier (it names the child's volume and journal), offered once per level, with a description, a time
 * limit Effect can read, and offers of its own no deeper than `maxDepth` levels below the task.
 */
const checkOffers = <R>(
  children: ReadonlyArray<ChildAgent<R>>,
  depth: number,
  maxDepth: number,
  field = "children"
): Effect.Effect<ReadonlyArray<Ids.AgentId>, InvalidInput.InvalidInput> =>
  Effect.gen(function* () {
    if (!Array.isArray(children) || children.length === 0) {
      return yield* refuse(field, children, "expected at least one child agent to offer")
    }
    if (depth > maxDepth) {
      return yield* refuse(
        field,
        children.map((child) => child?.agent),
        `deeper than limits.maxDepth (${maxDepth})`
      )
    }
    const agents: Array<Ids.AgentId> = []
    for (const [index, child] of children.entries()) {
      const at = `${field}[${index}]`
      const agent = yield* InvalidInput.decode(Ids.AgentId, entry, `${at}.agent`)(child?.agent)
      if (agents.includes(agent)) return yield* refuse(`${at}.agent`, agent, "offered twice")
      if (typeof child.description !== "string" || child.description.length === 0) {
        return yield* refuse(`${at}.description`, child.description, "expected what the agent does")
      }
      if (child.timeLimit !== undefined && Option.isNone(Duration.fromInput(child.timeLimit))) {
        return yield* refuse(`${at}.timeLimit`, child.timeLimit, "expected a duration")
      }
      if (child.children !== undefined) yield* checkOffers(child.children, depth + 1, maxDepth, `${at}.children`)
      agents.push(agent)
    }
    return agents
  })

/**
 * The child task of the `index`-th sub-task of a call: named after the
 * call's place in the parent's journal (task, turn, step, call id), so the
 * same call run again on resume finds the same children, and two calls
 * never share one.
 */
export const childTaskId = Effect.fnUntraced(function* (
  position: { readonly task: Ids.TaskId; readonly turn: number; readonly step: number; readonly callId: string },
  index: number
) {
  const key = JSON.stringify([position.task, position.turn, position.step, position.callId, index])
  const digest = yield* sha256Bytes(new TextEncoder().encode(key))
  return Ids.TaskId.make(`${position.task.slice(0, 96)}-child-${digest.slice(0, 24)}`)
})

const describeOutcome = (outcome: ChildOutcome): string => {
  switch (outcome._tag) {
    case "Answered":
      return outcome.text
    case "AwaitingApproval":
      return "gave no answer: it waits for an approval"
    case "TimedOut":
      return `gave no answer: it ran out of time (${outcome.limit}) and its turn was abandoned`
    case "Failed":
      return `gave no answer: it failed (${outcome.reason}): ${outcome.detail}`
  }
}

/** A child's part of the call's result: its label, its answer, and a line per file it published. */
const answerText = (answer: {
  readonly agent: Ids.AgentId
  readonly task: Ids.TaskId
  readonly outcome: ChildOutcome
  readonly received: ReadonlyArray<Received>
}): string =>
  [
    `[${answer.agent}, task ${answer.task}] ${describeOutcome(answer.outcome)}`,
    // The shown text (a pointer, or the file itself) on lines of its own: a pointer line is read as one.
    ...answer.received.map((file) => `published ${file.name} (${file.size} bytes):\n${file.shown}`)
  ].join("\n")

/** How a child's turn ended, as the call's result and the parent's journal say it. */
export type ChildOutcome =
  | { readonly _tag: "Answered"; readonly text: string }
  | { readonly _tag: "AwaitingApproval"; readonly calls: ReadonlyArray<string> }
  | { readonly _tag: "TimedOut"; readonly limit: string }
  | { readonly _tag: "Failed"; readonly reason: string; readonly detail: string }

/**
 * A child within its time limit: past it, the child (its turn and its hold on its journal) is interrupted, so its
 * turn is abandoned, and the call says so. What it spent stays in its own journal.
 */
const timed = <A, E, R, E2, R2>(
  child: Effect.Effect<A, E, R>,
  limit: Duration.Input | undefined,
  onTimeout: (outcome: ChildOutcome) => Effect.Effect<A, E2, R2>
): Effect.Effect<A, E | E2, R | R2> =>
  limit === undefined
    ? child
    : Effect.timeoutOrElse(child, {
        duration: limit,
        orElse: () => onTimeout({ _tag: "TimedOut", limit: Duration.format(Duration.fromInputUnsafe(limit)) })
      })

/**
 * What a child's journal says it spent, read once the child let go of it (interrupted): the hosts keep a
 * delegation's journals in one folder, so it is the parent's journal's. A child that wrote none (its time ran out
 * before its first entry), or a host that keeps it elsewhere, spent nothing the parent can count.
 */
const spentBy = (parentJournal: Journal["Service"], task: Ids.TaskId) =>
  Effect.gen(function* () {
    const path = yield* Path.Path
    const entries = yield* readEntries({ folder: path.dirname(parentJournal.file), task })
    return totalUsage(entries).withChildren
  }).pipe(Effect.orElseSucceed((): Model.Usage => ({})))

const answerOf = (
  outcome:
    | { readonly _tag: "Answered"; readonly text: string }
    | {
        readonly _tag: "AwaitingApproval"
        readonly awaiting: ReadonlyArray<{ readonly call: { readonly id: string } }>
      }
): ChildOutcome =>
  outcome._tag === "Answered"
    ? { _tag: "Answered", text: outcome.text }
    : { _tag: "AwaitingApproval", calls: outcome.awaiting.map((pending) => pending.call.id) }

/** The text of the last assistant message of a conversation (a child's answer as its journal keeps it). */
const lastAnswer = (history: History.History): ChildOutcome => {
  const parts = History.toParts(history)
  for (let index = parts.length - 1; index >= 0; index--) {
    const part = parts[index]
    if (part?._tag === "Text" && part.role === "assistant") return { _tag: "Answered", text: part.text }
  }
  return { _tag: "Answered", text: "" }
}

/** See `Delegation.SubTask`. */
export interface SubTask {
  readonly agent: Ids.AgentId
  readonly task: Ids.TaskId
  readonly instruction: string
}

/** Where a delegate call is in the parent's journal. */
type Position = CallPosition

/** See `Delegation.ChildTurn`. */
export interface ChildTurn<R, RTurn> {
  readonly config: ExecutionConfig<never, RTurn>
  /** The child's own offers, when its offer lists children: its `delegate` is their tool. */
  readonly offers: Option.Option<Offers<R, RTurn>>
}

/** What receiving a child's answer reads and writes through: the child's journal and the platform. */
export type AnswerServices = Journal | DurableFiles.DurableFiles | FileSystem.FileSystem | Path.Path

/** See `Delegation.Offers`. */
export interface Offers<R, RTurn> {
  readonly tool: Tool.Tool<R>
  readonly plan: (
    position: Position,
    input: unknown
  ) => Effect.Effect<ReadonlyArray<SubTask>, InvalidInput.InvalidInput>
  readonly childTurn: (child: EntryGate.TaskBinding, agent: Ids.AgentId) => Effect.Effect<ChildTurn<R, RTurn>>
  readonly delegated: (
    parentJournal: Journal["Service"],
    position: Position,
    subTask: SubTask,
    child: EntryGate.TaskBinding
  ) => Effect.Effect<void, ChildBindingMismatch | JournalIoError | JournalSequenceError>
  readonly answered: (
    parentJournal: Journal["Service"],
    position: Position,
    subTask: SubTask,
    child: EntryGate.TaskBinding,
    outcome: ChildOutcome
  ) => Effect.Effect<ChildPart, ReceiveError, AnswerServices>
}

/** A child's part of a delegate call's result: its text, and the calls of its own it waits for the host on. */
export interface ChildPart {
  readonly text: string
  readonly waiting: ReadonlyArray<{ readonly task: Ids.TaskId; readonly callId: string }>
}

/** What receiving a child's answer can fail with: its journal, its published files, the parent's journal. */
type ReceiveError = Effect.Error<ReturnType<typeof receive>> | Effect.Error<ReturnType<typeof readEntries>>

/** See `Delegation.offers`. */
export const offers = <H extends ChildHarness<unknown, unknown, unknown>, RChild = never>(
  given: H,
  parent: EntryGate.TaskBinding,
  children: ReadonlyArray<ChildAgent<RChild>>,
  limits: Limits = {}
) =>
  Effect.gen(function* () {
    yield* checkLimits(limits)
    const maxDepth = limits.maxDepth ?? defaultLimits.maxDepth
    yield* checkOffers(children, 1, maxDepth)
    return level(given as ChildHarness<ErrorOf<H>, RequiresOf<H>, ProvidesOf<H>>, parent, children, limits)
  })

/** See `Delegation.tool`. */
export const tool = <H extends ChildHarness<unknown, unknown, unknown>, RChild = never>(
  given: H,
  parent: EntryGate.TaskBinding,
  children: ReadonlyArray<ChildAgent<RChild>>,
  limits: Limits = {}
) => Effect.map(offers(given, parent, children, limits), (checked) => checked.tool)

/**
 * What a level's tool needs: what a child's durable turn needs (its journal and the task's platform, which the
 * harness may provide) and its tools', the harness's own, and the parent's journal.
 */
type LevelServices<R, Provided, RChild> =
  | Exclude<Journal | DurableFiles.DurableFiles | FileSystem.FileSystem | Path.Path | Model.Model | RChild, Provided>
  | R
  | Journal
  // The parent's own journal is read (a decision its children waited for) outside any child's services.
  | FileSystem.FileSystem
  | Path.Path

/** What a child's turn needs: its tools' services, the platform, and its own `delegate`'s. */
type ChildTurnServices<R, Provided, RChild> =
  | RChild
  | Journal
  | DurableFiles.DurableFiles
  | FileSystem.FileSystem
  | Path.Path
  | LevelServices<R, Provided, RChild>

/**
 * One level of offers, checked already: the steps of a delegate call (plan the sub-tasks, bind and record each
 * child, configure its turn, receive its answer), and the `delegate` tool that runs them all inside the call.
 */
const level = <E, R, Provided, RChild>(
  harness: ChildHarness<E, R, Provided>,
  parent: EntryGate.TaskBinding,
  children: ReadonlyArray<ChildAgent<RChild>>,
  limits: Limits
): Offers<LevelServices<R, Provided, RChild>, ChildTurnServices<R, Provided, RChild>> => {
  type Services = LevelServices<R, Provided, RChild>
  type TurnServices = ChildTurnServices<R, Provided, RChild>
  const agents = children.map((child) => Ids.AgentId.make(child.agent))
  const maxChildren = limits.maxChildren ?? defaultLimits.maxChildren
  const maxConcurrent = limits.maxConcurrent ?? defaultLimits.maxConcurrent
  const byAgent = new Map(agents.map((agent, index) => [agent as string, children[index] as ChildAgent<RChild>]))
  const catalogue = children.map((child) => `${child.agent}: ${child.description}`).join("; ")
  const input = Schema.Struct({
    tasks: Schema.Array(
      Schema.Struct({ agent: Schema.Literals(agents as unknown as ReadonlyArray<string>), task: Schema.String })
    ).check(Schema.isMinLength(1), Schema.isMaxLength(maxChildren))
  })
  const decodeInput = InvalidInput.decode(input, toolName, "input")
  const named = (position: Position, tasks: (typeof input.Type)["tasks"]) =>
    Effect.forEach(tasks, (subTask, index) =>
      Effect.map(
        childTaskId(position, index),
        (task): SubTask => ({ agent: Ids.AgentId.make(subTask.agent), task, instruction: subTask.task })
      )
    )
  const plan = (position: Position, given: unknown) =>
    Effect.flatMap(decodeInput(given), ({ tasks }) => named(position, tasks))
  const childTurn = (
    child: EntryGate.TaskBinding,
    agent: Ids.AgentId
  ): Effect.Effect<ChildTurn<Services, TurnServices>> =>
    Effect.sync(() => {
      const offer = byAgent.get(agent) as ChildAgent<RChild>
      // A child with offers of its own delegates in turn, under the same harness and limits.
      const own = offer.children === undefined ? undefined : level(harness, child, offer.children, limits)
      // A child bound with an output volume may publish into it, and nowhere else.
      const publish = Option.isSome(child.context.output) ? [publishTool(child)] : []
      const config: ExecutionConfig<never, TurnServices> = {
        tools: Tool.registry(...(offer.tools ?? []), ...publish, ...(own === undefined ? [] : [own.tool])),
        maxSteps: offer.maxSteps ?? defaultChildSteps,
        durable: true,
        offload: { threshold: 8_192, readTool: ToolResults.defaultReadToolName, destination: "Private" }
      }
      return { config, offers: Option.fromUndefinedOr(own) }
    })
  const delegated = (
    parentJournal: Journal["Service"],
    position: Position,
    subTask: SubTask,
    child: EntryGate.TaskBinding
  ) =>
    Effect.gen(function* () {
      // The child runs only as itself: a harness that bound another task is refused before anything is recorded.
      if (child.context.task !== subTask.task) {
        return yield* new ChildBindingMismatch({ expected: subTask.task, bound: child.context.task })
      }
      const output = Option.getOrUndefined(Option.map(child.context.output, (bound) => bound.ref))
      const { callId, step, turn } = position
      yield* parentJournal.append({
        _tag: "ChildDelegated",
        turn,
        step,
        callId,
        task: subTask.task,
        agent: subTask.agent,
        ...(output === undefined ? {} : { output })
      })
    })
  // What the child's own journal says its requests cost and what it published, for the parent's record.
  const answered = (
    parentJournal: Journal["Service"],
    position: Position,
    subTask: SubTask,
    child: EntryGate.TaskBinding,
    outcome: ChildOutcome
  ) =>
    Effect.gen(function* () {
      const journal = yield* Journal
      const entries = yield* entriesOf(journal)
      const received = yield* receive(parent, child, entries, {
        parentJournal,
        ...position,
        readTool: ToolResults.defaultReadToolName
      })
      return yield* recordAnswer(parentJournal, position, subTask, outcome, totalUsage(entries).withChildren, received)
    })
  // The inline form: the child's turn run here, inside the call, under the harness.
  const runChild = (
    parentJournal: Journal["Service"],
    position: Position,
    subTask: SubTask,
    decision: Option.Option<DelegatedDecision>
  ) =>
    harness.withChild(parent, subTask, (child) =>
      Effect.gen(function* () {
        yield* delegated(parentJournal, position, subTask, child)
        const { config } = yield* childTurn(child, subTask.agent)
        const journal = yield* Journal
        const state = yield* journal.state
        // A child the parent's crash cut short is finished from its own journal; one that answered is not run
        // again; one cancelled or out of time (its turn abandoned) starts over.
        const outcome = yield* Option.isSome(openTurn(state))
          ? Effect.andThen(
              forward(child, decision),
              Effect.map(resume(child, config), (resumed) => answerOf(resumed.outcome))
            )
          : state.turns.at(-1)?.status === "Closed"
            ? Effect.map(restoreHistory(child), (done) =>
                Option.isSome(done) ? lastAnswer(done.value) : ({ _tag: "Answered", text: "" } as ChildOutcome)
              )
            : Effect.map(runTurn(child, History.make([Model.text("user", subTask.instruction)]), config), answerOf)
        return yield* answered(parentJournal, position, subTask, child, outcome)
      })
    )
  const tool = Tool.make({
    name: toolName,
    description: `Hands sub-tasks to other agents, each working on its own, and returns their answers. Agents: ${catalogue}`,
    input,
    // Run again on resume, the call finds its children by name and finishes them; none starts twice.
    idempotent: true,
    // Declared and never true: the call goes through the approval-aware dispatch, where children that wait for
    // the host make it wait.
    needsApproval: () => false,
    handler: ({ tasks }) =>
      Effect.gen(function* () {
        const position = yield* CurrentCall
        if (Option.isNone(position)) return yield* Effect.die(new Error("delegate runs only as a dispatched call"))
        // The parent's journal, taken before a child's own is provided: the delegation is the parent's record.
        const parentJournal = yield* Journal
        // Run again after the host decided what its children waited for: the decision goes on to them.
        const decision = yield* delegatedDecision(parentJournal, position.value)
        const parts = yield* Effect.forEach(
          yield* named(position.value, tasks),
          (subTask) =>
            timed(
              runChild(parentJournal, position.value, subTask, decision),
              byAgent.get(subTask.agent)?.timeLimit,
              (timedOut) =>
                Effect.flatMap(spentBy(parentJournal, subTask.task), (usage) =>
                  recordAnswer(parentJournal, position.value, subTask, timedOut, usage, [])
                )
            ),
          { concurrency: maxConcurrent }
        )
        // Children that wait for the host make the call wait with them, where the dispatch can (the host decides
        // once, on this call, and the decision goes on to them when the call runs again).
        const waiting = parts.flatMap((part) => part.waiting)
        const awaits = yield* CurrentCallAwaiting
        if (waiting.length > 0 && Option.isSome(awaits)) awaits.value.children = waiting
        return resultText(parts)
      })
  }) as Tool.Tool<Services>
  return { tool, plan, childTurn, delegated, answered }
}

/** Records how a child ended (`ChildAnswered`: the answer's size and digest, its usage, what it published). */
const recordAnswer = (
  parentJournal: Journal["Service"],
  position: Position,
  subTask: SubTask,
  outcome: ChildOutcome,
  usage: Model.Usage,
  received: ReadonlyArray<Received>
) =>
  Effect.gen(function* () {
    const measured = yield* measureText(outcome._tag === "Answered" ? outcome.text : "")
    const { callId, step, turn } = position
    yield* parentJournal.append({
      _tag: "ChildAnswered",
      turn,
      step,
      callId,
      task: subTask.task,
      outcome: outcome._tag,
      size: measured.size,
      sha256: measured.sha256,
      usage,
      ...(received.length === 0
        ? {}
        : { published: received.map(({ name, sha256, size }) => ({ name, size, sha256 })) })
    })
    const part: ChildPart = {
      text: answerText({ agent: subTask.agent, task: subTask.task, outcome, received }),
      waiting:
        outcome._tag === "AwaitingApproval" ? outcome.calls.map((callId) => ({ task: subTask.task, callId })) : []
    }
    return part
  })

/** See `Delegation.resultText`. */
export const resultText = (parts: ReadonlyArray<ChildPart>): string => parts.map((part) => part.text).join("\n\n")
