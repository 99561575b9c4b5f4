/**
 * Delegation: a parent task's `delegate` tool runs each sub-task as a child
 * task of its own, for a child agent the host offers, on a host's child
 * harness (`ChildHarness`: the child's own scope, private volume and
 * journal). The child's answer is the call's result, so it reaches the
 * parent through the parent's own result pipeline (offloaded to the
 * parent's private volume when large, scrubbed); nothing else of the child
 * does. `Delegation` states the contract.
 */
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as EntryGate from "../EntryGate.ts"
import * as History from "../History.ts"
import { Journal, openTurn, readEntries } from "../Journal.ts"
import { totalUsage } from "../JournalEntry.ts"
import * as Model from "../Model.ts"
import * as Tool from "../Tool.ts"
import * as ToolResults from "../ToolResults.ts"
import { CurrentCall } from "./currentCall.ts"
import { measureText, sha256Bytes } from "./digest.ts"
import { restoreHistory, resume } from "./durableTurns.ts"
import { runTurn } from "./turnEntries.ts"

/** See `Delegation.ChildAgent`. */
export interface ChildAgent<R = never> {
  readonly agent: string
  readonly description: string
  readonly tools?: ReadonlyArray<Tool.Tool<R>>
  readonly maxSteps?: number
}

/** See `Delegation.Limits`. */
export interface Limits {
  readonly maxChildren?: number
  readonly maxConcurrent?: number
}

/** See `Delegation.defaultLimits`. */
export const defaultLimits = { maxChildren: 4, maxConcurrent: 2 } as const

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

/** What one child of a call answered, and which task holds its work. */
export interface ChildAnswer {
  readonly agent: Ids.AgentId
  readonly task: Ids.TaskId
  readonly answer: string
}

const entry = "Delegation.tool"

/**
 * The offers of a host, checked as a JavaScript caller may pass them: each
 * agent an identifier (it names the child's volume and journal), offered
 * once, with a description; the limits whole numbers of at least 1.
 */
const checkOffers = <R>(children: ReadonlyArray<ChildAgent<R>>, limits: Limits) =>
  Effect.gen(function* () {
    const refuse = (field: string, value: unknown, detail: string) =>
      new InvalidInput.InvalidInput({ entry, field, value: InvalidInput.renderValue(value), detail })
    if (!Array.isArray(children) || children.length === 0) {
      return yield* refuse("children", children, "expected at least one child agent to offer")
    }
    const agents: Array<Ids.AgentId> = []
    for (const [index, child] of children.entries()) {
      const agent = yield* InvalidInput.decode(Ids.AgentId, entry, `children[${index}].agent`)(child?.agent)
      if (agents.includes(agent)) return yield* refuse(`children[${index}].agent`, agent, "offered twice")
      if (typeof child.description !== "string" || child.description.length === 0) {
        return yield* refuse(`children[${index}].description`, child.description, "expected what the agent does")
      }
      agents.push(agent)
    }
    for (const field of ["maxChildren", "maxConcurrent"] as const) {
      const value: unknown = limits[field]
      if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= 1)) {
        return yield* refuse(`limits.${field}`, value, "expected a whole number of at least 1")
      }
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

const answerOf = (outcome: { readonly _tag: string; readonly text: string }) =>
  outcome._tag === "Answered" ? Option.some(outcome.text) : Option.none<string>()

/** The text of the last assistant message of a conversation (a child's answer as its journal keeps it). */
const lastAnswer = (history: History.History): Option.Option<string> => {
  const parts = History.toParts(history)
  for (let index = parts.length - 1; index >= 0; index--) {
    const part = parts[index]
    if (part?._tag === "Text" && part.role === "assistant") return Option.some(part.text)
  }
  return Option.none()
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
    // Its generic `withChild` gives inference nothing to read: the harness's types are the ones it declares.
    const harness = given as ChildHarness<ErrorOf<H>, RequiresOf<H>, ProvidesOf<H>>
    const agents = yield* checkOffers(children, limits)
    const maxChildren = limits.maxChildren ?? defaultLimits.maxChildren
    const maxConcurrent = limits.maxConcurrent ?? defaultLimits.maxConcurrent
    const offers = new Map(agents.map((agent, index) => [agent as string, children[index] as ChildAgent<RChild>]))
    const catalogue = children.map((child) => `${child.agent}: ${child.description}`).join("; ")
    const runChild = (agent: Ids.AgentId, task: Ids.TaskId, instruction: string) =>
      harness.withChild(parent, { agent, task }, (binding) =>
        Effect.gen(function* () {
          const answer = yield* childTurn(agent, binding, instruction)
          // What the child's own journal says its requests cost, for the parent's record.
          const journal = yield* Journal
          const path = yield* Path.Path
          const entries = yield* readEntries({ folder: path.dirname(journal.file), task: journal.task })
          return { answer, usage: totalUsage(entries).withChildren }
        })
      )
    const childTurn = (agent: Ids.AgentId, binding: EntryGate.TaskBinding, instruction: string) =>
      Effect.gen(function* () {
        const offer = offers.get(agent) as ChildAgent<RChild>
        const config = {
          tools: Tool.registry(...(offer.tools ?? [])),
          maxSteps: offer.maxSteps ?? defaultChildSteps,
          durable: true as const,
          offload: { threshold: 8_192, readTool: ToolResults.defaultReadToolName, destination: "Private" as const }
        }
        const journal = yield* Journal
        // A child the parent's crash cut short is finished from its own journal; one that answered is not run again.
        if (Option.isSome(openTurn(yield* journal.state))) return answerOf((yield* resume(binding, config)).outcome)
        const done = yield* restoreHistory(binding)
        if (Option.isSome(done)) return lastAnswer(done.value)
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
      handler: ({ tasks }) =>
        Effect.gen(function* () {
          const position = yield* CurrentCall
          if (Option.isNone(position)) return yield* Effect.die(new Error("delegate runs only as a dispatched call"))
          const { callId, step, turn } = position.value
          // The parent's journal, taken before a child's own is provided: the delegation is the parent's record.
          const parentJournal = yield* Journal
          const answers = yield* Effect.forEach(
            tasks,
            (subTask, index) =>
              Effect.gen(function* () {
                const agent = Ids.AgentId.make(subTask.agent)
                const task = yield* childTaskId(position.value, index)
                yield* parentJournal.append({ _tag: "ChildDelegated", turn, step, callId, task, agent })
                const { answer, usage } = yield* runChild(agent, task, subTask.task)
                const measured = yield* measureText(Option.getOrElse(answer, () => ""))
                yield* parentJournal.append({
                  _tag: "ChildAnswered",
                  turn,
                  step,
                  callId,
                  task,
                  answered: Option.isSome(answer),
                  size: measured.size,
                  sha256: measured.sha256,
                  usage
                })
                return { agent, task, answer }
              }),
            { concurrency: maxConcurrent }
          )
          return answers
            .map(({ agent, answer, task }) =>
              Option.match(answer, {
                onNone: () => `[${agent}, task ${task}] gave no answer: it waits for an approval`,
                onSome: (text) => `[${agent}, task ${task}] ${text}`
              })
            )
            .join("\n\n")
        })
    })
  })
