/**
 * Delegation as an AI SDK tool: `tessera.delegation(harness, children)`
 * gives the runtime's `delegate` tool for `generateText`, run for the
 * middleware's bound task at the call's journaled place, so its children are
 * the ones `Delegation.childTaskId` names for that place (each its own task,
 * journal and private volume) and a call run again finds them. Controls run
 * the same scenarios on deliberately broken wiring: an AI SDK tool over the
 * same runtime tool that sets `Tool.CurrentCall` with a fresh call id.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type {
  LanguageModelV4CallOptions,
  LanguageModelV4GenerateResult,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart
} from "@ai-sdk/provider"
import { assert, describe, it } from "@effect/vitest"
import { AiSdkModel, TesseraMiddleware } from "@tessera/ai-sdk"
import { Ids } from "@tessera/core"
import { LocalHarness, NodeTessera } from "@tessera/node"
import { Delegation, type EntryGate, Journal, type JournalEntry, type Model, Tool, VolumeStore } from "@tessera/runtime"
import { generateText, jsonSchema, type ModelMessage, stepCountIs, streamText, tool, wrapLanguageModel } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { type Context, Effect, Option, Schema } from "effect"
import { answer } from "./support/world.ts"

const parentTask = Schema.decodeUnknownSync(Ids.TaskId)("plan-1")
const offload = { threshold: 20_000, readTool: "read_artifact", destination: "Private" } as const
const question: Array<ModelMessage> = [{ role: "user", content: "Plan the survey." }]
const subTasks = [
  { agent: "scout", task: "Summarize the field notes." },
  { agent: "critic", task: "Review the plan." }
]
const answers = { scout: "scout: all readings nominal.", critic: "critic: the plan holds." } as const

/** What only the scout's private work holds: its notes are large (offloaded to its own volume) and carry a marker. */
const childMarker = "SCOUT-PRIVATE-3b9e"
const fetchNotes = Tool.make({
  name: "fetch_notes",
  description: "Fetches the field notes",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(`${childMarker}\n${"reading 17.2 nominal\n".repeat(1_500)}`)
})
const children: ReadonlyArray<Delegation.ChildAgent> = [
  { agent: "scout", description: "reads the field notes", tools: [fetchNotes] },
  { agent: "critic", description: "reviews a plan" }
]

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}
const callOf = (id: string, name: string, input: unknown): LanguageModelV4GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: id, toolName: name, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: []
})

/** The text of the result of call `id` in a prompt, when the prompt holds one. */
const resultIn = (prompt: LanguageModelV4Prompt, id: string): string | undefined => {
  for (const message of prompt) {
    if (message.role !== "tool") continue
    for (const part of message.content) {
      if (part.type === "tool-result" && part.toolCallId === id) {
        return part.output.type === "text" ? part.output.value : JSON.stringify(part.output)
      }
    }
  }
  return undefined
}

const firstUserText = (prompt: LanguageModelV4Prompt): string => {
  const user = prompt.find((message) => message.role === "user")
  if (user === undefined) return ""
  return user.content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")
}

/**
 * A whole result as the stream a provider would send: its text and calls as parts, then finish; the stream
 * closes only once `until` holds (or after 5 seconds), so what the AI SDK does with a call before the stream
 * ends shows.
 */
const streamOf = (
  result: LanguageModelV4GenerateResult,
  until: () => boolean
): ReadableStream<LanguageModelV4StreamPart> => {
  const parts: Array<LanguageModelV4StreamPart> = [{ type: "stream-start", warnings: [] }]
  for (const part of result.content) {
    if (part.type === "text") {
      parts.push({ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: part.text })
      parts.push({ type: "text-end", id: "t" })
    }
    if (part.type === "tool-call") parts.push(part)
  }
  parts.push({ type: "finish", usage: result.usage, finishReason: result.finishReason })
  let index = 0
  return new ReadableStream({
    pull: async (controller) => {
      const part = parts[index++]
      if (part !== undefined) return controller.enqueue(part)
      for (let waited = 0; !until() && waited < 5_000; waited += 10) await new Promise((done) => setTimeout(done, 10))
      controller.close()
    }
  })
}

/**
 * The parent: delegates both sub-tasks in one call, then repeats what the children said; streamed or not. A
 * streamed call's stream ends only once `childrenStarted` holds (or after 5 seconds).
 */
