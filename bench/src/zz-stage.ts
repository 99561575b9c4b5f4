// One-off: how much of a summary step is the durable files' calls (staging the summary), memory-only journal.
import { DurableFiles, HostAuthority } from "@tessera/core"
import { NodeDurableFiles, NodeTessera } from "@tessera/node"
import { History, JournalDurability, Model, TaskExecution, Tool } from "@tessera/runtime"
import { Effect, Layer } from "effect"
import { makeTempDir, removeDir, stats } from "./Harness.ts"
import { policyFor } from "./PeerTessera.ts"
import { Conversation, finalAnswer, long, taskText, twoCalls } from "./PeerWorkload.ts"
import { isSummaryRequest, makeWorld, produce, turnLayerOver } from "./World.ts"

const workload = process.argv[2] === "long" ? long : twoCalls
const store = JournalDurability.memoryOnly() as {
  journals: { files: () => string[]; bytes: (f: string) => Uint8Array }
} & JournalDurability.Durability
const log: Array<{ name: string; start: number; end: number }> = []
const inner = NodeDurableFiles.make()
const logged =
  (name: string, call: (...args: any[]) => Effect.Effect<any, any>) =>
  (...args: any[]) =>
    Effect.suspend(() => {
      const e = { name, start: performance.now(), end: Number.NaN }
      log.push(e)
      return Effect.ensuring(
        call(...args),
        Effect.sync(() => {
          e.end = performance.now()
        })
      )
    })
const durable = Object.fromEntries(
  Object.entries(inner).map(([k, v]) => [k, logged(k, v as any)])
) as unknown as DurableFiles.DurableFilesShape
const platform = Layer.mergeAll(
  Layer.provideMerge(Layer.succeed(DurableFiles.DurableFiles)(durable), NodeTessera.layer),
  HostAuthority.permissive,
  JournalDurability.layer(store)
)
const root = makeTempDir("memory")
const marks: Array<{ kind: string; at: number }> = []
for (const phase of ["warmup", "measured"] as const) {
  const conversation = new Conversation(workload, phase)
  log.length = 0
  marks.length = 0
  const world = await Effect.runPromise(
    makeWorld(`${root}/${phase}`, policyFor(workload)).pipe(Effect.provide(platform))
  )
  const tools = Tool.registry(produce((_s, size) => conversation.toolRan(size)))
  const generate = (request: Model.ModelRequest) =>
    Effect.sync(() => {
      if (isSummaryRequest(request)) {
        marks.push({ kind: "summary", at: performance.now() })
        return Model.response({ text: conversation.summaryRequest(), finishReason: "stop" })
      }
      marks.push({ kind: "agent", at: performance.now() })
      const calls = conversation.agentCall(request.parts.length)
      return calls === undefined
        ? Model.response({ text: finalAnswer, finishReason: "stop" })
        : Model.response({
            toolCalls: calls.map((c) => Model.toolCall(c.id, "produce", { size: c.size })),
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
  if (phase === "measured") {
    const inStep: number[] = [],
      beforeSummary: number[] = [],
      afterSummary: number[] = [],
      total: number[] = [],
      counts: number[] = []
    for (let i = 0; i < marks.length; i++) {
      if (marks[i]!.kind !== "summary") continue
      const prev = [...marks.slice(0, i)].reverse().find((m) => m.kind === "agent")!.at
      const next = marks.slice(i).find((m) => m.kind === "agent")!.at
      const calls = log.filter((c) => c.start >= prev && c.end <= next)
      inStep.push(calls.reduce((a, c) => a + c.end - c.start, 0))
      counts.push(calls.length)
      beforeSummary.push(marks[i]!.at - prev)
      afterSummary.push(next - marks[i]!.at)
      total.push(next - prev)
    }
    const plainCalls = log.filter(
      (c) =>
        !marks.some(
          (m, i) =>
            m.kind === "summary" &&
            c.start >= m.at &&
            c.end <= (marks.slice(i).find((x) => x.kind === "agent")?.at ?? Infinity)
        )
    )
    console.log(
      workload.name,
      "summaries",
      total.length,
      "step",
      stats(total).median.toFixed(3),
      "to summary request",
      stats(beforeSummary).median.toFixed(3),
      "summary request to next call",
      stats(afterSummary).median.toFixed(3),
      "durable calls in it",
      stats(inStep).median.toFixed(3),
      "ms,",
      stats(counts).median,
      "calls; durable calls outside summary steps:",
      plainCalls.length
    )
    const byName = new Map<string, number[]>()
    for (const c of log) {
      const l = byName.get(c.name) ?? []
      l.push(c.end - c.start)
      byName.set(c.name, l)
    }
    for (const [n, l] of byName) console.log("  ", n, l.length, "median", stats(l).median.toFixed(3), "ms")
  }
}
for (const f of store.journals.files()) {
  const text = new TextDecoder().decode(store.journals.bytes(f))
  const lines = text.split("\n").filter((l) => l.length > 0)
  const kinds = new Map<string, number>()
  for (const l of lines) {
    const k = (JSON.parse(l) as { _tag: string })._tag
    kinds.set(k, (kinds.get(k) ?? 0) + 1)
  }
  console.log(
    f.split("/").slice(-4).join("/"),
    lines.length,
    "lines,",
    (text.length / lines.length).toFixed(0),
    "chars per line",
    JSON.stringify([...kinds])
  )
}
removeDir(root)
