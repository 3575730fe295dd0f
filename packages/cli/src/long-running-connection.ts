import { readFileSync } from "node:fs";
import type { ConnectOptions } from "@mq9/client";
import type { ConnectionFlags } from "./client-command.js";

/** Connect options for commands that keep running (mcp, agent serve): they reconnect forever. */
export function longRunningConnectOptions(flags: ConnectionFlags, name: string): ConnectOptions {
  const options: ConnectOptions = {
    name,
    requestTimeoutMs: flags.timeout,
    connectTimeoutMs: flags.timeout,
    reconnect: true,
  };
  if (flags.token) options.token = flags.token;
  if (flags.user) {
    options.user = flags.user;
    options.password = flags.password ?? "";
  }
  if (flags.tlsCa) options.tls = { ca: readFileSync(flags.tlsCa, "utf8") };
  return options;
}
