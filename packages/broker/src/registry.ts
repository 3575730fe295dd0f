import type { Principal } from "./auth/principal.js";
import type { Logger } from "./logger.js";
import type { SharedDatabase } from "./store/shared-database.js";

/**
 * The agent registry as the broker sees it: the AGENT.* requests (bodies as they came), the
 * HTTP API's reads and the metrics. `@mq9/registry` implements it; the broker never builds one
 * itself, so that a broker without the registry's dependencies (its models, its indexes) runs.
 */
export interface Registry {
  /**
   * REGISTER. With `caller` (users configured) the registration belongs to that user;
   * `standing` tells what the caller is to the advertised mailbox: its creator takes over a
   * registration of it someone else made, another user's mailbox is refused.
   */
  register(
    body: Uint8Array,
    caller?: Principal,
    standing?: (mailbox: string) => Promise<MailboxStanding>,
  ): Promise<void>;
  /** UNREGISTER; with `caller`, only the caller's own registrations. */
  unregister(body: Uint8Array, caller?: Principal): Promise<void>;
  /** REPORT: a heartbeat with a status; with `caller`, only the caller's own registrations. */
  report(body: Uint8Array, caller?: Principal): Promise<void>;
  discover(body: Uint8Array): Promise<DiscoverResult>;
  /** One live agent's DISCOVER entry with its status, by mailbox; undefined when none. */
  entryOf(mailbox: string): Promise<readonly Uint8Array[] | undefined>;
  /** Every owner of live registrations, with at most `examples` of each one's mailboxes (checked at start). */
  owners(examples: number): Promise<OwnedRegistrations[]>;
  /** How far the background work is (exposed as metrics). */
  status(): RegistryStatus;
  /** Resolves once every stored skill is searchable by meaning (for tests and benchmarks). */
  indexed(): Promise<void>;
  close(): Promise<void>;
}

/**
 * What a user is to a mailbox it advertises: `creator` (it created the live mailbox), `allowed`
 * (a grant, or no such mailbox yet), or `foreign` (another user's).
 */
export type MailboxStanding = "creator" | "allowed" | "foreign";

/** The live registrations of one owner: how many, and the first few mailboxes in order. */
export interface OwnedRegistrations {
  owner: string;
  count: number;
  mailboxes: string[];
}

/** What the broker hands the registry it is given: where to keep its data, and the broker's own parts. */
export interface RegistryContext {
  dataDir: string;
  sync?: "normal" | "full";
  logger: Logger;
  sweepIntervalMs?: number;
  /** The transport's max payload: DISCOVER replies are kept within it. */
  maxPayload?: number;
  /**
   * The database the broker's store shares with other brokers (a cluster's, or one broker's on
   * PostgreSQL): the registry then lives in it too. Undefined on a store of one process (SQLite).
   */
  sharedDatabase?: SharedDatabase;
  /** On a shared database, this process's instance name (it embeds the skills of the REGISTERs it takes). */
  node?: string;
  /** In cluster mode: other nodes write the registry too, so reads first catch up with their changes. */
  cluster?: boolean;
}

/** Opens the registry of a starting broker (e.g. `registryFactory(settings)` from `@mq9/registry`). */
export type RegistryFactory = (context: RegistryContext) => Promise<Registry>;

export interface RegistryStatus {
  embedding: boolean;
  /** Skills waiting for their vectors. */
  pendingSkills: number;
  vectors?: VectorIndexStatus;
  /** A degradation the operator should know of (e.g. a fallback embedder), shown in /healthz. */
  warning?: string;
}

export interface VectorIndexStatus {
  /** Vectors in the approximate index. */
  indexed: number;
  /** Distinct vectors among them, where the index stores identical vectors once. */
  points?: number;
  /** Vectors searched exactly until they enter it. */
  pending: number;
  building: boolean;
}

/** One DISCOVER answer: the entries and, when the ranking asked for could not be used, why. */
export interface DiscoverResult {
  /**
   * Each entry as UTF-8 JSON in pieces (the registration's cached bytes, then
   * this query's fields): copied into the reply as is, never parsed or
   * encoded again, and kept off the JS heap.
   */
  agents: (readonly Uint8Array[])[];
  /** Another page follows (from `nextOffset`). */
  hasMore: boolean;
  nextOffset?: number;
  /** Agents the query matches in all, where that is known. */
  total?: number;
  /** The page was cut short to fit the max payload. */
  truncated?: boolean;
  /** Skills not yet searchable by meaning (still being embedded). */
  pendingSkills?: number;
  warning?: string;
}
