/**
 * A loopback provider server as a process, for smoke tests that run an
 * example against it (`examples/test`): reads a {@link Loopback.Plan} as
 * JSON from `$TESSERA_LOOPBACK_PLAN`, prints `{"baseUrl":...}` as its first
 * line, then one JSON line per request it received (`model`, `stream`,
 * `summary`), and runs until it is killed.
 */
import * as Loopback from "./loopback.ts"

const plan = JSON.parse(process.env.TESSERA_LOOPBACK_PLAN ?? "") as Loopback.Plan
const server = await Loopback.serve(plan)
let reported = 0
process.stdout.write(`${JSON.stringify({ baseUrl: server.baseUrl })}\n`)
setInterval(() => {
  for (; reported < server.received.length; reported++) {
    const body = server.received[reported]?.body ?? {}
    process.stdout.write(
      `${JSON.stringify({ model: body.model, stream: body.stream === true, summary: Loopback.isSummary(body) })}\n`
    )
  }
}, 10)
