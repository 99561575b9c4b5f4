/**
 * Tessera on Node: the front door ({@link open}: a harness on a folder for
 * an agent, turns run with offload, compaction and durability on, and the
 * host's redaction decision stated) and the one layer a Node host provides
 * ({@link layer}): every Node service the runtime works with or runs faster
 * with, and nothing else.
 *
 * - `FileSystem` and `Path` from `@effect/platform-node` (the runtime needs
 *   both; the rest of `NodeServices`, child processes and terminals, it does
 *   not, so it is not loaded);
 * - `NodeDurableFiles`: write-once files, publication by hard link, reads
 *   that follow no link;
 * - `NodeDigest`: SHA-256 on `node:crypto`, synchronous. Without it the
 *   runtime measures with WebCrypto, a worker round trip per digest;
 * - a journal file: {@link layer} appends on the calling thread
 *   (`NodeJournalFile`: one `write` and one `fsync` per entry, no worker
 *   round trip), right for a process that drives one task at a time, as the
 *   local hosts do; {@link layerConcurrent} keeps the runtime's default
 *   (appends on worker threads), for a server that must keep answering
 *   while tasks journal.
 *
 * When journal entries become durable is a separate choice
 * (`JournalStorage` in `@tessera/runtime`: per entry by default, group
 * commit, memory-only); a host states it by merging
 * `JournalStorage.layer(choice)` beside this layer, or provides it to the
 * layer that opens its journals.
 *
 * Without the digest and the blocking journal the runtime works the same and
 * writes the same bytes; it is slower, by a worker round trip per digest and
 * per journal append (bench/NOTES.md has the measurements).
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import type * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as DefaultRedactor from "@tessera/artifacts/DefaultRedactor"
import type * as DurableFiles from "@tessera/core/DurableFiles"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import type * as ToolResults from "@tessera/runtime/ToolResults"
import type * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Path from "effect/Path"
import * as FrontDoor from "./internal/frontDoor.ts"
import * as NodeDigest from "./NodeDigest.ts"
import * as NodeDurableFiles from "./NodeDurableFiles.ts"
import * as NodeJournalFile from "./NodeJournalFile.ts"

/**
 * What the layers provide.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = FileSystem.FileSystem | Path.Path | DurableFiles.DurableFiles

const platform: Layer.Layer<Services> = Layer.mergeAll(
  NodeFileSystem.layer,
  NodePath.layer,
  NodeDurableFiles.layer,
  NodeDigest.layer
)

/**
 * The fast wiring for a process that runs one task at a time: the platform,
 * durable files, the `node:crypto` digest and blocking journal appends.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { Effect, Schema } from "effect"
 *
 * const program = Effect.gen(function* () {
 *   const harness = yield* LocalHarness.open({
 *     namespace: "research",
 *     agent: Schema.decodeUnknownSync(Ids.AgentId)("researcher")
 *   })
 *   console.log(`namespace ${harness.namespace} at ${harness.folder}`)
 * })
 *
 * // The one layer a Node process that runs one task at a time provides.
 * Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Services> = Layer.merge(platform, NodeJournalFile.layer)

/**
 * {@link layer} with the runtime's default journal file (appends and syncs
 * on worker threads), for a process that serves many tasks at once and must
 * not stall while one of them syncs.
 *
 * @example
 * ```ts
 * import { Ids } from "@tessera/core"
 * import { LocalHarness, NodeTessera } from "@tessera/node"
 * import { History, Model, TaskExecution, Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Schema } from "effect"
 *
 * const decodeTask = Schema.decodeUnknownSync(Ids.TaskId)
 *
 * const lookUp = Tool.make({
 *   name: "look_up",
 *   description: "Looks a ticket up",
 *   input: Schema.Struct({ ticket: Schema.String }),
 *   handler: ({ ticket }) => Effect.succeed(`${ticket}: open`)
 * })
 *
 * // Several tasks at once, each under its own journal lock; one task's fsync does not stall the others.
 * const serve = (tasks: ReadonlyArray<string>) =>
 *   Effect.gen(function* () {
 *     const harness = yield* LocalHarness.open({
 *       namespace: "service",
 *       agent: Schema.decodeUnknownSync(Ids.AgentId)("assistant")
 *     })
 *     return yield* Effect.forEach(
 *       tasks,
 *       (task) =>
 *         harness.withTask(decodeTask(task), (binding) =>
 *           TaskExecution.runTurn(binding, History.make([Model.text("user", `Handle ${task}.`)]), {
 *             tools: Tool.registry(lookUp),
 *             maxSteps: 2
 *           }).pipe(Effect.provide(ScriptedModel.layer([Model.response({ text: `${task} handled.` })])))
 *         ),
 *       { concurrency: "unbounded" }
 *     )
 *   })
 *
 * Effect.runPromise(Effect.scoped(serve(["ticket-1", "ticket-2"])).pipe(Effect.provide(NodeTessera.layerConcurrent)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConcurrent: Layer.Layer<Services> = platform

/**
 * What {@link open} takes:
 *
 * - `folder`: where Tessera keeps its state (created when missing; the
 *   namespace folder inside it is what the inspector reads);
 * - `agent`: the agent the harness runs for (an identifier): its
 *   `<agent>-scratch` volume is the private volume of its tasks;
 * - `redactor`: the host's redaction decision, required:
 *   `Option.some(NodeTessera.defaultRedactor)` (or a redactor layer of the
 *   host's own) scrubs every offloaded body, summary and transcript record
 *   before it is stored; `Option.none()` stores them as written, a
 *   legitimate decision that every turn records (`TurnOpened.redaction`)
 *   and the inspector shows;
 * - `namespace`: the namespace inside `folder` ({@link defaultNamespace});
 * - `offload`: how large tool results leave the context ({@link defaultOffload};
 *   `false` keeps every result inline, cut to the inline limit);
 * - `compaction`: the policy (default: `Threshold`, since the scratch
 *   volume is the private writer);
 * - `recoverStaleLock`: see `LocalHarness.OpenOptions`.
 *
 * @since 0.1.0
 * @category front door
 */
