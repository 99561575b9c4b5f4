/**
 * The browser example: a browser harness in the origin's private file
 * system, one research turn on the scripted model: a large log offloaded
 * to the agent's private volume (the model gets a pointer), two medium
 * notes results that push the history past the compaction threshold (it is
 * summarized into a private summary file), then the files the turn left in
 * the origin's storage.
 */
import { DefaultRedactor } from "@tessera/artifacts"
import { BrowserHarness, BrowserPlatform } from "@tessera/browser"
import { Ids } from "@tessera/core"
import { Compaction, History, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, FileSystem, Layer, Path, Schema } from "effect"

/** What the example ran and found, for the page and the tests. */
export interface Report {
  readonly folder: string
  readonly requests: ReadonlyArray<{ readonly what: string; readonly bytes: number }>
  readonly answer: string
  readonly files: ReadonlyArray<{ readonly file: string; readonly size: number }>
  readonly finalStartsWith: string
}

const fetchLog = Tool.make({
  name: "fetch_log",
  description: "Fetches a service's deployment log",
  input: Schema.Struct({ service: Schema.String }),
  handler: ({ service }) =>
    Effect.succeed(
      [
        `deployment log of ${service}`,
        "config: password=correct-horse-battery",
        ...Array.from(
          { length: 700 },
          (_, i) => `${service} 12:${String(i % 60).padStart(2, "0")} request ok in ${i % 97} ms`
        )
      ].join("\n")
    )
})
const searchNotes = Tool.make({
  name: "search_notes",
  description: "Searches the team's notes",
  input: Schema.Struct({ query: Schema.String }),
  handler: ({ query }) =>
    Effect.succeed(`notes about ${query}: ${"the rollout was staged region by region; ".repeat(150)}`)
})
const tools = Tool.registry(fetchLog, searchNotes)

const script: ScriptedModel.Script = (request, index) =>
  Compaction.isSummaryRequest(request)
    ? Model.response({
        text: "Summary: the north log was fetched and the notes searched; both deployments are healthy."
      })
    : index === 0
      ? Model.response({ toolCalls: [Model.toolCall("c1", "fetch_log", { service: "north" })] })
      : index === 1
        ? Model.response({ toolCalls: [Model.toolCall("c2", "search_notes", { query: "rollout" })] })
        : index === 2
          ? Model.response({ toolCalls: [Model.toolCall("c3", "search_notes", { query: "regions" })] })
          : Model.response({ text: "Both deployments are healthy." })

const describeRequest = (request: Model.ModelRequest): string => {
  const first = request.parts[0]
  if (Compaction.isSummaryRequest(request)) return "summary request"
  if (first?._tag === "FileReference") return `starts with ${first.path}`
  return `${request.parts.length} parts`
}

/** Runs the example with its state under `root` in the origin's private file system. */
export const runExample = (options: { readonly root: string }): Promise<Report> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const harness = yield* BrowserHarness.open({
          namespace: "example",
          agent: Schema.decodeUnknownSync(Ids.AgentId)("researcher"),
          root: options.root
        })
        const task = Schema.decodeUnknownSync(Ids.TaskId)("research")
        const { outcome, sent } = yield* harness.withTask(
          task,
          (binding) =>
            Effect.gen(function* () {
              const outcome = yield* TaskExecution.runTurn(
                binding,
                History.make([Model.text("user", "Check the north and south deployments.")]),
                {
                  tools,
                  maxSteps: 8,
                  offload: { threshold: 8 * 1024, readTool: "read_artifact", destination: "Private" }
                }
              )
              const recorder = yield* ScriptedModel.ScriptedModelRecorder
              return { outcome, sent: yield* recorder.requests }
            }).pipe(Effect.provide(Layer.merge(ScriptedModel.layer(script), DefaultRedactor.layer()))),
          { policy: Compaction.threshold({ measure: "bytes", limit: 10 * 1024, keepRecent: 1024 }) }
        )
        const fs = yield* FileSystem.FileSystem
        const path = yield* Path.Path
        const names = yield* fs.readDirectory(harness.folder, { recursive: true })
        const files = yield* Effect.forEach(names.sort(), (file) =>
          Effect.map(fs.stat(path.join(harness.folder, file)), (info) => ({ file, info }))
        )
        const final = sent.at(-1)?.parts[0]
        return {
          folder: harness.folder,
          requests: sent.map((request) => ({
            what: describeRequest(request),
            bytes: Compaction.measureParts("bytes", request.parts)
          })),
          answer: outcome.text,
          files: files.flatMap(({ file, info }) => (info.type === "File" ? [{ file, size: Number(info.size) }] : [])),
          finalStartsWith: final?._tag === "FileReference" ? final.path : (final?._tag ?? "nothing")
        } satisfies Report
      })
    ).pipe(Effect.provide(BrowserPlatform.layer))
  )

/** Renders a report into `target`. */
export const renderReport = (target: HTMLElement, report: Report): void => {
  if (target.id === "") target.id = "tessera-example"
  const rows = <A>(items: ReadonlyArray<A>, cells: (item: A) => ReadonlyArray<string>) =>
    items
      .map(
        (item) =>
          `<tr>${cells(item)
            .map((cell) => `<td>${cell}</td>`)
            .join("")}</tr>`
      )
      .join("")
  const html = (text: string) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)
  target.innerHTML = `
    <style>
      #${target.id || "tessera-example"} { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #1d2330; }
      h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 1.5rem; }
      table { border-collapse: collapse; }
      td, th { border: 1px solid #c9ced8; padding: 0.2rem 0.6rem; text-align: left; }
      code { background: #eef1f6; padding: 0 0.2rem; }
    </style>
    <h1>Tessera in the browser</h1>
    <p>One turn on the scripted model, run in this page. State lives in the origin's private file system at <code>${html(report.folder)}</code>.</p>
    <h2>Model requests (${report.requests.length})</h2>
    <table><tr><th>#</th><th>request</th><th>bytes</th></tr>
      ${rows(
        report.requests.map((request, index) => ({ ...request, index })),
        (r) => [String(r.index + 1), html(r.what), String(r.bytes)]
      )}
    </table>
    <p>Answer: ${html(report.answer)}</p>
    <h2>Files in the origin's storage (${report.files.length})</h2>
    <table><tr><th>file</th><th>bytes</th></tr>
      ${rows(report.files, (f) => [`<code>${html(f.file)}</code>`, String(f.size)])}
    </table>`
}
