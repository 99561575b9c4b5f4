/**
 * Delegation in the task workflow: the child harness of a runner (a child
 * task bound by the hosting's `bindChild`, with its own journal in the
 * hosting's journal folder, opened under the child's `TaskLock`), and the
 * turn configuration that offers the `delegate` tool over it.
 *
 * A delegate call is one of the parent's call activities: a runner lost
 * mid-child leaves the activity to run again on another runner, where the
 * tool (idempotent) finds its children by name, finishes an open child
 * turn from the child's journal and reads an answered child back.
 *
 * @internal
 */
import type * as Ids from "@tessera/core/Ids"
import * as Delegation from "@tessera/runtime/Delegation"
import type * as EntryGate from "@tessera/runtime/EntryGate"
import * as Journal from "@tessera/runtime/Journal"
import type * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Path from "effect/Path"
import { type ChildBindServices, TaskHosting, type TaskHostingShape } from "../TaskHosting.ts"
import { TaskLock } from "../TaskLock.ts"
import { openJournal } from "./activityJournal.ts"

/** What the workflow's child harness fails with: the binding's, the lock's and the child journal's errors. */
type HarnessError = { readonly _tag: string; readonly message: string }

/**
 * The runner's child harness: `withChild` binds the child (`bindChild`, by
 * default `Delegation.bindChild`), then runs `body` with the child's journal,
 * held under the child's task lock for as long as `body` runs: one writer
 * per child journal across runners, as every activity holds its task's.
 */
export const childHarness = (
  hosting: TaskHostingShape
): Delegation.ChildHarness<HarnessError, ChildBindServices | FileSystem.FileSystem | Path.Path, Journal.Journal> => {
  const bind = hosting.bindChild ?? Delegation.bindChild
  return {
    withChild: <A, E2, R2>(
      parent: EntryGate.TaskBinding,
      child: { readonly agent: Ids.AgentId; readonly task: Ids.TaskId },
      body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E2, R2>
    ) =>
      Effect.gen(function* () {
        // Bound under the parent's journal: the delegation is admitted by the parent's gate.
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

/**
 * The turn configuration of `binding`'s task on this runner: the hosting's,
 * with the `delegate` tool over the runner's child harness added when the
 * hosting offers children. Every activity that sends or runs a step builds
 * it (the tool is bound to the parent's binding of that run of the body),
 * and the gate builds it once before the first activity, so offers of the
 * wrong shape fail there.
 */
export const turnConfig = Effect.fnUntraced(function* (binding: EntryGate.TaskBinding) {
  const hosting = yield* TaskHosting
  const children = hosting.children
  if (children === undefined) return hosting.config as TaskExecution.ExecutionConfig<never, DelegateServices>
  const delegate = yield* Delegation.tool(childHarness(hosting), binding, children, hosting.delegation ?? {})
  const tools = yield* Effect.try({
    try: () => Tool.registry(...hosting.config.tools.tools.values(), delegate),
    // A host tool named `delegate` as well: two tools may not share a name.
    catch: (error) => error as Tool.DuplicateToolName
  })
  const config: TaskExecution.ExecutionConfig<never, DelegateServices> = { ...hosting.config, tools }
  return config
})

/** What the `delegate` tool of a runner needs: the child harness's services and a child turn's. */
export type DelegateServices = Tool.RegistryServices<
  [Effect.Success<ReturnType<typeof Delegation.tool<ReturnType<typeof childHarness>>>>]
>
