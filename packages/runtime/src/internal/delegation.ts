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
import * as Volume from "@tessera/core/Volume"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as EntryGate from "../EntryGate.ts"
import * as History from "../History.ts"
import { awaitingApproval, Journal, openTurn, readEntries } from "../Journal.ts"
import { totalUsage } from "../JournalEntry.ts"
import * as Model from "../Model.ts"
import * as Tool from "../Tool.ts"
import * as ToolResults from "../ToolResults.ts"
import * as VolumeStore from "../VolumeStore.ts"
import { decide } from "./approvals.ts"
import { publishTool, type Received, receive } from "./childOutput.ts"

// The output binding's half of the contract, offered with the tool.
export {
  maxPublishedBytes,
  PublishedArtifactChanged,
  PublishProblem,
  PublishRefused,
  publishToolName
} from "./childOutput.ts"

import { CurrentCall, CurrentCallAwaiting } from "./currentCall.ts"
import { measureText, sha256Bytes } from "./digest.ts"
import { restoreHistory, resume } from "./durableTurns.ts"
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

/** See `Delegation.ChildBindingMismatch`. */
export class ChildBindingMismatch extends Schema.TaggedError<ChildBindingMismatch>()("ChildBindingMismatch", {
  expected: Ids.TaskId,
  bound: Ids.TaskId
}) {
  override get message(): string {
    return `the child harness bound task ${this.bound} for child task ${this.expected}: a child runs only as itself`
  }
}

/** See `Delegation.childVolumes`. */
export const childVolumes = (task: Ids.TaskId): { readonly private: Ids.VolumeId; readonly output: Ids.VolumeId } => ({
  private: suffixed(task, "-scratch"),
  output: suffixed(task, "-output")
})

const suffixed = (task: Ids.TaskId, suffix: string) =>
  Ids.VolumeId.make(`${task.slice(0, 128 - suffix.length)}${suffix}`)

const decodeChildAgent = InvalidInput.decode(Ids.AgentId, "Delegation.bindChild", "child.agent")
const decodeChildTask = InvalidInput.decode(Ids.TaskId, "Delegation.bindChild", "child.task")

/** See `Delegation.bindChild`. */
export const bindChild = Effect.fnUntraced(function* (
  parent: EntryGate.TaskBinding,
  child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId }
) {
  // The parent's gate first: a forged or copied parent binding delegates nothing, and creates no volume.
  yield* EntryGate.admitBinding(parent, "Delegate")
  const agent = yield* decodeChildAgent(child.agent)
  const task = yield* decodeChildTask(child.task)
  const runtime = parent.context.runtime
  const ids = childVolumes(task)
  const own = yield* VolumeStore.ensure(runtime.host.store, {
    id: ids.private,
    kind: "AgentPrivate",
    owner: Volume.agentOwner(agent)
  })
  const output = yield* VolumeStore.ensure(runtime.host.store, {
    id: ids.output,
    kind: "Output",
    owner: Volume.hostOwner
  })
  const scope = yield* runtime.host.issueScope(
    task,
    [
      { volume: own, access: ["read", "write"] },
      { volume: output, access: ["write"] }
    ],
    agent
  )
  const context = yield* runtime.bindTask({ scope, createdPrivate: [own], output: Option.some(output) })
  return yield* EntryGate.bind(context)
})

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

/**
 * A child within its time limit: past it, the child (its turn and its hold on its journal) is interrupted, so its
 * turn is abandoned, and the call says so. What it spent stays in its own journal.
 */
