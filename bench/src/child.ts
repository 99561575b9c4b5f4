/**
 * Entry of one isolated benchmark job: `node child.ts <job> <json args>`.
 * Prints the job's result as one JSON line (the last line of its output).
 *
 * Each job's module is imported only when that job runs, so a process holds
 * the code of its own job alone: peak memory is never inflated by the other
 * jobs' dependencies (LangChain's, for the runs of ours, and ours for its).
 */
type Job = (args: never) => Promise<unknown>

const jobs: Record<string, () => Promise<Job>> = {
  "context-bound": async () => (await import("./ContextBound.ts")).run,
  "context-control": async () => (await import("./ContextControl.ts")).run,
  overhead: async () => (await import("./Overhead.ts")).run,
  offload: async () => (await import("./OffloadThroughput.ts")).run,
  reopen: async () => (await import("./JournalReopen.ts")).run,
  "hostile-size": async () => (await import("./HostileSize.ts")).run,
  "side-tessera": async () => (await import("./SideBySide.ts")).run,
  "stream-overhead": async () => (await import("./SideBySide.ts")).runStreamOverhead,
  "side-langchain": async () => (await import("./LangChainSide.ts")).run,
  "scale-out": async () => (await import("./ScaleOut.ts")).run,
  "peer-tessera": async () => (await import("./PeerTessera.ts")).run,
  "peer-ai-sdk": async () => (await import("./PeerAiSdk.ts")).run,
  "peer-pi": async () => (await import("./PeerPi.ts")).run,
  "peer-langchain": async () => (await import("./PeerLangChain.ts")).run,
  "cold-start": async () => (await import("./ColdStart.ts")).run
}

const [job = "", raw = "{}"] = process.argv.slice(2)
const load = jobs[job]
if (load === undefined) {
  process.stderr.write(`unknown job "${job}"; expected one of ${Object.keys(jobs).join(", ")}\n`)
  process.exit(2)
}
const body = await load()
const result = await body(JSON.parse(raw) as never)
process.stdout.write(`${JSON.stringify(result)}\n`)
