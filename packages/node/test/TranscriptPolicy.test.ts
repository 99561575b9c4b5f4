/**
 * The transcript is private content: it is written only through the private
 * writer (a writerless task cannot run durably), and scrubbed by the host's
 * redactor before it touches disk, which a resumed turn then shows.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactRedactor } from "@tessera/artifacts"
import { JournalForbiddingHost, LocalHarness } from "@tessera/node"
import { Compaction, type EntryGate, History, Journal, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Layer, Schema } from "effect"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"

const agent = agentId("keeper")
const task = taskId("secret-task")
const secret = "sk-live-0123456789abcdef"

const lookup = Tool.make({
  name: "lookup",
  description: "Looks a key up",
  input: Schema.Struct({ key: Schema.String }),
  handler: () => Effect.succeed(`the key is ${secret}`)
})
const config: TaskExecution.ExecutionConfig = { tools: Tool.registry(lookup), maxSteps: 4, durable: true }
const start = History.make([Model.text("user", "Find the key.")])
const script = [
  Model.response({ toolCalls: [Model.toolCall("k1", "lookup", { key: "api" })] }),
  Model.response({ text: "Found it." })
]
const redactor = ArtifactRedactor.layer({ redact: (body) => Effect.succeed(body.replaceAll(secret, "[REDACTED:key]")) })

const withHarness = <A, E, R>(stateDir: string, body: (binding: EntryGate.TaskBinding) => Effect.Effect<A, E, R>) =>
  Effect.scoped(
    Effect.flatMap(LocalHarness.open({ stateDir, namespace: "keep", agent }), (harness) =>
      harness.withTask(task, body, { policy: Compaction.disabled })
    )
  )

/** Every file of the store's volumes whose bytes contain `text`. */
const filesContaining = (stateDir: string, text: string): ReadonlyArray<string> => {
  const root = path.join(stateDir, "keep", "volumes")
  return (fs.readdirSync(root, { recursive: true, encoding: "utf8" }) as Array<string>).filter((name) => {
    const full = path.join(root, name)
    return fs.statSync(full).isFile() && fs.readFileSync(full, "utf8").includes(text)
  })
}

const recorded = Effect.flatMap(Effect.service(ScriptedModel.ScriptedModelRecorder), (recorder) => recorder.requests)

/** A durable turn broken after its tool step, then resumed by a fresh harness; with or without the redactor. */
const brokenAndResumed = (stateDir: string, scrub: boolean) =>
  Effect.gen(function* () {
    const host = scrub ? redactor : Layer.empty
    yield* withHarness(stateDir, (binding) =>
      Effect.flip(TaskExecution.runTurn(binding, start, config)).pipe(
        Effect.provide(
          Layer.merge(
            ScriptedModel.layer([
              script[0] as Model.ModelResponse,
              new Model.ModelError({ reason: "ProviderFailure", detail: "down" })
            ]),
            host
          )
        )
      )
    )
    return yield* withHarness(stateDir, (binding) =>
      Effect.gen(function* () {
        const resumed = yield* TaskExecution.resume(binding, config)
        return { resumed, requests: yield* recorded }
      }).pipe(Effect.provide(Layer.merge(ScriptedModel.layer(script.slice(1)), host)))
    )
  })

describe("transcript policy", () => {
  it.live(
    "transcript_redacted: with the host's redactor no transcript record holds the secret, and the resumed turn sends the scrubbed text without claiming byte identity (control: without a redactor it is stored verbatim and checked byte for byte)",
    () =>
      Effect.gen(function* () {
        const scrubbed = yield* tempDir
        const { requests, resumed } = yield* brokenAndResumed(scrubbed, true)
        assert.deepStrictEqual(filesContaining(scrubbed, secret), [], "the secret touched no file")
        assert.isAbove(filesContaining(scrubbed, "[REDACTED:key]").length, 0)
        assert.strictEqual(resumed.outcome._tag, "Answered")
        assert.strictEqual(resumed.verifiedRequests, 0, "a redacted turn is not claimed byte-identical")
        const sent = JSON.stringify(requests)
        assert.include(sent, "[REDACTED:key]")
        assert.notInclude(sent, secret)

        const verbatim = yield* tempDir
        const control = yield* brokenAndResumed(verbatim, false)
        assert.isAbove(
          filesContaining(verbatim, secret).filter((name) => name.includes("transcripts")).length,
          0,
          "no redactor: stored verbatim (the documented decision)"
        )
        assert.strictEqual(control.resumed.verifiedRequests, 2)
        assert.include(JSON.stringify(control.requests), secret)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "transcript_needs_writer: a durable turn of a task without a private writer is Unauthorized at the gate: zero model requests, no journal file (control: the same turn, not durable, runs)",
    () =>
      Effect.gen(function* () {
        const host = yield* JournalForbiddingHost.open({ stateDir: yield* tempDir, namespace: "sealed", agent })
        const refused = yield* host
          .withTask(task, (binding) =>
            Effect.gen(function* () {
              const error = yield* Effect.flip(TaskExecution.runTurn(binding, start, config))
              return { error, sent: (yield* recorded).length }
            })
          )
          .pipe(Effect.provide(ScriptedModel.layer(script)))
        assert.strictEqual(refused.error._tag, "Unauthorized")
        assert.strictEqual(refused.sent, 0)
        assert.deepStrictEqual(yield* Journal.readEntries({ folder: host.journalFolder, task }), [])

        const plain = yield* host
          .withTask(task, (binding) => TaskExecution.runTurn(binding, start, { ...config, durable: false }))
          .pipe(Effect.provide(ScriptedModel.layer(script)))
        assert.strictEqual(plain._tag, "Answered")
      }).pipe(Effect.provide(nodeLayer))
  )
})
