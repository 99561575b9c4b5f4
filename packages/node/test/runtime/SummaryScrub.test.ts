/**
 * Summary requests are a door like any other: a provider's error on one
 * echoes the history being summarized, and reaches the caller (and the
 * journal, and the spans) only through the host's redactor. Measured
 * against the secret corpus, each door keeps back what the redactor catches
 * in the provider's text, as the ordinary model step does.
 */
import { assert, describe, it } from "@effect/vitest"
import { ArtifactRedactor, DefaultRedactor } from "@tessera/artifacts"
import { Compaction, EntryGate, Executor, Model, TaskExecution } from "@tessera/runtime"
import type { ScriptedModel } from "@tessera/runtime/testing"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import * as SummaryRequests from "../../../runtime/src/internal/summaryRequests.js"
import { everyText, measureDoor, providerText } from "./support/leaks.ts"
import { recordSpans } from "./support/spans.ts"
import { isSummaryRequest, journalBytes, journalFolder, start, taskParts, tools, turnLayer } from "./support/turns.ts"
import { runInWorld, task, type World } from "./support/world.ts"

const redactedByHost = DefaultRedactor.make().redactText(providerText)
const providerError = () => new Model.ModelError({ reason: "ProviderFailure", detail: providerText, retryable: false })

/** A provider's own error class, thrown as a defect: its text in the message, a body, a cause and a getter. */
class ProviderHttpError extends Error {
  readonly status = 400
  readonly body: { readonly error: { readonly message: string } }
  constructor(text: string) {
    super(text, { cause: new AggregateError([new Error(text)], "every attempt failed") })
    this.body = { error: { message: text } }
    Object.defineProperty(this, "rawBody", { enumerable: true, get: () => text })
  }
}

/** What a turn of these scenarios runs with: the scripted model, the journal, the platform. */
type TurnServices = Layer.Success<ReturnType<typeof turnLayer>>

const policy = Compaction.threshold({ measure: "bytes", limit: 5_000, keepRecent: 0, pieceLimit: 100_000 })

const bound = (world: World) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const scope = yield* world.scopeFor([world.privateRef])
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return yield* EntryGate.bind(context, { policy })
  })

/** Two tool steps, then the third step compacts: its summary request gets `summary`. */
const compactingScript =
  (summary: () => Model.ModelError | Effect.Effect<Model.ModelResponse, Model.ModelError>) =>
  (request: Model.ModelRequest, index: number) =>
    isSummaryRequest(request)
      ? summary()
      : index < 2
        ? Model.response({ toolCalls: [Model.toolCall(`c${index + 1}`, "produce", { size: 6_000, fill: "x" })] })
        : Model.response({ text: "done" })

/** Runs a turn of `binding` that must fail; returns what reached the caller, the journal and the spans. */
const failedTurn = (
  world: World,
  script: ScriptedModel.Script,
  redactor: Layer.Layer<ArtifactRedactor.ArtifactRedactor> | Layer.Layer<never>,
  run: (binding: EntryGate.TaskBinding) => Effect.Effect<unknown, unknown, TurnServices>
) =>
  Effect.gen(function* () {
    const { named, tracer } = recordSpans()
    const binding = yield* bound(world)
    const models = turnLayer(world, task, script)
    const exit = yield* Effect.exit(run(binding)).pipe(
      Effect.provide(Layer.merge(models, redactor)),
      Effect.withTracer(tracer)
    )
    assert.isTrue(Exit.isFailure(exit), "the turn fails")
    const journal = journalBytes(yield* journalFolder(world), task)
    const spans = ["Compaction.summaryRequest", "Compaction.summarize", "Compaction.compact", "Executor.modelStep"]
      .flatMap(named)
      .map((span) => span.status)
    return { exit, journal, spans, outputs: [...everyText(exit), journal, ...everyText(spans)] }
  })

const runTurn = (binding: EntryGate.TaskBinding) => TaskExecution.runTurn(binding, start, { tools, maxSteps: 8 })

const defaultRedactor = DefaultRedactor.layer() as Layer.Layer<ArtifactRedactor.ArtifactRedactor>

