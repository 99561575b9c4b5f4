#!/usr/bin/env node
/**
 * `tessera-inspect <namespace-folder> [--task <id>] [--bodies] [--json]
 * [--kind <Tag>]... [--turn <n>] [--since <ISO time>] [--follow]
 * [--follow-for <seconds>] [--html <file>]`: prints what a Tessera namespace folder holds
 * (store, volumes, journals, summaries, artifacts, each task's resumable
 * state and redaction decision), as text or as the `tessera-inspect/1` JSON
 * document (`--json`); the filters narrow the entries shown. `--follow`
 * prints a task's entries as they are journaled (NDJSON with `--json`)
 * until interrupted, or for `--follow-for` seconds. Reads only. A bad or
 * partial folder, or a bad filter, prints one error line naming the file or
 * the flag at fault and exits 1. A relative folder is read from the
 * caller's working directory (`INIT_CWD` under `npm run inspect`); `--help`
 * lists the inspector's own options only. See docs/inspector.md.
 *
 * The logic lives in `src/Inspector.ts`; this file only wires the CLI.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Ids } from "@tessera/core"
import * as Inspector from "@tessera/node/Inspector"
import * as NodeDurableFiles from "@tessera/node/NodeDurableFiles"
import { Console, Effect, Layer, Option, Stream } from "effect"
import { Argument, CliOutput, Command, Flag } from "effect/cli"

const inspect = Command.make(
  "tessera-inspect",
  {
    folder: Argument.String("namespace-folder").pipe(
      Argument.withDescription("The namespace folder (a volume store root) to inspect")
    ),
    task: Flag.String("task").pipe(
      Flag.withDescription("Show only this task's journal and the summaries and artifacts it records"),
      Flag.withSchema(Ids.TaskId),
      Flag.optional
    ),
    bodies: Flag.Boolean("bodies").pipe(
      Flag.withDescription(
        "Show the conversation's bodies (texts, tool inputs and results, summaries); hidden by default"
      ),
      Flag.withDefault(false)
    ),
    json: Flag.Boolean("json").pipe(
      Flag.withDescription("Print the report as JSON (schema tessera-inspect/1, see docs/inspector.md)"),
      Flag.withDefault(false)
    ),
    kind: Flag.String("kind").pipe(
      Flag.withDescription(
        "Show only entries of this tag (repeatable, or comma-separated: --kind ToolCalled,ToolResulted)"
      ),
      Flag.atLeast(0)
    ),
    turn: Flag.Int("turn").pipe(Flag.withDescription("Show only entries of this turn"), Flag.optional),
    since: Flag.String("since").pipe(
      Flag.withDescription("Show only entries journaled at or after this ISO 8601 time (2026-01-02T03:04:05Z)"),
      Flag.optional
    ),
    follow: Flag.Boolean("follow").pipe(
      Flag.withDescription("Print the task's entries as they are journaled, until interrupted (needs --task)"),
      Flag.withDefault(false)
    ),
    followFor: Flag.Finite("follow-for").pipe(
      Flag.withDescription("Follow for this many seconds, then stop (implies --follow)"),
      Flag.optional
    ),
    html: Flag.String("html").pipe(
      Flag.withDescription(
        "Write the task's page (context size per request with compactions and offloads, usage, summaries, artifacts, approvals) to this file (needs --task)"
      ),
      Flag.optional
    )
  },
  ({ bodies, folder, follow, followFor, html, json, kind, since, task, turn }) => {
    const root = Inspector.resolveFolder(path, folder, { cwd: process.cwd(), initCwd: process.env.INIT_CWD })
    const filters = {
      ...(kind.length === 0 ? {} : { kinds: kind }),
      turn: Option.getOrUndefined(turn),
      since: Option.getOrUndefined(since)
    }
    const write = (text: string) => Effect.sync(() => process.stdout.write(text))
    const failed = (message: string) =>
      Console.error(`tessera-inspect: ${message}`).pipe(
        Effect.andThen(
          Effect.sync(() => {
            process.exitCode = 1
          })
        )
      )
    if (Option.isSome(html)) {
      if (Option.isNone(task)) return failed("--html needs --task <id>: the page shows one task")
      const file = path.resolve(process.env.INIT_CWD ?? process.cwd(), html.value)
      // The page charts every request: it is drawn from the whole journal, whatever the filters.
      return Inspector.inspect(root, { task: task.value, bodies }).pipe(
        Effect.flatMap((report) => {
          const journal = report.journals[0]
          return journal === undefined
            ? failed(`task ${task.value} has no journal`)
            : Effect.sync(() => {
                fs.writeFileSync(file, Inspector.renderHtml(report, journal))
                process.stdout.write(`${file}\n`)
              })
        }),
        Effect.catch((error) => failed(error.message))
      )
    }
    if (!follow && Option.isNone(followFor)) {
      const only = Option.match(task, { onNone: () => ({}), onSome: (id) => ({ task: id }) })
      return Inspector.inspect(root, { ...only, bodies, ...filters }).pipe(
        Effect.flatMap((report) =>
          write(json ? `${JSON.stringify(Inspector.toJson(report), null, 2)}\n` : Inspector.render(report))
        ),
        Effect.catch((error) => failed(error.message))
      )
    }
    if (Option.isNone(task)) return failed("--follow needs --task <id>: it follows one task's journal")
    const following = Inspector.follow(root, { task: task.value, ...filters }).pipe(
      Stream.runForEach((entry) =>
        write(`${json ? Inspector.formatEntryJson(entry) : Inspector.formatEntry(entry)}\n`)
      ),
      Effect.catch((error) => failed(error.message))
    )
    // Interrupted by SIGINT (the runtime's own handler), or after --follow-for seconds.
    return Option.match(followFor, {
      onNone: () => following,
      onSome: (seconds) => Effect.raceFirst(following, Effect.sleep(seconds * 1000))
    })
  }
).pipe(
  Command.withDescription(
    "Inspect a Tessera namespace folder: volumes, journals, summaries, artifacts and each task's resumable state"
  )
)

const standard = CliOutput.defaultFormatter()
/** The built-in flags (--help, --version, ...) still work; the help lists the inspector's own options only. */
const ownOptionsOnly: CliOutput.Formatter = {
  ...standard,
  formatHelpDoc: (doc) => {
    const { globalFlags: _builtIns, ...own } = doc
    return standard.formatHelpDoc(own)
  }
}

inspect.pipe(
  Command.run({ version: "0.3.0" }),
  Effect.provide(Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, CliOutput.layer(ownOptionsOnly))),
  NodeRuntime.runMain
)
