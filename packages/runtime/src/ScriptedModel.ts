/**
 * The scripted model: the library's embedded default for demos and tests.
 *
 * It is deterministic (its answers depend only on its script, the request
 * and the request's index), never touches the network, and records every
 * request it receives, in order, so a test can assert the exact count and
 * contents of what the executor sent.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import type { ModelRequest, ModelResponse } from "./Model.ts"
import { Model, ModelError } from "./Model.ts"

/**
 * What a script step may produce: a response, or a model error (to script a
 * provider failure).
 *
 * @since 0.1.0
 * @category models
 */
export type ScriptedReply = ModelResponse | ModelError

/**
 * A script: either a list of replies used in order (the `n`-th request gets
 * the `n`-th reply; one more request than the list holds fails with
 * `ModelError` reason `ScriptExhausted`), or a function of the request and
 * its zero-based index among all requests this model received.
 *
 * @since 0.1.0
 * @category models
 */
export type Script =
  | ReadonlyArray<ScriptedReply>
  | ((request: ModelRequest, index: number) => ScriptedReply | Effect.Effect<ModelResponse, ModelError>)

/**
 * Read access to what the scripted model received. Requests are recorded
 * before the reply is computed, so a request that was answered with an error
 * is recorded too. Requests are stored as given (not copied).
 *
 * @since 0.1.0
 * @category services
 */
export class ScriptedModelRecorder extends Context.Service<
  ScriptedModelRecorder,
  {
    /** Every request received so far, in arrival order. */
    readonly requests: Effect.Effect<ReadonlyArray<ModelRequest>>
    /** How many requests were received so far. */
    readonly count: Effect.Effect<number>
  }
>()("@tessera/runtime/ScriptedModelRecorder") {}

const isModelError = (reply: ScriptedReply): reply is ModelError => reply instanceof ModelError

const reply = (
  value: ScriptedReply | Effect.Effect<ModelResponse, ModelError>
): Effect.Effect<ModelResponse, ModelError> =>
  Effect.isEffect(value) ? value : isModelError(value) ? Effect.fail(value) : Effect.succeed(value)

/**
 * Builds a scripted model and its recorder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (script: Script) =>
  Effect.sync(() => {
    // Appending in place keeps recording linear over long runs; readers get a copy.
    const received: Array<ModelRequest> = []
    const generate = (request: ModelRequest): Effect.Effect<ModelResponse, ModelError> =>
      Effect.sync(() => received.push(request) - 1).pipe(
        Effect.flatMap((index) => {
          if (typeof script === "function") return Effect.suspend(() => reply(script(request, index)))
          const scripted = script[index]
          return scripted === undefined
            ? Effect.fail(
                new ModelError({
                  reason: "ScriptExhausted",
                  detail: `the script holds ${script.length} response(s) and request ${index + 1} arrived`
                })
              )
            : reply(scripted)
        })
      )
    return {
      model: Model.of({ generate }),
      recorder: ScriptedModelRecorder.of({
        requests: Effect.sync(() => received.slice()),
        count: Effect.sync(() => received.length)
      })
    }
  })

/**
 * The scripted model as a layer providing both {@link Model} and
 * {@link ScriptedModelRecorder}. Each build of the layer starts with an empty
 * record.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (script: Script): Layer.Layer<Model | ScriptedModelRecorder> =>
  Layer.effectContext(
    Effect.map(make(script), ({ model, recorder }) =>
      Context.make(Model, model).pipe(Context.add(ScriptedModelRecorder, recorder))
    )
  )
