/**
 * The workloads of the side-by-side with more peers (issue 25), kept free of
 * every side's code so that each side's process loads only its own: what the
 * scripted model asks for at every step, the tool results' sizes and texts,
 * the compaction budget every side is given, and the result shape.
 *
 * Every side's model follows the same script ({@link scriptedCalls}) and
 * keeps nothing it receives; every side's tool answers with the same text
 * ({@link resultText}) for the same call. A step is the time from one agent
 * model call to the next (`StepClock`).
 */
import { peakRss, retainedHeap, type Stats, seededRandom, stats } from "./Harness.ts"
import { summaryText } from "./Scenario.ts"

/** The workloads `npm run bench` compares the sides on. */
export type WorkloadName = "two-calls" | "long"

/**
 * One workload, as plain data (it travels to each side's process as JSON).
 * Sizes are in UTF-16 code units ("characters"), as JavaScript counts them.
 */
export interface Workload {
  readonly name: WorkloadName
  /** Agent model calls of the unmeasured conversation that precedes the measured one, in the same process. */
  readonly warmupSteps: number
  /** Agent model calls of the measured conversation: the first `steps - 1` ask for tools, the last answers. */
  readonly steps: number
  /** Tool calls the model asks for at every step but the last. */
  readonly callsPerStep: number
  /** Smallest and largest tool result; each result's size is drawn uniformly between them from `seed`. */
  readonly minChars: number
  readonly maxChars: number
  readonly seed: number
  /** `ascii`: log lines only; `mixed`: log lines, CJK text (some outside the BMP) and emoji (ZWJ sequences, flags, skin tones). */
  readonly text: "ascii" | "mixed"
  /**
   * The compaction budget every side is given, in characters of history:
   * compact (summarize or trim) once the history measures more than
   * `triggerChars`, keeping the newest rounds within `keepChars`.
   */
  readonly triggerChars: number
  readonly keepChars: number
}

/**
 * Two parallel tool calls per step, 2 KiB (2,048 characters) of log text
 * each; history compacted past about 19 rounds, keeping the newest 5.
 */
export const twoCalls: Workload = {
  name: "two-calls",
  warmupSteps: 600,
  steps: 200,
  callsPerStep: 2,
  minChars: 2_048,
  maxChars: 2_048,
  seed: 25,
  text: "ascii",
  triggerChars: 80_000,
  keepChars: 24_000
}

/**
 * 1,000 steps, one tool result per step between 1 and 200 KiB (uniformly
 * drawn from a fixed seed) of text mixing ASCII, CJK and emoji; history
 * compacted past about ten average results, keeping about the newest two.
 */
export const long: Workload = {
  name: "long",
  warmupSteps: 30,
  steps: 1_000,
  callsPerStep: 1,
  minChars: 1_024,
  maxChars: 204_800,
  seed: 2_025,
  text: "mixed",
  triggerChars: 1_000_000,
  keepChars: 240_000
}

/** One tool call the script asks for: its id and the size of the result it asks for. */
export interface ScriptedCall {
  readonly id: string
  readonly size: number
}

/** Which conversation of a run: the warm-up one or the measured one (they draw different sizes). */
export type Phase = "warmup" | "measured"

const sizesCache = new Map<string, ReadonlyArray<number>>()

/** The result sizes of a conversation, one per tool call in call order; the same in every process. */
const sizesOf = (workload: Workload, phase: Phase): ReadonlyArray<number> => {
  const key = `${JSON.stringify(workload)}/${phase}`
  const cached = sizesCache.get(key)
  if (cached !== undefined) return cached
  const steps = phase === "warmup" ? workload.warmupSteps : workload.steps
  const next = seededRandom(phase === "warmup" ? workload.seed ^ 0x5bd1e995 : workload.seed)
  const span = workload.maxChars - workload.minChars + 1
  const sizes = Array.from(
    { length: Math.max(0, steps - 1) * workload.callsPerStep },
    () => workload.minChars + Math.floor(next() * span)
  )
  sizesCache.set(key, sizes)
  return sizes
}

/**
 * What the model asks for at its `call`-th agent call (1-based) of a
 * conversation: the tool calls, or `undefined` for the final answer (the
 * conversation's last call).
 */
export const scriptedCalls = (
  workload: Workload,
  phase: Phase,
  call: number
): ReadonlyArray<ScriptedCall> | undefined => {
  const steps = phase === "warmup" ? workload.warmupSteps : workload.steps
  if (call >= steps) return undefined
  const sizes = sizesOf(workload, phase)
  return Array.from({ length: workload.callsPerStep }, (_, index) => ({
    id: `call_${call}_${index + 1}`,
    size: sizes[(call - 1) * workload.callsPerStep + index] as number
  }))
}

/** The final answer every side's model gives at the conversation's last call. */
export const finalAnswer = "All batches processed."

/** The task every side starts from. */
export const taskText =
  "Work through the batches with the produce tool, as many calls at a time as it asks for, and report when done."