const parentModel = (childrenStarted: () => boolean = () => true) => {
  const next = (prompt: LanguageModelV4Prompt) => {
    const result = resultIn(prompt, "d1")
    return result === undefined ? callOf("d1", Delegation.toolName, { tasks: subTasks }) : answer(result)
  }
  return new MockLanguageModelV4({
    doGenerate: async (options) => next(options.prompt),
    doStream: async (options) => ({ stream: streamOf(next(options.prompt), childrenStarted) })
  })
}

/** The children, on Tessera's executor through `AiSdkModel`: the scout reads its notes first, the critic answers. */
const childModel = () =>
  new MockLanguageModelV4({
    doGenerate: async (options) => {
      if (firstUserText(options.prompt).startsWith("Summarize the field notes")) {
        return resultIn(options.prompt, "n1") === undefined ? callOf("n1", "fetch_notes", {}) : answer(answers.scout)
      }
      return answer(answers.critic)
    }
  })

/** How many requests each child sent, by its sub-task. */
const requestsPerChild = (model: MockLanguageModelV4) => {
  const count = (prefix: string) =>
    model.doGenerateCalls.filter((call: LanguageModelV4CallOptions) => firstUserText(call.prompt).startsWith(prefix))
      .length
  return { scout: count("Summarize the field notes"), critic: count("Review the plan") }
}

/**
 * The deliberately broken wiring: an AI SDK tool over the same runtime `delegate` tool and the same services
 * whose `CurrentCall` is the right turn and step but a fresh call id on every execution.
 */
const misplaced = (
  delegate: Tool.Tool<unknown>,
  context: Context.Context<never>,
  toModelOutput: ReturnType<TesseraMiddleware.TesseraAiSdk["toModelOutput"]>
): TesseraMiddleware.DelegateTool =>
  tool({
    description: delegate.spec.description,
    inputSchema: jsonSchema<TesseraMiddleware.DelegateRequest>(
      delegate.spec.inputSchema as Parameters<typeof jsonSchema>[0]
    ),
    execute: async (input) => {
      const position = { task: parentTask, turn: 1, step: 1, callId: crypto.randomUUID() }
      const running = delegate.run(input as never).pipe(Effect.provideService(Tool.CurrentCall, Option.some(position)))
      return (await Effect.runPromiseWith(context)(running as Effect.Effect<Tool.ToolOutcome>)).content
    },
    toModelOutput
  })

type Wiring = "adapter" | "misplaced"

/** The `delegate` tool of a wiring, for the parent bound as `parent` under `tessera`. */
const delegateOf = (
  wiring: Wiring,
  tessera: TesseraMiddleware.TesseraAiSdk,
  harness: LocalHarness.LocalHarnessService,
  parent: EntryGate.TaskBinding
) =>
  Effect.gen(function* () {
    if (wiring === "adapter") return (yield* tessera.delegation(harness, children)).delegate
    const delegate = yield* Delegation.tool(harness, parent, children)
    return misplaced(delegate, yield* Effect.context<never>(), tessera.toModelOutput(Delegation.toolName))
  })

const executeOptions = { toolCallId: "d1", messages: [], context: undefined as never }

const tempState = () => fs.mkdtempSync(path.join(os.tmpdir(), "tessera-ai-sdk-delegation-"))

/** Runs `body` on a fresh local harness with plan-1 bound, the children's model in scope; the folder goes after. */
const onHarness = async <A, E>(
  childrenModel: MockLanguageModelV4,
  body: (
    harness: LocalHarness.LocalHarnessService,
    parent: EntryGate.TaskBinding
  ) => Effect.Effect<A, E, Journal.Journal | Model.Model | NodeTessera.Services>
): Promise<{ readonly value: A; readonly entries: ReadonlyArray<JournalEntry.Entry>; readonly facts: Facts }> => {
  const stateDir = tempState()
  try {
    const program = Effect.scoped(
      Effect.gen(function* () {
        const harness = yield* LocalHarness.open({
          stateDir,
          namespace: "planning",
          agent: Schema.decodeUnknownSync(Ids.AgentId)("lead")
        })
        const value = yield* harness.withTask(parentTask, (parent) => body(harness, parent))
        const entries = yield* harness.readEntries(parentTask)
        return { value, entries, facts: factsOf(harness, entries) }
      })
    ).pipe(Effect.provide(AiSdkModel.layer(childrenModel)), Effect.provide(NodeTessera.layer))
    return await Effect.runPromise(program as Effect.Effect<never>)
  } finally {
    fs.rmSync(stateDir, { recursive: true, force: true })
  }
}