describe("summary requests' failures through the host's redactor", () => {
  it("model_step_error_scrubbed: the ordinary model step's ModelFailed and error keep back what the redactor catches (the rate every summary door is held to)", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { exit, journal, outputs } = yield* failedTurn(world, () => providerError(), defaultRedactor, runTurn)
        assert.include(journal, '"_tag":"ModelFailed"')
        const error = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)
        assert.instanceOf(error, Model.ModelError)
        assert.include((error as Model.ModelError).detail, "[REDACTED:")
        const measure = measureDoor("model step", outputs, redactedByHost)
        assert.deepStrictEqual(measure.caughtButLeaked, [])
        assert.isAtLeast(measure.rate, measure.redactorRate)
      })
    ))

  it("model_step_redactor_failed: when the host's redactor fails, ModelFailed journals the reason and a withheld detail, and the caller gets the same", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const failing = ArtifactRedactor.layer({
          redact: () => Effect.fail(new ArtifactRedactor.ArtifactRedactionFailed({ detail: "redactor unavailable" }))
        })
        const { exit, journal, outputs } = yield* failedTurn(world, () => providerError(), failing, runTurn)
        const error = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause) as Model.ModelError
        assert.instanceOf(error, Model.ModelError)
        assert.strictEqual(error.reason, "ProviderFailure")
        assert.strictEqual(error.detail, "[detail withheld: the redactor failed on it]")
        const failed = journal
          .split("\n")
          .filter((line) => line.includes('"_tag":"ModelFailed"'))
          .map((line) => JSON.parse(line) as { reason: string; detail: string })
        assert.deepStrictEqual(
          failed.map(({ detail, reason }) => ({ reason, detail })),
          [{ reason: "ProviderFailure", detail: "[detail withheld: the redactor failed on it]" }]
        )
        assert.strictEqual(measureDoor("model step, redactor failing", outputs, redactedByHost).rate, 1)
      })
    ))

  it("executor_compaction_error_scrubbed: a summary request of the stock executor's compaction failing with the provider's text: the error the caller gets, the journal and the spans keep back what the redactor catches", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { exit, journal, outputs, spans } = yield* failedTurn(
          world,
          compactingScript(() => providerError()),
          defaultRedactor,
          runTurn
        )
        assert.include(journal, '"_tag":"SummaryStarted"', "the summary request was sent")
        assert.isAbove(spans.length, 0)
        const error = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)
        assert.instanceOf(error, Model.ModelError, "still the model's error, for the caller to match on")
        assert.strictEqual((error as Model.ModelError).reason, "ProviderFailure")
        assert.isFalse((error as Model.ModelError).retryable)
        assert.include((error as Model.ModelError).detail, "[REDACTED:")
        const measure = measureDoor("executor compaction", outputs, redactedByHost)
        assert.deepStrictEqual(measure.caughtButLeaked, [])
        assert.isAtLeast(measure.rate, measure.redactorRate)
      })
    ))

  it("executor_compaction_defect_scrubbed: a summary model that dies with a provider error (message, body, getter, cause, aggregate) hands the caller a scrubbed copy of the same class", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { exit, outputs } = yield* failedTurn(
          world,
          compactingScript(() => Effect.die(new ProviderHttpError(providerText))),
          defaultRedactor,
          runTurn
        )
        const defect = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)
        assert.instanceOf(defect, ProviderHttpError)
        assert.strictEqual((defect as ProviderHttpError).status, 400)
        const measure = measureDoor("executor compaction (defect)", outputs, redactedByHost)
        assert.deepStrictEqual(measure.caughtButLeaked, [])
        assert.isAtLeast(measure.rate, measure.redactorRate)
      })
    ))

  it("negative control: the same compaction without a redactor hands the caller the provider's text whole", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { outputs } = yield* failedTurn(
          world,
          compactingScript(() => providerError()),
          Layer.empty,
          runTurn
        )
        const measure = measureDoor("executor compaction, no redactor", outputs, redactedByHost)
        assert.isBelow(measure.rate, 0.05, "the door carries the secrets: it is the redactor that keeps them back")
      })
    ))

  it("negative control: a summary wiring that calls the model itself, bypassing the scrub, leaks what the redactor would catch", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        // A harness hook sending its own summary request, without going through `Compaction`.
        const bypassing: Executor.Hooks<Model.ModelError, Model.Model> = {
          beforeModelStep: (_context, history) =>
            Effect.flatMap(Effect.service(Model.Model), (model) =>
              model.generate(
                SummaryRequests.summaryRequest({
                  task: history.task,
                  previousSummary: Option.none(),
                  piece: "the history",
                  index: 0,
                  count: 1
                })
              )
            ).pipe(Effect.as(history))
        }
        const { outputs } = yield* failedTurn(
          world,
          compactingScript(() => providerError()),
          defaultRedactor,
          () => Executor.runTurn({ tools, maxSteps: 8, hooks: bypassing }, start)
        )
        const measure = measureDoor("bypassing summary wiring", outputs, redactedByHost)
        assert.isBelow(measure.rate, 0.05, "the hook's error reaches the caller as the provider wrote it")
        assert.isAbove(measure.caughtButLeaked.length, 0)
      })
    ))

  const summaryInput: Compaction.SummaryInput = {
    task: taskParts,
    previousSummary: Option.none(),
    rounds: [[Model.text("user", "the reports so far")]],
    pieceBytes: 100_000
  }

  const summarizeExit = (
    generate: (request: Model.ModelRequest) => Effect.Effect<Model.ModelResponse, Model.ModelError>,
    redactor: Layer.Layer<ArtifactRedactor.ArtifactRedactor>
  ) =>
    Effect.runPromise(
      Effect.exit(Compaction.summarize(summaryInput)).pipe(
        Effect.provide(Layer.merge(Model.layerFromGenerate(generate), redactor))
      )
    )

  it("compaction_summarize_error_scrubbed: Compaction.summarize failing with the provider's text returns a ModelError that keeps back what the redactor catches", async () => {
    const exit = await summarizeExit(() => Effect.fail(providerError()), defaultRedactor)
    assert.isTrue(Exit.isFailure(exit))
    const error = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)
    assert.instanceOf(error, Model.ModelError)
    assert.strictEqual((error as Model.ModelError)._tag, "ModelError")
    const measure = measureDoor("Compaction.summarize", everyText(exit), redactedByHost)
    assert.deepStrictEqual(measure.caughtButLeaked, [])
    assert.isAtLeast(measure.rate, measure.redactorRate)
  })

  it("compaction_summarize_defect_scrubbed: a defect of the summary model (a provider error thrown) is scrubbed too", async () => {
    const exit = await summarizeExit(() => Effect.die(new ProviderHttpError(providerText)), defaultRedactor)
    const defect = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause)
    assert.instanceOf(defect, ProviderHttpError)
    const measure = measureDoor("Compaction.summarize (defect)", everyText(exit), redactedByHost)
    assert.deepStrictEqual(measure.caughtButLeaked, [])
  })

  it("compaction_summarize_redactor_failed: when the host's redactor fails, the provider's text is withheld, not passed on", async () => {
    const failing = ArtifactRedactor.layer({
      redact: () => Effect.fail(new ArtifactRedactor.ArtifactRedactionFailed({ detail: "redactor unavailable" }))
    })
    const exit = await summarizeExit(() => Effect.fail(providerError()), failing)
    const error = Cause.squash((exit as Exit.Failure<unknown, unknown>).cause) as Model.ModelError
    assert.instanceOf(error, Model.ModelError)
    assert.strictEqual(error.detail, "[detail withheld: the redactor failed on it]")
    assert.strictEqual(error.reason, "ProviderFailure", "the reason is a literal, kept for the caller to match on")
    assert.isFalse(error.retryable)
    const measure = measureDoor("Compaction.summarize, redactor failing", everyText(exit), redactedByHost)
    assert.strictEqual(measure.rate, 1)
  })

  it("negative control: the same summary request sent without Compaction's scrub leaks with the redactor in context", async () => {
    const exit = await Effect.runPromise(
      Effect.exit(
        Effect.flatMap(Effect.service(Model.Model), (model) =>
          model.generate(
            SummaryRequests.summaryRequest({
              task: summaryInput.task,
              previousSummary: Option.none(),
              piece: "the reports so far",
              index: 0,
              count: 1
            })
          )
        )
      ).pipe(
        Effect.provide(
          Layer.merge(
            Model.layerFromGenerate(() => Effect.fail(providerError())),
            defaultRedactor
          )
        )
      )
    )
    const measure = measureDoor("summary request without the scrub", everyText(exit), redactedByHost)
    assert.isBelow(measure.rate, 0.05)
    assert.isAbove(measure.caughtButLeaked.length, 0)
  })
})
