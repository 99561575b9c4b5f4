/**
 * The scenario of a child's approval in the task workflow, in one process
 * or on cluster runners: a parent task delegates a release to a child, the
 * releaser, whose deploys to production and eu need the host's approval;
 * the child deploys to each environment it is given in turn, then answers
 * with what each deploy gave, and the parent repeats what it heard. A
 * deploy's effect is a line in a marker file (fsynced), so any process can
 * count the deploys that ran.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Delegation, type JournalEntry, Model, type TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import type { SharedStore, TemporaryPostgres } from "@tessera/workflow"
import { Effect, Schema } from "effect"
import * as cluster from "./cluster.ts"
import * as world from "./world.ts"

/** A deploy tool: production and eu need the host's approval; each deploy that runs is a line in `log`. */
export const deployTool = (log: string) =>
  Tool.make({
    name: "deploy",
    description: "Deploys a release to an environment",
    input: Schema.Struct({ environment: Schema.String }),
    needsApproval: ({ environment }) => environment !== "staging",
    handler: ({ environment }) =>
      Effect.sync(() => {
        const fd = fs.openSync(log, "a")
        fs.writeSync(fd, `${environment}\n`)
        fs.fsyncSync(fd)
        fs.closeSync(fd)
        return `deployed to ${environment}`
      })
  })

/** The deploys that ran, in order. */
export const deploysIn = (log: string): ReadonlyArray<string> =>
  fs.existsSync(log)
    ? fs
        .readFileSync(log, "utf8")
        .split("\n")
        .filter((line) => line.length > 0)
    : []

const isParent = (request: Model.ModelRequest) => request.tools.some((tool) => tool.name === Delegation.toolName)
const resultOf = (request: Model.ModelRequest, callId: string) =>
  request.parts.find((part): part is Model.ToolResultPart => part._tag === "ToolResult" && part.callId === callId)

/**
 * The parent delegates a release (`d1`); the child deploys to each of `environments` in turn (`x1`, `x2`, ...),
 * then answers with what each deploy gave; the parent repeats what it heard.
 */
export const modelFor = (environments: ReadonlyArray<string>) =>
  ScriptedModel.layer((request) => {
    if (isParent(request)) {
      const delegated = resultOf(request, "d1")
      if (delegated === undefined) {
        return Model.response({
          toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks: [{ agent: "releaser", task: "Ship it." }] })]
        })
      }
      return Model.response({ text: `lead heard: ${delegated.content}` })
    }
    const results: Array<string> = []
    for (const [index, environment] of environments.entries()) {
      const result = resultOf(request, `x${index + 1}`)
      if (result === undefined) {
        return Model.response({ toolCalls: [Model.toolCall(`x${index + 1}`, "deploy", { environment })] })
      }
      results.push(result.content)
    }
    return Model.response({ text: `releaser: ${results.join("; ")}` })
  })

/** The parent task and its request. */
export const parentTask = world.taskId("release-1")
export const request = { task: parentTask, prompt: `${world.promptPrefix}release` }

/** The parent's turn configuration: no tools of its own (the `delegate` tool is the hosting's). */
export const parentConfig: TaskExecution.ExecutionConfig = { tools: Tool.empty, maxSteps: 6 }

/** A store whose tasks may delegate to the releaser, its deploys marked in `log`. */
export const storeOptions = (root: string, log: string): SharedStore.Options => ({
  root,
  agent: world.agent,
  storeId: world.storeId,
  config: parentConfig,
  gate: { policy: world.policy },
  children: [{ agent: "releaser", description: "ships releases", tools: [deployTool(log)] }]
})

type Entry = JournalEntry.Entry

/** The child calls each `Delegated` wait of a journal names. */
export const delegatedRequests = (entries: ReadonlyArray<Entry>) =>
  entries.flatMap((entry) =>
    entry._tag === "ApprovalRequested" && entry.reason === "Delegated" ? [entry.children ?? []] : []
  )

/** Every decision a journal holds: the call, approved or not, and who decided. */
export const decisionsOf = (entries: ReadonlyArray<Entry>) =>
  entries.flatMap((entry) => (entry._tag === "ApprovalDecided" ? [[entry.callId, entry.approved, entry.by]] : []))

/** The child task the parent delegated to. */
export const childTaskOf = (entries: ReadonlyArray<Entry>) =>
  entries.find((entry): entry is Entry & { readonly _tag: "ChildDelegated" } => entry._tag === "ChildDelegated")?.task

/** The argument of a runner process of this scenario (`fixtures/delegationApprovalsRunner.ts`), as JSON. */
export interface RunnerArgs {
  readonly postgres: string
  readonly store: string
  readonly log: string
  readonly port: number
  readonly environments: ReadonlyArray<string>
}

const runnerScript = path.join(import.meta.dirname, "..", "fixtures", "delegationApprovalsRunner.ts")

/** Starts runner `index` of this scenario, waits for `ready`; SIGKILLed when the scope closes. */
export const startRunner = (
  postgres: TemporaryPostgres.TemporaryPostgres,
  options: Omit<RunnerArgs, "postgres" | "port">,
  index: number
) => cluster.spawnRunner(runnerScript, (port): RunnerArgs => ({ ...options, postgres: postgres.url, port }), index)
