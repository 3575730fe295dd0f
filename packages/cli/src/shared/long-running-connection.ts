import type { ConnectOptions } from "@mq9/client";
import { type ConnectionFlags, connectOptions } from "./client-command.js";

/** Connect options for commands that keep running (mcp, agent serve): they reconnect forever. */
export function longRunningConnectOptions(flags: ConnectionFlags, name: string): ConnectOptions {
  return connectOptions(flags, true, name);
}
