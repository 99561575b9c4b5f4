/**
 * Type tests: the public entries state their types with named aliases
 * (`TaskExecution.TurnError`, `TurnRequirements`, ...) so the reference and
 * editor hovers show names instead of erased or inlined unions. Each alias
 * must be exactly what the entry's body infers (kept in the internal
 * modules' `inferred`), so naming it changed no caller's types: every
 * `toEqualTypeOf` below fails to compile when an alias drifts from its
 * body, and each `@ts-expect-error` line is a negative control (an alias
 * missing one member, or one too many) that must fail to compile.
 */
import type { InvalidInput, Unauthorized } from "@tessera/core"
import {
  EntryGate,
  type Executor,
  type FilesystemTaskRuntime,
  type History,
  type Journal,
  type Model,
  type PrivateSummaries,
  TaskExecution,
  type VolumeStore
} from "@tessera/runtime"
import type { Effect, Path, Stream } from "effect"
import { expectTypeOf } from "vitest"
import { inferred as durable } from "../src/internal/durableTurns.js"
import { inferred as summaries } from "../src/internal/summaryEntries.js"
import { inferred as turns } from "../src/internal/turnEntries.js"

/** A host hook's own failure and service, to check the aliases with `E` and `R` that are not `never`. */
interface HostFailure {
  readonly _tag: "HostFailure"
}
interface HostService {
  readonly _tag: "HostService"
}

declare const context: FilesystemTaskRuntime.TaskContext
declare const binding: EntryGate.TaskBinding
declare const history: History.History
declare const config: TaskExecution.ExecutionConfig
declare const hosted: TaskExecution.ExecutionConfig<HostFailure, HostService>

// turn_entries_alias_their_inferred_types: runTurn and resumeTurn, as stated and as inferred, with and without
// the host's own E and R.
expectTypeOf(TaskExecution.runTurn(binding, history, config)).toEqualTypeOf(turns.runTurn(binding, history, config))
expectTypeOf(TaskExecution.runTurn(binding, history, hosted)).toEqualTypeOf(turns.runTurn(binding, history, hosted))
expectTypeOf(TaskExecution.resumeTurn(binding, history, config)).toEqualTypeOf(
  turns.resumeTurn(binding, history, config)
)
expectTypeOf(TaskExecution.resumeTurn(binding, history, hosted)).toEqualTypeOf(
  turns.resumeTurn(binding, history, hosted)
)
expectTypeOf(TaskExecution.runTurn(binding, history, hosted)).toEqualTypeOf<
  Effect.Effect<
    Executor.TurnOutcome,
    TaskExecution.TurnError<HostFailure>,
    TaskExecution.TurnRequirements<HostService> | Model.Model
  >
>()

// The stream's types were `Effect.Error`/`Effect.Services` of runTurn's inferred type (plus `InvalidInput`, for
// `bufferSize`); the aliases are the same types.
type InferredTurn = ReturnType<typeof turns.runTurn<HostFailure, HostService>>
expectTypeOf(TaskExecution.streamTurn(binding, history, hosted)).toEqualTypeOf<
  Stream.Stream<
    Executor.TurnEvent,
    Effect.Error<InferredTurn> | InvalidInput.InvalidInput,
    Effect.Services<InferredTurn>
  >
>()

// resume_alias_is_its_inferred_type
expectTypeOf(TaskExecution.resume(binding, config)).toEqualTypeOf(durable.resume(binding, config))
expectTypeOf(TaskExecution.resume(binding, hosted)).toEqualTypeOf(durable.resume(binding, hosted))

// summary_entries_alias_their_inferred_types
expectTypeOf(TaskExecution.summarize(binding, history)).toEqualTypeOf(summaries.summarize(binding, history))
expectTypeOf(TaskExecution.runSummaryFileTurn(binding, history, config)).toEqualTypeOf(
  summaries.runSummaryFileTurn(binding, history, config)
)
expectTypeOf(TaskExecution.runSummaryFileTurn(binding, history, hosted)).toEqualTypeOf(
  summaries.runSummaryFileTurn(binding, history, hosted)
)

// The gate and the foreign loop state their types in their bodies (`Effect.fn.Return`, which refuses a body
// that fails with more); these pin the public signatures to the named aliases and to what was inferred before
// they were named (the unions the declarations of 0.1.0 spelled out).
expectTypeOf(EntryGate.verify(binding, "Turn")).toEqualTypeOf<
  Effect.Effect<EntryGate.Admission, PrivateSummaries.ResolveError, EntryGate.VerifyRequirements>
>()
expectTypeOf(EntryGate.verify(binding, "Turn")).toEqualTypeOf<
  Effect.Effect<
    EntryGate.Admission,
    Unauthorized.Unauthorized | PrivateSummaries.ResolveError,
    Journal.Journal | Path.Path
  >
>()
expectTypeOf(EntryGate.bind(context)).toEqualTypeOf<Effect.Effect<EntryGate.TaskBinding, EntryGate.BindError>>()
expectTypeOf(EntryGate.bind(context)).toEqualTypeOf<
  Effect.Effect<
    EntryGate.TaskBinding,
    | InvalidInput.InvalidInput
    | Unauthorized.Unauthorized
    | VolumeStore.VolumeMetadataInvalid
    | VolumeStore.StoreIoError,
    never
  >
>()
expectTypeOf(TaskExecution.foreignLoop(binding)).toEqualTypeOf<
  Effect.Effect<TaskExecution.ForeignLoop, TaskExecution.ForeignLoopOpenError, TaskExecution.ForeignLoopRequirements>
>()
expectTypeOf(TaskExecution.foreignLoop(binding)).toEqualTypeOf<
  Effect.Effect<
    TaskExecution.ForeignLoop,
    InvalidInput.InvalidInput | PrivateSummaries.ResolveError,
    TaskExecution.ForeignLoopRequirements
  >
>()

// Negative controls: an alias missing a member (the model's error), or with one too many (a service the turn
// does not need), is not the inferred type.
type MissingModelError = Effect.Effect<
  Executor.TurnOutcome,
  Exclude<TaskExecution.TurnError, Model.ModelError>,
  TaskExecution.TurnRequirements
>
type ExtraService = Effect.Effect<
  Executor.TurnOutcome,
  TaskExecution.TurnError,
  TaskExecution.TurnRequirements | HostService
>
// @ts-expect-error
expectTypeOf(TaskExecution.runTurn(binding, history, config)).toEqualTypeOf<MissingModelError>()
// @ts-expect-error
expectTypeOf(TaskExecution.runTurn(binding, history, config)).toEqualTypeOf<ExtraService>()
// @ts-expect-error
expectTypeOf(TaskExecution.resume(binding, config)).toEqualTypeOf(turns.resumeTurn(binding, history, config))
