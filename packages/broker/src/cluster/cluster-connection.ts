import { readFileSync } from "node:fs";
import { type ConnectionOptions, connect, credsAuthenticator, Events, type NatsConnection } from "nats";
import type { Logger } from "../logger.js";
import type { ClusterOptions } from "./cluster-options.js";
import { PERMISSIONS_HINT } from "./refused-subscription.js";

/** A node's NATS connection's name, which the nats-servers' CONNZ lists it by. */
export function connectionName(nodeId: string, purpose: string): string {
  return `mq9-${nodeId}-${purpose}`;
}

/** Connect options for the NATS cluster: reconnect for ever, auth and TLS passed through. */
export function natsConnectOptions(options: ClusterOptions, purpose: string): ConnectionOptions {
  const connectOptions: ConnectionOptions = {
    servers: options.servers,
    name: connectionName(options.nodeId, purpose),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: false,
    pingInterval: 10_000,
    // The order of --nats is the operator's: a node beside its own nats-server lists it first.
    noRandomize: true,
  };
  if (options.token) connectOptions.token = options.token;
  if (options.user) {
    connectOptions.user = options.user;
    connectOptions.pass = options.password ?? "";
  }
  if (options.credsFile) connectOptions.authenticator = credsAuthenticator(readFileSync(options.credsFile));
  if (options.tls) connectOptions.tls = { ...options.tls };
  return connectOptions;
}

/** Opens the node's NATS connection, logging disconnects and reconnects with the server's address. */
export async function connectToCluster(
  options: ClusterOptions,
  purpose: string,
  logger: Logger,
): Promise<NatsConnection> {
  let nc: NatsConnection;
  try {
    nc = await connect(natsConnectOptions(options, purpose));
  } catch (err) {
    // nats.js reports a server that closes the handshake (over max_connections, or an account
    // at its connection limit) only as a timeout; the server's log says which.
    const refused =
      (err as { code?: string }).code === "TIMEOUT"
        ? " (no server completed the handshake: unreachable, or refusing connections over a connection limit; the nats-server log says which)"
        : "";
    throw new Error(
      `cannot reach the NATS cluster at ${options.servers.join(", ")}: ${(err as Error).message}${refused}; check --nats and the cluster's credentials`,
      { cause: err },
    );
  }
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === Events.Disconnect)
        logger.warn(`nats: disconnected from ${status.data}; reconnecting`);
      else if (status.type === Events.Reconnect) logger.info(`nats: reconnected to ${status.data}`);
      else if (status.type === Events.Error) {
        // A refused publish arrives as its code alone (the server's text names the subject).
        const code = String(status.data);
        logger.warn(
          code === "PERMISSIONS_VIOLATION"
            ? `nats: ${code}: the cluster refused this node a publish; ${PERMISSIONS_HINT}`
            : `nats: ${code}`,
        );
      }
    }
  })().catch(() => {});
  return nc;
}
