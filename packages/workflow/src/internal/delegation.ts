/**
 * Delegation in the task workflow: where a task stands in its delegation
 * tree (its binding, its turn configuration, the offers of its own
 * children), the runner's child harness (for the inline `delegate` tool,
 * which a call the plan refuses still runs to get its `InvalidInput`
 * result), and the collecting `delegate` a call's last activity dispatches
 * once its children's workflows ended.
 *
 * A delegated child is a `TaskWorkflow` execution of its own, started from
 * its parent's body (the engine's child workflow): it binds itself down its
 * delegation path from the root task, so every runner binds it alike.
 *
 * @internal
 */
import * as Ids from "@tessera/core/Ids"
import * as Delegation from "@tessera/runtime/Delegation"
import type * as EntryGate from "@tessera/runtime/EntryGate"
import * as Journal from "@tessera/runtime/Journal"
import type * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import { type ChildBindServices, TaskHosting, type TaskHostingShape } from "../TaskHosting.ts"
import { TaskLock } from "../TaskLock.ts"
import { openJournal } from "./activityJournal.ts"
import { inconsistent } from "./taskFailed.ts"

/** What the workflow's child harness fails with: the binding's, the lock's and the child journal's errors. */
type HarnessError = { readonly _tag: string; readonly message: string }

/** One step down a delegation: the child agent and its task. */
export const DelegationStep = Schema.Struct({ agent: Ids.AgentId, task: Ids.TaskId })

/** Where a delegated task stands: the root task, and the steps from it down to this task (the last one). */
export const DelegationPath = Schema.Struct({ root: Ids.TaskId, path: Schema.Array(DelegationStep) })
/** See {@link DelegationPath}. */
export type DelegationPath = typeof DelegationPath.Type

/** How a child of the hosting is bound: the hosting's `bindChild`, by default `Delegation.bindChild`. */
const binderOf = (hosting: TaskHostingShape) => hosting.bindChild ?? Delegation.bindChild

/**
 * The runner's child harness: `withChild` binds the child, then runs `body`
 * with the child's journal, held under the child's task lock for as long as
 * `body` runs. The workflow runs children as workflows of their own; this
 * harness is the inline tool's, whose only run in the workflow is a call
 * whose input the plan refuses (it fails before any child is bound).
 */
export const childHarness = (
  hosting: TaskHostingShape
): Delegation.ChildHarness<HarnessError, ChildBindServices | FileSystem.FileSystem | Path.Path, Journal.Journal> => {
  const bind = binderOf(hosting)
  return {
    withChild: <A, E2, R2>(
      parent: EntryGate.TaskBinding,
      child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId },
      body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E2, R2>
    ) =>
      Effect.gen(function* () {
        const binding = yield* bind(parent, child)
        const lock = yield* TaskLock
        const task = binding.context.task
        return yield* lock.withLock(
          task,
          Effect.scoped(
            Effect.flatMap(openJournal(hosting.journalFolder, task), (journal) =>
              Effect.provideService(body(binding), Journal.Journal, journal)
            )
          )
        )
      }) as Effect.Effect<
        A,
        HarnessError | E2,
        Exclude<R2, Journal.Journal> | ChildBindServices | FileSystem.FileSystem | Path.Path
      >
  }
}

const offersOf = (hosting: TaskHostingShape, binding: EntryGate.TaskBinding) =>
  Delegation.offers(childHarness(hosting), binding, hosting.children ?? [], hosting.delegation ?? {})

/** One level's offers: the steps of its delegate calls (see `Delegation.Offers`). */
export type Offers = Effect.Success<ReturnType<typeof offersOf>>

/** What a task's turn runs with: its tools (and `delegate` when it has offers), step budget, offload. */
export type TaskConfig = TaskExecution.ExecutionConfig<never, DelegateServices>

/** What a task's tools need on a runner: the child harness's services, a child turn's, the platform's. */
export type DelegateServices = Tool.RegistryServices<[Offers["tool"]]>

/**
 * A task as its workflow runs it: its binding, its turn configuration, the
 * offers of its own children (none when it delegates nothing), and where it
 * stands in its delegation (`None` for a root task).
 */
export interface TaskLevel {
  readonly binding: EntryGate.TaskBinding
  readonly config: TaskConfig
  readonly offers: Option.Option<Offers>
  readonly delegation: Option.Option<DelegationPath>
}

/**
 * The journal of `task` as binding a child of it needs it: its identity (the
 * child's delegation is admitted by the parent's gate), and no claim. It
 * writes nothing: the parent's records are its own activities'.
 */
export const journalIdentity = (folder: string, task: Ids.TaskId) =>
  Path.Path.useSync((path) => {
    const file = path.resolve(folder, Journal.fileName(task))
    const refused = (entry: string) =>
      Effect.fail(new Journal.JournalSequenceError({ file, entry, detail: "a journal's identity writes nothing" }))
    const record: Journal.JournalService = {
      task,
      file,
      state: Effect.die(new Error("a journal's identity has no state")),
      append: (input) => refused(input._tag),
      sync: Effect.void,
      openTurn: refused("TurnOpened"),
      resumeTurn: refused("TurnResumed"),
      closeTurn: refused("TurnClosed"),
      abandonTurn: () => refused("TurnAbandoned"),
      claimAgent: () => Effect.succeed(Option.none())
    }
    return record
  })

