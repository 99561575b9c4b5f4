/**
 * Loopback HTTP servers (node:http on 127.0.0.1, an ephemeral port) that
 * speak two real wire formats, scripted per request:
 *
 * - OpenAI chat completions (`POST /v1/chat/completions`): a JSON
 *   `chat.completion`, or with `"stream": true` server-sent `data:` chunks
 *   (`chat.completion.chunk` with content and `tool_calls` deltas, the
 *   finish reason, a final usage chunk, `[DONE]`);
 * - Anthropic messages (`POST /v1/messages`): a JSON `message`, or with
 *   `"stream": true` the event stream `message_start`,
 *   `content_block_start` / `content_block_delta` (`text_delta`,
 *   `input_json_delta`) / `content_block_stop`, `message_delta` with the
 *   usage, `message_stop`.
 *
 * A script answers each request with a reply, an HTTP failure (status,
 * headers, body), or a hold: the response starts (headers and, streaming,
 * a first text chunk) and never ends. The server records each request's
 * body, when it arrived, and whether its connection closed before the
 * response ended (the client aborted it).
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** What the model says in one response, and the usage the server reports for it. */
export interface Reply {
  readonly _tag: "Reply"
  readonly text?: string
  readonly toolCalls?: ReadonlyArray<{ readonly id: string; readonly name: string; readonly input: unknown }>
  readonly usage: { readonly input: number; readonly output: number; readonly cached?: number }
}
export interface Failure {
  readonly _tag: "Failure"
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body: unknown
}
/** The response is held open: streaming, after its headers and a first chunk, unless `beforeHeaders`. */
export interface Hold {
  readonly _tag: "Hold"
  readonly beforeHeaders?: boolean
}
export type Answer = Reply | Failure | Hold

/** One request as the server saw it. */
export interface Received {
  readonly body: { readonly stream?: boolean; readonly [key: string]: unknown }
  readonly at: number
  /** Set when the connection closed: whether the response had ended by then. */
  closed?: { readonly beforeEnd: boolean }
}

export type Script = (body: Received["body"], index: number) => Answer

export interface Loopback {
  /** The API's base URL, e.g. `http://127.0.0.1:PORT/v1`. */
  readonly baseUrl: string
  readonly received: ReadonlyArray<Received>
  /** Resolves once the request at `index` has closed. */
  readonly closedAt: (index: number) => Promise<{ readonly beforeEnd: boolean }>
  readonly close: () => Promise<void>
}

type Format = "openai" | "anthropic"

const sse = (res: http.ServerResponse, data: unknown, event?: string) =>
  res.write(
    `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`
  )

const chunks = (text: string): ReadonlyArray<string> => text.match(/.{1,4}/gs) ?? []

// ---------------------------------------------------------------------------
// OpenAI chat completions

const openAiUsage = (usage: Reply["usage"]) => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.input + usage.output,
  ...(usage.cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: usage.cached } })
})

const openAiFinish = (reply: Reply) => ((reply.toolCalls?.length ?? 0) > 0 ? "tool_calls" : "stop")

const openAiJson = (res: http.ServerResponse, reply: Reply) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(
    JSON.stringify({
      id: "chatcmpl-loopback",
      object: "chat.completion",
      created: 1_764_576_000,
      model: "loopback",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: reply.text ?? null,
            ...((reply.toolCalls?.length ?? 0) > 0
              ? {
                  tool_calls: reply.toolCalls?.map((call) => ({
                    id: call.id,
                    type: "function",
                    function: { name: call.name, arguments: JSON.stringify(call.input) }
                  }))
                }
              : {})
          },
          finish_reason: openAiFinish(reply)
        }
      ],
      usage: openAiUsage(reply.usage)
    })
  )
}

const openAiChunk = (delta: unknown, finish: string | null = null) => ({
  id: "chatcmpl-loopback",
  object: "chat.completion.chunk",
  created: 1_764_576_000,
  model: "loopback",
  choices: [{ index: 0, delta, finish_reason: finish }]
})

const sseHead = (res: http.ServerResponse) =>
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })

const openAiStream = (res: http.ServerResponse, reply: Reply) => {
  sseHead(res)
  sse(res, openAiChunk({ role: "assistant", content: "" }))
  for (const piece of chunks(reply.text ?? "")) sse(res, openAiChunk({ content: piece }))
  reply.toolCalls?.forEach((call, index) => {
    sse(
      res,
      openAiChunk({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }]
      })
    )
    for (const piece of chunks(JSON.stringify(call.input))) {
      sse(res, openAiChunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
    }
  })
  sse(res, openAiChunk({}, openAiFinish(reply)))
  sse(res, { ...openAiChunk({}), choices: [], usage: openAiUsage(reply.usage) })
  sse(res, "[DONE]")
  res.end()
}

// ---------------------------------------------------------------------------
// Anthropic messages

const anthropicStop = (reply: Reply) => ((reply.toolCalls?.length ?? 0) > 0 ? "tool_use" : "end_turn")

/** Anthropic reports uncached input, cache reads and cache writes apart; the total input is their sum. */
const anthropicUsage = (usage: Reply["usage"]) => ({
  input_tokens: usage.input - (usage.cached ?? 0),
  cache_read_input_tokens: usage.cached ?? 0,
  cache_creation_input_tokens: 0,
  output_tokens: usage.output
})

const anthropicContent = (reply: Reply) => [
  ...(reply.text === undefined || reply.text.length === 0 ? [] : [{ type: "text", text: reply.text }]),
  ...(reply.toolCalls ?? []).map((call) => ({ type: "tool_use", id: call.id, name: call.name, input: call.input }))
]

