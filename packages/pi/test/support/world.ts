/**
 * A real store in a fresh temporary folder, a task bound on it, and Pi's own
 * faux provider scripted for Tessera's scenarios.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import type { AgentTool } from "@mariozechner/pi-agent-core"
import {
  type Context,
  type FauxProviderRegistration,
  fauxAssistantMessage,
  fauxToolCall,
  registerFauxProvider,
  type StreamOptions,
  Type
} from "@mariozechner/pi-ai"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import {
  Compaction,
  type CompactionPolicy,
  EntryGate,
  FilesystemTaskRuntime,
  Journal,
  StoreLayout,
  TaskHost
} from "@tessera/runtime"
import { Effect, Layer, Option, Schema } from "effect"

export const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
export const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

export const platformLayer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

export const taskText = "Collect the reports and tell me what they say."
export const systemPrompt = "You are a careful research assistant."

export interface World {
  readonly root: string
  readonly host: TaskHost.TaskHost
  readonly privateRef: Volume.VolumeRef
  readonly journalFolder: string
}

export const privateFolder = (world: World): string =>
  path.join(world.host.store.root, StoreLayout.volumesFolder, world.privateRef.volume)

/** Binds task-1 with (or without) its agent-private volume, under `policy` (default: the gate's). */
export const bindTask = (world: World, withWriter: boolean, policy?: CompactionPolicy.CompactionPolicy) =>
  Effect.gen(function* () {
    const scope = yield* world.host.issueScope(
      task,
      withWriter ? [{ volume: world.privateRef, access: ["read", "write"] as const }] : [],
      agent
    )
    const runtime = yield* FilesystemTaskRuntime.fromHost(world.host, {
      private: withWriter ? Option.some(world.privateRef) : Option.none(),
      scope
    })
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return yield* EntryGate.bind(context, policy === undefined ? {} : { policy })
  })

/**
 * Runs `body` in a fresh store with the task's journal in scope; the
 * folder is removed afterwards.
 */
export const inWorld = async <A, E>(
  body: (world: World) => Effect.Effect<A, E, Layer.Success<typeof platformLayer> | Journal.Journal>
): Promise<A> => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-pi-"))
  try {
    const program = Effect.gen(function* () {
      const host = yield* TaskHost.open({ root })
      const privateRef = yield* host.store.create({
        id: volumeId("researcher-private"),
        kind: "AgentPrivate",
        owner: Volume.agentOwner(agent)
      })
      const journalRef = yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
      const journalFolder = yield* host.store.folderOf(journalRef)
      const world: World = { root, host, privateRef, journalFolder }
      return yield* body(world).pipe(Effect.provide(Journal.layer({ folder: journalFolder, task })))
    })
    return await Effect.runPromise(program.pipe(Effect.provide(platformLayer)) as Effect.Effect<A>)
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

export const journalText = (world: World): string => {
  const file = path.join(world.journalFolder, Journal.fileName(task))
  return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""
}

/** A summary request opens with Tessera's summary instruction as its system prompt. */
export const isSummaryRequest = (context: Context): boolean =>
  context.systemPrompt?.startsWith(Compaction.summaryInstruction) === true

/** What a request carries to the model, as text: its system prompt and messages. */
export const contextText = (context: Context): string =>
  JSON.stringify({ systemPrompt: context.systemPrompt, messages: context.messages })

/**
 * Pi's faux provider, scripted: calls the `produce` tool `calls` times
 * (results of `size` characters, ids `tool:<n>:x` as Pi's own hold `:`),
 * then answers; a summary request gets a numbered summary. Every request's
 * context is kept, in order.
 */
export interface Scripted {
  readonly faux: FauxProviderRegistration
  readonly contexts: Array<Context>
  /** The API key each request was sent with, in order. */
  readonly apiKeys: Array<string | undefined>
  readonly turnRequests: () => ReadonlyArray<Context>
  readonly summaryRequests: () => ReadonlyArray<Context>
}

export const scripted = (calls: number, size: number, idOf: (n: number) => string = (n) => `tool:${n}:x`): Scripted => {
  const faux = registerFauxProvider({ tokenSize: { min: 64, max: 64 } })
  const contexts: Array<Context> = []
  const apiKeys: Array<string | undefined> = []
  let steps = 0
  let summaries = 0
  const respond = (context: Context, options: StreamOptions | undefined) => {
    apiKeys.push(options?.apiKey)
    // Tools hold functions, which do not clone: a request is kept as what it tells the model.
    contexts.push({
      ...(context.systemPrompt === undefined ? {} : { systemPrompt: context.systemPrompt }),
      messages: structuredClone(context.messages)
    })
    if (isSummaryRequest(context)) {
      summaries++
      return fauxAssistantMessage(`summary number ${summaries}: the reports so far are filler`)
    }
    steps++
    return steps <= calls
      ? fauxAssistantMessage(fauxToolCall("produce", { size, fill: `r${steps}-` }, { id: idOf(steps) }), {
          stopReason: "toolUse"
        })
      : fauxAssistantMessage("All reports are filler.")
  }
  faux.setResponses(Array.from({ length: 2 * calls + 20 }, () => respond))
  return {
    faux,
    contexts,
    apiKeys,
    turnRequests: () => contexts.filter((context) => !isSummaryRequest(context)),
    summaryRequests: () => contexts.filter(isSummaryRequest)
  }
}

const produceParameters = Type.Object({ size: Type.Integer(), fill: Type.String() })

/** The tool the scripted model calls: a body of `size` characters, `fill` repeated. */
export const produce: AgentTool<typeof produceParameters> = {
  name: "produce",
  label: "Produce",
  description: "Produces a result of the given size, made of one repeated piece of text",
  parameters: produceParameters,
  execute: async (_id, { fill, size }) => ({
    content: [{ type: "text", text: fill.repeat(Math.ceil(size / fill.length)).slice(0, size) }],
    details: {}
  })
}
