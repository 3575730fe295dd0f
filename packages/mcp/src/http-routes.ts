import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { ToolContext } from "@mq9/tools";
import type { FastifyInstance } from "fastify";
import { createMcpServer } from "./mcp-server.js";

/** Options of `mountMcp`. */
export interface McpRoutesOptions {
  /** The broker connection the tools use. */
  context: () => Promise<ToolContext>;
  /** Default /mcp. */
  path?: string;
  /** Host headers accepted (DNS-rebinding guard); default: any. */
  allowedHosts?: string[];
}

const notAllowed = {
  jsonrpc: "2.0",
  error: { code: -32000, message: "Method not allowed: this MCP endpoint is stateless; POST JSON-RPC to it" },
  id: null,
};

/**
 * Mounts the MCP Streamable HTTP endpoint (stateless: a fresh server and transport
 * per POST) on the broker's HTTP server.
 */
export async function mountMcp(app: FastifyInstance, options: McpRoutesOptions): Promise<void> {
  const path = options.path ?? "/mcp";
  await app.register(async (scope) => {
    scope.post(path, async (request, reply) => {
      const server = createMcpServer(options.context);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
        allowedHosts: options.allowedHosts,
        enableDnsRebindingProtection: options.allowedHosts !== undefined,
      });
      reply.hijack();
      reply.raw.on("close", () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    });
    scope.get(path, async (_request, reply) => reply.code(405).header("allow", "POST").send(notAllowed));
    scope.delete(path, async (_request, reply) => reply.code(405).header("allow", "POST").send(notAllowed));
  });
}