// ---------------------------------------------------------------- result texts

const asciiWords = ["batch", "worker", "records", "processed", "retry", "commit", "shard", "queue", "ok", "latency"]
const cjk = "处理批次完成记录数据库连接超时重试成功失败队列分片提交延迟日志服务器请求响应缓存索引事务"
// CJK outside the BMP: each one a surrogate pair.
const cjkAstral = ["𠀀", "𠮷", "𡈽", "𤭢", "𩸽"]
const emoji = ["😀", "🚀", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇫🇷", "1️⃣", "🧑🏿‍🔬", "❤️‍🔥", "🐈‍⬛"]

/** One segment of the pool: never cut inside, so a result never splits a character or a grapheme. */
const segment = (text: Workload["text"], next: () => number): string => {
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)] as A
  const logLine = () =>
    `2026-12-01T10:${String(Math.floor(next() * 60)).padStart(2, "0")}:${String(Math.floor(next() * 60)).padStart(2, "0")}Z INFO ${pick(asciiWords)}-${Math.floor(next() * 16)} ${pick(asciiWords)} ${Math.floor(next() * 100_000)} ${pick(asciiWords)} in ${Math.floor(next() * 900)} ms\n`
  if (text === "ascii") return logLine()
  const kind = next()
  if (kind < 0.45) return logLine()
  if (kind < 0.85) {
    let sentence = ""
    const length = 12 + Math.floor(next() * 40)
    for (let index = 0; index < length; index++) {
      sentence += next() < 0.05 ? pick(cjkAstral) : cjk[Math.floor(next() * cjk.length)]
    }
    return `${sentence}。\n`
  }
  let run = ""
  const count = 1 + Math.floor(next() * 6)
  for (let index = 0; index < count; index++) run += `${pick(emoji)} `
  return `${run}\n`
}

interface Pool {
  /** The pool's text twice over, as UTF-8, so that a slice from any start in the first copy fits. */
  readonly bytes: Buffer
  /** Offsets (in characters, into the text twice over) at which a segment starts, ascending, and its end. */
  readonly boundaries: ReadonlyArray<number>
  /** The same offsets in bytes. */
  readonly byteOffsets: ReadonlyArray<number>
  /** UTF-8 bytes per UTF-16 unit over the pool. */
  readonly bytesPerChar: number
}

const poolChars = 256 * 1024
const pools = new Map<Workload["text"], Pool>()

const poolOf = (text: Workload["text"]): Pool => {
  const cached = pools.get(text)
  if (cached !== undefined) return cached
  const next = seededRandom(text === "ascii" ? 0x2545f491 : 0x9e3779b9)
  const pieces: Array<string> = []
  const starts: Array<number> = []
  const byteStarts: Array<number> = []
  let length = 0
  let bytes = 0
  while (length < poolChars) {
    const piece = segment(text, next)
    starts.push(length)
    byteStarts.push(bytes)
    pieces.push(piece)
    length += piece.length
    bytes += Buffer.byteLength(piece, "utf8")
  }
  const once = pieces.join("")
  const pool: Pool = {
    bytes: Buffer.from(once + once, "utf8"),
    boundaries: [...starts, ...starts.map((start) => start + length), 2 * length],
    byteOffsets: [...byteStarts, ...byteStarts.map((start) => start + bytes), 2 * bytes],
    bytesPerChar: bytes / length
  }
  pools.set(text, pool)
  return pool
}

/** The index of the largest boundary at or below `offset`. */
const boundaryAtOrBelow = (boundaries: ReadonlyArray<number>, offset: number): number => {
  let low = 0
  let high = boundaries.length - 1
  while (low < high) {
    const middle = (low + high + 1) >> 1
    if ((boundaries[middle] as number) <= offset) low = middle
    else high = middle - 1
  }
  return low
}

/**
 * The text of the `serial`-th tool result (1-based, counted per
 * conversation in the order the tools ran): exactly `size` characters, a
 * header naming the call, then a stretch of the workload's text pool that
 * starts and ends between segments (never inside a surrogate pair or a ZWJ
 * sequence), padded with dots. The same for every side.
 *
 * The stretch is decoded from the pool's UTF-8 bytes at every call, as a
 * tool decodes what it read from a file or a socket: every result is a
 * string of its own (a side that keeps results keeps their memory), and
 * making it costs every side the same (each side reports its tool time).
 */
export const resultText = (workload: Workload, serial: number, size: number): string => {
  const pool = poolOf(workload.text)
  const header = `result of call ${serial} (${size} characters):\n`
  if (header.length >= size) return header.slice(0, size)
  const from = boundaryAtOrBelow(pool.boundaries, Math.floor(seededRandom(workload.seed + serial)() * poolChars))
  const to = boundaryAtOrBelow(pool.boundaries, (pool.boundaries[from] as number) + size - header.length)
  const bodyChars = (pool.boundaries[to] as number) - (pool.boundaries[from] as number)
  const body = pool.bytes.toString("utf8", pool.byteOffsets[from], pool.byteOffsets[to])
  return header + body + ".".repeat(size - header.length - bodyChars)
}

