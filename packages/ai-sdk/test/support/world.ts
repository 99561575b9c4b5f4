/**
 * A real store in a fresh temporary folder, a task bound on it, and the
 * AI SDK's own mock model scripted for Tessera's scenarios.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult, LanguageModelV4Prompt } from "@ai-sdk/provider"
import { NodeServices } from "@effect/platform-node"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { NodeDurableFiles } from "@tessera/node"
import {
  type CompactionPolicy,
  EntryGate,
  FilesystemTaskRuntime,
  Journal,
  StoreLayout,
  TaskHost
} from "@tessera/runtime"
import { jsonSchema, type Tool, tool } from "ai"
import { Effect, Layer, Option, Schema } from "effect"

export const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
export const task = Schema.decodeUnknownSync(Ids.TaskId)("task-1")
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

export const platformLayer = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

export const taskText = "Collect the reports and tell me what they say."

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
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-ai-sdk-"))
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

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}

export const callTool = (id: string, size: number, fill: string): LanguageModelV4GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: id, toolName: "produce", input: JSON.stringify({ size, fill }) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: []
})

export const answer = (text: string): LanguageModelV4GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: undefined },
  usage,
  warnings: []
})

/** The scenarios' prompts have no system message: one that starts with it is a summary request. */
export const isSummaryRequest = (options: LanguageModelV4CallOptions): boolean => options.prompt[0]?.role === "system"

export const promptText = (prompt: LanguageModelV4Prompt): string => JSON.stringify(prompt)

/** The tool the scripted model calls: a body of `size` characters, `fill` repeated. */
export const produce: Tool<{ size: number; fill: string }, string> = tool({
  description: "Produces a result of the given size, made of one repeated piece of text",
  inputSchema: jsonSchema<{ size: number; fill: string }>({
    type: "object",
    properties: { size: { type: "integer" }, fill: { type: "string" } },
    required: ["size", "fill"]
  }),
  execute: async ({ fill, size }) => fill.repeat(Math.ceil(size / fill.length)).slice(0, size)
})
