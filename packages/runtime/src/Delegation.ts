/**
 * Delegation: a parent task hands sub-tasks to child agents and gets their
 * answers back, each child a task of its own.
 *
 * What holds, by construction:
 *
 * - **A child is its own task.** Each sub-task runs as a child task named
 *   after the call that asked for it ({@link childTaskId}: the parent's
 *   task, turn, step and call id), bound by the host's {@link ChildHarness}
 *   for the child agent: a scope the host issues to that agent (never the
 *   parent's grants), its own agent-private volume (owned by the child
 *   agent; its summaries and offloaded results land there), its own
 *   journal. Its turns are durable, with offload and compaction on, under
 *   the redactor and model in scope.
 * - **Only the answer and what the child publishes cross.** The child's
 *   answer is the call's result: it reaches the parent through the parent's
 *   own result pipeline (offloaded to the parent's private volume when
 *   large, scrubbed). A child bound with an output volume gets a `publish`
 *   tool ({@link publishToolName}) that writes there and nowhere else; the
 *   parent's call reads each published file back, believes it only when its
 *   size and digest are what the child's journal recorded
 *   ({@link PublishedArtifactChanged} otherwise), copies it into the
 *   parent's private volume and gives the model the copy's pointer. The
 *   child's private volume is another agent's: the parent's read tool passes
 *   it over, its pointers name nothing the parent can open.
 * - **Resumable.** The tool is idempotent: run again after a crash, the
 *   call finds its children by name; a child with an open turn is finished
 *   from its own journal, one that answered is not run again (its answer is
 *   read back from its transcript, checked against its journal).
 * - **Bounded.** At most `maxChildren` sub-tasks per call, at most
 *   `maxConcurrent` running at once, offers at most `maxDepth` levels deep
 *   ({@link defaultLimits}); each child within its offer's `maxSteps` and
 *   `timeLimit` (past it, its turn is interrupted and abandoned, the result
 *   says so, and what its journal says it spent until then is still counted
 *   in the parent's `ChildAnswered`).
 * - **A child's approvals are the parent's host's to decide, once.** A
 *   child whose turn waits for approvals makes the `delegate` call wait
 *   with it: where the dispatch can wait (the executor's turns and the
 *   front door), the parent's turn ends `AwaitingApproval` on the call,
 *   journaled `ApprovalRequested` with reason `Delegated` and the child
 *   calls it is for. The host decides the parent's call
 *   (`TaskExecution.decide`); when the call runs again, that decision goes
 *   on to exactly those child calls (each decided once, in its child's
 *   journal, with who decided), and the children continue.
 * - **Cancelled together, traced together.** Children run inside the call:
 *   interrupting the parent interrupts them, and every turn is abandoned;
 *   each child's spans nest under the call's span.
 *
 * A child gets the tools its offer lists, and a `delegate` of its own when
 * its offer lists children in turn.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { Delegation, History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * // The parent calls `delegate` (Delegation.toolName) once, the critic answers, the parent repeats what it was told.
 * const model = ScriptedModel.layer((request) => {
 *   const last = request.parts.at(-1)
 *   if (last?._tag === "ToolResult") return Model.response({ text: last.content })
 *   if (!request.tools.some((tool) => tool.name === Delegation.toolName)) return Model.response({ text: "It holds." })
 *   const tasks = [{ agent: "critic", task: "Review the plan." }]
 *   return Model.response({ toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks })] })
 * })
 *
 * const program = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     stateDir: "tessera-state",
 *     namespace: "planning",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("lead")
 *   })
 *   const task = Schema.decodeUnknownSync(Ids.TaskId)("plan-1")
 *   return yield* harness.withTask(task, (parent) =>
 *     Effect.gen(function* () {
 *       // The local harness is the child harness: it binds each child for its own agent, volume and journal.
 *       const critic = { agent: "critic", description: "reviews a plan" }
 *       const delegate = yield* Delegation.tool(harness, parent, [critic], { maxChildren: 2 })
 *       const question = History.make([Model.text("user", "Have the plan reviewed.")])
 *       return yield* TaskExecution.runTurn(parent, question, { tools: Tool.registry(delegate), maxSteps: 4 })
 *     })
 *   )
 * })
 *
 * // Prints the critic's labelled answer: "[critic, task plan-1-child-...] It holds."
 * Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(model), Effect.provide(NodeTessera.layer))).then(
 *   (outcome) => console.log(outcome.text)
 * )
 * ```
 *
 * @since 0.1.0
 */