/** What the checks read from disk while the harness's folder exists: each child journal's entries and private files. */
interface Facts {
  readonly journals: ReadonlyMap<string, ReadonlyArray<string>>
  readonly privateFiles: ReadonlyMap<string, ReadonlyArray<string>>
}

const factsOf = (harness: LocalHarness.LocalHarnessService, entries: ReadonlyArray<JournalEntry.Entry>): Facts => {
  const journals = new Map<string, ReadonlyArray<string>>()
  const privateFiles = new Map<string, ReadonlyArray<string>>()
  for (const entry of entries) {
    if (entry._tag !== "ChildDelegated") continue
    const file = path.join(harness.journalFolder, Journal.fileName(entry.task))
    journals.set(entry.task, fs.existsSync(file) ? fs.readFileSync(file, "utf8").trimEnd().split("\n") : [])
    const root = path.join(
      harness.folder,
      VolumeStore.volumesFolder,
      Delegation.childVolumes(entry.task).private,
      VolumeStore.artifactFolder
    )
    privateFiles.set(
      entry.task,
      fs.existsSync(root)
        ? fs
            .readdirSync(root, { recursive: true, withFileTypes: true })
            .flatMap((item) => (item.isFile() ? [fs.readFileSync(path.join(item.parentPath, item.name), "utf8")] : []))
        : []
    )
  }
  return { journals, privateFiles }
}

/** The children `Delegation.childTaskId` names for call d1 at the place the parent's journal asked for it. */
const expectedChildren = (entries: ReadonlyArray<JournalEntry.Entry>) =>
  Effect.gen(function* () {
    const asked = entries.find(
      (entry): entry is Extract<JournalEntry.Entry, { _tag: "ResponseReceived" }> =>
        entry._tag === "ResponseReceived" && entry.toolCalls.some((call) => call.callId === "d1")
    )
    if (asked === undefined) return undefined
    const position = { task: parentTask, turn: asked.turn, step: asked.step, callId: "d1" }
    return { scout: yield* Delegation.childTaskId(position, 0), critic: yield* Delegation.childTaskId(position, 1) }
  })

/**
 * Everything the delegation must show, as a list of what is wrong (empty when all holds): the children are the
 * ones named for the call's place, each delegated and answered in the parent's journal, each with a journal of
 * its own (one turn: no child ran twice), the scout's offload in its own private volume, and the parent's final
 * text holding both children's labelled answers.
 */
const problems = (run: {
  readonly text: string
  readonly entries: ReadonlyArray<JournalEntry.Entry>
  readonly facts: Facts
}) =>
  Effect.gen(function* () {
    const expected = yield* expectedChildren(run.entries)
    if (expected === undefined) return ["no journaled response asked for d1"]
    const found: Array<string> = []
    const delegated = run.entries.filter((entry) => entry._tag === "ChildDelegated")
    const answered = run.entries.filter((entry) => entry._tag === "ChildAnswered")
    for (const agent of ["scout", "critic"] as const) {
      const task = expected[agent]
      const mine = delegated.filter((entry) => entry.agent === agent)
      if (mine.length === 0 || mine.some((entry) => entry.task !== task || entry.callId !== "d1")) {
        found.push(`${agent} was delegated as ${mine.map((entry) => entry.task).join(", ")}, not ${task}`)
      }
      if (!answered.some((entry) => entry.task === task && entry.outcome === "Answered")) {
        found.push(`no ChildAnswered for ${agent} (${task})`)
      }
      const opened = (run.facts.journals.get(task) ?? []).filter((line) => line.includes('"_tag":"TurnOpened"'))
      if (opened.length !== 1) found.push(`${agent}'s journal (${task}) opened ${opened.length} turns, not 1`)
      if (!run.text.includes(`[${agent}, task ${task}]`) || !run.text.includes(answers[agent])) {
        found.push(`the parent's text lacks ${agent}'s labelled answer`)
      }
    }
    const scoutFiles = run.facts.privateFiles.get(expected.scout) ?? []
    if (!scoutFiles.some((file) => file.includes(childMarker))) found.push("the scout's offload is not in its volume")
    return found
  })

