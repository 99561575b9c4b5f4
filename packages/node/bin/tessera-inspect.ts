#!/usr/bin/env node
/**
 * `tessera-inspect <namespace-folder> [--task <id>]`: prints what a Tessera
 * namespace folder holds (store, volumes, journals, summaries, artifacts).
 * Reads only. A bad or partial folder prints one error line naming the file
 * at fault and exits 1.
 *
 * The logic lives in `src/Inspector.ts`; this file only wires the CLI.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Ids } from "@tessera/core"
import * as Inspector from "@tessera/node/Inspector"
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"

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
    )
  },
  ({ folder, task }) =>
    Inspector.inspect(folder, Option.match(task, { onNone: () => ({}), onSome: (id) => ({ task: id }) })).pipe(
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
).pipe(Command.withDescription("Inspect a Tessera namespace folder: volumes, journals, summaries and artifacts"))

inspect.pipe(Command.run({ version: "0.1.0" }), Effect.provide(NodeServices.layer), NodeRuntime.runMain)
