/**
 * Side by side with more peers (issue 25): which sides run on which
 * workload, the rounds that alternate them (each run in a process of its
 * own), the ratios (medians of per-round ratios), the targets, and the
 * report's section for each workload.
 */
import { formatBytes, formatMs, formatStats, roundOrder, type Stats, stats } from "./Harness.ts"
import type { JournalMode } from "./PeerTessera.ts"
import { long, type PeerResult, twoCalls, type Workload } from "./PeerWorkload.ts"

/** One side as it runs on a workload: its benchmark job and that job's arguments. */
export interface Variant {
  readonly key: VariantKey
  readonly job: string
  readonly args: unknown
}

export type VariantKey =
  | "tessera-memory-only"
  | "tessera-tmpfs"
  | "tessera-disk"
  | "ai-sdk"
  | "pi-trim"
  | "pi-trim-whole-request"
  | "pi-none"
  | "langchain"

const tessera = (workload: Workload, journal: JournalMode): Variant => ({
  key: `tessera-${journal}`,
  job: "peer-tessera",
  args: { workload, journal }
})

/**
 * The sides of a workload. On both: Tessera with its journal memory-only,
 * on tmpfs and on disk, the AI SDK (trim), Pi with the trim, LangChain.
 * On two-calls, Pi once more with the faux provider's usage estimate over
 * the whole request (what the stock faux provider costs); on long, Pi with
 * no compaction.
 */
export const variantsOf = (workload: Workload): ReadonlyArray<Variant> => [
  tessera(workload, "memory-only"),
  tessera(workload, "tmpfs"),
  tessera(workload, "disk"),
  { key: "ai-sdk", job: "peer-ai-sdk", args: { workload } },
  { key: "pi-trim", job: "peer-pi", args: { workload, compaction: "trim" } },
  workload.name === "two-calls"
    ? { key: "pi-trim-whole-request", job: "peer-pi", args: { workload, compaction: "trim", request: "whole" } }
    : { key: "pi-none", job: "peer-pi", args: { workload, compaction: "none" } },
  { key: "langchain", job: "peer-langchain", args: { workload } }
]

/** How `npm run bench` runs the comparison: the workload and the rounds. */
export interface PeersPlan {
  readonly workload: Workload
  readonly rounds: number
}

/**
 * Two-calls: 9 rounds of 7 runs, each run about half a second to a second
 * (process start included); long: 5 rounds of 7 runs of 0.5 to 3 seconds.
 * About 2 minutes together on the 2-core benchmark machine.
 */
export const benchPlans: ReadonlyArray<PeersPlan> = [
  { workload: twoCalls, rounds: 9 },
  { workload: long, rounds: 5 }
]

/** Every run of every side, by round. */
export interface PeersRun {
  readonly workload: Workload
  readonly rounds: number
  readonly runs: Partial<Record<VariantKey, ReadonlyArray<PeerResult>>>
}

/**
 * Runs every side of `plan.workload` once per round, in an order shuffled
 * per round (`roundOrder`), each through `runOne` (in `npm run bench`, a
 * process of its own).
 */
export const runPeers = async (
  plan: PeersPlan,
  runOne: (variant: Variant, round: number) => Promise<PeerResult>
): Promise<PeersRun> => {
  const variants = variantsOf(plan.workload)
  const runs: Partial<Record<VariantKey, Array<PeerResult>>> = {}
  for (let round = 0; round < plan.rounds; round++) {
    for (const index of roundOrder(variants.length, round)) {
      const variant = variants[index] as Variant
      const result = await runOne(variant, round)
      runs[variant.key] = [...(runs[variant.key] ?? []), result]
    }
  }
  return { workload: plan.workload, rounds: plan.rounds, runs }
}

const median = (values: ReadonlyArray<number>): number => stats(values).median

/** A ratio over rounds: the median of the per-round ratios, and the per-round ratios. */
export interface RoundRatio {
  readonly median: number
  readonly rounds: ReadonlyArray<number>
}

