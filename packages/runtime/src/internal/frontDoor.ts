/**
 * The front door over a host's task harness: a task's next turn as one
 * call (its conversation restored, the question appended, a durable turn
 * with offload and compaction), under the host's redaction decision. The
 * platforms' front doors (`NodeTessera.open`, `BrowserTessera.open`) open
 * their harness and hand it here; `TaskExecution.frontDoor` states the
 * contract.
 */
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Delegation from "../Delegation.ts"
import type * as EntryGate from "../EntryGate.ts"
import * as History from "../History.ts"
import { Journal, openTurn } from "../Journal.ts"
import * as Model from "../Model.ts"
import * as Tool from "../Tool.ts"
import * as ToolResults from "../ToolResults.ts"
import { type Decision, decide as decideCall } from "./approvals.ts"
import { type Resumed, restoreHistory, resume as resumeTurn } from "./durableTurns.ts"
import { entriesOf, redactionOf } from "./journalWriter.ts"
import { runTurn } from "./turnEntries.ts"

/**
 * What a front door runs tasks on: a host's way of running a bound task
 * with its journal (`withTask`), failing with `E` besides the body's own
 * errors, needing `R`, and providing `Provided` (the task's `Journal`, and
 * whatever else the host gives each task) to the body.
 */
export interface TaskHarness<E, R, Provided> {
  readonly withTask: <A, E2, R2>(
    task: Ids.TaskId,
    body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E2, R2>,
    options?: EntryGate.BindOptions
  ) => Effect.Effect<A, E | E2, Exclude<R2, Provided> | R>
  /** How the host binds a delegation's child tasks; a host without one offers no delegation. */
  readonly withChild?: Delegation.ChildHarness<E, R | Journal, Provided>["withChild"]
}

/** The decisions and defaults of a front door (see `NodeTessera.OpenOptions`). */
export interface FrontDoorOptions<RedactorError> {
  readonly redactor: Option.Option<Layer.Layer<ArtifactRedactor.ArtifactRedactor, RedactorError>>
  readonly offload?: ToolResults.OffloadConfig | false
  readonly compaction?: EntryGate.BindOptions["policy"]
}

/** See `TaskExecution.FrontDoorRun`. */
export interface RunOptions<R> {
  readonly tools?: ReadonlyArray<Tool.Tool<R>>
  readonly maxSteps?: number
  /** The child agents the task may delegate to (the `delegate` tool); none by default. */
  readonly children?: ReadonlyArray<Delegation.ChildAgent<R>>
  /** Bounds on each delegation (`Delegation.defaultLimits` by default). */
  readonly delegation?: Delegation.Limits
}

/** See `TaskExecution.defaultFrontDoorOffload`. */
export const defaultOffload: ToolResults.OffloadConfig = {
  threshold: 8_192,
  readTool: ToolResults.defaultReadToolName,
  destination: "Private"
}

/** See `TaskExecution.defaultFrontDoorSteps`. */
export const defaultMaxSteps = 16

/**
 * The decisions of `options`, checked as a JavaScript caller may pass them:
 * the redactor is an `Option` (a missing key names both decisions), refused
 * `InvalidInput` naming `redactor` for `entry`. A platform's front door
 * checks them before it opens its harness, so a refusal creates nothing.
 */
export const check = (
  entry: string,
  options: FrontDoorOptions<unknown>
): Effect.Effect<void, InvalidInput.InvalidInput> => {
  const given: unknown = options.redactor
  return Option.isOption(given)
    ? Effect.void
    : Effect.fail(
        new InvalidInput.InvalidInput({
          entry,
          field: "redactor",
          value: InvalidInput.renderValue(given),
          detail:
            "decide: Option.some(<a redactor layer>) scrubs secrets before anything is stored; Option.none() stores bodies verbatim (recorded in the journal)"
        })
      )
}

const decodeTask = (entry: string) => InvalidInput.decode(Ids.TaskId, entry, "task")

