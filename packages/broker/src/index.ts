/**
 * `@mq9/broker`: the mq9 broker as a library — persistent mailboxes, consumer groups and expiry
 * over a `Store` (embedded SQLite, or PostgreSQL shared by a cluster), answered over the NATS
 * client protocol by the embedded listener or through an existing NATS cluster.
 *
 * ```ts
 * import { Broker } from "@mq9/broker";
 * import { registryFactory } from "@mq9/registry";
 *
 * const broker = await Broker.start({ port: 0, dataDir: "./my-mailboxes", registry: registryFactory() });
 * console.log(`clients connect to mq9://${broker.host}:${broker.port}`);
 * // …
 * await broker.close();
 * ```
 *
 * This file lists what users may rely on; everything else under `src/` is internal.
 * See packages/broker/README.md for the folders.
 *
 * @module
 */
export {
  AGENT_PERMISSIONS,
  type AuthOptions,
  type AuthThrottleOptions,
  type PermissionsOptions,
  type PermissionsProfile,
  type Principal,
  type SubjectRules,
  type UserOptions,
} from "./auth/index.js";
export { Broker, type BrokerHttpOptions, type BrokerOptions } from "./broker.js";
export { BrokerDefaults } from "./broker-defaults.js";
export type { ClusterIdentity } from "./cluster/account-identity.js";
export type { ClusterMember } from "./cluster/cluster-members.js";
export type { ClusterRoster, ClusterView } from "./cluster/cluster-node.js";
export { publisherProblem } from "./http/ard/ard-identifier.js";
export type { ArdOptions } from "./http/ard/ard-routes.js";
export { type Logger, silentLogger } from "./logger.js";
export type {
  DiscoverResult,
  MailboxStanding,
  OwnedRegistrations,
  Registry,
  RegistryContext,
  RegistryFactory,
  RegistryStatus,
  VectorIndexStatus,
} from "./registry.js";
export type { SharedDatabase } from "./store/shared-database.js";
export type { SyncMode } from "./store/sqlite-store.js";
export { StorageError } from "./store/storage-error.js";
export { otlpFromEnv, otlpMetricsFromEnv, type TelemetryOptions } from "./telemetry/telemetry-options.js";