/** `measured / baseline` of `key` in every round, and their median. */
export const roundRatio = (
  run: PeersRun,
  measured: VariantKey,
  baseline: VariantKey,
  key: (result: PeerResult) => number
): RoundRatio => {
  const ours = run.runs[measured] ?? []
  const theirs = run.runs[baseline] ?? []
  const rounds = ours.map((result, round) => {
    const other = theirs[round]
    return other === undefined ? Number.NaN : key(result) / key(other)
  })
  return { median: median(rounds), rounds }
}

export const perStep = (result: PeerResult): number => result.step.median
export const perCompactionStep = (result: PeerResult): number => result.compactionStep.median

/** One side's figures over the rounds: each the median round's. */
export interface SideSummary {
  readonly side: string
  readonly step: Stats
  readonly compactionStep: Stats
  readonly compactions: number
  readonly summaryRequests: number
  readonly toolCalls: number
  readonly toolMsPerStep: number
  readonly largestRequestMessages: number
  readonly peakRss: number
  readonly retainedHeap: number
}

const medianRound = (runs: ReadonlyArray<PeerResult>, key: (run: PeerResult) => number): PeerResult =>
  [...runs].sort((a, b) => key(a) - key(b))[Math.floor(runs.length / 2)] as PeerResult

export const summarize = (runs: ReadonlyArray<PeerResult>): SideSummary => {
  const byStep = medianRound(runs, perStep)
  return {
    side: byStep.side,
    step: byStep.step,
    compactionStep: medianRound(runs, perCompactionStep).compactionStep,
    compactions: byStep.compactions,
    summaryRequests: byStep.summaryRequests,
    toolCalls: byStep.toolCalls,
    toolMsPerStep: median(runs.map((run) => run.toolMs / Math.max(1, run.steps - 1))),
    largestRequestMessages: byStep.largestRequestMessages,
    peakRss: medianRound(runs, (run) => run.peakRss).peakRss,
    retainedHeap: medianRound(runs, (run) => run.retainedHeap).retainedHeap
  }
}

/** A target of issue 25: `measured` (ours) against `baseline`, per step or per compaction step, at most `limit`. */
export interface PeerTarget {
  readonly workload: Workload["name"]
  readonly measured: VariantKey
  readonly baseline: VariantKey
  readonly per: "step" | "summary step"
  readonly limit: number
}

/** The targets, every one on the memory-only journal. */
export const targets: ReadonlyArray<PeerTarget> = [
  { workload: "two-calls", measured: "tessera-memory-only", baseline: "ai-sdk", per: "step", limit: 1.0 },
  { workload: "two-calls", measured: "tessera-memory-only", baseline: "pi-trim", per: "step", limit: 1.5 },
  { workload: "long", measured: "tessera-memory-only", baseline: "ai-sdk", per: "step", limit: 1.0 },
  { workload: "two-calls", measured: "tessera-memory-only", baseline: "langchain", per: "step", limit: 0.25 },
  { workload: "two-calls", measured: "tessera-memory-only", baseline: "langchain", per: "summary step", limit: 0.25 },
  { workload: "long", measured: "tessera-memory-only", baseline: "langchain", per: "step", limit: 0.25 },
  { workload: "long", measured: "tessera-memory-only", baseline: "langchain", per: "summary step", limit: 0.25 }
]

/** A target's ratio in a run. */
export const targetRatio = (run: PeersRun, target: PeerTarget): RoundRatio =>
  roundRatio(run, target.measured, target.baseline, target.per === "step" ? perStep : perCompactionStep)

const peerNames: Record<VariantKey, string> = {
  "tessera-memory-only": "Tessera (journal memory-only)",
  "tessera-tmpfs": "Tessera (journal on tmpfs)",
  "tessera-disk": "Tessera (journal on disk)",
  "ai-sdk": "the AI SDK (trim in prepareStep)",
  "pi-trim": "Pi (trim in transformContext)",
  "pi-trim-whole-request": "Pi (trim, faux usage estimate over the whole request)",
  "pi-none": "Pi (no compaction)",
  langchain: "LangChain (summarizationMiddleware)"
}