export type OpenOptions<RedactorError = never> = FrontDoor.OpenOptions<RedactorError>

/**
 * What a turn is run with: its tools (none by default), the most model
 * steps it may take ({@link defaultMaxSteps}), and the child agents it may
 * delegate to (`children`, none by default: with any, the turn offers the
 * `delegate` tool, each sub-task a child task of its own agent with its own
 * private volume and journal; see `Delegation`) within `delegation`'s
 * limits.
 *
 * @since 0.1.0
 * @category front door
 */
export type RunOptions<R> = TaskExecution.FrontDoorRunOptions<R>

/**
 * An open front door, valid until the scope it was opened in closes:
 *
 * - `run(task, prompt, options)`: one turn of `task` (created on first use,
 *   its conversation continued on every later run) answering `prompt`,
 *   durable, with offload and compaction on, under the redaction decision;
 * - `resume(task, options)`: the task's open turn continued from disk after
 *   a crash, even a SIGKILL (`TaskExecution.resume`); `None` when no turn is
 *   open, so a crash-safe program resumes before it runs (a `run` while a
 *   turn is open fails `TurnAlreadyOpen`);
 * - `decide(task, decision)`: a person's decision on a call the task's open
 *   turn awaits (`TaskExecution.decide`: journaled with who decided, refused
 *   `NotAwaitingApproval` for any other call); the next `resume` runs the
 *   approved calls and tells the model of the rejected ones;
 * - `entries(task)`: the task's journal;
 * - `folder`, `agent`, `redaction` (`Scrubbed` or `Verbatim`), and
 *   `harness`: the `LocalHarness` underneath, for a host that steps down to
 *   the full API (its own policies per task, its own executor, several
 *   agents).
 *
 * @since 0.1.0
 * @category front door
 */
