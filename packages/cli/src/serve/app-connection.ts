import { readFileSync } from "node:fs";
import type { ConnectOptions } from "@mq9/client";
import type { ServeConfig } from "./config.js";
import { nodeIdOf } from "./node-id.js";

/** Where and how an in-process app (MCP, A2A gateway, orchestrator) reaches the broker. */
export interface AppConnection {
  /** One URL, or a comma-separated list (a cluster's nats-servers). */
  server: string;
  /** Plain data (file contents, not readers): the orchestrator's worker thread gets a copy. */
  options: ConnectOptions;
}

/**
 * The in-process apps are clients of the broker like any agent. On one machine they connect to
 * this process's listener (`host`, `port`) with its token or user and its certificate as CA; in
 * cluster mode they connect to the NATS cluster's servers with the node's NATS credentials —
 * token, user/password or .creds file, and TLS with the CA and client certificate and key — so
 * they pass wherever the node itself does.
 */
export function appConnection(config: ServeConfig, host: string, port: number, name: string): AppConnection {
  const cluster = config.cluster;
  if (cluster.enabled) {
    const options: ConnectOptions = { name: `${name}@${nodeIdOf(config)}` };
    if (cluster.natsToken) options.token = cluster.natsToken;
    if (cluster.natsUser) {
      options.user = cluster.natsUser;
      options.password = cluster.natsPassword ?? "";
    }
    if (cluster.natsCreds) options.creds = readFileSync(cluster.natsCreds, "utf8");
    if (cluster.natsTlsCa || cluster.natsTlsCert) {
      options.tls = {
        ...(cluster.natsTlsCa ? { ca: readFileSync(cluster.natsTlsCa, "utf8") } : {}),
        ...(cluster.natsTlsCert ? { cert: readFileSync(cluster.natsTlsCert, "utf8") } : {}),
        ...(cluster.natsTlsKey ? { key: readFileSync(cluster.natsTlsKey, "utf8") } : {}),
      };
    }
    return { server: cluster.nats.join(","), options };
  }
  const { auth, tls } = config;
  const local = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const options: ConnectOptions = { name };
  if (auth.token) options.token = auth.token;
  if (auth.user) {
    options.user = auth.user;
    options.password = auth.password ?? "";
  }
  if (tls.cert) options.tls = { ca: readFileSync(tls.ca ?? tls.cert, "utf8") };
  return { server: `${tls.cert ? "mq9s" : "mq9"}://${local}:${port}`, options };
}
