/** What a text is embedded for: a search query, or a document (a skill) to be found. */
export type EmbedPurpose = "query" | "document";

export interface EmbedOptions {
  /** Models with a query instruction use it; a threaded embedder serves queries first. Default "document". */
  purpose?: EmbedPurpose;
}

/**
 * Turns texts into vectors for semantic discovery. Implementations must give
 * unit-length vectors of one fixed length and the same vector for the same text.
 * Only an embedder whose model is a server (OpenAiEmbedder) reaches the network,
 * and then only that server.
 */
export interface Embedder {
  /** Names the model; vectors from different ids are never compared. */
  readonly id: string;
  /** Loads the model when needed (idempotent) and resolves with the vector length. */
  load(): Promise<number>;
  /** How many embed calls it runs at once (a pool of workers); callers with a backlog split it into this many. Default 1. */
  readonly parallelism?: number;
  /** One vector per text, in order. */
  embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]>;
  close(): Promise<void>;
}

/** The embedder cannot run here (its package or model is missing); semantic search falls back. */
export class EmbedderUnavailableError extends Error {
  override name = "EmbedderUnavailableError";
}

/** Scales a vector to unit length in place (a zero vector stays zero). */
export function normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i] * vector[i];
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i] /= norm;
  return vector;
}

/** Dot product; for unit vectors, the cosine similarity. */
export function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}
