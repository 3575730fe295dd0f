import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { runTool, strictJsonSchema, TOOLS, type ToolContext } from "@mq9/tools";
import { failure, ok } from "./tool-result.js";

export const SERVER_INFO = { name: "mq9", version: "0.1.0" };

const INSTRUCTIONS =
  "mq9 gives agents mailboxes and a registry. To delegate: mq9_discover_agents (semantic) to find an agent, then mq9_call_agent. To message: mq9_send_message; to wait for replies: mq9_wait.";

/** An MCP server exposing the mq9 tools; one per connection (stdio) or per request (stateless HTTP). */
export function createMcpServer(context: () => Promise<ToolContext>): Server {
  const server = new Server(SERVER_INFO, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  const byName = new Map(TOOLS.map((tool) => [tool.name, tool]));
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: TOOLS.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: strictJsonSchema(tool.input) as { type: "object"; properties?: Record<string, object> },
      annotations: tool.annotations,
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const tool = byName.get(request.params.name);
    if (!tool) {
      return failure(`unknown tool ${request.params.name}; the tools are ${[...byName.keys()].join(", ")}`);
    }
    try {
      return ok(await runTool(tool, request.params.arguments, await context(), extra.signal));
    } catch (err) {
      return failure(err instanceof Error ? err.message : String(err));
    }
  });
  return server;
}
