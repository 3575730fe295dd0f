import { createHash } from "node:crypto";
import { hostname } from "node:os";
import type { ServeConfig } from "./config.js";

/**
 * A cluster node's id when --node-id is not given: the host's name and the node's HTTP port
 * (`n1-8332`), so a node restarted with the same configuration comes back under its own id and
 * replaces its `down` entry in the roster, while two nodes on one host (they need two HTTP ports)
 * get two. With a port picked at start (--http-port 0) the id takes a short digest of what names
 * the node instead: its working folder, NATS servers and PostgreSQL schema.
 */
export function defaultNodeId(config: ServeConfig): string {
  const host = hostname();
  if (config.http.port > 0) return `${host}-${config.http.port}`;
  const identity = [process.cwd(), config.cluster.nats.join(","), config.cluster.postgresSchema].join("\n");
  return `${host}-${createHash("sha256").update(identity).digest("hex").slice(0, 8)}`;
}

/** The node id of a cluster node: --node-id, or the stable default. */
export function nodeIdOf(config: ServeConfig): string {
  return config.cluster.nodeId ?? defaultNodeId(config);
}