/** The parent's final text after one `generateText` or `streamText` run, up to 4 steps. */
const runParent = async (
  via: "generate" | "stream",
  options: {
    readonly model: Parameters<typeof generateText>[0]["model"]
    readonly tools: Record<string, TesseraMiddleware.ReadTool | TesseraMiddleware.DelegateTool>
  }
) => {
  const common = { model: options.model, tools: options.tools, messages: question, stopWhen: stepCountIs(4) }
  if (via === "generate") return (await generateText(common)).text
  const errors: Array<unknown> = []
  const result = streamText({ ...common, onError: ({ error }) => void errors.push(error) })
  let text = ""
  for await (const delta of result.textStream) text += delta
  if (errors.length > 0) throw errors[0]
  return text
}

/** One delegation through `generateText` (or `streamText`), on `wiring`. */
const delegateOnce = async (wiring: Wiring, via: "generate" | "stream" = "generate") => {
  const children = childModel()
  const run = await onHarness(children, (harness, parent) =>
    Effect.gen(function* () {
      const tessera = yield* TesseraMiddleware.make(parent, { offload })
      const delegate = yield* delegateOf(wiring, tessera, harness, parent)
      return yield* Effect.promise(() =>
        runParent(via, {
          model: wrapLanguageModel({
            model: parentModel(() => children.doGenerateCalls.length > 0),
            middleware: tessera.middleware
          }),
          tools: { ...tessera.tools, delegate }
        })
      )
    })
  )
  // Whether the children sent their first request while the step asking for them was still streaming.
  const firstChild = run.entries.findIndex((entry) => entry._tag === "ChildDelegated")
  const asked = run.entries.findIndex(
    (entry) => entry._tag === "ResponseReceived" && entry.toolCalls.some((call) => call.callId === "d1")
  )
  const delegatedMidStream = firstChild !== -1 && asked !== -1 && firstChild < asked
  return {
    text: run.value,
    entries: run.entries,
    facts: run.facts,
    requests: requestsPerChild(children),
    delegatedMidStream
  }
}

/**
 * The same call executed twice: the first execution's process "dies" once the children answered (the tool
 * throws, the step ends with the call still owed), then a middleware made again over the same journal (a new
 * process's) executes the call again and the conversation goes on with its result.
 */
const delegateTwice = async (wiring: Wiring) => {
  const children = childModel()
  const run = await onHarness(children, (harness, parent) =>
    Effect.gen(function* () {
      const first = yield* TesseraMiddleware.make(parent, { offload })
      const delegate = yield* delegateOf(wiring, first, harness, parent)
      const crashing: TesseraMiddleware.DelegateTool = {
        ...delegate,
        execute: async (input, options) => {
          await delegate.execute?.(input, options)
          throw new Error("the process died after the children answered")
        }
      }
      yield* Effect.promise(() =>
        generateText({
          model: wrapLanguageModel({ model: parentModel(), middleware: first.middleware }),
          tools: { ...first.tools, delegate: crashing },
          messages: question,
          stopWhen: stepCountIs(1)
        })
      )
      const afterFirst = requestsPerChild(children)
      const again = yield* TesseraMiddleware.make(parent, { offload })
      const rerun = yield* delegateOf(wiring, again, harness, parent)
      const output = (yield* Effect.promise(async () => rerun.execute?.({ tasks: subTasks }, executeOptions))) as string
      const messages: Array<ModelMessage> = [
        ...question,
        {
          role: "assistant",
          content: [{ type: "tool-call", toolCallId: "d1", toolName: Delegation.toolName, input: { tasks: subTasks } }]
        },
        {
          role: "tool",
          content: [
            {
              type: "tool-result",
              toolCallId: "d1",
              toolName: Delegation.toolName,
              output: { type: "text", value: output }
            }
          ]
        }
      ]
      const result = yield* Effect.promise(() =>
        generateText({
          model: wrapLanguageModel({ model: parentModel(), middleware: again.middleware }),
          tools: { ...again.tools, delegate: rerun },
          messages,
          stopWhen: stepCountIs(4)
        })
      )
      return { text: result.text, afterFirst }
    })
  )
  return {
    text: run.value.text,
    entries: run.entries,
    facts: run.facts,
    afterFirst: run.value.afterFirst,
    requests: requestsPerChild(children)
  }
}

