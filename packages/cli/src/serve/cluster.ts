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
