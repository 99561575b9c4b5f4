/**
 * Tools served by Model Context Protocol servers, as Tessera tools.
 *
 * The connection is effect's own MCP client (`effect/ai/McpClient`, over
 * stdio or Streamable HTTP). Each tool a server lists becomes a
 * `Tool.Tool`: its JSON Schema is sent to the model as the server gave it,
 * and calling it calls the server. What comes back is an ordinary tool
 * result of the turn, so it passes the turn's offload (a large result goes
 * to the task's artifact volume behind a pointer), the host's redactor
 * before it is written, and the journal, exactly like a local tool's.
 *
 * Like every Tessera tool, an MCP tool never fails the turn: input that is
 * not a JSON object, a result the server marks as an error, and a failed
 * call (transport, protocol, timeout) all become tool-error results naming
 * the tool and the cause. Only interruption propagates.
 *
 * @since 0.1.0
 */
import type * as Tool from "@tessera/runtime/Tool"
import type * as McpClient from "effect/ai/McpClient"
import type * as McpClientError from "effect/ai/McpClientError"
import type * as McpSchema from "effect/ai/McpSchema"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/**
 * How a server's tools are offered.
 *
 * - `prefix`: put before every tool name (`"reports__"`), so tools of two
 *   servers, or a server's and the host's, cannot share a name.
 * - `timeout`: the limit of each call (none by default; a turn's
 *   `Timeouts` apply as well).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly prefix?: string
  readonly timeout?: Duration.Input
}

const isObject = (input: unknown): input is Record<string, unknown> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

const renderBlock = (block: McpSchema.ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
    case "audio":
      return `[${block.type} ${block.mimeType}, ${block.data.length} base64 characters]`
    case "resource":
      return "text" in block.resource && typeof block.resource.text === "string"
        ? block.resource.text
        : `[resource ${block.resource.uri}]`
    case "resource_link":
      return `[resource link ${block.uri}]`
  }
}

/**
 * The text a call's result stands for: its content blocks in order (text as
 * it is, media and resources by a one-line description), or the structured
 * content as JSON when there are no blocks.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderResult = (result: McpSchema.CallToolResult): string =>
  result.content.length === 0 && result.structuredContent !== undefined
    ? JSON.stringify(result.structuredContent)
    : result.content.map(renderBlock).join("\n")

const outcome = (content: string, failure: Option.Option<Tool.ToolFailure>): Tool.ToolOutcome => ({ content, failure })

/**
 * One server tool as a Tessera tool, called through `client`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromMcpTool = (client: McpClient.McpClient, tool: McpSchema.Tool, options: Options = {}): Tool.Tool => {
  const name = `${options.prefix ?? ""}${tool.name}`
  const description = tool.description ?? tool.title ?? `MCP tool ${tool.name}`
  const callOptions = options.timeout === undefined ? undefined : { timeout: options.timeout }
  return {
    name,
    description,
    spec: { name, description, inputSchema: { ...tool.inputSchema } },
    run: (input) => {
      if (!isObject(input)) {
        return Effect.succeed(
          outcome(
            `invalid input for tool "${name}": MCP tool arguments are a JSON object, got ${Array.isArray(input) ? "an array" : input === null ? "null" : typeof input}`,
            Option.some("InvalidInput")
          )
        )
      }
      return client.callTool({ tool, arguments: input }, callOptions).pipe(
        Effect.map((result) =>
          result.isError === true
            ? outcome(`tool "${name}" failed: ${renderResult(result)}`, Option.some("Failed"))
            : outcome(renderResult(result), Option.none())
        ),
        Effect.catch((error: McpClientError.McpClientError) =>
          Effect.succeed(outcome(`tool "${name}" failed: ${error.message}`, Option.some("Failed")))
        )
      )
    }
  }
}

/**
 * Every tool the server lists now, as Tessera tools, in the server's order.
 * Pass them to `Tool.registry` with the host's own tools (a duplicate name
 * is refused there). List again to see a server's changes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const tools = (
  client: McpClient.McpClient,
  options: Options = {}
): Effect.Effect<ReadonlyArray<Tool.Tool>, McpClientError.McpClientError> =>
  Effect.map(client.listTools(options.timeout === undefined ? undefined : { timeout: options.timeout }), (listed) =>
    listed.map((tool) => fromMcpTool(client, tool, options))
  )
