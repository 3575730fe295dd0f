import type { BrokerOptions, Logger } from "@mq9/broker";
import { newClusterInstance, PostgresStore } from "@mq9/broker/internal";
import type { ServeConfig } from "./config.js";
import { nodeIdOf } from "./node-id.js";

/**
 * What `mq9 serve --postgres` adds to the broker's options: the PostgreSQL store (opened,
 * migrated), and with `--cluster` the NATS cluster to attach to; nothing without either.
 */
export async function postgresBrokerOptions(
  config: ServeConfig,
  logger: Logger,
): Promise<Pick<BrokerOptions, "store" | "cluster"> | undefined> {
  const cluster = config.cluster;
  if (!cluster.enabled && cluster.postgres === undefined) return undefined;
  // A node's database sessions carry its instance, so a node that finds it hung can end them.
  const nodeId = cluster.enabled ? nodeIdOf(config) : undefined;
  const instance = nodeId === undefined ? undefined : newClusterInstance(nodeId);
  const store = await PostgresStore.open({
    url: cluster.postgres ?? "",
    schema: cluster.postgresSchema,
    poolSize: cluster.postgresPool,
    instance,
    logger,
  });
  if (nodeId === undefined) return { store };
  const tls =
    cluster.natsTlsCa || cluster.natsTlsCert
      ? { caFile: cluster.natsTlsCa, certFile: cluster.natsTlsCert, keyFile: cluster.natsTlsKey }
      : undefined;
  return {
    store,
    cluster: {
      servers: cluster.nats,
      nodeId,
      instance,
      token: cluster.natsToken,
      user: cluster.natsUser,
      password: cluster.natsPassword,
      credsFile: cluster.natsCreds,
      tls,
      queueGroup: cluster.queueGroup,
      httpUrl: cluster.nodeHttpUrl?.replace(/\/$/, ""),
      downRetentionMs: cluster.downRetentionS * 1000,
      dropMissingAfterMs: cluster.dropMissingAfterS * 1000,
      systemAccount:
        cluster.natsSystemUser || cluster.natsSystemCreds
          ? {
              user: cluster.natsSystemUser,
              password: cluster.natsSystemPassword,
              credsFile: cluster.natsSystemCreds,
            }
          : undefined,
      identity:
        cluster.identity === "account-prefix"
          ? { kind: "account-prefix", admins: cluster.admins }
          : undefined,
    },
  };
}
