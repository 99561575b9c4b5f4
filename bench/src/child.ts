/**
 * Entry of one isolated benchmark job: `node child.ts <job> <json args>`.
 * Prints the job's result as one JSON line (the last line of its output).
 */
import * as ContextBound from "./ContextBound.ts"
import * as JournalReopen from "./JournalReopen.ts"
import * as LangChainSide from "./LangChainSide.ts"
import * as OffloadThroughput from "./OffloadThroughput.ts"
import * as Overhead from "./Overhead.ts"
import * as SideBySide from "./SideBySide.ts"

const jobs: Record<string, (args: never) => Promise<unknown>> = {
  "context-bound": ContextBound.run,
  overhead: Overhead.run,
  offload: OffloadThroughput.run,
  reopen: JournalReopen.run,
  "side-tessera": SideBySide.run,
  "side-langchain": LangChainSide.run
}

const [job = "", raw = "{}"] = process.argv.slice(2)
const body = jobs[job]
if (body === undefined) {
  process.stderr.write(`unknown job "${job}"; expected one of ${Object.keys(jobs).join(", ")}\n`)
  process.exit(2)
}
const result = await body(JSON.parse(raw) as never)
process.stdout.write(`${JSON.stringify(result)}\n`)
