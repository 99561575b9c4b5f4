/**
 * The read tool the pointers name, through the Effect AI wrapper: a call
 * that offers a toolkit offers the read tool too, with its handler, so a
 * model that follows a pointer with `read_artifact` gets the artifact's
 * bytes, journaled and never offloaded again. The control withholds the
 * tool (`registerReadTool: false`): no request lists it, and the same call
 * fails as a call of a tool the toolkit does not have.
 */
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer } from "@tessera/artifacts"
import { TesseraLanguageModel } from "@tessera/effect-ai"
import { Compaction } from "@tessera/runtime"
import { Cause, Effect, Exit, Layer, Option, Stream } from "effect"
import { AiError, LanguageModel, Prompt, type Response } from "effect/ai"
import {
  answer,
  bindTask,
  callTool,
  count,
  inWorld,
  journalText,
  streamed,
  Tools,
  taskText,
  toolsLayer
} from "./support/world.ts"

const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const
const withheld = { ...offload, registerReadTool: false } as const
const body = "r1-".repeat(2_000)

const usage = { inputTokens: { total: 10, uncached: 10 }, outputTokens: { total: 5, text: 5 } }

/** The result a request carries for call `id`, if it carries one. */
const resultOf = (prompt: Prompt.Prompt, id: string): Prompt.ToolResultPart | undefined => {
  for (const message of prompt.content) {
    if (message.role !== "tool") continue
    for (const part of message.content) if (part.type === "tool-result" && part.id === id) return part
  }
  return undefined
}

/**
 * A provider whose model calls `produce` for a 6,000-byte body, follows the
 * pointer it gets back with one whole read, then answers. Every request is
 * kept.
 */
const follower = () => {
  const requests: Array<LanguageModel.ProviderOptions> = []
  const respond = (options: LanguageModel.ProviderOptions): Array<Response.PartEncoded> => {
    requests.push(options)
    if (requests.length === 1) return callTool("call-1", 6_000, "r1-")
    if (requests.length === 2) {
      const pointer = ArtifactPointer.parse(String(resultOf(options.prompt, "call-1")?.result ?? ""))
      if (Option.isNone(pointer)) return answer("no pointer came back")
      return [
        { type: "tool-call", id: "read-1", name: "read_artifact", params: { path: pointer.value.path } },
        { type: "finish", reason: "tool-calls", usage }
      ]
    }
    return answer("The report is filler.")
  }
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) => Effect.sync(() => respond(options)),
      streamText: (options) => Stream.suspend(() => Stream.fromIterable(streamed(respond(options))))
    })
  )
  return { layer, requests }
}

/** The caller's own loop: generate with its toolkit, Effect AI runs the tools, until the model answers. */
const converse = (registerReadTool: boolean) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, Compaction.disabled)
      const provider = follower()
      const loop = Effect.gen(function* () {
        let prompt = Prompt.make(taskText)
        for (let step = 0; step < 4; step++) {
          const response = yield* LanguageModel.generateText({ prompt, toolkit: Tools })
          prompt = Prompt.concat(prompt, Prompt.fromResponseParts(response.content))
          if (response.toolCalls.length === 0) break
        }
        return prompt
      })
      const wrapper = TesseraLanguageModel.layer(binding, { offload: registerReadTool ? offload : withheld })
      const exit = yield* Effect.exit(
        loop.pipe(Effect.provide(Layer.merge(wrapper.pipe(Layer.provide(provider.layer)), toolsLayer)))
      )
      return { exit, requests: provider.requests, journal: journalText(world) }
    })
  )

const toolNames = (request: LanguageModel.ProviderOptions | undefined): ReadonlyArray<string> =>
  (request?.tools ?? []).map((tool) => tool.name)

describe("TesseraLanguageModel offers the read tool its pointers name", () => {
  it("effect_ai_read_tool_returns_the_artifact: a model that follows the pointer reads the artifact whole", async () => {
    const { exit, journal, requests } = await converse(true)
    assert.isTrue(Exit.isSuccess(exit))
    assert.strictEqual(requests.length, 3, "produce, the read, the answer")
    for (const request of requests) assert.include(toolNames(request), "read_artifact")
    const read = resultOf((requests[2] as LanguageModel.ProviderOptions).prompt, "read-1")
    assert.isFalse(read?.isFailure)
    assert.include(String(read?.result), body, "the whole artifact, as the read tool returned it")
    assert.strictEqual(count(journal, "ArtifactOffloaded"), 1, "the read is not offloaded behind a pointer of its own")
    assert.strictEqual(count(journal, "ToolResulted"), 2)
  })

  it("negative control: with the read tool withheld (registerReadTool: false) no request lists it and the call fails as a missing tool", async () => {
    const { exit, requests } = await converse(false)
    assert.strictEqual(requests.length, 2, "the read call ended the loop: no request carried its answer")
    for (const request of requests) assert.notInclude(toolNames(request), "read_artifact")
    assert.isTrue(Exit.isFailure(exit))
    // Effect AI refuses a response calling a tool its toolkit does not have: the model never gets an answer.
    const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    assert.isTrue(AiError.isAiError(error))
    if (AiError.isAiError(error)) assert.strictEqual(error.reason._tag, "InvalidOutputError")
  })
})
