import type { OwnedRegistrations } from "@mq9/broker";
import type { AgentSelector, ResourceKind } from "@mq9/protocol";

/** One registration as stored. Times are unix milliseconds. */
export interface AgentRow {
  /** The key: an agent's mailbox, or an MCP server's mcpServerKey. */
  mailbox: string;
  /** What the registration describes; undefined is an agent (rows stored before kinds). */
  kind?: ResourceKind;
  name: string;
  /** The REGISTER body exactly as received. */
  bodyJson: string;
  agentInfo: string;
  hasOwnName: boolean;
  tags: string[];
  /** Seconds; 0 = never expires. */
  ttlS: number;
  registeredMs: number;
  lastSeenMs: number;
  /** The last REPORT body, when there was one. */
  statusJson?: string;
  /** The user that registered it, when users are configured; only it (or an admin) changes it. */
  owner?: string;
}

/** One indexed row: a skill of an agent (or the agent itself when it lists no skills). */
export interface SkillDoc {
  agentName: string;
  agentDescription: string;
  skillName: string;
  skillDescription: string;
  /** Space-separated. */
  tags: string;
  /** Newline-separated. */
  examples: string;
}

export interface StoredDoc extends SkillDoc {
  /** Unique for the life of the store (never reused), so a late vector for a replaced doc is recognisable. */
  id: number;
  mailbox: string;
}

/** Filters that combine with every ranking. */
export interface AgentFilter {
  /** The agent must carry every one of these tags (normalised with normalizeTag; card or skill tags). */
  tags?: string[];
  /** Only the registration of this (bare) mailbox. */
  mailbox?: string;
  /** Only registrations of this exact name. */
  name?: string;
  /** Only agents with a ttl that were heard from within it. */
  online?: boolean;
  /** Only registrations of these kinds; every kind when undefined. */
  kinds?: readonly ResourceKind[];
}

/** What a write removed: registrations and the ids of their docs (whose vectors must go too). */
export interface Removed {
  mailboxes: string[];
  docIds: number[];
}

export interface RankedAgent {
  mailbox: string;
  /** Higher is better. */
  score: number;
}

/**
 * Where registrations and their full-text index live. Every read takes the
 * current time and hides registrations whose ttl has passed, purged or not.
 */
export interface RegistryStore {
  /** Inserts or replaces a registration and its docs; returns the new docs' ids (ascending) and the replaced ones'. */
  put(agent: AgentRow, docs: SkillDoc[]): Promise<{ ids: number[]; replaced: number[] }>;
  /** Live registrations the selector names (by mailbox and/or name). */
  select(selector: AgentSelector, nowMs: number): Promise<AgentRow[]>;
  /** Deletes every registration the selector names (expired ones too). */
  remove(selector: AgentSelector): Promise<Removed>;
  /** Records a heartbeat on live registrations the selector names; returns how many there were. */
  report(selector: AgentSelector, statusJson: string, nowMs: number): Promise<number>;
  /** Live registrations among `mailboxes`, in no particular order. */
  get(mailboxes: string[], nowMs: number): Promise<AgentRow[]>;
  /** Live registrations matching the filter, ordered by name, then mailbox. */
  list(filter: AgentFilter, nowMs: number, offset: number, limit: number): Promise<AgentRow[]>;
  /** Full-text hits (BM25 of each agent's best doc), best first. Empty when the text has no searchable word. */
  search(
    text: string,
    filter: AgentFilter,
    nowMs: number,
    offset: number,
    limit: number,
  ): Promise<RankedAgent[]>;
  /** Mailboxes of live registrations matching the filter. */
  candidates(filter: AgentFilter, nowMs: number): Promise<Set<string>>;
  /** How many live registrations match the filter (the `total` of a listing). */
  countMatching(filter: AgentFilter, nowMs: number): Promise<number>;
  /** How many agents a full-text query matches under the filter (the `total` of a text search). */
  countSearch(text: string, filter: AgentFilter, nowMs: number): Promise<number>;
  /** Docs after `afterId` that have no vector from `model` yet, oldest first. */
  docsToEmbed(model: string, afterId: number, limit: number): Promise<StoredDoc[]>;
  /** Records that these docs (those still present) have vectors from `model`; returns the ids still present. */
  markEmbedded(ids: number[], model: string): Promise<number[]>;
  /** Forgets every doc's vector (the vector store was emptied or the model changed). */
  resetEmbedded(): Promise<void>;
  /** Distinct models that docs have vectors from, and how many docs have one. */
  embeddedSummary(): Promise<{ models: string[]; count: number }>;
  /** Deletes registrations whose ttl has passed (a bounded number per call). */
  purgeExpired(nowMs: number): Promise<Removed>;
  /** Number of live registrations. */
  count(nowMs: number): Promise<number>;
  /** Live registrations whose name is `name` up to case and Unicode form (NFKC, lower case). */
  namesakes(name: string, nowMs: number): Promise<AgentRow[]>;
  /** Every user that owns live registrations, with at most `examples` of its mailboxes. */
  owners(nowMs: number, examples: number): Promise<OwnedRegistrations[]>;
  /**
   * Before a read, takes in the changes other processes committed (a cluster's registry, written
   * by every node), within a bound; resolves to why it could not. A store whose process is the
   * only writer leaves it out, and its reads cost nothing more.
   */
  catchUp?(): Promise<string | undefined>;
  /** Skills indexed here whose vectors another process is computing (not yet searchable by meaning here). */
  awaitingVectors?(): number;
  close(): Promise<void>;
}
