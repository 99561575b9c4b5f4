/**
 * Interruptions the workflow tests inject: a tool interrupted right after its
 * side effect, and a journal file interrupted right after a record is
 * durable (what a runner that dies before the engine stored the activity's
 * result leaves behind).
 */
import { JournalStorage, type Tool } from "@tessera/runtime"
import { Effect } from "effect"

/** A tool that behaves like `tool` but is interrupted right after its side effect the first time it runs call `n`. */
export const interruptedOnce = (tool: Tool.Tool, n: number): Tool.Tool => {
  let interrupted = false
  return {
    ...tool,
    run: (input) =>
      Effect.flatMap(tool.run(input), (outcome) => {
        if (interrupted || (input as { readonly n: number }).n !== n) return Effect.succeed(outcome)
        interrupted = true
        return Effect.interrupt
      })
  }
}

/**
 * A journal file that is interrupted right after it durably wrote the first line matching `when`: what a
 * runner that dies just after a record, before the engine stored the activity's result, leaves behind.
 */
export const interruptedAfterLine = (when: (line: string) => boolean) => {
  let fired = false
  const file: JournalStorage.JournalFileShape = {
    openAppend: (path) =>
      Effect.map(JournalStorage.fileSystem.openAppend(path), (handle) => ({
        ...handle,
        append: (line: string) =>
          Effect.andThen(
            handle.append(line),
            Effect.suspend(() => {
              if (fired || !when(line)) return Effect.void
              fired = true
              return Effect.interrupt
            })
          ),
        truncate: handle.truncate
      }))
  }
  return { file, fired: () => fired }
}
