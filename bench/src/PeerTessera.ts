/**
 * Tessera's side of the peer comparison: `TaskExecution.runTurn` on a task
 * bound in a real store, wired as a Node host is (`NodeTessera.layer`, a
 * permissive host authority), with the workload's compaction budget as a
 * `Threshold` policy and no offload. The journal is kept three ways:
 *
 * - `memory-only`: `JournalStorage.memoryOnly()`, the lines kept in the
 *   process (same format, same checks, same replay), like the peers' state
 *   in memory; the agent-private volume (summaries) on tmpfs;
 * - `tmpfs`: journal and private volume on `/dev/shm`, every append
 *   written and synced (a sync costs nothing there);
 * - `disk`: both on disk, every append written and synced to the device.
 */
import { HostAuthority } from "@tessera/core"
import { NodeTessera } from "@tessera/node"
import { Compaction, History, JournalStorage, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Layer } from "effect"
import { makeTempDir, removeDir } from "./Harness.ts"
import { bytesPerChar, finalAnswer, measure, type PeerResult, taskText, type Workload } from "./PeerWorkload.ts"
import { isSummaryRequest, makeWorld, produce, turnLayerOver } from "./World.ts"

/** Where the journal lives (see the module's description). */
export type JournalMode = "memory-only" | "tmpfs" | "disk"

export interface TesseraPeerArgs {
  readonly workload: Workload
  readonly journal: JournalMode
}

/**
 * The workload's budget as our policy. Tessera measures history in
 * estimated tokens of UTF-8 bytes (bytes / 4), the others in characters, so
 * the budget in characters is converted with the workload text's bytes per
 * character. One summary request per compaction (`pieceLimit` is the whole
 * trigger), like LangChain's single summarization call; the inline limit
 * (the piece limit) is then above every result, so no result is cut.
 */
export const policyFor = (workload: Workload): Compaction.Threshold => {
  const tokens = (chars: number) => Math.ceil((chars * bytesPerChar(workload)) / 4)
  return Compaction.threshold({
    measure: "estimatedTokens",
    limit: tokens(workload.triggerChars),
    keepRecent: tokens(workload.keepChars),
    pieceLimit: tokens(workload.triggerChars)
  })
}

/** What the side runs on: `NodeTessera.layer`, a permissive host authority and, for `memory-only`, that durability. */
export const platformOf = (journal: JournalMode) => {
  const host = Layer.merge(NodeTessera.layer, HostAuthority.permissive)
  return journal === "memory-only" ? Layer.merge(host, JournalStorage.layer(JournalStorage.memoryOnly())) : host
}

export const label = (journal: JournalMode): string =>
  journal === "memory-only"
    ? "tessera, journal memory-only"
    : journal === "tmpfs"
      ? "tessera, journal on tmpfs"
      : "tessera, journal on disk (fsync per append)"

export const run = async (args: TesseraPeerArgs): Promise<PeerResult> => {
  const root = makeTempDir(args.journal === "disk" ? "disk" : "memory")
  const policy = policyFor(args.workload)
  const platform = platformOf(args.journal)
  try {
    let conversations = 0
    return await measure(label(args.journal), args.workload, async (conversation) => {
      const world = await Effect.runPromise(
        makeWorld(`${root}/${++conversations}`, policy).pipe(Effect.provide(platform))
      )
      const tools = Tool.registry(produce((_serial, size) => conversation.toolRan(size)))
      const generate = (request: Model.ModelRequest) =>
        Effect.sync(() => {
          if (isSummaryRequest(request)) {
            return Model.response({ text: conversation.summaryRequest(), finishReason: "stop" })
          }
          const calls = conversation.agentCall(request.parts.length)
          return calls === undefined
            ? Model.response({ text: finalAnswer, finishReason: "stop" })
            : Model.response({
                toolCalls: calls.map((call) => Model.toolCall(call.id, "produce", { size: call.size })),
                finishReason: "tool-calls"
              })
        })
      await Effect.runPromise(
        Effect.asVoid(
          TaskExecution.runTurn(world.binding, History.make([Model.text("user", taskText)]), {
            tools,
            maxSteps: conversation.steps
          })
        ).pipe(Effect.provide(turnLayerOver(platform, world.journalFolder, generate)))
      )
    })
  } finally {
    removeDir(root)
  }
}
