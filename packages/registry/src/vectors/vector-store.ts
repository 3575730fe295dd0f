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

/** An agent's card vector (its name and description): one per agent, read by agent, never searched. */
export interface CardItem {
  agent: string;
  /** Unit length, as long as the store's doc vectors. */
  vector: Float32Array;
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
  /** Removes everything, card vectors too (the model changed). */
  clear(): Promise<void>;
  /*
   * Card vectors, beside the doc vectors: a store without them ranks agents by their skills alone.
   * They must persist as the doc vectors do.
   */
  /** Inserts or replaces agents' card vectors. */
  upsertCards?(items: CardItem[]): Promise<void>;
  /** The cosine similarity of `vector` to the card of each of `agents` that has one. */
  cardScores?(vector: Float32Array, agents: readonly string[]): Promise<Map<string, number>>;
  /** Removes these agents' card vectors. */
  deleteCards?(agents: readonly string[]): Promise<void>;
  /** The agents that have a card vector. */
  cardAgents?(): Promise<Set<string>>;
  close(): Promise<void>;
  /** For stores with an approximate index: how far its build is (exposed as metrics). */
  status?(): VectorIndexStatus;
}

/** Throws unless every item's vector has the store's length: a model change needs a cleared store. */
export function checkVectorLengths(
  items: readonly { vector: { length: number } }[],
  dimensions: number | undefined,
  what: "vector" | "card vector",
): void {
  for (const { vector } of items) {
    if (vector.length !== dimensions) {
      throw new Error(
        `${what} of length ${vector.length} for a store of length ${dimensions}; clear the store when the model changes`,
      );
    }
  }
}
