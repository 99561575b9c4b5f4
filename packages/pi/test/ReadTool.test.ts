/**
 * The read tool the pointers name, through the Pi hooks: with
 * `tessera.tools` among the agent's tools, a model that follows a pointer
 * with `read_artifact` gets the artifact's bytes, journaled and never
 * offloaded again, and every request lists the tool. The control withholds
 * it (`registerReadTool: false`): no request lists it, and Pi answers the
 * same call as a tool it does not have. `streamFn` lists the tool even for
 * an agent that lacks `tessera.tools`, whose call then fails the same way.
 */
import { assert, describe, it } from "@effect/vitest"
import { Agent } from "@mariozechner/pi-agent-core"
import {
  type Context,
  fauxAssistantMessage,
  fauxToolCall,
  registerFauxProvider,
  type ToolResultMessage
} from "@mariozechner/pi-ai"
import { ArtifactPointer } from "@tessera/artifacts"
import { TesseraPi } from "@tessera/pi"
import { Compaction } from "@tessera/runtime"
import { Effect, Option } from "effect"
import { bindTask, inWorld, journalText, produce, systemPrompt, taskText } from "./support/world.ts"

const offload = { threshold: 2_000, readTool: "read_artifact", destination: "Private" } as const
const withheld = { ...offload, registerReadTool: false } as const
const body = "r1-".repeat(2_000)

const resultOf = (context: Context, id: string): ToolResultMessage | undefined =>
  context.messages.find(
    (message): message is ToolResultMessage => message.role === "toolResult" && message.toolCallId === id
  )

const textOf = (message: ToolResultMessage | undefined): string =>
  (message?.content ?? []).map((block) => (block.type === "text" ? block.text : "")).join("\n")

/**
 * Pi's faux provider, scripted: produce a 6,000-byte body, follow the
 * pointer it comes back as with one whole read, answer. Every request is
 * kept as the model saw it (messages and the names of its tools).
 */
const follower = () => {
  const faux = registerFauxProvider({ tokenSize: { min: 64, max: 64 } })
  const requests: Array<{ readonly context: Context; readonly tools: ReadonlyArray<string> }> = []
  const respond = (context: Context) => {
    requests.push({
      context: { messages: structuredClone(context.messages) },
      tools: (context.tools ?? []).map((tool) => tool.name)
    })
    if (requests.length === 1) {
      return fauxAssistantMessage(fauxToolCall("produce", { size: 6_000, fill: "r1-" }, { id: "tool:1:x" }), {
        stopReason: "toolUse"
      })
    }
    if (requests.length === 2) {
      const pointer = ArtifactPointer.parse(textOf(resultOf(context, "tool:1:x")))
      if (Option.isNone(pointer)) return fauxAssistantMessage("no pointer came back")
      return fauxAssistantMessage(fauxToolCall("read_artifact", { path: pointer.value.path }, { id: "tool:2:x" }), {
        stopReason: "toolUse"
      })
    }
    return fauxAssistantMessage("The report is filler.")
  }
  faux.setResponses([respond, respond, respond, respond])
  return { faux, requests }
}

const converse = (registerReadTool: boolean, spreadTools = true) =>
  inWorld((world) =>
    Effect.gen(function* () {
      const binding = yield* bindTask(world, true, Compaction.disabled)
      const tessera = yield* TesseraPi.make(binding, { offload: registerReadTool ? offload : withheld })
      const script = follower()
      const agent = new Agent({
        initialState: {
          systemPrompt,
          model: script.faux.getModel(),
          tools: spreadTools ? [produce, ...tessera.tools] : [produce]
        },
        ...tessera.agentOptions
      })
      yield* Effect.promise(() => agent.prompt(taskText))
      script.faux.unregister()
      return { tessera, requests: script.requests, journal: journalText(world) }
    })
  )

const count = (journal: string, tag: string): number => journal.split(`"_tag":"${tag}"`).length - 1

describe("TesseraPi offers the read tool its pointers name", () => {
  it("pi_read_tool_returns_the_artifact: a model that follows the pointer reads the artifact whole", async () => {
    const { journal, requests } = await converse(true)
    assert.strictEqual(requests.length, 3, "produce, the read, the answer")
    for (const request of requests) assert.include(request.tools, "read_artifact")
    const read = resultOf((requests[2] as (typeof requests)[number]).context, "tool:2:x")
    assert.isFalse(read?.isError)
    assert.include(textOf(read), body, "the whole artifact, as the read tool returned it")
    assert.strictEqual(count(journal, "ArtifactOffloaded"), 1, "the read is not offloaded behind a pointer of its own")
    assert.strictEqual(count(journal, "ToolResulted"), 2)
  })

  it("negative control: with the read tool withheld (registerReadTool: false) no request lists it and the call fails as a missing tool", async () => {
    const { requests, tessera } = await converse(false)
    assert.deepStrictEqual(tessera.tools, [])
    assert.strictEqual(requests.length, 3)
    for (const request of requests) assert.notInclude(request.tools, "read_artifact")
    const read = resultOf((requests[2] as (typeof requests)[number]).context, "tool:2:x")
    assert.isTrue(read?.isError)
    assert.strictEqual(textOf(read), "Tool read_artifact not found")
  })

  it("pi_read_tool_listed_in_request: streamFn lists the read tool in every request, even when the agent lacks tessera.tools", async () => {
    const { requests } = await converse(true, false)
    assert.strictEqual(requests.length, 3)
    for (const request of requests) assert.deepStrictEqual(request.tools, ["produce", "read_artifact"])
    // Listed, but Pi runs only the agent's own tools: the call comes back as its missing-tool error.
    const read = resultOf((requests[2] as (typeof requests)[number]).context, "tool:2:x")
    assert.strictEqual(textOf(read), "Tool read_artifact not found")
  })
})
