/**
 * The front door's implementation: a local harness on a folder for an
 * agent, with the host's redaction decision applied to every task it runs.
 * `NodeTessera.open` states the contract.
 *
 * @internal
 */
import * as ArtifactRedactor from "@tessera/artifacts/ArtifactRedactor"
import * as Ids from "@tessera/core/Ids"
import * as InvalidInput from "@tessera/core/InvalidInput"
import type * as Compaction from "@tessera/runtime/Compaction"
import * as History from "@tessera/runtime/History"
import * as Model from "@tessera/runtime/Model"
import * as TaskExecution from "@tessera/runtime/TaskExecution"
import * as Tool from "@tessera/runtime/Tool"
import * as ToolResults from "@tessera/runtime/ToolResults"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as LocalHarness from "../LocalHarness.ts"

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

/** See `NodeTessera.RunOptions`. */
export interface RunOptions<R> {
  readonly tools?: ReadonlyArray<Tool.Tool<R>>
  readonly maxSteps?: number
}

/** See `NodeTessera.defaultOffload`. */
export const defaultOffload: ToolResults.OffloadConfig = {
  threshold: 8_192,
  readTool: ToolResults.defaultReadToolName,
  destination: "Private"
}

/** See `NodeTessera.defaultMaxSteps`. */
export const defaultMaxSteps = 16

/** See `NodeTessera.defaultNamespace`. */
export const defaultNamespace = "tessera"

const refuse = (field: string, value: unknown, detail: string) =>
  new InvalidInput.InvalidInput({ entry, field, value: InvalidInput.renderValue(value), detail })

// The redactor is a decision the host states, never a default it forgot: a missing key is refused by name.
const checkRedactor = (given: unknown): Result.Result<void, InvalidInput.InvalidInput> =>
  Option.isOption(given)
    ? Result.void
    : Result.fail(
        refuse(
          "redactor",
          given,
          "decide: Option.some(NodeTessera.defaultRedactor) scrubs secrets before anything is stored; Option.none() stores bodies verbatim (recorded in the journal)"
        )
      )

const decodeAgent = InvalidInput.decode(Ids.AgentId, entry, "agent")
const decodeTask = InvalidInput.decode(Ids.TaskId, "NodeTessera.run", "task")

/** See `NodeTessera.open`. */
export const open = <RedactorError = never>(options: OpenOptions<RedactorError>) =>
  Effect.gen(function* () {
    const given: unknown = options
    if (typeof given !== "object" || given === null) return yield* refuse("options", given, "expected an object")
    if (typeof options.folder !== "string" || options.folder.length === 0) {
      return yield* refuse("folder", options.folder, "expected the path of the folder Tessera keeps its state in")
    }
    yield* Effect.fromResult(checkRedactor(options.redactor))
    const agent = yield* decodeAgent(options.agent)
    // The redactor is built once, for the harness's lifetime; every task runs under it.
    const redactor = Option.isSome(options.redactor)
      ? Option.some(yield* Effect.provide(Effect.service(ArtifactRedactor.ArtifactRedactor), options.redactor.value))
      : Option.none<ArtifactRedactor.ArtifactRedactorShape>()
    const harness = yield* LocalHarness.open({
      stateDir: options.folder,
      namespace: options.namespace ?? defaultNamespace,
      agent,
      ...(options.recoverStaleLock === undefined ? {} : { recoverStaleLock: options.recoverStaleLock })
    })
    const offload = options.offload === false ? undefined : (options.offload ?? defaultOffload)
    const bindOptions = options.compaction === undefined ? {} : { policy: options.compaction }
    const decided = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Option.isSome(redactor)
        ? Effect.provideService(effect, ArtifactRedactor.ArtifactRedactor, redactor.value)
        : effect
    const config = <R>(run: RunOptions<R>) => ({
      tools: Tool.registry(...(run.tools ?? [])),
      maxSteps: run.maxSteps ?? defaultMaxSteps,
      durable: true as const,
      ...(offload === undefined ? {} : { offload })
    })
    const run = <R = never>(task: string, prompt: string, runOptions: RunOptions<R> = {}) =>
      Effect.flatMap(decodeTask(task), (id) =>
        harness.withTask(
          id,
          (binding) =>
            Effect.gen(function* () {
              // The conversation so far (durable turns keep it), then the new question.
              const previous = yield* TaskExecution.restoreHistory(binding)
              const question = [Model.text("user", prompt)]
              const history = Option.match(previous, {
                onNone: () => History.make(question),
                onSome: (conversation) => History.append(conversation, question)
              })
              return yield* TaskExecution.runTurn(binding, history, config(runOptions))
            }).pipe(decided),
          bindOptions
        )
      )
    const resume = <R = never>(task: string, runOptions: RunOptions<R> = {}) =>
      Effect.flatMap(decodeTask(task), (id) =>
        harness.withTask(id, (binding) => TaskExecution.resume(binding, config(runOptions)).pipe(decided), bindOptions)
      )
    const entries = (task: string) => Effect.flatMap(decodeTask(task), harness.readEntries)
    return {
      harness,
      folder: harness.folder,
      agent,
      redaction: Option.isSome(redactor) ? ("Scrubbed" as const) : ("Verbatim" as const),
      run,
      resume,
      entries
    }
  })