export {
  /**
   * What receiving a child's answer (`Offers.answered`) reads and writes
   * through: the child's `Journal` (its entries: usage, publications) and
   * the platform the published files are read and copied with.
   *
   * @since 0.1.0
   * @category models
   */
  type AnswerServices,
  /**
   * Binds the child task of a delegation, for a host's `withChild`: after
   * the parent's entry gate admits `Delegate` (a forged or copied parent
   * binding is refused before any volume exists), on the parent's runtime,
   * with a scope issued to the child agent and holding exactly two grants:
   * read and write on its own agent-private volume (created on first use,
   * owned by the child agent: its summaries and offloaded results land
   * there), and write on its output volume (created on first use, owned by
   * the host: what it publishes lands there, and the parent's delegation
   * reads it). Nothing of the parent's scope is inherited. A volume of the
   * child's names that exists with other facts fails `VolumeConflict`.
   * Names: {@link childVolumes}.
   *
   * @since 0.1.0
   * @category binding
   */
  bindChild,
  /**
   * A child agent a host offers: its id (an identifier), what it does (the
   * model reads it in the tool's description), its tools, its step budget
   * per sub-task ({@link defaultChildSteps} by default), its time budget
   * per sub-task (`timeLimit`, none by default), and the agents it may
   * delegate to in turn (`children`).
   *
   * @since 0.1.0
   * @category models
   */
  type ChildAgent,
  /**
   * A child harness bound another task than the child the call named
   * (`expected`, from {@link childTaskId}): the call fails before anything
   * of that child is recorded or sent, since its journal, volumes and
   * answer would be another task's.
   *
   * @since 0.1.0
   * @category errors
   */
  ChildBindingMismatch,
  /**
   * What a host gives delegation: `withChild(parent, { agent, task },
   * body)` binds the child task for the child agent (its own scope, its own
   * agent-private volume, its own journal) and runs `body` with its
   * `Journal` provided. `NodeTessera.open` and `LocalHarness` are hosts
   * with one.
   *
   * @since 0.1.0
   * @category models
   */
  type ChildHarness,
  /**
   * How a child's turn ended: `Answered` with its text, `AwaitingApproval`
   * (a call of its own waits for a person), `TimedOut` (past its offer's
   * `timeLimit`, its turn abandoned), or `Failed` (a host that runs the child
   * as a task of its own, as the workflow engine does, saw it fail: its
   * reason and detail; the call goes on).
   *
   * @since 0.1.0
   * @category models
   */
  type ChildOutcome,
  /**
   * A child's part of a delegate call's result: its labelled answer with a
   * line per file it published (`text`), and the calls of its own it waits
   * for the host on (`waiting`: the call waits with them where the dispatch
   * can).
   *
   * @since 0.1.0
   * @category models
   */
  type ChildPart,
  /**
   * A child's turn as its offer configures it (`config`: the offer's tools,
   * `publish` when the child has an output volume, its own `delegate` when
   * its offer lists children, its step budget; durable, with private
   * offload), and those offers of its own (`offers`).
   *
   * @since 0.1.0
   * @category models
   */
  type ChildTurn,
  /**
   * The child task of the `index`-th sub-task of a call at `position`:
   * `<parent task>-child-<24 hex digits of a SHA-256 of the position and
   * index>`, so a call run again names the same children and two calls
   * never share one.
   *
   * @since 0.1.0
   * @category naming
   */
  childTaskId,
  /**
   * The volumes of a child task: `private` (`<task>-scratch`, agent-private
   * to the child agent) and `output` (`<task>-output`, the output binding
   * its parent reads), the task id cut so each stays an identifier.
   *
   * @since 0.1.0
   * @category naming
   */
  childVolumes,
  /**
   * The steps a child's turn may take when its offer names none: 8.
   *
   * @since 0.1.0
   * @category defaults
   */
  defaultChildSteps,
  /**
   * The limits when a host names none: 4 sub-tasks per call, 2 at once,
   * offers 2 levels deep (children and grandchildren).
   *
   * @since 0.1.0
   * @category defaults
   */
  defaultLimits,
  /**
   * The host's bounds: `maxChildren` sub-tasks per call, `maxConcurrent`
   * running at once, `maxDepth` levels of offers below the task.
   *
   * @since 0.1.0
   * @category models
   */
  type Limits,
  /**
   * The most bytes one published file holds: 1 MiB. A larger one is
   * refused `TooLarge` and nothing is written.
   *
   * @since 0.1.0
   * @category defaults
   */
  maxPublishedBytes,
  /**
   * One level of a host's offers, checked ({@link offers}), and the steps
   * of a delegate call, for a host that runs each child its own way (the
   * workflow engine runs each as a workflow of its own); `tool` runs them
   * all inside the call, and every form keeps the same records.
   *
   * - `plan(position, input)`: the call's sub-tasks, its input decoded by
   *   the tool's own schema (`InvalidInput` naming the field otherwise),
   *   each child named after the call ({@link childTaskId}).
   * - `delegated(parentJournal, position, subTask, child)`: records
   *   `ChildDelegated` (with the child's output binding) once the child is
   *   bound ({@link bindChild}); a binding of another task than the
   *   sub-task's fails {@link ChildBindingMismatch}, recording nothing.
   * - `childTurn(child, agent)`: the child's turn configuration
   *   ({@link ChildTurn}).
   * - `answered(parentJournal, position, subTask, child, outcome)`, with
   *   the child's journal provided: reads what it spent and published,
   *   receives each published file (checked against that journal, copied
   *   into the parent's private volume), records `ChildAnswered`, and
   *   gives the child's {@link ChildPart}.
   *
   * @since 0.1.0
   * @category models
   */
  type Offers,
  /**
   * The host's offers, checked as {@link tool} checks them (the same
   * `InvalidInput` refusals, before anything runs), as {@link Offers}.
   *
   * @since 0.1.0
   * @category constructors
   */
  offers,
  /**
   * A published file read back by the parent's call is not what the child's
   * journal recorded (another size or digest, unreadable, or a journal entry
   * naming a place the publish tool never writes): corruption is loud, the
   * call fails and nothing of that file reaches the parent.
   *
   * @since 0.1.0
   * @category errors
   */
  PublishedArtifactChanged,
  /**
   * Why `publish` refused: the task has no output binding
   * (`NoOutputBinding`), the name is no plain file name (`InvalidName`), the
   * request gives both or neither of `text` and `artifact`
   * (`InvalidRequest`), there is nothing to publish (`Empty`), it is over
   * {@link maxPublishedBytes} (`TooLarge`), the name is published already
   * by another call (`AlreadyPublished`), the artifact named cannot be read
   * by the task (`ArtifactUnreadable`), or the write was refused
   * (`WriteRefused`: the host's path policy, a link in the way, a failed
   * write).
   *
   * @since 0.1.0
   * @category errors
   */
  PublishProblem,
  /**
   * A refused publication, with the name asked for and why
   * ({@link PublishProblem}); the model reads its message as the call's
   * failed result. Nothing was written and nothing journaled.
   *
   * @since 0.1.0
   * @category errors
   */
  PublishRefused,
  /**
   * The child's publish tool's name: `publish`. Its input is `{ name, text }`
   * or `{ name, artifact }` (the path of one of the child's own artifacts, as
   * its pointer names it); the file lands at `artifacts/published/<name>` of
   * the child's output volume, scrubbed by the host's redactor, under its
   * final name only once complete, journaled in the child's journal as an
   * `ArtifactOffloaded` into the output volume. Each name is published once
   * per child (a resumed call rewrites the same bytes).
   *
   * @since 0.1.0
   * @category naming
   */
  publishToolName,
  /**
   * A delegate call's result from its children's parts, in the order of
   * its sub-tasks: what the model reads.
   *
   * @since 0.1.0
   * @category constructors
   */
  resultText,
  /**
   * A named sub-task of a delegate call: the offered agent, the child task
   * ({@link childTaskId} of the call and its index), its instruction.
   *
   * @since 0.1.0
   * @category models
   */
  type SubTask,
  /**
   * The parent task's `delegate` tool over `harness`, offering `children`:
   * its input is `{ tasks: [{ agent, task }] }` (an offered agent and the
   * sub-task's instruction, at most `maxChildren`), its result each child's
   * answer, labelled with its agent and task. Fails `InvalidInput` naming
   * the field, before anything runs, for offers of the wrong shape (an
   * agent that is no identifier or offered twice in a level, a missing
   * description, a time limit that is no duration, offers deeper than
   * `maxDepth`) or a limit below 1.
   *
   * @since 0.1.0
   * @category constructors
   */
  tool,
  /**
   * The tool's name: `delegate`.
   *
   * @since 0.1.0
   * @category naming
   */
  toolName
} from "./internal/delegation.ts"
