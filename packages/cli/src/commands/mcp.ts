import type { Command } from "commander";
import { type ConnectionFlags, clientCommand } from "../shared/client-command.js";
import { longRunningConnectOptions } from "../shared/long-running-connection.js";

/** `mq9 mcp`: the MCP server over stdio, for LLM hosts (Hermes, Claude Code, Cursor …). */
export function registerMcp(program: Command): void {
  clientCommand(program.command("mcp"))
    .description("serve the mq9 MCP tools over stdio (mailboxes, registry, A2A calls)")
    .addHelpText(
      "after",
      `
Examples:
  mq9 mcp --server mq9://127.0.0.1:4332
  claude mcp add mq9 -- mq9 mcp --server mq9://127.0.0.1:4332

The same tools are served over Streamable HTTP at http://<broker>:8332/mcp by 'mq9 serve'.
stdout carries the protocol; messages go to stderr.`,
    )
    .action(async (flags: ConnectionFlags) => {
      const { serveMcpStdio } = await import("@mq9/mcp");
      await serveMcpStdio({ server: flags.server, connect: longRunningConnectOptions(flags, "mq9-mcp") });
      process.exit(0);
    });
}
