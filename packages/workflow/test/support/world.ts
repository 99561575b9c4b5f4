/**
 * The tasks the workflow tests run, in one process or on cluster runners: a
 * model whose every answer is a function of what the request shows (so a
 * task ends with the same answer however often a request was lost and sent
 * again), and a tool whose side effect is a line appended to a log file
 * (so a test can count how often each call acted).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { HostAuthority, Ids } from "@tessera/core"
import { NodeDigest, NodeDurableFiles } from "@tessera/node"
import { Compaction, Model, type TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { ToolCallKey } from "@tessera/workflow"
import { Effect, Layer, Option, Schema } from "effect"

export const agentId = Schema.decodeUnknownSync(Ids.AgentId)
export const taskId = Schema.decodeUnknownSync(Ids.TaskId)
export const operationId = Schema.decodeUnknownSync(Ids.OperationId)
/** The store id every test store gets, so journals of two stores compare equal. */
/** The agent every test store runs as. */
export const agent = agentId("agent-1")
/** The store id every test store gets, so journals of two stores compare equal. */
export const storeId = Schema.decodeUnknownSync(Ids.StoreId)("store-workflow-tests")

/** Calls every task makes before answering. */
export const callsPerTask = 6
/** Bytes of every tool result: over the offload threshold. */
export const resultBytes = 3_000

/** A fresh temporary folder (real path), removed when the scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "tessera-wf-")))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const token = /\[\[r:(\d+)\]\]/g

/** The result numbers a request shows (tool results, their pointers' abstracts, summaries). */
export const tokensOf = (request: Model.ModelRequest): ReadonlyArray<number> => {
  const seen = new Set<number>()
  for (const part of request.parts) {
    const text = part._tag === "Text" ? part.text : part._tag === "ToolResult" ? part.content : ""
    for (const match of text.matchAll(token)) seen.add(Number(match[1]))
  }
  return [...seen].sort((a, b) => a - b)
}

/** Every task's prompt starts with this, so the model finds it wherever compaction put it. */
export const promptPrefix = "Task: "

const promptOf = (request: Model.ModelRequest): string => {
  const found = request.parts.find(
    (part) => part._tag === "Text" && part.role === "user" && part.text.startsWith(promptPrefix)
  )
  return found?._tag === "Text" ? found.text.slice(promptPrefix.length) : ""
}

/** What a task must answer: the same in one process and on the cluster, crashes or not. */
export const expectedAnswer = (name: string): string =>
  `DONE ${name} r=${Array.from({ length: callsPerTask }, (_, index) => index + 1).join(",")}`

/**
 * The model: a summary request is answered with the result numbers it
 * shows; a turn request calls `work` for the next number not seen yet, and
 * answers once all were seen.
 */
export const answer = (request: Model.ModelRequest): Model.ModelResponse => {
  const seen = tokensOf(request)
  if (Compaction.isSummaryRequest(request)) {
    return Model.response({ text: `SUMMARY ${seen.map((n) => `[[r:${n}]]`).join(" ")}` })
  }
  const next = Array.from({ length: callsPerTask }, (_, index) => index + 1).find((n) => !seen.includes(n))
  const prompt = promptOf(request)
  if (next === undefined) return Model.response({ text: `DONE ${prompt} r=${seen.join(",")}` })
  return Model.response({ toolCalls: [Model.toolCall(`call-${next}`, "work", { prompt, n: next })] })
}

export const modelLayer = ScriptedModel.layer((request) => answer(request))

/** The result of call `n`: over the offload threshold, starting with its number. */
export const resultOf = (n: number): string => `[[r:${n}]] ${"w".repeat(resultBytes)}`

/**
 * The tool: appends `<prompt> <n> <key>` to `log` (its side effect), then
 * returns a large result that starts with `[[r:<n>]]`. Idempotent (the
 * default): when the log already holds the call's key, it does not append
 * again. With `idempotent: false` it appends on every run (the negative
 * control's tool). `pauseMs` holds the call after its side effect, so a
 * kill can land between the effect and the engine's record of it.
 */
export const workTool = (log: string, options: { readonly idempotent?: boolean; readonly pauseMs?: number } = {}) =>
  Tool.make({
    name: "work",
    description: "does one piece of work",
    input: Schema.Struct({ prompt: Schema.String, n: Schema.Int }),
    handler: ({ prompt, n }) =>
      Effect.gen(function* () {
        const key = yield* ToolCallKey.current
        const keyText = Option.getOrElse(key, () => "-")
        const done =
          options.idempotent !== false &&
          Option.isSome(key) &&
          fs.existsSync(log) &&
          fs
            .readFileSync(log, "utf8")
            .split("\n")
            .some((line) => line.endsWith(` ${keyText}`))
        if (!done) fs.appendFileSync(log, `${prompt.replaceAll(" ", "_")} ${n} ${keyText}\n`)
        if (options.pauseMs !== undefined && options.pauseMs > 0) yield* Effect.sleep(options.pauseMs)
        return resultOf(n)
      })
  })

/** How many times the log says each call (`<prompt> <n>`) acted. */
export const effectCounts = (log: string): ReadonlyMap<string, number> => {
  const counts = new Map<string, number>()
  if (!fs.existsSync(log)) return counts
  for (const line of fs.readFileSync(log, "utf8").split("\n")) {
    if (line.length === 0) continue
    const [prompt, n] = line.split(" ")
    const call = `${prompt} ${n}`
    counts.set(call, (counts.get(call) ?? 0) + 1)
  }
  return counts
}

/** Compaction small enough that every task compacts at least once. */
export const policy = Compaction.threshold({ measure: "bytes", limit: 2_500, keepRecent: 0, pieceLimit: 20_000 })

/** The turn configuration: the tool, private offload over 1 KiB. */
export const config = (
  log: string,
  options: { readonly idempotent?: boolean; readonly pauseMs?: number } = {}
): TaskExecution.ExecutionConfig => ({
  tools: Tool.registry(workTool(log, options)),
  maxSteps: 40,
  offload: { threshold: 1_024, readTool: "read_artifact", destination: "Private" }
})

/** The platform a runner provides: Node files, durable files, digests, and a permissive authority. */
export const platformLayer = Layer.mergeAll(
  NodeServices.layer,
  NodeDurableFiles.layer,
  NodeDigest.layer,
  HostAuthority.permissive
)
