import type { VectorIndexStatus } from "@mq9/broker";

export type { VectorIndexStatus } from "@mq9/broker";
/** One vector: a doc (skill) of an agent. */
export interface VectorItem {
  /** Unique doc id; never reused for another doc. */
  id: number;
  /** The agent (mailbox) the doc belongs to: filters and deletes work on it. */
  agent: string;
  /** Unit length. */
  vector: Float32Array;
}

export interface VectorFilter {
  /** Only docs of these agents. */
  agents?: ReadonlySet<string>;
}

export interface VectorHit {
  id: number;
  agent: string;
  /** Cosine similarity (higher is nearer). */
  score: number;
}

/** Which vectors a delete removes; both keys may be given. */
export interface VectorSelector {
  agents?: Iterable<string>;
  ids?: Iterable<number>;
}

/**
 * Nearest-neighbour search over doc vectors. Implementations must make an
 * upserted vector searchable as soon as `upsert` resolves, honour the filter
 * exactly (never return a doc outside it), and keep what they hold across a
 * close and reopen when they are persistent.
 */
export interface VectorStore {
  /** Inserts or replaces vectors by id. All vectors of one store have the same length. */
  upsert(items: VectorItem[]): Promise<void>;
  /** Up to `limit` nearest docs that pass the filter, nearest first. */
  query(vector: Float32Array, filter: VectorFilter, limit: number): Promise<VectorHit[]>;
  /** Removes the selected vectors; resolves with how many were removed. */
  delete(selector: VectorSelector): Promise<number>;
  count(): Promise<number>;
  /** Removes everything (the model changed). */
  clear(): Promise<void>;
  close(): Promise<void>;
  /** For stores with an approximate index: how far its build is (exposed as metrics). */
  status?(): VectorIndexStatus;
}
