/**
 * `@mq9/registry/defaults` — the agent registry's defaults, in one place: the registry applies
 * them, and `mq9 serve` declares its settings with the same values. A subpath of its own, so
 * that reading them loads no embedder or vector store.
 *
 * @example
 * ```ts
 * import { RegistryDefaults } from "@mq9/registry/defaults";
 *
 * console.log(RegistryDefaults.embedder); // "onnx"
 * ```
 */
import { DEFAULT_REGISTRATION_LIMITS } from "@mq9/protocol";
import { DEFAULT_MODEL } from "./models/known-models.js";

export const RegistryDefaults = {
  /** A sentence model on onnxruntime: `model`, fetched once into the models folder. */
  embedder: "onnx",
  /** The onnx embedder's model (see `mq9 models list`). */
  model: DEFAULT_MODEL,
  /** SQLite with an exact scan, HNSW past `annThreshold`. */
  vectorStore: "local",
  /** Seconds a registration without a ttl lives; 0 = until unregistered. */
  defaultTtlSeconds: 0,
  /** Skill vectors past which the local store searches an HNSW index instead of scanning. */
  annThreshold: 2_000,
  /** Largest agent card in bytes. */
  maxCardBytes: DEFAULT_REGISTRATION_LIMITS.maxCardBytes,
  /** Most skills one card may have. */
  maxSkills: DEFAULT_REGISTRATION_LIMITS.maxSkills,
  /** Texts in one request to an openai embedder's server. */
  embedderBatchSize: 64,
  /** Seconds one request to an openai embedder's server may take. */
  embedderTimeoutSeconds: 30,
  /** Further attempts after a 429, a 5xx or a network error from an openai embedder's server. */
  embedderRetries: 3,
  /** While a batch of queries is in the model, ms others wait to share the next call (0: never). */
  queryWindowMs: 8,
  /** Share of an agent's semantic score from its card (name and description) beside its best skill; 0: skills alone. */
  cardWeight: 0.3,
  /** Load the embedder's model at start rather than at the first registration. */
  preloadEmbedder: true,
} as const;
