export {
  AGENT_PERMISSIONS,
  type AuthOptions,
  type AuthThrottleOptions,
  type PermissionsOptions,
  type PermissionsProfile,
  type Principal,
  type SubjectRules,
  UserDirectory,
  type UserOptions,
} from "./auth/index.js";
export { Broker, type BrokerHttpOptions, type BrokerOptions } from "./broker.js";
export { BrokerDefaults } from "./broker-defaults.js";
export { MessagingEngine, type MessagingEngineOptions } from "./engine/messaging-engine.js";
export { LocalNotifier, type Notifier, type Watch } from "./engine/notifier.js";
export { BrokerMetrics } from "./http/broker-metrics.js";
export { HttpServer, type HttpServerOptions } from "./http/http-server.js";
export { ApiError } from "./http/rest/api-error.js";
export type { RestApi, RestApiOptions } from "./http/rest/rest-api.js";
export type { HttpMethod, RestRouter, RouteInput, RouteOutput, RouteSpec } from "./http/rest/rest-router.js";
export { type Logger, silentLogger } from "./logger.js";
export { NatsListener, type NatsListenerOptions } from "./nats/index.js";
export type {
  DiscoverResult,
  Registry,
  RegistryContext,
  RegistryFactory,
  RegistryStatus,
  VectorIndexStatus,
} from "./registry.js";
export { type Mq9Request, Mq9Service } from "./service/mq9-service.js";
export type { RequestObserver } from "./service/request-observer.js";
export { ClusterLock } from "./store/postgres/cluster-lock.js";
export { postgresError } from "./store/postgres/postgres-errors.js";
export {
  PostgresStore,
  type PostgresStoreOptions,
  type SharedDatabase,
} from "./store/postgres/postgres-store.js";
export { SqliteStore, type SqliteStoreOptions, type SyncMode } from "./store/sqlite-store.js";
export { StorageError } from "./store/storage-error.js";
export type {
  AppendResult,
  ClaimOptions,
  MailboxRecord,
  NewMessage,
  PurgeResult,
  ReadOptions,
  StartPosition,
  Store,
  StoredMessage,
  StoreQuery,
} from "./store/store.js";
export type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  StoreInspection,
  StoreTotals,
} from "./store/store-inspection.js";
