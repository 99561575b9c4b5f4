/**
 * The Node front door: a local harness on a folder for an agent, with the
 * runtime's front door (`TaskExecution.frontDoor`) over it.
 * `NodeTessera.open` states the contract.
 *
 * @internal
 */
import type * as ArtifactPathPolicy from "@tessera/artifacts/ArtifactPathPolicy"
import type * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
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
import * as LocalHarness from "../LocalHarness.ts"
import type { TaskBindError, TaskJournalError } from "./hostTasks.ts"

const entry = "NodeTessera.open"

/** See `NodeTessera.OpenOptions`. */
export interface OpenOptions<RedactorError = never> {
  readonly folder: string
  readonly agent: string
  readonly redactor: Option.Option<Layer.Layer<ArtifactRedactor.ArtifactRedactor, RedactorError>>
  readonly namespace?: string
  readonly offload?: ToolResults.OffloadConfig | false
  readonly compaction?: Compaction.Policy
  readonly recoverStaleLock?: boolean
}

/** See `NodeTessera.defaultNamespace`. */
export const defaultNamespace = "tessera"

const refuse = (field: string, value: unknown, detail: string) =>
  new InvalidInput.InvalidInput({ entry, field, value: InvalidInput.renderValue(value), detail })

const decodeAgent = InvalidInput.decode(Ids.AgentId, entry, "agent")

/** See `NodeTessera.open`. */
export const open = <RedactorError = never>(options: OpenOptions<RedactorError>) =>
  Effect.gen(function* () {
    const given: unknown = options
    if (typeof given !== "object" || given === null) return yield* refuse("options", given, "expected an object")
    if (typeof options.folder !== "string" || options.folder.length === 0) {
      return yield* refuse("folder", options.folder, "expected the path of the folder Tessera keeps its state in")
    }
    // Every decision is checked before the folder is locked or anything is created in it.
    yield* TaskExecution.checkFrontDoor(entry, options)
    const agent = yield* decodeAgent(options.agent)
    const harness = yield* LocalHarness.open({
      stateDir: options.folder,
      namespace: options.namespace ?? defaultNamespace,
      agent,
      ...(options.recoverStaleLock === undefined ? {} : { recoverStaleLock: options.recoverStaleLock })
    })
    // The harness provides each task its journal and the path policy, and needs the platform's files.
    const door = yield* TaskExecution.frontDoor<
      TaskBindError | TaskJournalError,
      FileSystem.FileSystem | Path.Path,
      Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy,
      RedactorError
    >(harness, options, { entry: "NodeTessera" })
    return { ...door, harness, folder: harness.folder, agent }
  })
