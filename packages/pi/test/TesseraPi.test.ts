import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Agent, type AgentOptions } from "@mariozechner/pi-agent-core"
import {
  type AssistantMessage,
  type Context,
  fauxAssistantMessage,
  fauxToolCall,
  type ToolResultMessage
} from "@mariozechner/pi-ai"
import { DefaultRedactor } from "@tessera/artifacts"
import { TesseraPi } from "@tessera/pi"
import { Compaction } from "@tessera/runtime"
import { Effect } from "effect"
import {
  bindTask,
  contextText,
  inWorld,
  journalText,
  privateFolder,
  produce,
  type Scripted,
  scripted,
  systemPrompt,
  taskText
} from "./support/world.ts"

const agentFor = (script: Scripted, options: AgentOptions = {}, tools = [produce]) =>
  new Agent({
    initialState: { systemPrompt, model: script.faux.getModel(), tools },
    ...options
  })

const longPolicy = Compaction.threshold({
  measure: "bytes",
  limit: 8_000,
  keepRecent: 2_000,
  pieceLimit: 100_000
})
const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const

const largestUpTo = (requests: ReadonlyArray<Context>, step: number): number =>
  Math.max(...requests.slice(0, step).map((request) => contextText(request).length))

const journalEntries = (text: string): Array<Record<string, unknown>> =>
  text
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>)

// One 200-request conversation, shared by the tests that look at it.
let longRun:
  | Promise<{ readonly requests: ReadonlyArray<Context>; readonly answer: string; readonly stored: string }>
  | undefined
const runLong = () => {
  longRun ??= inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, longPolicy)
      const tessera = yield* TesseraPi.make(binding, { offload })
      const script = scripted(199, 6_000)
      const agent = agentFor(script, tessera.agentOptions)
      yield* Effect.promise(() => agent.prompt(taskText))
      script.faux.unregister()
      const last = agent.state.messages.at(-1) as AssistantMessage
      const answer = last.content.map((block) => (block.type === "text" ? block.text : "")).join("")
      return { requests: script.turnRequests(), answer, stored: JSON.stringify(agent.state.messages) }
    })
  )
  return longRun
}