/** UTF-8 bytes per character of a workload's text: Tessera measures history in UTF-8 bytes, the others in characters. */
export const bytesPerChar = (workload: Workload): number => poolOf(workload.text).bytesPerChar

// ---------------------------------------------------------------- results

/** What one run of one side reports. */
export interface PeerResult {
  readonly side: string
  readonly workload: WorkloadName
  /** Agent model calls in the measured conversation. */
  readonly steps: number
  /** Tool executions in the measured conversation. */
  readonly toolCalls: number
  /** Milliseconds the tool spent making its results, over the measured conversation (part of every side's steps). */
  readonly toolMs: number
  /** Steps without a compaction. */
  readonly step: Stats
  /** Steps during which the history was compacted (a summary requested, or a trim). */
  readonly compactionStep: Stats
  /** History replacements (summaries or trims) in the measured conversation. */
  readonly compactions: number
  /** Summary requests the model received in the measured conversation. */
  readonly summaryRequests: number
  /** The most messages (parts, for Tessera) one agent request carried. */
  readonly largestRequestMessages: number
  readonly peakRss: number
  readonly retainedHeap: number
  readonly wallMs: number
  /** Process CPU time (user + system) of the measured conversation. */
  readonly cpuMs: number
}

/**
 * Counts what a side's model and tool see over one conversation, and
 * times its steps. Each side calls `agentCall` when its model receives an
 * agent request (with the number of messages it carries: parts, for
 * Tessera), `summaryRequest` when its model receives a summary request,
 * and `toolRan` when its tool runs. A request that carries fewer messages
 * than the one before marks a compaction (the history was replaced by a
 * summary and the kept rounds, or trimmed): the step that ends with it is a
 * compaction step, and so is one during which a summary was requested.
 */
export class Conversation {
  calls = 0
  toolCalls = 0
  /** Milliseconds spent making tool results (in `toolRan`). */
  toolMs = 0
  compactions = 0
  summaryRequests = 0
  largestRequestMessages = 0
  private lastMessages = 0
  private last: number | undefined
  private compacted = false
  readonly plain: Array<number> = []
  readonly compacting: Array<number> = []

  readonly workload: Workload
  readonly phase: Phase

  constructor(workload: Workload, phase: Phase) {
    this.workload = workload
    this.phase = phase
  }

  /** Agent model calls this conversation makes: the workload's warm-up or measured steps. */
  get steps(): number {
    return this.phase === "warmup" ? this.workload.warmupSteps : this.workload.steps
  }

  /** Marks an agent model call; returns what the script asks for at it (`undefined`: the final answer). */
  agentCall(messages: number): ReadonlyArray<ScriptedCall> | undefined {
    const now = performance.now()
    if (messages < this.lastMessages) {
      this.compactions++
      this.compacted = true
    }
    this.lastMessages = messages
    this.largestRequestMessages = Math.max(this.largestRequestMessages, messages)
    if (this.last !== undefined) (this.compacted ? this.compacting : this.plain).push(now - this.last)
    this.last = now
    this.compacted = false
    this.calls++
    return scriptedCalls(this.workload, this.phase, this.calls)
  }

  /** Marks a summary request; returns the summary to answer with. */
  summaryRequest(): string {
    this.summaryRequests++
    this.compacted = true
    return summaryText(this.summaryRequests, 400)
  }

  /** Marks a tool execution; returns its result text. */
  toolRan(size: number): string {
    const started = performance.now()
    this.toolCalls++
    const text = resultText(this.workload, this.toolCalls, size)
    this.toolMs += performance.now() - started
    return text
  }
}

/**
 * Runs a side's warm-up conversation, then its measured one, and reports
 * the measured one. `converse` runs one whole conversation, calling the
 * given `Conversation`'s marks.
 */
export const measure = async (
  side: string,
  workload: Workload,
  converse: (conversation: Conversation) => Promise<void>
): Promise<PeerResult> => {
  await converse(new Conversation(workload, "warmup"))
  const conversation = new Conversation(workload, "measured")
  const started = performance.now()
  const cpuBefore = process.cpuUsage()
  await converse(conversation)
  const cpu = process.cpuUsage(cpuBefore)
  const wallMs = performance.now() - started
  if (conversation.calls !== workload.steps) {
    throw new Error(`${side}: the model saw ${conversation.calls} agent calls, expected ${workload.steps}`)
  }
  return {
    side,
    workload: workload.name,
    steps: conversation.calls,
    toolCalls: conversation.toolCalls,
    toolMs: conversation.toolMs,
    step: stats(conversation.plain),
    compactionStep: stats(conversation.compacting),
    compactions: conversation.compactions,
    summaryRequests: conversation.summaryRequests,
    largestRequestMessages: conversation.largestRequestMessages,
    peakRss: peakRss(),
    retainedHeap: retainedHeap(),
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1_000
  }
}