const anthropicJson = (res: http.ServerResponse, reply: Reply) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(
    JSON.stringify({
      id: "msg_loopback",
      type: "message",
      role: "assistant",
      model: "loopback",
      content: anthropicContent(reply),
      stop_reason: anthropicStop(reply),
      stop_sequence: null,
      usage: anthropicUsage(reply.usage)
    })
  )
}

const anthropicStream = (res: http.ServerResponse, reply: Reply) => {
  sseHead(res)
  const usage = anthropicUsage(reply.usage)
  sse(
    res,
    {
      type: "message_start",
      message: {
        id: "msg_loopback",
        type: "message",
        role: "assistant",
        model: "loopback",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 }
      }
    },
    "message_start"
  )
  let index = 0
  if (reply.text !== undefined && reply.text.length > 0) {
    sse(res, { type: "content_block_start", index, content_block: { type: "text", text: "" } }, "content_block_start")
    for (const piece of chunks(reply.text)) {
      sse(
        res,
        { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } },
        "content_block_delta"
      )
    }
    sse(res, { type: "content_block_stop", index }, "content_block_stop")
    index++
  }
  for (const call of reply.toolCalls ?? []) {
    sse(
      res,
      {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: call.id, name: call.name, input: {} }
      },
      "content_block_start"
    )
    for (const piece of chunks(JSON.stringify(call.input))) {
      sse(
        res,
        { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } },
        "content_block_delta"
      )
    }
    sse(res, { type: "content_block_stop", index }, "content_block_stop")
    index++
  }
  sse(
    res,
    {
      type: "message_delta",
      delta: { stop_reason: anthropicStop(reply), stop_sequence: null },
      usage: { output_tokens: usage.output_tokens }
    },
    "message_delta"
  )
  sse(res, { type: "message_stop" }, "message_stop")
  res.end()
}

// ---------------------------------------------------------------------------

const paths: Record<Format, string> = { openai: "/v1/chat/completions", anthropic: "/v1/messages" }

/** Starts a loopback server speaking `format`, answering each request with `script`. */
export const start = async (format: Format, script: Script): Promise<Loopback> => {
  const received: Array<Received> = []
  const waiters = new Map<number, Array<(closed: { readonly beforeEnd: boolean }) => void>>()
  const server = http.createServer((req, res) => {
    let raw = ""
    req.setEncoding("utf8")
    req.on("data", (piece: string) => {
      raw += piece
    })
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== paths[format]) {
        res.writeHead(404, { "content-type": "application/json" })
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }))
        return
      }
      const body = JSON.parse(raw) as Received["body"]
      const index = received.length
      const entry: Received = { body, at: Date.now() }
      received.push(entry)
      res.on("close", () => {
        entry.closed = { beforeEnd: !res.writableEnded }
        for (const wake of waiters.get(index) ?? []) wake(entry.closed)
      })
      const answer = script(body, index)
      switch (answer._tag) {
        case "Failure":
          res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers })
          res.end(JSON.stringify(answer.body))
          return
        case "Hold":
          if (body.stream === true && answer.beforeHeaders !== true) {
            sseHead(res)
            if (format === "openai") sse(res, openAiChunk({ role: "assistant", content: "Work" }))
            else {
              sse(
                res,
                {
                  type: "message_start",
                  message: {
                    id: "msg_held",
                    type: "message",
                    role: "assistant",
                    model: "loopback",
                    content: [],
                    stop_reason: null,
                    stop_sequence: null,
                    usage: { input_tokens: 1, output_tokens: 1 }
                  }
                },
                "message_start"
              )
            }
          }
          // Never ends: only the client's abort (or the server's close) finishes it.
          return
        case "Reply":
          if (format === "openai") (body.stream === true ? openAiStream : openAiJson)(res, answer)
          else (body.stream === true ? anthropicStream : anthropicJson)(res, answer)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    received,
    closedAt: (index) => {
      const closed = received[index]?.closed
      if (closed !== undefined) return Promise.resolve(closed)
      return new Promise((resolve) => waiters.set(index, [...(waiters.get(index) ?? []), resolve]))
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** The sum of the usage the server reported over its replies, in Tessera's counts. */
export const reportedTotal = (replies: ReadonlyArray<Reply>) => ({
  inputTokens: replies.reduce((sum, reply) => sum + reply.usage.input, 0),
  outputTokens: replies.reduce((sum, reply) => sum + reply.usage.output, 0),
  cachedInputTokens: replies.reduce((sum, reply) => sum + (reply.usage.cached ?? 0), 0)
})

/**
 * A replay plan for {@link serve}: the turn's requests get `replies` in
 * order (the last one again once they run out); summary requests (they
 * carry the runtime's summary instruction) get `summary`.
 */
export interface Plan {
  readonly format: Format
  readonly replies: ReadonlyArray<Reply>
  readonly summary: Reply
}

/** The opening words of the runtime's summary instruction, which every summary request carries. */
export const summaryMarker = "Summarize the work so far for your own later use"

/** Whether a request body is a summary request. */
export const isSummary = (body: Received["body"]): boolean => JSON.stringify(body).includes(summaryMarker)

/** A loopback server replaying `plan`. */
export const serve = (plan: Plan): Promise<Loopback> => {
  let step = 0
  return start(plan.format, (body) => {
    if (isSummary(body)) return plan.summary
    const reply = plan.replies[Math.min(step, plan.replies.length - 1)] as Reply
    step++
    return reply
  })
}
