import { hostname } from "node:os";
import type { BrokerOptions, Logger } from "@mq9/broker";
import { PostgresStore } from "@mq9/broker/internal";
import type { ServeConfig } from "./config.js";

/**
 * What `mq9 serve --cluster` adds to the broker's options: the shared PostgreSQL store (opened,
 * migrated) and the NATS cluster to attach to.
 */
export async function clusterBrokerOptions(
  config: ServeConfig,
  logger: Logger,
): Promise<Pick<BrokerOptions, "store" | "cluster">> {
  const cluster = config.cluster;
  const nodeId = cluster.nodeId ?? `${hostname()}-${process.pid}`;
  const store = await PostgresStore.open({
    url: cluster.postgres ?? "",
    schema: cluster.postgresSchema,
    poolSize: cluster.postgresPool,
    logger,
  });
  const tls =
    cluster.natsTlsCa || cluster.natsTlsCert
      ? { caFile: cluster.natsTlsCa, certFile: cluster.natsTlsCert, keyFile: cluster.natsTlsKey }
      : undefined;
  return {
    store,
    cluster: {
      servers: cluster.nats,
      nodeId,
      token: cluster.natsToken,
      user: cluster.natsUser,
      password: cluster.natsPassword,
      credsFile: cluster.natsCreds,
      tls,
      queueGroup: cluster.queueGroup,
    },
  };
}

/**
 * The configuration the in-process apps (MCP, A2A gateway, orchestrator) connect with: in
 * cluster mode they are clients of the NATS cluster like any agent, with its credentials.
 */
export function appConfig(config: ServeConfig): ServeConfig {
  const cluster = config.cluster;
  if (!cluster.enabled) return config;
  return {
    ...config,
    auth: {
      ...config.auth,
      token: cluster.natsToken,
      user: cluster.natsUser,
      password: cluster.natsPassword,
    },
    tls: cluster.natsTlsCa ? { cert: cluster.natsTlsCa, ca: cluster.natsTlsCa } : {},
  };
}
