/**
 * The memory control for the context-bound runs: the same long task as the
 * "on" runs, done by a bare loop with none of the runtime's code (no Effect,
 * no Schema, no Tessera). Every step it does what any durable agent loop that
 * keeps its context bounded must do, with the same durability as ours: it
 * records the request it sends (size and SHA-256 of its JSON), offloads the
 * 51,200-byte result to its own synced file and keeps a pointer with a short
 * abstract, appends five synced journal lines, and once the history passes
 * 8,000 estimated tokens it renders the older rounds into a summary request,
 * stores a 400-character summary write-once (synced file, hard link, synced
 * folder) and keeps only the recent rounds.
 *
 * What it keeps is bounded by construction, so its peak memory at 10,000
 * steps against 1,000 shows what V8's own heap sizing does to a loop like
 * this, with no runtime in the process.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import {
  type HeapSizing,
  type Medium,
  makeTempDir,
  peakRss,
  removeDir,
  retainedHeap,
  sampleHeapSizing
} from "./Harness.ts"
import { logText, resultBody } from "./LogText.ts"

export interface ContextControlArgs {
  readonly steps: number
  readonly medium: Medium
}

export interface ContextControlResult {
  readonly steps: number
  readonly wallMs: number
  readonly peakRss: number
  readonly retainedHeap: number
  readonly heapSizing: HeapSizing
  readonly summaries: number
  readonly largestRequest: number
}

/** The "on" runs' numbers: 50 KiB results, compaction past 8,000 tokens keeping up to 2,000, 240-byte abstracts. */
const resultSize = 51_200
const limitTokens = 8_000
const keepRecentTokens = 2_000
const abstractChars = 240
const summaryChars = 400

interface Message {
  readonly role: "user" | "assistant" | "tool"
  readonly content: string
}

const tokens = (message: Message): number => Math.ceil((message.content.length + 16) / 4)

const { O_CREAT, O_EXCL, O_WRONLY, O_SYNC, O_RDONLY, O_DIRECTORY } = fs.constants

const syncFolder = (folder: string): void => {
  const fd = fs.openSync(folder, O_RDONLY | O_DIRECTORY)
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** Writes a new file with its data synced on a worker thread, then syncs its folder. */
const writeSynced = async (file: string, content: string): Promise<void> => {
  const fd = fs.openSync(file, O_CREAT | O_EXCL | O_WRONLY | O_SYNC, 0o600)
  try {
    await new Promise<void>((resolve, reject) =>
      fs.write(fd, content, null, "utf8", (error) => (error === null ? resolve() : reject(error)))
    )
  } finally {
    fs.closeSync(fd)
  }
  syncFolder(path.dirname(file))
}

export const run = async (args: ContextControlArgs): Promise<ContextControlResult> => {
  const root = makeTempDir(args.medium)
  try {
    const results = path.join(root, "results")
    const summaries = path.join(root, "summaries")
    fs.mkdirSync(results)
    fs.mkdirSync(summaries)
    const journal = fs.openSync(path.join(root, "journal.jsonl"), O_CREAT | O_WRONLY | fs.constants.O_APPEND, 0o600)
    const append = (entry: object): void => {
      fs.writeSync(journal, `${JSON.stringify(entry)}\n`)
      fs.fsyncSync(journal)
    }
    const body = resultBody(logText(resultSize))
    const task: Message = { role: "user", content: "Work through the batches one by one and report when done." }
    let history: Array<Message> = [task]
    let historyTokens = tokens(task)
    let summaryCount = 0
    let largestRequest = 0
    let reached = 0
    const sizing = sampleHeapSizing(() => reached)
    const started = performance.now()
    for (let step = 1; step <= args.steps; step++) {
      reached = step
      const request = JSON.stringify(history)
      const requestBytes = Buffer.byteLength(request)
      largestRequest = Math.max(largestRequest, requestBytes)
      append({ kind: "RequestDispatched", step, size: requestBytes, sha256: crypto.hash("sha256", request) })
      const callId = `call-${step}`
      append({
        kind: "ModelResponded",
        step,
        toolCalls: [{ id: callId, name: "produce", input: { size: resultSize } }]
      })
      append({ kind: "ToolStarted", step, callId })
      const result = body(step, resultSize)
      const file = path.join(results, `${callId}.txt`)
      const written = writeSynced(file, result)
      const sha256 = crypto.hash("sha256", result)
      await written
      append({ kind: "ArtifactOffloaded", step, callId, path: `results/${callId}.txt`, size: resultSize, sha256 })
      const pointer = `[artifact results/${callId}.txt, ${resultSize} bytes, sha256:${sha256}; read it with read_artifact]\n${result.slice(0, abstractChars)}`
      append({ kind: "ToolResulted", step, callId, size: Buffer.byteLength(pointer) })
      const call: Message = {
        role: "assistant",
        content: `produce ${JSON.stringify({ size: resultSize })} as ${callId}`
      }
      const answer: Message = { role: "tool", content: pointer }
      history.push(call, answer)
      historyTokens += tokens(call) + tokens(answer)
      if (historyTokens > limitTokens) {
        // Keep the most recent whole rounds that fit in keepRecentTokens; summarize the rest.
        let kept = history.length
        let keptTokens = 0
        while (kept - 2 >= 1) {
          const roundTokens = tokens(history[kept - 2] as Message) + tokens(history[kept - 1] as Message)
          if (keptTokens + roundTokens > keepRecentTokens) break
          keptTokens += roundTokens
          kept -= 2
        }
        const summaryRequest = `Summarize the work so far.\n${history
          .slice(1, kept)
          .map((message) => `[${message.role}] ${message.content}`)
          .join("\n")}`
        append({ kind: "SummaryRequested", step, size: Buffer.byteLength(summaryRequest) })
        summaryCount++
        const summary = `Summary ${summaryCount}: batches processed so far are all ok. `.padEnd(summaryChars, ".")
        const temp = path.join(summaries, `.${step}.staging`)
        await writeSynced(temp, summary)
        fs.linkSync(temp, path.join(summaries, `${step}.txt`))
        fs.unlinkSync(temp)
        syncFolder(summaries)
        append({ kind: "SummaryStaged", step, size: summary.length, sha256: crypto.hash("sha256", summary) })
        const summaryMessage: Message = { role: "user", content: `Summary of the earlier work:\n${summary}` }
        history = [task, summaryMessage, ...history.slice(kept)]
        historyTokens = history.reduce((total, message) => total + tokens(message), 0)
      }
    }
    const wallMs = performance.now() - started
    fs.closeSync(journal)
    const heapSizing = sizing.stop()
    return {
      steps: args.steps,
      wallMs,
      peakRss: peakRss(),
      retainedHeap: retainedHeap(),
      heapSizing,
      summaries: summaryCount,
      largestRequest
    }
  } finally {
    removeDir(root)
  }
}
