/**
 * Who writes a summary, and with which instruction: the host's choice, or
 * the turn's own model with the library's instruction. `Compaction`
 * states the contract (`Compaction.Summarizer`, `Compaction.summarizer`).
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Model } from "../Model.ts"

/** See `Compaction.summaryInstruction`. */
export const defaultInstruction =
  "Summarize the work so far for your own later use: decisions, facts found, open questions and next steps. " +
  "Build on the previous summary when one is given; do not drop what it established."

/** See `Compaction.SummarizerShape`. */
export interface SummarizerShape {
  readonly instruction: string
  readonly model: Option.Option<Model["Service"]>
}

/** See `Compaction.Summarizer`. */
export class Summarizer extends Context.Service<Summarizer, SummarizerShape>()("@tessera/runtime/Summarizer") {}

/** See `Compaction.SummarizerOptions`. */
export interface SummarizerOptions<E, R> {
  readonly instruction?: string
  readonly model?: Layer.Layer<Model, E, R>
}

const entry = "Compaction.summarizer"

/** See `Compaction.summarizer`. */
export const layer = <E = never, R = never>(
  options: SummarizerOptions<E, R>
): Layer.Layer<Summarizer, E | InvalidInput.InvalidInput, R> =>
  Layer.effect(
    Summarizer,
    Effect.gen(function* () {
      const instruction = options.instruction ?? defaultInstruction
      if (typeof instruction !== "string" || instruction.trim().length === 0) {
        return yield* new InvalidInput.InvalidInput({
          entry,
          field: "instruction",
          value: InvalidInput.renderValue(instruction),
          detail: "expected the summary requests' system instruction: a non-empty text"
        })
      }
      const model =
        options.model === undefined
          ? Option.none<Model["Service"]>()
          : Option.some(yield* Effect.service(Model).pipe(Effect.provide(options.model)))
      return Summarizer.of({ instruction, model })
    })
  )

/** The summarizer in scope: the host's, else the turn's model with the library's instruction. */
export const current: Effect.Effect<{ readonly instruction: string; readonly model: Model["Service"] }, never, Model> =
  Effect.gen(function* () {
    const chosen = yield* Effect.serviceOption(Summarizer)
    const instruction = Option.isSome(chosen) ? chosen.value.instruction : defaultInstruction
    const model = Option.isSome(chosen) && Option.isSome(chosen.value.model) ? chosen.value.model.value : yield* Model
    return { instruction, model }
  })