/** The `delegate` tool of a front-door task, or `InvalidInput` when the host binds no child tasks. */
const delegationTool = <E, R, Provided, RChild>(
  entry: string,
  harness: TaskHarness<E, R, Provided>,
  parent: EntryGate.TaskBinding,
  children: ReadonlyArray<Delegation.ChildAgent<RChild>>,
  limits: Delegation.Limits | undefined
) =>
  harness.withChild === undefined
    ? Effect.fail(
        new InvalidInput.InvalidInput({
          entry: `${entry}.run`,
          field: "children",
          value: InvalidInput.renderValue(children.map((child) => child.agent)),
          detail: "this host binds no child tasks, so it offers no delegation"
        })
      )
    : Delegation.tool(childHarness<E, R | Journal, Provided>(harness.withChild), parent, children, limits)

/** A host's `withChild` as a child harness, its types declared. */
const childHarness = <E, R, Provided>(
  withChild: Delegation.ChildHarness<E, R, Provided>["withChild"]
): Delegation.ChildHarness<E, R, Provided> => ({ withChild })

/** See `TaskExecution.frontDoor`. */
export const make = <E, R, Provided, RedactorError = never>(
  harness: TaskHarness<E, R, Provided>,
  options: FrontDoorOptions<RedactorError>,
  names: { readonly entry: string }
) =>
  Effect.gen(function* () {
    yield* check(names.entry, options)
    // The redactor is built once, for the front door's lifetime; every task runs under it.
    const redactor = Option.isSome(options.redactor)
      ? Option.some(yield* Effect.provide(Effect.service(ArtifactRedactor.ArtifactRedactor), options.redactor.value))
      : Option.none<ArtifactRedactor.ArtifactRedactorShape>()
    const offload = options.offload === false ? undefined : (options.offload ?? defaultOffload)
    const bindOptions = options.compaction === undefined ? {} : { policy: options.compaction }
    const decided = <A, E2, R2>(effect: Effect.Effect<A, E2, R2>): Effect.Effect<A, E2, R2> =>
      Option.isSome(redactor)
        ? Effect.provideService(effect, ArtifactRedactor.ArtifactRedactor, redactor.value)
        : effect
    const config = <R2>(binding: EntryGate.TaskBinding, run: RunOptions<R2>) =>
      Effect.gen(function* () {
        const children = run.children ?? []
        const delegate =
          children.length === 0 ? [] : [yield* delegationTool(names.entry, harness, binding, children, run.delegation)]
        return {
          tools: Tool.registry(...(run.tools ?? []), ...delegate),
          maxSteps: run.maxSteps ?? defaultMaxSteps,
          durable: true as const,
          ...(offload === undefined ? {} : { offload })
        }
      })
    const inTask = <A, E2, R2>(
      entry: string,
      task: string,
      body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E2, R2>
    ) =>
      Effect.flatMap(decodeTask(entry)(task), (id) =>
        harness.withTask(id, (binding) => decided(body(binding)), bindOptions)
      )
    const run = <R2 = never>(task: string, prompt: string, runOptions: RunOptions<R2> = {}) =>
      inTask(`${names.entry}.run`, task, (binding) =>
        Effect.gen(function* () {
          // The conversation so far (durable turns keep it), then the new question.
          const previous = yield* restoreHistory(binding)
          const question = [Model.text("user", prompt)]
          const history = Option.match(previous, {
            onNone: () => History.make(question),
            onSome: (conversation) => History.append(conversation, question)
          })
          return yield* runTurn(binding, history, yield* config(binding, runOptions))
        })
      )
    // A crash-safe program resumes first: `None` when no turn is open, having sent and written nothing.
    const resume = <R2 = never>(task: string, runOptions: RunOptions<R2> = {}) =>
      inTask(`${names.entry}.resume`, task, (binding) =>
        Effect.gen(function* () {
          const journal = yield* Journal
          if (Option.isNone(openTurn(yield* journal.state))) return Option.none<Resumed>()
          return Option.some(yield* resumeTurn(binding, yield* config(binding, runOptions)))
        })
      )
    // A person's decision on a call the task's open turn waits for; the next `resume` acts on it.
    const decide = (task: string, decision: Decision) =>
      inTask(`${names.entry}.decide`, task, (binding) => decideCall(binding, decision))
    const entries = (task: string) =>
      inTask(`${names.entry}.entries`, task, () =>
        Effect.gen(function* () {
          const journal = yield* Journal
          return yield* entriesOf(journal)
        })
      )
    return {
      redaction: redactionOf(redactor),
      run,
      resume,
      decide,
      entries
    }
  })