/** The target's name in the targets table. */
export const targetName = (target: PeerTarget): string =>
  `Peers, ${target.workload}: per ${target.per}, journal memory-only, <= ${target.limit.toFixed(2)}x ${peerNames[target.baseline]}`

const listed = (ratio: RoundRatio): string => ratio.rounds.map((value) => value.toFixed(2)).join(", ")

const workloadText = (workload: Workload): string =>
  workload.name === "two-calls"
    ? `every step the model asks for ${workload.callsPerStep} tool calls, each result ${workload.minChars.toLocaleString("en")} characters of ASCII log text; ${workload.warmupSteps} warm-up steps, then ${workload.steps} measured steps`
    : `${workload.steps.toLocaleString("en")} steps (after ${workload.warmupSteps} warm-up steps), one tool call per step whose result is ${workload.minChars.toLocaleString("en")} to ${workload.maxChars.toLocaleString("en")} characters (uniformly drawn from a fixed seed, the same sequence for every side; ${Math.round(workload.minChars / 1024)} to ${Math.round(workload.maxChars / 1024)} KiB of characters), text mixing ASCII log lines, CJK (some outside the BMP: surrogate pairs) and emoji (ZWJ sequences, flags, skin tones, keycaps), never cut inside a character or a grapheme`

/** The report's section on one workload. */
export const section = (run: PeersRun, tesseraPolicy: string): ReadonlyArray<string> => {
  const { workload } = run
  const variants = variantsOf(workload)
  const lines: Array<string> = [
    `## Side by side with more peers: ${workload.name === "two-calls" ? "two parallel tool calls per step" : "a long run with mixed text"}`,
    "",
    `Workload "${workload.name}": ${workloadText(workload)}. ` +
      `Every side compacts past ${workload.triggerChars.toLocaleString("en")} characters of history, keeping about the newest ${workload.keepChars.toLocaleString("en")}, with its own means: ` +
      `Tessera's \`Threshold\` policy \`${tesseraPolicy}\` (compaction on; it measures UTF-8 bytes / 4, so the budget is scaled by the text's bytes per character; no offload); ` +
      `LangChain's \`summarizationMiddleware({ trigger: { tokens: ${Math.ceil(workload.triggerChars / 4)} }, keep: { tokens: ${Math.ceil(workload.keepChars / 4)} }, trimTokensToSummarize: ${Math.ceil(workload.triggerChars / 4)} })\` (characters / 4); ` +
      "the AI SDK has no summarization: `prepareStep` trims the history to the task and the newest whole rounds (its `messages` override carries forward); " +
      `Pi's agent has no compaction: its \`transformContext\` applies the same trim to what is sent (the agent keeps the whole transcript)${workload.name === "long" ? ", and one Pi row runs with no compaction at all" : ""}. ` +
      "Every side's model follows one script (the same tool calls at every step, a 400-character summary for every summary request) and keeps nothing it receives: " +
      "Tessera `Model.layerFromGenerate`; the AI SDK 7 `generateText` + `stopWhen: stepCountIs(n)` over its `MockLanguageModelV4` (`ai/test`), whose record of calls is emptied at every call; " +
      "Pi agent-core's `Agent` over Pi's faux provider (`registerFauxProvider`), called through the agent's `streamFn` with the request's messages left out, because the faux provider serializes the whole request to estimate usage, which no other side's model does" +
      `${workload.name === "two-calls" ? ' (the row marked "whole request" keeps that estimate)' : ""}; ` +
      "LangChain `createAgent` over a `BaseChatModel` subclass. Tool calls of a step run concurrently on the AI SDK, Pi and LangChain (their defaults) and one after the other on Tessera (its executor runs a step's calls in order). " +
      "Every tool result is decoded from UTF-8 bytes at each call, as a tool decodes what it read, so each is a string of its own: the tool's own time per step is in the table and is part of every side's steps. " +
      `Each side runs in a process of its own, ${run.rounds} rounds, the sides in an order shuffled per round; every figure is the median round's, and ratios are medians of per-round ratios. ` +
      "A step is the time from one agent model call to the next; a compaction step is one during which the history was summarized (a summary request) or replaced (the next request carries fewer messages).",
    "",
    "| Side | Per step | Per compaction step | Compactions | Summary requests | Tool calls | Tool time per step | Largest request (messages) | Peak RSS | Heap after GC |",
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  ]
  for (const variant of variants) {
    const runs = run.runs[variant.key]
    if (runs === undefined || runs.length === 0) continue
    const side = summarize(runs)
    lines.push(
      `| ${side.side} | ${formatStats(side.step)} | ${side.compactionStep.n === 0 ? "none" : formatStats(side.compactionStep)} | ${side.compactions} | ${side.summaryRequests} | ${side.toolCalls} | ${formatMs(side.toolMsPerStep)} ms | ${side.largestRequestMessages} | ${formatBytes(side.peakRss)} | ${formatBytes(side.retainedHeap)} |`
    )
  }
  lines.push("")
  const peers = variants.filter((variant) => !variant.key.startsWith("tessera"))
  const ratioLine = (ours: VariantKey) =>
    `${peerNames[ours]} per step: ${peers
      .map((peer) => {
        const ratio = roundRatio(run, ours, peer.key, perStep)
        return `${ratio.median.toFixed(2)}x ${peerNames[peer.key]} (rounds: ${listed(ratio)})`
      })
      .join("; ")}.`
  lines.push(ratioLine("tessera-memory-only"), "", ratioLine("tessera-tmpfs"), "", ratioLine("tessera-disk"), "")
  const summaryRatio = (ours: VariantKey) => roundRatio(run, ours, "langchain", perCompactionStep)
  lines.push(
    `Per summarization step against LangChain: memory-only ${summaryRatio("tessera-memory-only").median.toFixed(2)}x (rounds: ${listed(summaryRatio("tessera-memory-only"))}), tmpfs ${summaryRatio("tessera-tmpfs").median.toFixed(2)}x, disk ${summaryRatio("tessera-disk").median.toFixed(2)}x. ` +
      `Peak RSS: ${variants
        .flatMap((variant) => {
          const runs = run.runs[variant.key] ?? []
          return runs.length === 0 ? [] : [`${formatBytes(summarize(runs).peakRss)} (${peerNames[variant.key]})`]
        })
        .join(", ")}.`,
    ""
  )
  return lines
}