const timed = <E, R, R2>(
  child: Effect.Effect<
    { readonly outcome: ChildOutcome; readonly usage: Model.Usage; readonly received: ReadonlyArray<Received> },
    E,
    R
  >,
  limit: Duration.Input | undefined,
  spent: Effect.Effect<Model.Usage, never, R2>
) =>
  limit === undefined
    ? child
    : Effect.timeoutOrElse(child, {
        duration: limit,
        orElse: () =>
          Effect.map(spent, (usage) => ({
            outcome: { _tag: "TimedOut", limit: Duration.format(Duration.fromInputUnsafe(limit)) } as ChildOutcome,
            usage,
            received: [] as ReadonlyArray<Received>
          }))
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

/** The host's decision on a delegation that waited for its children, and the children's calls it is for. */
interface DelegatedDecision {
  readonly approved: boolean
  readonly by: string
  readonly note: string | undefined
  readonly children: ReadonlyArray<{ readonly task: Ids.TaskId; readonly callId: string }>
}

/**
 * The decision on the call at `position`, when its last wait for its children (`ApprovalRequested`, reason
 * `Delegated`) was decided: read from the parent's own journal, so a run after a restart hands it on the same.
 */
const delegatedDecision = Effect.fnUntraced(function* (
  parentJournal: Journal["Service"],
  position: { readonly turn: number; readonly step: number; readonly callId: string }
) {
  const path = yield* Path.Path
  const entries = yield* readEntries({ folder: path.dirname(parentJournal.file), task: parentJournal.task })
  const at = (entry: { readonly turn: number; readonly step: number; readonly callId: string }) =>
    entry.turn === position.turn && entry.step === position.step && entry.callId === position.callId
  let decision: DelegatedDecision | undefined
  let children: DelegatedDecision["children"] | undefined
  for (const entry of entries) {
    if (entry._tag === "ApprovalRequested" && entry.reason === "Delegated" && at(entry)) {
      children = entry.children ?? []
      decision = undefined
    } else if (entry._tag === "ApprovalDecided" && at(entry) && children !== undefined) {
      decision = { approved: entry.approved, by: entry.by, note: entry.note, children }
    }
  }
  return Option.fromUndefinedOr(decision)
})

/**
 * Hands the host's decision on to the child's calls it was for that still wait (each decided once: a call
 * decided already, by an earlier run cut short, is left alone).
 */
const forward = Effect.fnUntraced(function* (
  binding: EntryGate.TaskBinding,
  decision: Option.Option<DelegatedDecision>
) {
  if (Option.isNone(decision)) return
  const journal = yield* Journal
  const open = openTurn(yield* journal.state)
  if (Option.isNone(open)) return
  const waiting = new Set(awaitingApproval(open.value).map((call) => call.callId))
  for (const call of decision.value.children) {
    if (call.task !== binding.context.task || !waiting.has(call.callId)) continue
    const { approved, by, note } = decision.value
    yield* decide(binding, { callId: call.callId, approved, by, ...(note === undefined ? {} : { note }) })
  }
})

/** The text of the last assistant message of a conversation (a child's answer as its journal keeps it). */
const lastAnswer = (history: History.History): ChildOutcome => {
  const parts = History.toParts(history)
  for (let index = parts.length - 1; index >= 0; index--) {
    const part = parts[index]
    if (part?._tag === "Text" && part.role === "assistant") return { _tag: "Answered", text: part.text }
  }
  return { _tag: "Answered", text: "" }
}

/**
 * The `delegate` tool of a parent task (see `Delegation.tool`).
 */
export const tool = <H extends ChildHarness<unknown, unknown, unknown>, RChild = never>(
  given: H,
  parent: EntryGate.TaskBinding,
  children: ReadonlyArray<ChildAgent<RChild>>,
  limits: Limits = {}
) =>
  Effect.gen(function* () {
    yield* checkLimits(limits)
    const maxDepth = limits.maxDepth ?? defaultLimits.maxDepth
    yield* checkOffers(children, 1, maxDepth)
    return yield* level(given as ChildHarness<ErrorOf<H>, RequiresOf<H>, ProvidesOf<H>>, parent, children, limits)
  })

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

/** The `delegate` tool of one level of offers, checked already: each child gets the tool of its own offers. */
const level = <E, R, Provided, RChild>(
  harness: ChildHarness<E, R, Provided>,
  parent: EntryGate.TaskBinding,
  children: ReadonlyArray<ChildAgent<RChild>>,
  limits: Limits
): Effect.Effect<Tool.Tool<LevelServices<R, Provided, RChild>>> =>
  Effect.gen(function* () {
    const agents = children.map((child) => Ids.AgentId.make(child.agent))
    const maxChildren = limits.maxChildren ?? defaultLimits.maxChildren
    const maxConcurrent = limits.maxConcurrent ?? defaultLimits.maxConcurrent
    const offers = new Map(agents.map((agent, index) => [agent as string, children[index] as ChildAgent<RChild>]))
    const catalogue = children.map((child) => `${child.agent}: ${child.description}`).join("; ")
    const runChild = (
      agent: Ids.AgentId,
      task: Ids.TaskId,
      instruction: string,
      call: {
        readonly parentJournal: Journal["Service"]
        readonly turn: number
        readonly step: number
        readonly callId: string
        readonly decision: Option.Option<DelegatedDecision>
      }
    ) =>
      harness.withChild(parent, { agent, task }, (binding) =>
        Effect.gen(function* () {
          const { callId, parentJournal, step, turn } = call
          // The child runs only as itself: a harness that bound another task is refused before anything is recorded.
          if (binding.context.task !== task) {
            return yield* new ChildBindingMismatch({ expected: task, bound: binding.context.task })
          }
          const output = Option.getOrUndefined(Option.map(binding.context.output, (bound) => bound.ref))
          yield* parentJournal.append({
            _tag: "ChildDelegated",
            turn,
            step,
            callId,
            task,
            agent,
            ...(output === undefined ? {} : { output })
          })
          const outcome = yield* childTurn(agent, binding, instruction, call.decision)
          // What the child's own journal says its requests cost and what it published, for the parent's record.
          const journal = yield* Journal
          const path = yield* Path.Path
          const entries = yield* readEntries({ folder: path.dirname(journal.file), task: journal.task })
          const received = yield* receive(parent, binding, entries, {
            ...call,
            readTool: ToolResults.defaultReadToolName
          })
          return { outcome, usage: totalUsage(entries).withChildren, received }
        })
      )
    const childTurn = (
      agent: Ids.AgentId,
      binding: EntryGate.TaskBinding,
      instruction: string,
      decision: Option.Option<DelegatedDecision>
    ) =>
      Effect.gen(function* () {
        const offer = offers.get(agent) as ChildAgent<RChild>
        // A child with offers of its own delegates in turn, under the same harness and limits.
        const delegate = offer.children === undefined ? [] : [yield* level(harness, binding, offer.children, limits)]
        // A child bound with an output volume may publish into it, and nowhere else.
        const publish = Option.isSome(binding.context.output) ? [publishTool(binding)] : []
        const config = {
          tools: Tool.registry(...(offer.tools ?? []), ...publish, ...delegate),
          maxSteps: offer.maxSteps ?? defaultChildSteps,
          durable: true as const,
          offload: { threshold: 8_192, readTool: ToolResults.defaultReadToolName, destination: "Private" as const }
        }
        const journal = yield* Journal
        const state = yield* journal.state
        // A child the parent's crash cut short is finished from its own journal; one that answered is not run
        // again; one cancelled or out of time (its turn abandoned) starts over.
        if (Option.isSome(openTurn(state))) {
          yield* forward(binding, decision)
          return answerOf((yield* resume(binding, config)).outcome)
        }
        if (state.turns.at(-1)?.status === "Closed") {
          const done = yield* restoreHistory(binding)
          if (Option.isSome(done)) return lastAnswer(done.value)
        }
        return answerOf(yield* runTurn(binding, History.make([Model.text("user", instruction)]), config))
      })
    return Tool.make({
      name: toolName,
      description: `Hands sub-tasks to other agents, each working on its own, and returns their answers. Agents: ${catalogue}`,
      input: Schema.Struct({
        tasks: Schema.Array(
          Schema.Struct({ agent: Schema.Literals(agents as unknown as ReadonlyArray<string>), task: Schema.String })
        ).check(Schema.isMinLength(1), Schema.isMaxLength(maxChildren))
      }),
      // Run again on resume, the call finds its children by name and finishes them; none starts twice.
      idempotent: true,
      // Declared and never true: the call goes through the approval-aware dispatch, where children that wait for
      // the host make it wait.
      needsApproval: () => false,
      handler: ({ tasks }) =>
        Effect.gen(function* () {
          const position = yield* CurrentCall
          if (Option.isNone(position)) return yield* Effect.die(new Error("delegate runs only as a dispatched call"))
          const { callId, step, turn } = position.value
          // The parent's journal, taken before a child's own is provided: the delegation is the parent's record.
          const parentJournal = yield* Journal
          // Run again after the host decided what its children waited for: the decision goes on to them.
          const decision = yield* delegatedDecision(parentJournal, position.value)
          const answers = yield* Effect.forEach(
            tasks,
            (subTask, index) =>
              Effect.gen(function* () {
                const agent = Ids.AgentId.make(subTask.agent)
                const task = yield* childTaskId(position.value, index)
                const { outcome, received, usage } = yield* timed(
                  runChild(agent, task, subTask.task, { parentJournal, turn, step, callId, decision }),
                  offers.get(agent)?.timeLimit,
                  spentBy(parentJournal, task)
                )
                const measured = yield* measureText(outcome._tag === "Answered" ? outcome.text : "")
                yield* parentJournal.append({
                  _tag: "ChildAnswered",
                  turn,
                  step,
                  callId,
                  task,
                  outcome: outcome._tag,
                  size: measured.size,
                  sha256: measured.sha256,
                  usage,
                  ...(received.length === 0
                    ? {}
                    : { published: received.map(({ name, sha256, size }) => ({ name, size, sha256 })) })
                })
                return { agent, task, outcome, received }
              }),
            { concurrency: maxConcurrent }
          )
          // Children that wait for the host make the call wait with them, where the dispatch can (the host decides
          // once, on this call, and the decision goes on to them when the call runs again).
          const waiting = answers.flatMap(({ outcome, task }) =>
            outcome._tag === "AwaitingApproval" ? outcome.calls.map((callId) => ({ task, callId })) : []
          )
          const awaits = yield* CurrentCallAwaiting
          if (waiting.length > 0 && Option.isSome(awaits)) awaits.value.children = waiting
          return answers.map(answerText).join("\n\n")
        })
    })
  })