describe("TesseraPi (Pi agent core 0.73)", () => {
  it("pi_long_conversation_bounded: the largest request up to step 200 is at most 1.1x the largest up to step 50", async () => {
    const { answer, requests } = await runLong()
    assert.strictEqual(requests.length, 200)
    assert.strictEqual(answer, "All reports are filler.")
    const at50 = largestUpTo(requests, 50)
    const at200 = largestUpTo(requests, 200)
    assert.isAtMost(at200, 1.1 * at50, `largest request: ${at200} bytes by step 200, ${at50} by step 50`)
  }, 120_000)

  it("pi_task_kept: the user's task is in the 200th request, after the summary reference", async () => {
    const { requests, stored } = await runLong()
    const last = requests.at(-1) as Context
    const task = last.messages.findIndex(
      (message) => message.role === "user" && contextText({ messages: [message] }).includes(taskText)
    )
    assert.isAtLeast(task, 0, "the task message is in the last request")
    assert.include(contextText(last), "summaries/task-1-t1/", "the last request carries a summary reference")
    assert.strictEqual(last.systemPrompt, systemPrompt)
    // Pi's own transcript is whole (transformContext's output is not stored), its results the pointers.
    assert.notInclude(stored, "summaries/task-1-t1/")
    assert.notInclude(stored, "r1-".repeat(300))
    assert.include(stored, "read_artifact")
  }, 120_000)

  it("negative control: the same conversation without the hooks grows linearly", async () => {
    const script = scripted(199, 6_000)
    const agent = agentFor(script)
    await agent.prompt(taskText)
    script.faux.unregister()
    const requests = script.turnRequests()
    assert.strictEqual(requests.length, 200)
    const at50 = largestUpTo(requests, 50)
    const at200 = largestUpTo(requests, 200)
    assert.isAbove(at200, 3.5 * at50, `without Tessera: ${at200} bytes by step 200, ${at50} by step 50`)
  }, 120_000)

  it("pi_four_requests: two large tool results, no output volume: exactly 4 model requests, the last starts with a summary file on the private volume", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(
          world,
          true,
          Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 1_000, pieceLimit: 200_000 })
        )
        const tessera = yield* TesseraPi.make(binding)
        const script = scripted(2, 20_000)
        const agent = agentFor(script, { ...tessera.agentOptions, getApiKey: () => "key-of-the-host" })
        yield* Effect.promise(() => agent.prompt(taskText))
        script.faux.unregister()
        assert.strictEqual(script.faux.state.callCount, 4, "three steps and one summary request")
        assert.strictEqual(script.summaryRequests().length, 1)
        assert.isTrue(script.contexts[2] === script.summaryRequests()[0], "the third request is the summary")
        assert.deepStrictEqual(script.apiKeys, [
          "key-of-the-host",
          "key-of-the-host",
          "key-of-the-host",
          "key-of-the-host"
        ])
        const last = script.contexts[3] as Context
        assert.match(contextText({ messages: last.messages.slice(0, 1) }), /summaries\/task-1-t1\/3\.txt/)
        assert.notInclude(contextText(last), "r1-".repeat(300), "result 1 is summarized away")
        assert.include(contextText(last), "r2-".repeat(3_000), "result 2, not seen yet, is sent whole")
        assert.include(contextText(last), taskText)
        const staged = fs.readFileSync(path.join(privateFolder(world), "summaries/task-1-t1/3.txt"), "utf8")
        assert.strictEqual(staged, "summary number 1: the reports so far are filler")
        const journal = journalText(world)
        for (const tag of [
          "TurnOpened",
          "ToolCalled",
          "ToolResulted",
          "SummaryStaged",
          "ResponseReceived",
          "TurnClosed"
        ]) {
          assert.include(journal, `"_tag":"${tag}"`)
        }
        assert.strictEqual(journal.split('"_tag":"RequestDispatched"').length - 1, 3)
        assert.notInclude(journal, "summary number 1", "the journal records where, never what")
        // The summary request's usage reaches the host: added to the answer's usage, itemized by summaryUsage.
        const entries = journalEntries(journal)
        const answered = entries.find((entry) => entry._tag === "SummaryRequestAnswered") as {
          usage: { inputTokens: number; outputTokens: number }
        }
        const third = entries.find((entry) => entry._tag === "ResponseReceived" && entry.step === 3) as {
          usage: { inputTokens: number; outputTokens: number }
        }
        const final = agent.state.messages.at(-1) as AssistantMessage
        assert.strictEqual(final.usage.input, third.usage.inputTokens + answered.usage.inputTokens)
        assert.strictEqual(final.usage.output, third.usage.outputTokens + answered.usage.outputTokens)
        const summary = tessera.summaryUsage()
        assert.strictEqual(summary.requests, 1)
        assert.strictEqual(summary.input, answered.usage.inputTokens)
        assert.isAbove(summary.input, 0)
      })
    ))

  it("negative control: without the hooks the same scenario sends result 1 again in its third request", async () => {
    const script = scripted(2, 20_000)
    await agentFor(script).prompt(taskText)
    script.faux.unregister()
    assert.strictEqual(script.faux.state.callCount, 3)
    assert.include(contextText(script.contexts[2] as Context), "r1-".repeat(300))
  })

  it("pi_writerless_refused: a writerless binding with private offload is refused, zero model requests", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const script = scripted(2, 20_000)
        const refused = yield* Effect.flip(TesseraPi.make(binding, { offload }))
        script.faux.unregister()
        assert.strictEqual(refused._tag, "Unauthorized")
        assert.strictEqual(script.faux.state.callCount, 0)
        assert.strictEqual(journalText(world), "", "nothing journaled")
        const armed = yield* Effect.flip(
          bindTask(
            world,
            false,
            Compaction.threshold({ measure: "bytes", limit: 30_000, keepRecent: 0, pieceLimit: 200_000 })
          )
        )
        assert.strictEqual(armed._tag, "Unauthorized")
      })
    ))

  it("negative control: hooks that resolve the writer after the first request let one request through before failing", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, false)
        const script = scripted(2, 20_000)
        const context = yield* Effect.context<never>()
        // Deliberately broken wiring: the model is asked first, the hooks made (and refused) afterwards.
        const agent = agentFor(script, {
          afterToolCall: async () => {
            await Effect.runPromiseWith(context)(TesseraPi.make(binding, { offload }) as Effect.Effect<unknown>)
            return undefined
          }
        })
        yield* Effect.promise(() => agent.prompt(taskText))
        script.faux.unregister()
        assert.isAtLeast(script.faux.state.callCount, 1)
        const results = agent.state.messages.filter(
          (message): message is ToolResultMessage => message.role === "toolResult"
        )
        assert.isTrue(results[0]?.isError, "the refusal came only after the model was asked")
      })
    ))

  it("pi_offloaded_never_resent: an offloaded payload reaches the model in no later request, across prompts", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraPi.make(binding, { offload })
        const script = scripted(1, 10_000)
        const agent = agentFor(script, tessera.agentOptions)
        yield* Effect.promise(() => agent.prompt(taskText))
        const pointer = tessera.offloaded.get("tool:1:x")
        assert.isDefined(pointer)
        assert.match(pointer ?? "", /read_artifact/)
        yield* Effect.promise(() => agent.prompt("And once more?"))
        script.faux.unregister()
        assert.strictEqual(script.faux.state.callCount, 3)
        for (const context of script.contexts) assert.notInclude(contextText(context), "r1-".repeat(100))
        assert.include(contextText(script.contexts[2] as Context), "read_artifact")
        // Pi stored the pointer: its transcript never held the body.
        assert.notInclude(JSON.stringify(agent.state.messages), "r1-".repeat(100))
        const journal = journalText(world)
        assert.include(journal, '"_tag":"ArtifactOffloaded"')
        assert.include(journal, '"callId":"tool:1:x"')
        assert.strictEqual(journal.split('"_tag":"TurnClosed"').length - 1, 2, "one turn per prompt")
        const files = fs.readdirSync(path.join(privateFolder(world), "artifacts", "tool-results"))
        assert.deepStrictEqual(files, ["task-1-t1-s1-tool.3a1.3ax.txt"])
      })
    ))

  it("negative control: without the hooks the payload is sent again", async () => {
    const script = scripted(1, 10_000)
    const agent = agentFor(script)
    await agent.prompt(taskText)
    await agent.prompt("And once more?")
    script.faux.unregister()
    assert.include(contextText(script.contexts[2] as Context), "r1-".repeat(100))
  })

  it("pi_redacted_before_disk: an offloaded result is scrubbed before it is written, and the model sees the scrubbed abstract", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraPi.make(binding, { offload }).pipe(Effect.provide(DefaultRedactor.layer()))
        const script = scripted(1, 6_000)
        // The tool's result holds a credential its input never named.
        const leaky = {
          ...produce,
          execute: async () => ({
            content: [{ type: "text" as const, text: "aws_access_key_id=AKIAIOSFODNN7EXAMPLE\n".repeat(200) }],
            details: {}
          })
        }
        const agent = agentFor(script, tessera.agentOptions, [leaky])
        yield* Effect.promise(() => agent.prompt(taskText))
        script.faux.unregister()
        const folder = path.join(privateFolder(world), "artifacts", "tool-results")
        const files = fs.readdirSync(folder)
        assert.strictEqual(files.length, 1)
        const stored = fs.readFileSync(path.join(folder, files[0] as string), "utf8")
        assert.notInclude(stored, "AKIAIOSFODNN7EXAMPLE")
        assert.include(stored, "[REDACTED:")
        for (const context of script.contexts) assert.notInclude(contextText(context), "AKIAIOSFODNN7EXAMPLE")
      })
    ))

  it("pi_partial_wiring_refused: transformContext without the streamFn refuses the second request", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraPi.make(binding, { offload })
        const script = scripted(1, 10_000)
        const agent = agentFor(script, {
          transformContext: tessera.transformContext,
          afterToolCall: tessera.afterToolCall
        })
        yield* Effect.promise(() => agent.prompt(taskText))
        script.faux.unregister()
        assert.strictEqual(script.faux.state.callCount, 1, "the second request never left")
        assert.match(agent.state.errorMessage ?? "", /wired in part/)
      })
    ))

  it("negative control: with all three hooks the same agent sends both requests", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraPi.make(binding, { offload })
        const script = scripted(1, 10_000)
        yield* Effect.promise(() => agentFor(script, tessera.agentOptions).prompt(taskText))
        script.faux.unregister()
        assert.strictEqual(script.faux.state.callCount, 2)
      })
    ))

  const withImage = {
    ...produce,
    execute: async () => ({
      content: [
        { type: "text" as const, text: "pixel-row ".repeat(600) },
        { type: "image" as const, data: "aW1hZ2UtYnl0ZXM=", mimeType: "image/png" }
      ],
      details: {}
    })
  }

  const mediaRun = (hooks: (tessera: TesseraPi.TesseraPi) => AgentOptions) =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraPi.make(binding, { offload })
        const script = scripted(1, 10)
        const agent = agentFor(script, hooks(tessera), [withImage])
        yield* Effect.promise(() =>
          agent.prompt(taskText, [{ type: "image", data: "dGFzay1pbWFnZQ==", mimeType: "image/jpeg" }])
        )
        script.faux.unregister()
        return script.contexts
      })
    )

  it("pi_media_kept: an offloaded result's image stays beside its pointer, and the task's image reaches every request", async () => {
    const contexts = await mediaRun((tessera) => tessera.agentOptions)
    assert.strictEqual(contexts.length, 2)
    for (const context of contexts) assert.include(contextText(context), "dGFzay1pbWFnZQ==")
    const result = (contexts[1] as Context).messages.find((message) => message.role === "toolResult")
    assert.deepStrictEqual(
      result?.content.map((block) => block.type),
      ["text", "image"]
    )
    assert.match(contextText(contexts[1] as Context), /read_artifact/)
    assert.include(contextText(contexts[1] as Context), "aW1hZ2UtYnl0ZXM=")
    assert.notInclude(contextText(contexts[1] as Context), "pixel-row ".repeat(100))
  })

  it("negative control: an afterToolCall that returns the pointer alone loses the result's image", async () => {
    const contexts = await mediaRun((tessera) => ({
      ...tessera.agentOptions,
      // Deliberately broken: the pointer replaces the whole content, images included.
      afterToolCall: async (context, signal) => {
        const replaced = await tessera.afterToolCall(context, signal)
        return replaced === undefined
          ? undefined
          : { content: replaced.content?.filter((block) => block.type === "text") ?? [] }
      }
    }))
    assert.notInclude(contextText(contexts[1] as Context), "aW1hZ2UtYnl0ZXM=")
  })

  it("pi_repeated_call_ids: a call id used again in a later prompt is a new call: journaled and offloaded again, never confused with the first", () =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const tessera = yield* TesseraPi.make(binding, { offload })
        const script = scripted(0, 0)
        const contexts: Array<Context> = []
        const call = (fill: string) => (context: Context) => {
          contexts.push({ messages: structuredClone(context.messages) })
          return fauxAssistantMessage(fauxToolCall("produce", { size: 6_000, fill }, { id: "tool:1:x" }), {
            stopReason: "toolUse"
          })
        }
        const done = (context: Context) => {
          contexts.push({ messages: structuredClone(context.messages) })
          return fauxAssistantMessage("done")
        }
        script.faux.setResponses([call("r1-"), done, call("r2-"), done])
        const agent = agentFor(script, tessera.agentOptions)
        yield* Effect.promise(() => agent.prompt(taskText))
        yield* Effect.promise(() => agent.prompt("And once more?"))
        script.faux.unregister()
        assert.strictEqual(script.faux.state.callCount, 4)
        assert.isUndefined(agent.state.errorMessage)
        const journal = journalText(world)
        assert.strictEqual(journal.split('"_tag":"ArtifactOffloaded"').length - 1, 2)
        assert.strictEqual(journal.split('"_tag":"TurnClosed"').length - 1, 2)
        const files = fs.readdirSync(path.join(privateFolder(world), "artifacts", "tool-results")).sort()
        assert.strictEqual(files.length, 2)
        assert.strictEqual(tessera.offloaded.size, 1, "the pointer of the latest call of that id")
        assert.include(tessera.offloaded.get("tool:1:x") ?? "", "-t2-s1-")
        for (const context of contexts) {
          assert.notInclude(contextText(context), "r1-".repeat(100))
          assert.notInclude(contextText(context), "r2-".repeat(100))
        }
      })
    ))

  const failing = (withRedactor: boolean) =>
    inWorld((world) =>
      Effect.gen(function* () {
        const binding = yield* bindTask(world, true)
        const made = TesseraPi.make(binding, { offload })
        const tessera = yield* withRedactor ? made.pipe(Effect.provide(DefaultRedactor.layer())) : made
        const script = scripted(0, 0)
        script.faux.setResponses([
          fauxAssistantMessage([], {
            stopReason: "error",
            errorMessage: "upstream 503 for key aws_access_key_id=AKIAIOSFODNN7EXAMPLE"
          }),
          fauxAssistantMessage("done")
        ])
        const agent = agentFor(script, tessera.agentOptions)
        yield* Effect.promise(() => agent.prompt(taskText))
        const failed = agent.state.errorMessage
        yield* Effect.promise(() => agent.prompt("Try again."))
        script.faux.unregister()
        return { failed, journal: journalText(world), answer: agent.state.messages.at(-1) as AssistantMessage }
      })
    )

  it("pi_model_failure_journaled: a failed request is journaled as ModelFailed, scrubbed, and the next prompt continues the same turn", async () => {
    const { answer, failed, journal } = await failing(true)
    assert.include(failed ?? "", "upstream 503", "Pi gets the provider's error")
    assert.include(journal, '"_tag":"ModelFailed"')
    assert.notInclude(journal, "AKIAIOSFODNN7EXAMPLE", "the provider's error text is scrubbed before it is journaled")
    assert.strictEqual(journal.split('"_tag":"TurnOpened"').length - 1, 1, "one turn")
    assert.include(journal, '"_tag":"TurnClosed"')
    assert.strictEqual(answer.stopReason, "stop")
  })

  it("negative control: without a redactor in scope the error text reaches the journal as it was", async () => {
    const { journal } = await failing(false)
    assert.include(journal, "AKIAIOSFODNN7EXAMPLE")
  })

  it("pi_model_failure_scrubbed_for_caller: the error message Pi gets back (and keeps in its messages) is the journal's scrubbed copy", async () => {
    const { failed } = await failing(true)
    assert.include(failed ?? "", "upstream 503")
    assert.notInclude(failed ?? "", "AKIAIOSFODNN7EXAMPLE")
  })

  it("negative control: without a redactor in scope Pi gets the error text as it was", async () => {
    const { failed } = await failing(false)
    assert.include(failed ?? "", "AKIAIOSFODNN7EXAMPLE")
  })
})
