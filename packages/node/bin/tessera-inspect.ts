#!/usr/bin/env node
/**
 * `tessera-inspect <namespace-folder> [--task <id>] [--bodies]`: prints what
 * a Tessera namespace folder holds (store, volumes, journals, summaries,
 * artifacts, and each task's resumable state). Reads only. A bad or partial
 * folder prints one error line naming the file at fault and exits 1. A
 * relative folder is read from the caller's working directory (`INIT_CWD`
 * under `npm run inspect`); `--help` lists the inspector's own options only.
 *
 * The logic lives in `src/Inspector.ts`; this file only wires the CLI.
 */
import * as path from "node:path"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Ids } from "@tessera/core"
import * as Inspector from "@tessera/node/Inspector"
import * as NodeDurableFiles from "@tessera/node/NodeDurableFiles"
import { Console, Effect, Layer, Option } from "effect"
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
    )
  },
  ({ bodies, folder, task }) =>
    Inspector.inspect(
      Inspector.resolveFolder(path, folder, { cwd: process.cwd(), initCwd: process.env.INIT_CWD }),
      Option.match(task, { onNone: () => ({ bodies }), onSome: (id) => ({ task: id, bodies }) })
    ).pipe(
      Effect.flatMap((report) => Effect.sync(() => process.stdout.write(Inspector.render(report)))),
      Effect.catch((error) =>
        Console.error(`tessera-inspect: ${error.message}`).pipe(
          Effect.andThen(
            Effect.sync(() => {
              process.exitCode = 1
            })
          )
        )
      )
    )
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
