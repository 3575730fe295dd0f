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
export { MessagingEngine, type MessagingEngineOptions } from "./engine/messaging-engine.js";
export { LocalNotifier, type Notifier, type Watch } from "./engine/notifier.js";
export { BrokerMetrics } from "./http/broker-metrics.js";
export { HttpServer, type HttpServerOptions } from "./http/http-server.js";
export { ApiError } from "./http/rest/api-error.js";
export type { RestApi, RestApiOptions } from "./http/rest/rest-api.js";
export type { HttpMethod, RestRouter, RouteInput, RouteOutput, RouteSpec } from "./http/rest/rest-router.js";
export { type Logger, silentLogger } from "./logger.js";
export { NatsListener, type NatsListenerOptions } from "./nats/index.js";
export {
  type Embedder,
  EmbedderUnavailableError,
  type EmbedOptions,
  type EmbedPurpose,
} from "./registry/embedder.js";
export { LanceDbVectorStore, type LanceDbVectorStoreOptions } from "./registry/lancedb-vector-store.js";
export { LocalVectorStore, type LocalVectorStoreOptions } from "./registry/local-vector-store.js";
export { OnnxEmbedder, type OnnxEmbedderOptions } from "./registry/onnx-embedder.js";
export { embedderProblem, openRegistry, type RegistrySettings } from "./registry/open-registry.js";
export {
  type DiscoverResult,
  Registry,
  type RegistryOptions,
  type RegistryStatus,
} from "./registry/registry.js";
export type {
  AgentFilter,
  AgentRow,
  RankedAgent,
  RegistryStore,
  Removed,
  SkillDoc,
  StoredDoc,
} from "./registry/registry-store.js";
export { SqliteRegistryStore, type SqliteRegistryStoreOptions } from "./registry/sqlite-registry-store.js";
export { ThreadedEmbedder, type ThreadedEmbedderOptions } from "./registry/threaded-embedder.js";
export { UseEmbedder } from "./registry/use-embedder.js";
export type {
  VectorFilter,
  VectorHit,
  VectorIndexStatus,
  VectorItem,
  VectorSelector,
  VectorStore,
} from "./registry/vector-store.js";
export { type Mq9Request, Mq9Service } from "./service/mq9-service.js";
export type { RequestObserver } from "./service/request-observer.js";
export { ClusterLock } from "./store/postgres/cluster-lock.js";
export { PostgresStore, type PostgresStoreOptions } from "./store/postgres/postgres-store.js";
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
export type {
  GroupStats,
  MailboxStats,
  MailboxStatsOptions,
  StoreInspection,
  StoreTotals,
} from "./store/store-inspection.js";
