/**
 * The mq9 agent registry: AGENT.REGISTER / UNREGISTER / REPORT / DISCOVER over registrations kept
 * in SQLite (one broker) or PostgreSQL (a cluster), with tag, full-text (BM25) and semantic
 * discovery (an `Embedder` and a `VectorStore`, both seams with a conformance suite).
 *
 * A broker is given the registry by whoever starts it:
 *
 * ```ts
 * import { Broker } from "@mq9/broker";
 * import { registryFactory } from "@mq9/registry";
 *
 * const broker = await Broker.start({
 *   dataDir: "./mq9-data",
 *   registry: registryFactory({ embedder: "none" }), // tags and full-text only
 * });
 * ```
 *
 * Without `registry` the broker runs without this package and AGENT.* requests answer that the
 * registry is off.
 */
export { AgentRegistry, type AgentRegistryOptions } from "./agent-registry.js";
export {
  type Embedder,
  EmbedderUnavailableError,
  type EmbedOptions,
  type EmbedPurpose,
} from "./embedding/embedder.js";
export { createEmbedder, type EmbedderSpec } from "./embedding/embedder-factory.js";
export {
  EmbeddingServerError,
  type EmbeddingServerErrorCode,
} from "./embedding/embeddings-request.js";
export { OnnxEmbedder, type OnnxEmbedderOptions } from "./embedding/onnx-embedder.js";
export { OpenAiEmbedder, type OpenAiEmbedderOptions } from "./embedding/openai-embedder.js";
export { StaticEmbedder, type StaticEmbedderOptions } from "./embedding/static-embedder.js";
export { distilStaticTable, readStaticTable, writeStaticTable } from "./embedding/static-table.js";
export { ThreadedEmbedder, type ThreadedEmbedderOptions } from "./embedding/threaded-embedder.js";
export { UseEmbedder } from "./embedding/use-embedder.js";
export { embedderProblem, openRegistry, type RegistrySettings, registryFactory } from "./open-registry.js";
export {
  PostgresRegistryStore,
  type PostgresRegistryStoreOptions,
} from "./store/postgres-registry-store.js";
export type {
  AgentFilter,
  AgentRow,
  RankedAgent,
  RegistryStore,
  Removed,
  SkillDoc,
  StoredDoc,
} from "./store/registry-store.js";
export { SqliteRegistryStore, type SqliteRegistryStoreOptions } from "./store/sqlite-registry-store.js";
export { LanceDbVectorStore, type LanceDbVectorStoreOptions } from "./vectors/lancedb-vector-store.js";
export { LocalVectorStore, type LocalVectorStoreOptions } from "./vectors/local-vector-store.js";
export type {
  VectorFilter,
  VectorHit,
  VectorIndexStatus,
  VectorItem,
  VectorSelector,
  VectorStore,
} from "./vectors/vector-store.js";
