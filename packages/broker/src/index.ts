/**
 * `@mq9/broker` — the mq9 broker to embed in a program: persistent mailboxes over an embedded
 * NATS-protocol listener, SQLite storage in a data directory, an HTTP server (health, metrics,
 * REST), users with permissions. The agent registry is given to it (`@mq9/registry`); without
 * one, AGENT.* requests answer that the registry is off. `mq9 serve` is this broker with
 * everything configured from the command line.
 *
 * @example
 * ```ts
 * import { Broker } from "@mq9/broker";
 *
 * const broker = await Broker.start({ port: 4332, dataDir: "./mq9-data" });
 * console.log(`mq9://127.0.0.1:${broker.port}`); // what clients connect to
 * // … on shutdown: stops taking requests, lets those in flight finish, closes the store.
 * await broker.close();
 * ```
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
export { type Logger, silentLogger } from "./logger.js";
export type {
  DiscoverResult,
  Registry,
  RegistryContext,
  RegistryFactory,
  RegistryStatus,
  VectorIndexStatus,
} from "./registry.js";
export type { SyncMode } from "./store/sqlite-store.js";
export { StorageError } from "./store/storage-error.js";
