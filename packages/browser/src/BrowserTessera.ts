/**
 * Tessera in a browser: the front door ({@link open}: a harness in the
 * origin's private file system for an agent, turns run with offload,
 * compaction and durability on, and the host's redaction decision stated),
 * the same shape as `NodeTessera.open`, and the one layer a page or a
 * worker provides ({@link layer}, the browser platform).
 *
 * @since 0.1.0
 */
import type * as ArtifactPathPolicy from "@tessera/artifacts/ArtifactPathPolicy"
import type * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as DefaultRedactor from "@tessera/artifacts/DefaultRedactor"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import type * as Compaction from "@tessera/runtime/Compaction"
import type * as Journal from "@tessera/runtime/Journal"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import type * as ToolResults from "@tessera/runtime/ToolResults"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import type * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type * as Path from "effect/Path"
import * as BrowserHarness from "./BrowserHarness.ts"
import * as BrowserPlatform from "./BrowserPlatform.ts"

/**
 * What {@link open} takes: `agent` (an identifier; its `<agent>-scratch`
 * volume is the private volume of its tasks), `redactor` (required, the
 * same decision as `NodeTessera.OpenOptions`: `Option.some(layer)` scrubs
 * before anything is stored, `Option.none()` stores bodies verbatim and the
 * journal says so), `namespace` (by default `tessera`), `root` (the OPFS
 * folder, by default `/tessera`), `offload` and `compaction` (as on Node).
 *
 * @since 0.1.0
 * @category front door
 */
export interface OpenOptions<RedactorError = never> {
  readonly agent: string
  readonly redactor: Option.Option<Layer.Layer<ArtifactRedactor.ArtifactRedactor, RedactorError>>
  readonly namespace?: string
  readonly root?: string
  readonly offload?: ToolResults.OffloadConfig | false
  readonly compaction?: Compaction.Policy
}

const entry = "BrowserTessera.open"
const decodeAgent = InvalidInput.decode(Ids.AgentId, entry, "agent")

/**
 * The front door in a browser: opens a `BrowserHarness` for
 * `options.agent` (get-or-create: its volumes, its scope, each task's
 * journal; one tab or worker of the origin at a time), with the host's
 * redaction decision, for the current scope. A task's `run`, `resume`,
 * `decide` and `entries` are `TaskExecution.frontDoor`'s, as on Node
 * (`run` and `resume` take `children` and `delegation`: the harness binds
 * each child task with its own scope, private volume and journal);
 * `harness` is the harness underneath. Refuses options of the wrong shape
 * `InvalidInput` naming the field before anything is created.
 *
 * @example
 * ```ts
 * import { BrowserTessera } from "@tessera/browser"
 * import { Tool } from "@tessera/runtime"
 * import { ScriptedModel } from "@tessera/runtime/testing"
 * import { Effect, Option, Schema } from "effect"
 *
 * const lookUp = Tool.make({
 *   name: "look_up",
 *   description: "Looks a ticket up",
 *   input: Schema.Struct({ ticket: Schema.String }),
 *   handler: ({ ticket }) => Effect.succeed(`${ticket}: open`)
 * })
 *
 * const program = Effect.gen(function* () {
 *   const tessera = yield* BrowserTessera.open({ agent: "assistant", redactor: Option.some(BrowserTessera.defaultRedactor) })
 *   const outcome = yield* tessera.run("ticket-7", "What is the state of ticket 7?", { tools: [lookUp] })
 *   return outcome._tag === "Answered" ? outcome.text : outcome._tag
 * })
 *
 * const model = ScriptedModel.layer([ScriptedModel.calling("look_up", { ticket: "7" }), "Ticket 7 is open."])
 * export const answer = program.pipe(Effect.scoped, Effect.provide(model), Effect.provide(BrowserTessera.layer))
 * ```
 *
 * @since 0.1.0
 * @category front door
 */
export const open = <RedactorError = never>(options: OpenOptions<RedactorError>) =>
  Effect.gen(function* () {
    const given: unknown = options
    if (typeof given !== "object" || given === null) {
      return yield* new InvalidInput.InvalidInput({
        entry,
        field: "options",
        value: InvalidInput.renderValue(given),
        detail: "expected an object"
      })
    }
    // Every decision is checked before the namespace is locked or anything is created in it.
    yield* TaskExecution.checkFrontDoor(entry, options)
    const agent = yield* decodeAgent(options.agent)
    const harness = yield* BrowserHarness.open({
      namespace: options.namespace ?? "tessera",
      agent,
      ...(options.root === undefined ? {} : { root: options.root })
    })
    // The harness provides each task (and each delegated child) its journal and the path policy, and needs the
    // platform's files.
    const door = yield* TaskExecution.frontDoor<
      BrowserHarness.ChildError,
      FileSystem.FileSystem | Path.Path,
      Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy,
      RedactorError
    >(harness, options, { entry: "BrowserTessera" })
    return { ...door, harness, folder: harness.folder, agent }
  })

/**
 * An open browser front door, valid until the scope it was opened in
 * closes: `run`, `resume`, `entries` (see `NodeTessera.Tessera`),
 * `folder` (the namespace's OPFS folder), `agent`, `redaction` and
 * `harness`.
 *
 * @since 0.1.0
 * @category front door
 */
export type Tessera = Effect.Success<ReturnType<typeof open>>

/**
 * The default redactor (`DefaultRedactor.layer()`), one name away for
 * {@link open}'s `redactor`.
 *
 * @since 0.1.0
 * @category front door
 */
export const defaultRedactor: Layer.Layer<ArtifactRedactor.ArtifactRedactor, DefaultRedactor.InvalidRedactionRule> =
  DefaultRedactor.layer()

/**
 * The one layer a page or a worker provides: the browser platform
 * (`BrowserPlatform.layer`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = BrowserPlatform.layer
