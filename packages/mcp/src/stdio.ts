import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { type ConnectOptions, connect } from "@mq9/client";
import { SharedToolContext } from "@mq9/tools";
import { createMcpServer } from "./mcp-server.js";

/** Options of `serveMcpStdio`. */
export interface McpStdioOptions {
  /** The broker, e.g. mq9://127.0.0.1:4332. */
  server: string;
  connect?: ConnectOptions;
}

/**
 * Serves the mq9 tools over stdio (what `mq9 mcp` runs). The broker connection opens
 * on the first tool call, so a host can list the tools while the broker is down.
 * Resolves when the host closes stdin.
 */
export async function serveMcpStdio(options: McpStdioOptions): Promise<void> {
  const context = new SharedToolContext(() =>
    connect(options.server, { name: "mq9-mcp", ...options.connect }),
  );
  const server = createMcpServer(() => context.get());
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  await server.connect(new StdioServerTransport());
  process.stdin.once("end", () => void server.close());
  await closed;
  await context.close();
}