/** Binds `child` of `parent` as the hosting does, under the parent journal's identity. */
export const bindChildOf = (parent: EntryGate.TaskBinding, child: Schema.Schema.Type<typeof DelegationStep>) =>
  Effect.gen(function* () {
    const hosting = yield* TaskHosting
    const identity = yield* journalIdentity(hosting.journalFolder, parent.context.task)
    return yield* binderOf(hosting)(parent, child).pipe(Effect.provideService(Journal.Journal, identity))
  })

/**
 * The level of `task`: a root task is bound by the hosting (`bindTask`) and
 * runs with the hosting's configuration (its `delegate` added when the
 * hosting offers children); a delegated one is bound down its path, each
 * child by the hosting's `bindChild` from its parent's binding, and runs
 * with the configuration its parent's offers give its agent
 * (`Offers.childTurn`). The same on every runner: a function of the store,
 * the hosting and the path.
 */
export const levelOf = Effect.fnUntraced(function* (task: Ids.TaskId, delegation: Option.Option<DelegationPath>) {
  const hosting = yield* TaskHosting
  const root = Option.isSome(delegation) ? delegation.value.root : task
  const binding = yield* hosting.bindTask(root)
  let level: TaskLevel
  if (hosting.children === undefined) {
    level = { binding, config: hosting.config as TaskConfig, offers: Option.none(), delegation: Option.none() }
  } else {
    const offers = yield* offersOf(hosting, binding)
    const tools = yield* Effect.try({
      try: () => Tool.registry(...hosting.config.tools.tools.values(), offers.tool),
      // A host tool named `delegate` as well: two tools may not share a name.
      catch: (error) => error as Tool.DuplicateToolName
    })
    level = { binding, config: { ...hosting.config, tools }, offers: Option.some(offers), delegation: Option.none() }
  }
  if (Option.isNone(delegation)) return level
  for (const step of delegation.value.path) {
    if (Option.isNone(level.offers)) {
      return yield* inconsistent(task, `task ${level.binding.context.task} offers no child ${step.agent}`)
    }
    const child = yield* bindChildOf(level.binding, step)
    if (child.context.task !== step.task) {
      return yield* new Delegation.ChildBindingMismatch({ expected: step.task, bound: child.context.task })
    }
    const turn = yield* level.offers.value.childTurn(child, step.agent)
    // The engine is the child turn's durable record (its history is in the activities' results): a transcript,
    // which the workflow's activities would write without its opening record, is not kept.
    const { durable: _durable, ...config } = turn.config
    level = {
      binding: child,
      config: config as TaskConfig,
      offers: turn.offers as Option.Option<Offers>,
      delegation
    }
  }
  if (level.binding.context.task !== task) {
    return yield* inconsistent(task, `the delegation path ends at ${level.binding.context.task}`)
  }
  return level
})

/** How a child's workflow ended, as the collecting `delegate` hands it to `Offers.answered`. */
export const ChildEnd = Schema.Union([
  Schema.TaggedStruct("Answered", { text: Schema.String }),
  Schema.TaggedStruct("Failed", { reason: Schema.String, detail: Schema.String })
])
/** See {@link ChildEnd}. */
export type ChildEnd = typeof ChildEnd.Type

/**
 * The `delegate` a call's collect activity dispatches in place of the
 * level's own (same name): per sub-task, it binds the child, opens the
 * child's journal under its lock and receives its answer (`Offers.answered`:
 * published files, `ChildAnswered`); a child whose workflow failed answers
 * with its failure, the call does not fail. Its result is
 * `Delegation.resultText` of the parts, in the sub-tasks' order.
 */
export const collectingTool = (
  level: TaskLevel,
  offers: Offers,
  subTasks: ReadonlyArray<Delegation.SubTask>,
  ends: ReadonlyArray<ChildEnd>
) =>
  Tool.make({
    name: Delegation.toolName,
    description: offers.tool.description,
    input: Schema.Unknown,
    idempotent: true,
    handler: () =>
      Effect.gen(function* () {
        const hosting = yield* TaskHosting
        const lock = yield* TaskLock
        const position = yield* Tool.CurrentCall
        if (Option.isNone(position)) return yield* Effect.die(new Error("delegate runs only as a dispatched call"))
        const parentJournal = yield* Journal.Journal
        const maxConcurrent = hosting.delegation?.maxConcurrent ?? Delegation.defaultLimits.maxConcurrent
        const parts = yield* Effect.forEach(
          subTasks,
          (subTask, index) =>
            Effect.gen(function* () {
              const end = ends[index]
              if (end === undefined) return yield* Effect.die(new Error(`no end for sub-task ${index}`))
              const child = yield* binderOf(hosting)(level.binding, subTask)
              const outcome: Delegation.ChildOutcome = end
              return yield* lock.withLock(
                subTask.task,
                Effect.scoped(
                  Effect.flatMap(openJournal(hosting.journalFolder, subTask.task), (journal) =>
                    offers
                      .answered(parentJournal, position.value, subTask, child, outcome)
                      .pipe(Effect.provideService(Journal.Journal, journal))
                  )
                )
              )
            }),
          { concurrency: maxConcurrent }
        )
        return Delegation.resultText(parts)
      })
  })
