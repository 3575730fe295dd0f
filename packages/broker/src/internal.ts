/**
 * `@mq9/broker/internal` — what sibling packages (the CLI, the registry, tests) need beyond the
 * public entry: the engine, the stores, the NATS-protocol listener, the HTTP server and REST
 * routing, the mq9 service. Not for broker embedders; it may change with any release.
 *
 * @example
 * ```ts
 * import { NatsListener } from "@mq9/broker/internal";
 *
 * // A bare NATS-protocol server (no mq9 service behind it), as the client's tests use one.
 * const listener = new NatsListener({ host: "127.0.0.1", port: 0 });
 * const { port } = await listener.listen();
 * await listener.close({ drainTimeoutMs: 0 });
 * ```
 *
 * @module
 */

export { foldName, tokenUserName, UserDirectory } from "./auth/index.js";
export { newClusterInstance } from "./cluster/cluster-node.js";
export { MessagingEngine, type MessagingEngineOptions } from "./engine/messaging-engine.js";
export { LocalNotifier, type Notifier, type Watch } from "./engine/notifier.js";
export { BrokerMetrics } from "./http/broker-metrics.js";
export { HttpServer, type HttpServerOptions } from "./http/http-server.js";
export { ApiError } from "./http/rest/api-error.js";
export { queryInt } from "./http/rest/api-schemas.js";
export type { RestApi, RestApiOptions } from "./http/rest/rest-api.js";
export type { HttpMethod, RestRouter, RouteInput, RouteOutput, RouteSpec } from "./http/rest/rest-router.js";
export * from "./index.js";
export { NatsListener, type NatsListenerOptions } from "./nats/index.js";
export { Mq9Service } from "./service/mq9-service.js";
export type { RequestObserver } from "./service/request-observer.js";
export type { InboxBinding, InboxBindingsStore } from "./store/inbox-bindings.js";
export { withCheckedOutClient } from "./store/postgres/checked-out-client.js";
export { ClusterLock } from "./store/postgres/cluster-lock.js";
export { postgresError } from "./store/postgres/postgres-errors.js";
export { PostgresStore, type PostgresStoreOptions } from "./store/postgres/postgres-store.js";
export { SqliteDriver } from "./store/sqlite-driver.js";
export { SqliteStore, type SqliteStoreOptions } from "./store/sqlite-store.js";
export type {
  AppendResult,
  ClaimOptions,
  MailboxRecord,
  NewMessage,
  PurgeResult,
  ReadOptions,
  StartPosition,
  Store,
  StoreCapabilities,
  StoredMessage,
  StoreHealth,
  StoreQuery,
  StoreWatchOptions,
} from "./store/store.js";
export type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  StoreInspection,
  StoreTotals,
} from "./store/store-inspection.js";
export type { Mq9Request, Mq9RequestHandler, Mq9Respond } from "./transport/mq9-request.js";
