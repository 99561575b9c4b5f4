/**
 * A small MCP server built with the reference implementation
 * (`@modelcontextprotocol/sdk`), served on stdio: `incident_log` returns a
 * long log with a credential in it. `examples/mcp-tools.ts` starts it.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { z } from "zod"

const server = new McpServer({ name: "incidents", version: "1.0.0" })
server.registerTool(
  "incident_log",
  {
    description: "Returns the incident log of a service",
    inputSchema: { service: z.string(), lines: z.number().int() }
  },
  async ({ lines, service }) => ({
    content: [
      {
        type: "text",
        text: Array.from(
          { length: lines },
          (_, line) => `${service} ${line}: restarted by deploy bot (token aws_access_key_id=AKIAIOSFODNN7EXAMPLE)`
        ).join("\n")
      }
    ]
  })
)
await server.connect(new StdioServerTransport())