/** A row of the report's targets table. */
export interface TargetRow {
  readonly name: string
  readonly measured: string
  readonly ok: boolean
  readonly cause: string
}

/** The run of `workload` among `runs`. */
const runOf = (runs: ReadonlyArray<PeersRun>, workload: Workload["name"]): PeersRun | undefined =>
  runs.find((run) => run.workload.name === workload)

/**
 * What a miss costs in this run's own figures (both sides' medians), and
 * where our time goes, from the measurements of bench/NOTES.md (seventh
 * and tenth rounds): `node --cpu-prof` profiles of the job, its durable-file calls
 * timed one by one, and the per-result measures timed on the workload's
 * own results.
 */
const missCause = (run: PeersRun, target: PeerTarget): string =>
  `${missCauseBody(run, target)} Measurements: bench/NOTES.md, seventh and tenth rounds.`

const missCauseBody = (run: PeersRun, target: PeerTarget): string => {
  const ours = summarize(run.runs[target.measured] ?? [])
  const theirs = summarize(run.runs[target.baseline] ?? [])
  const figure = (side: SideSummary) => (target.per === "step" ? side.step.median : side.compactionStep.median)
  const measured = `In this run ours took ${formatMs(figure(ours))} ms per ${target.per} against ${formatMs(figure(theirs))} ms (of every step, ${formatMs(ours.toolMsPerStep)} and ${formatMs(theirs.toolMsPerStep)} ms are the tool's own). `
  const summaryExtra = (side: SideSummary) => formatMs(side.compactionStep.median - side.step.median)
  if (target.workload === "two-calls" && target.per === "step") {
    return (
      measured +
      "A step of ours journals six entries (the request dispatched, the response, each call's `ToolCalled` and `ToolResulted`), each checked, encoded and folded into the task's state even when the journal is memory-only, measures the request (a hash chain over its new parts) and each result (UTF-8 size and SHA-256), and runs as Effect fibers. " +
      "In a `node --cpu-prof` profile of this job over 6,000 steps (memory-only journal; module loading and the bench's own code left out) the time splits into Effect's runtime (fiber run loop, contexts, primitives) 29%, the measures 16%, the journal 13%, the summary steps' durable-file calls 11%, garbage collection 8%, the executor 8% and compaction 5% (tenth round; no span is made, as no tracer is installed). " +
      "The AI SDK's and Pi's loops journal nothing and never look at a result's text (no side's scripted model reads its input)."
    )
  }
  if (target.workload === "two-calls") {
    return (
      measured +
      `A summarization step of ours is a plain step, then the summary request (the summarized rounds rendered into pieces), the summary staged write-once in the agent-private volume (on tmpfs) and journaled (three entries): it took ${summaryExtra(ours)} ms more than our plain step, LangChain's ${summaryExtra(theirs)} ms more than its own. ` +
      "Timed call by call, the durable files' five calls in a summarization step (three reads of the volume's small files, the exclusive write of the summary and its hard-link publication) take about 0.33 ms of a 0.82 ms summarization step; LangChain's middleware keeps its summary in memory."
    )
  }
  if (target.per === "step") {
    return (
      measured +
      `Without the tool's own time a step took ${formatMs(ours.step.median - ours.toolMsPerStep)} ms of ours against ${formatMs(theirs.step.median - theirs.toolMsPerStep)} ms. ` +
      "Every step measures its new result once, on average 95,000 characters (154 KB of UTF-8) of mixed text, for `ToolResulted`: its UTF-8 size and SHA-256, from one conversion to UTF-8 (`transcode`) and one hash: about 240 µs a result on 300 of this workload's results timed one by one once flat (908 µs the way it was measured before the tenth round), and about 160 µs more for V8 to flatten each into one string first (the workload's results are concatenations); the request's hash chain and compaction's size of the request reuse that measure. It takes about 40% of a `node --cpu-prof` profile of the job once module loading and the tool (its decoding) are left out. " +
      "The other sides never look at a result's text: their scripted models ignore their input and their loops only pass the strings along."
    )
  }
  return (
    measured +
    `A summarization step of ours is a step (its new result measured as above), then the summary request (about 1,000,000 characters of history rendered into pieces and measured), the summary staged write-once (five durable-file calls, about 0.35 ms) and journaled, and the next request measured against the kept rounds; it took ${summaryExtra(ours)} ms more than our plain step, LangChain's ${summaryExtra(theirs)} ms more than its own.`
  )
}

/** The rows of the targets table for the targets (see {@link targets}), each checked on its workload's run. */
export const targetRows = (runs: ReadonlyArray<PeersRun>): ReadonlyArray<TargetRow> =>
  targets.flatMap((target) => {
    const run = runOf(runs, target.workload)
    if (run === undefined) return []
    const ratio = targetRatio(run, target)
    return [
      {
        name: targetName(target),
        measured: `${ratio.median.toFixed(2)}x (rounds: ${listed(ratio)})`,
        ok: ratio.median <= target.limit,
        cause: missCause(run, target)
      }
    ]
  })
