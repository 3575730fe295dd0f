export { Broker, type BrokerHttpOptions, type BrokerOptions } from "./broker.js";
export { MessagingEngine, type MessagingEngineOptions } from "./engine/messaging-engine.js";
export { LocalNotifier, type Notifier, type Watch } from "./engine/notifier.js";
export { BrokerMetrics } from "./http/broker-metrics.js";
export { HttpServer, type HttpServerOptions } from "./http/http-server.js";
export { type Logger, silentLogger } from "./logger.js";
export { NatsListener, type NatsListenerOptions } from "./nats/index.js";
export { type Mq9Request, Mq9Service, type ReplyBody } from "./service/mq9-service.js";
export type { RequestObserver } from "./service/request-observer.js";
export { SqliteStore, type SqliteStoreOptions, type SyncMode } from "./store/sqlite-store.js";
export { StorageError } from "./store/storage-error.js";
export type {
  AppendResult,
  ClaimOptions,
  MailboxRecord,
  NewMessage,
  PurgeResult,
  QueryOptions,
  ReadOptions,
  StartPosition,
  Store,
  StoredMessage,
} from "./store/store.js";
