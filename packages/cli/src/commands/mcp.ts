import type { Command } from "commander";
import {
  type ConnectionFlags,
  clientCommand,
  connectOptions,
  reportError,
} from "../shared/client-command.js";
import { exitAfterOutput } from "../shared/exit.js";
import { longRunningConnectOptions } from "../shared/long-running-connection.js";

/**
 * Tries the broker once, beside the server's start: credentials it refuses end the command at once
 * (exit 3) instead of failing every tool call. A broker that is not there yet is not an error:
 * the server connects on the first tool call (docs/mcp.md).
 */
async function refuseBadCredentials(flags: ConnectionFlags): Promise<void> {
  const { connect, Mq9Error } = await import("@mq9/client");
  try {
    const probe = await connect(flags.server, connectOptions(flags, false, "mq9-mcp"));
    await probe.close();
  } catch (err) {
    if (err instanceof Mq9Error && !err.retryable) await exitAfterOutput(reportError(err, flags.json));
  }
}

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
stdout carries the protocol; messages go to stderr. Credentials the broker refuses end it with
exit 3; a broker that is not up yet is connected to on the first tool call.`,
    )
    .action(async (flags: ConnectionFlags) => {
      const { serveMcpStdio } = await import("@mq9/mcp");
      const checked = refuseBadCredentials(flags);
      await serveMcpStdio({ server: flags.server, connect: longRunningConnectOptions(flags, "mq9-mcp") });
      await checked;
      process.exit(0);
    });
}