export type Tessera = Effect.Success<ReturnType<typeof FrontDoor.open>>

/**
 * The front door: opens a local harness on `options.folder` for
 * `options.agent` (get-or-create: its volumes, its scope, each task's
 * journal), with the host's redaction decision, for the current scope.
 * Refuses options of the wrong shape `InvalidInput` naming the field before
 * anything is created (a missing `redactor` names the two decisions); see
 * {@link OpenOptions} and {@link Tessera}.
 *
 * @example
 * ```ts
 * import { NodeTessera } from "@tessera/node"
 * import { Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Option, Schema } from "effect"
 *
 * const fetchReport = Tool.make({
 *   name: "fetch_report",
 *   description: "Fetches a report by name",
 *   input: Schema.Struct({ name: Schema.String }),
 *   handler: ({ name }) => Effect.succeed(`Report ${name}: every measurement within tolerance`)
 * })
 *
 * const program = Effect.gen(function* () {
 *   const tessera = yield* NodeTessera.open({
 *     folder: "/tmp/tessera-state",
 *     agent: "researcher",
 *     redactor: Option.some(NodeTessera.defaultRedactor)
 *   })
 *   const outcome = yield* tessera.run("survey-1", "Summarize the north report.", { tools: [fetchReport] })
 *   console.log(outcome._tag === "Answered" ? outcome.text : outcome._tag)
 * })
 *
 * const model = ScriptedModel.layer([ScriptedModel.calling("fetch_report", { name: "north" }), "All within tolerance."])
 * Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(model), Effect.provide(NodeTessera.layer)))
 * ```
 *
 * @since 0.1.0
 * @category front door
 */
export const open: <RedactorError = never>(
  options: OpenOptions<RedactorError>
) => ReturnType<typeof FrontDoor.open<RedactorError>> = FrontDoor.open

/**
 * The default redactor (`DefaultRedactor.layer()` with its built-in rules),
 * one name away for {@link open}'s `redactor`.
 *
 * @example
 * ```ts
 * import { NodeTessera } from "@tessera/node"
 * import { Option } from "effect"
 *
 * // The redaction decision: scrub with the built-in rules, or store bodies verbatim (recorded in the journal).
 * export const scrubbed = { folder: "tessera-state", agent: "researcher", redactor: Option.some(NodeTessera.defaultRedactor) }
 * export const verbatim = { folder: "tessera-state", agent: "researcher", redactor: Option.none() }
 * ```
 *
 * @since 0.1.0
 * @category front door
 */
export const defaultRedactor: Layer.Layer<ArtifactRedactor.ArtifactRedactor, DefaultRedactor.InvalidRedactionRule> =
  DefaultRedactor.layer()

/**
 * The front door's offload: results over 8 KiB go to the agent's private
 * volume, and the pointer names the library's read tool.
 *
 * @example
 * ```ts
 * import { NodeTessera } from "@tessera/node"
 * import { Option } from "effect"
 *
 * // A larger threshold than the default, the rest as it is.
 * export const options: NodeTessera.OpenOptions = {
 *   folder: "tessera-state",
 *   agent: "researcher",
 *   redactor: Option.none(),
 *   offload: { ...NodeTessera.defaultOffload, threshold: 32_768 }
 * }
 * ```
 *
 * @since 0.1.0
 * @category front door
 */
export const defaultOffload: ToolResults.OffloadConfig = TaskExecution.defaultFrontDoorOffload

/**
 * The most model steps a front-door turn takes unless told otherwise: 16.
 *
 * @since 0.1.0
 * @category front door
 */
export const defaultMaxSteps: number = TaskExecution.defaultFrontDoorSteps

/**
 * The namespace the front door keeps its state in inside its folder: `tessera`.
 *
 * @since 0.1.0
 * @category front door
 */
export const defaultNamespace = FrontDoor.defaultNamespace