describe("TesseraMiddleware.delegation (Vercel AI SDK 7)", () => {
  it("ai_sdk_delegates_to_children: the parent's delegate call runs two children, named for its place, each with its own journal and volume", async () => {
    const run = await delegateOnce("adapter")
    assert.deepStrictEqual(await Effect.runPromise(problems(run)), [])
    assert.deepStrictEqual(run.requests, { scout: 2, critic: 1 }, "each child ran its own turn once")
    const tags = run.entries.map((entry) => entry._tag)
    assert.strictEqual(tags.filter((tag) => tag === "ChildDelegated").length, 2)
    assert.strictEqual(tags.filter((tag) => tag === "ChildAnswered").length, 2)
    assert.strictEqual(tags.at(-1), "TurnClosed", "the parent's turn closed after the children's answers")
    // The child's private notes stayed in its own volume: the parent's text and journal never held them.
    assert.notInclude(run.text, childMarker)
    assert.notInclude(JSON.stringify(run.entries), childMarker)

    // Negative control: a fresh call id in CurrentCall names other children, and the checks say so.
    const control = await delegateOnce("misplaced")
    const found = await Effect.runPromise(problems(control))
    assert.isTrue(
      found.some((problem) => problem.startsWith("scout was delegated as")),
      `the control's problems: ${found.join("; ")}`
    )
    assert.isTrue(found.some((problem) => problem.startsWith("critic was delegated as")))
  }, 60_000)

  it("ai_sdk_stream_delegates_to_children: under streamText, the call the AI SDK runs before the stream ends names the same children", async () => {
    const run = await delegateOnce("adapter", "stream")
    assert.isTrue(run.delegatedMidStream, "the children were delegated before the asking response was journaled")
    assert.deepStrictEqual(await Effect.runPromise(problems(run)), [])
    assert.deepStrictEqual(run.requests, { scout: 2, critic: 1 })
    assert.strictEqual(run.entries.at(-1)?._tag, "TurnClosed")

    // Negative control: the misplaced wiring under streamText names other children.
    const control = await delegateOnce("misplaced", "stream")
    const found = await Effect.runPromise(problems(control))
    assert.isTrue(
      found.some((problem) => problem.startsWith("scout was delegated as")),
      found.join("; ")
    )
  }, 60_000)

  it("ai_sdk_delegation_is_idempotent: the same call executed again (a new middleware after a crash) runs no child twice", async () => {
    const run = await delegateTwice("adapter")
    assert.deepStrictEqual(run.afterFirst, { scout: 2, critic: 1 }, "the first execution ran both children")
    assert.deepStrictEqual(run.requests, run.afterFirst, "executed again, no child sent a request")
    assert.deepStrictEqual(await Effect.runPromise(problems(run)), [])
    assert.strictEqual(run.entries.at(-1)?._tag, "TurnClosed", "the resumed conversation finished the turn")

    // Negative control: a fresh call id per execution names new children, which run again.
    const control = await delegateTwice("misplaced")
    assert.deepStrictEqual(control.afterFirst, { scout: 2, critic: 1 })
    assert.deepStrictEqual(control.requests, { scout: 4, critic: 2 }, "the control ran every child twice")
    assert.isNotEmpty(await Effect.runPromise(problems(control)))
  }, 60_000)

  it("ai_sdk_delegation_refuses_bad_offers: bad offers and depth fail InvalidInput before any request", async () => {
    const parent = parentModel()
    const children = childModel()
    const run = await onHarness(children, (harness, binding) =>
      Effect.gen(function* () {
        const tessera = yield* TesseraMiddleware.make(binding, { offload })
        const twice = yield* Effect.flip(
          tessera.delegation(harness, [
            { agent: "scout", description: "reads" },
            { agent: "scout", description: "reads again" }
          ])
        )
        const deep = yield* Effect.flip(
          tessera.delegation(
            harness,
            [{ agent: "scout", description: "reads", children: [{ agent: "critic", description: "reviews" }] }],
            { maxDepth: 1 }
          )
        )
        // Control: the same offers within the limits are accepted.
        const accepted = yield* tessera.delegation(
          harness,
          [{ agent: "scout", description: "reads", children: [{ agent: "critic", description: "reviews" }] }],
          { maxDepth: 2 }
        )
        return { twice, deep, accepted: Object.keys(accepted) }
      })
    )
    assert.strictEqual(run.value.twice._tag, "InvalidInput")
    assert.strictEqual(run.value.twice.field, "children[1].agent")
    assert.strictEqual(run.value.deep._tag, "InvalidInput")
    assert.include(run.value.deep.detail, "maxDepth")
    assert.deepStrictEqual(run.value.accepted, [Delegation.toolName])
    assert.strictEqual(parent.doGenerateCalls.length + children.doGenerateCalls.length, 0, "no request was sent")
    assert.deepStrictEqual(run.entries, [], "nothing journaled")
  }, 60_000)
})
