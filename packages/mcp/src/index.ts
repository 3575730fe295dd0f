/**
 * `@mq9/mcp` — an MCP server with mq9's tools (mailboxes, messages, the agent registry, A2A
 * calls) for any LLM host, over stdio (`serveMcpStdio`, what `mq9 mcp` runs) or Streamable
 * HTTP (`mountMcp` on a Fastify app, what `mq9 serve` mounts at `/mcp`).
 *
 * @example
 * ```ts
 * import { serveMcpStdio } from "@mq9/mcp";
 *
 * await serveMcpStdio({ server: "mq9://127.0.0.1:4332" }); // until the host closes stdin
 * ```
 */

// The tool definitions live in @mq9/tools; re-exported for those who took them from here.
export {
  SharedToolContext,
  strictJsonSchema,
  TOOLS,
  type ToolContext,
  type ToolDefinition,
} from "@mq9/tools";
export { type McpRoutesOptions, mountMcp } from "./http-routes.js";
export { createMcpServer, SERVER_INFO } from "./mcp-server.js";
export { type McpStdioOptions, serveMcpStdio } from "./stdio.js";
